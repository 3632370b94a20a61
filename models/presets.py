"""Machine presets: real systems with their published parameters, and small test machines.

A preset is a function in :data:`PRESETS` that builds a :class:`Machine`: a topology (with its
link bandwidths and latencies) plus the node model's parameters. Each real preset cites its
sources in a comment; a value that the sources do not give is marked "assumption".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pdes.validate import check_int

from .errors import TopologyError
from .topology import Dragonfly, FatTree, Topology, Torus
from .units import UnitError, parse_bandwidth, parse_rate


@dataclass(frozen=True)
class Machine:
    """A machine: its network topology and its compute nodes.

    ``flops_per_node`` (flop/s) and ``mem_bw_per_node`` (bytes/s) accept strings such as
    '332.8GF' and '102.4GB/s'.
    """

    name: str
    topology: Topology
    cores_per_node: int
    flops_per_node: float | str
    mem_bw_per_node: float | str
    description: str = ""
    citation: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TopologyError(f"Machine: name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.topology, Topology):
            raise TopologyError(f"Machine {self.name}: topology must be a Topology, got {type(self.topology).__name__}")
        object.__setattr__(self, "cores_per_node",
                           check_int(f"Machine {self.name}: cores_per_node", self.cores_per_node, lo=1, error=TopologyError))
        try:
            fl = parse_rate(self.flops_per_node)
        except UnitError as exc:
            raise TopologyError(f"Machine {self.name}: flops_per_node: {exc}") from None
        try:
            bw = parse_bandwidth(self.mem_bw_per_node)
        except UnitError as exc:
            raise TopologyError(f"Machine {self.name}: mem_bw_per_node: {exc}") from None
        if not fl > 0:
            raise TopologyError(f"Machine {self.name}: flops_per_node must be > 0, got {self.flops_per_node!r}")
        if not bw > 0:
            raise TopologyError(f"Machine {self.name}: mem_bw_per_node must be > 0, got {self.mem_bw_per_node!r}")
        object.__setattr__(self, "flops_per_node", float(fl))
        object.__setattr__(self, "mem_bw_per_node", float(bw))

    @property
    def n_nodes(self) -> int:
        """Compute nodes."""
        return self.topology.n_nodes

    @property
    def n_cores(self) -> int:
        """Cores in the whole machine."""
        return self.n_nodes * self.cores_per_node

    @property
    def peak_flops(self) -> float:
        """Peak flop/s of the whole machine."""
        return self.n_nodes * float(self.flops_per_node)

    def describe(self) -> dict[str, Any]:
        """Summary for ``simhpc machine NAME --json``."""
        return {
            "name": self.name,
            "description": self.description,
            "citation": self.citation,
            "nodes": self.n_nodes,
            "cores_per_node": self.cores_per_node,
            "cores": self.n_cores,
            "flops_per_node": self.flops_per_node,
            "peak_flops": self.peak_flops,
            "mem_bw_per_node": self.mem_bw_per_node,
            "network": self.topology.describe(),
        }


#: Preset name -> function building the machine.
PRESETS: dict[str, Callable[[], Machine]] = {}


def _preset(name: str) -> Callable[[Callable[[], Machine]], Callable[[], Machine]]:
    def register(fn: Callable[[], Machine]) -> Callable[[], Machine]:
        PRESETS[name] = fn
        return fn

    return register


def get_machine(name: str) -> Machine:
    """Build the preset ``name``; an unknown name raises listing the valid names."""
    try:
        fn = PRESETS[name]
    except (KeyError, TypeError):
        raise TopologyError(f"unknown machine {name!r}; valid: {', '.join(PRESETS)}") from None
    return fn()


# --------------------------------------------------------------------------- fat-trees
# QDR InfiniBand (4x): 40 Gb/s signalling, 8b/10b coding -> 32 Gb/s = 4 GB/s per direction.
_QDR_BW = "4GB/s"
# Assumption: 100 ns per link, switch traversal included (QDR 36-port switch chips are
# specified at roughly 100-140 ns port to port).
_QDR_LAT = "100ns"


@_preset("cab")
def cab() -> Machine:
    # LLNL Cab (TLCC2): 1,296 nodes of 2 x 8-core Intel Xeon E5-2670 (2.6 GHz, AVX: 8 DP
    # flop/cycle -> 332.8 GF/node), QDR InfiniBand three-level fat-tree of 36-port switches:
    # 18 nodes per leaf, 18 leaves and 18 L2 switches per pod, 4 pods, 36 spines.
    # Sources: Pollard, Jain, Herbein, Bhatele, "Evaluation of an Interference-free Node
    # Allocation Policy on Fat-tree Clusters", SC18; LLNL Livermore Computing, "Cab" system
    # page. Memory: 2 sockets x 4 channels of DDR3-1600 = 102.4 GB/s.
    # Spine wiring: each L2 reaches 2 spines with 9 parallel links each, so every spine uses
    # its 36 ports on 4 L2 switches (one per pod) -- the PGFT that fits these counts.
    return Machine(
        name="cab",
        topology=FatTree.from_radix(radix=36, levels=3, pods=4, link_bw=_QDR_BW, link_lat=_QDR_LAT,
                                    inject_bw=_QDR_BW, inject_lat=_QDR_LAT),
        cores_per_node=16,
        flops_per_node="332.8GF",
        mem_bw_per_node="102.4GB/s",
        description="LLNL Cab: 1,296-node QDR InfiniBand 3-level fat-tree (36-port switches, 4 pods, 36 spines)",
        citation="Pollard et al., SC18; LLNL Livermore Computing Cab system page",
    )


@_preset("pinot")
def pinot() -> Machine:
    # LLNL Pinot: Cab's design with twice the pods: 8 pods of 18 leaves and 18 L2 switches,
    # 2,592 nodes; nodes and links as Cab.
    # Assumption: spine wiring. With 36-port spines and 8 pods, the PGFT keeping full
    # bisection gives each L2 6 spines with 3 parallel links each: 108 spines using 24 ports.
    return Machine(
        name="pinot",
        topology=FatTree.from_radix(radix=36, levels=3, pods=8, link_bw=_QDR_BW, link_lat=_QDR_LAT,
                                    inject_bw=_QDR_BW, inject_lat=_QDR_LAT),
        cores_per_node=16,
        flops_per_node="332.8GF",
        mem_bw_per_node="102.4GB/s",
        description="Pinot: Cab with 8 pods, 2,592 nodes (3-level fat-tree, 36-port switches)",
        citation="Cab parameters (Pollard et al., SC18) with 8 pods; spine wiring assumed",
    )


@_preset("fattree44")
def fattree44() -> Machine:
    # A radix-44 three-level fat-tree at full bisection with 22 pods: 22 nodes per leaf,
    # 22 leaves and 22 L2 switches per pod, 242 spines (2 parallel links to each of 22 L2s
    # they reach), 10,648 nodes. A hypothetical machine for scaling studies of fat-tree
    # allocators; assumption: nodes and links are Cab's.
    return Machine(
        name="fattree44",
        topology=FatTree.from_radix(radix=44, levels=3, pods=22, link_bw=_QDR_BW, link_lat=_QDR_LAT,
                                    inject_bw=_QDR_BW, inject_lat=_QDR_LAT),
        cores_per_node=16,
        flops_per_node="332.8GF",
        mem_bw_per_node="102.4GB/s",
        description="10,648-node radix-44 3-level fat-tree (22 pods of 22 leaves and 22 L2 switches)",
        citation="hypothetical; node and link parameters from Cab (Pollard et al., SC18)",
    )


# --------------------------------------------------------------------------- Gemini tori
# Cray Gemini (Alverson, Roweth, Kaplan, "The Gemini System Interconnect", HOTI 2010): a 3D
# torus of Gemini routers, two nodes per Gemini; links of 12 lanes at 3.125 Gb/s, 4.68 GB/s
# per direction, with twice the links in X and Z (link_mult 2, 1, 2).
# Assumption: 105 ns per router hop, and 6 GB/s injection over the HyperTransport-3 host link.
_GEMINI = dict(link_bw="4.68GB/s", link_mult=(2, 1, 2), link_lat="105ns", inject_bw="6GB/s", inject_lat="105ns")


@_preset("cielo")
def cielo() -> Machine:
    # LANL/SNL Cielo (Cray XE6): Gemini 3D torus 16 x 12 x 24, 2 nodes per router, nodes of
    # 2 x 8-core AMD Opteron 6136 (Magny-Cours, 2.4 GHz, 4 flop/cycle -> 153.6 GF), DDR3-1333
    # on 2 x 4 channels = 85.3 GB/s. Sources: ACES (LANL/SNL) Cielo system description;
    # Alverson et al., HOTI 2010. The 9,216 torus slots are all modelled as compute nodes
    # (Cielo had 8,944 compute nodes plus service nodes).
    return Machine(
        name="cielo",
        topology=Torus(dims=(16, 12, 24), nodes_per_router=2, wrap=True, **_GEMINI),
        cores_per_node=16,
        flops_per_node="153.6GF",
        mem_bw_per_node="85.3GB/s",
        description="LANL Cielo: Cray XE6, Gemini 3D torus 16x12x24, 2 nodes per router, 16 cores per node",
        citation="ACES Cielo system description; Alverson et al., The Gemini System Interconnect, HOTI 2010",
    )


@_preset("hector")
def hector() -> Machine:
    # HECToR phase 3 (Cray XE6, EPCC): Gemini torus 15 x 6 x 16, 2 nodes per coordinate, nodes
    # of 2 x 16-core AMD Opteron 6276 (Interlagos, 2.3 GHz, 8 modules x 8 flop/cycle per
    # socket -> 294.4 GF). Sources: HECToR user guide (hardware), Alverson et al., HOTI 2010.
    # Assumption: DDR3-1333 on 2 x 4 channels = 85.3 GB/s.
    return Machine(
        name="hector",
        topology=Torus(dims=(15, 6, 16), nodes_per_router=2, wrap=True, **_GEMINI),
        cores_per_node=32,
        flops_per_node="294.4GF",
        mem_bw_per_node="85.3GB/s",
        description="HECToR phase 3: Cray XE6, Gemini 3D torus 15x6x16, 2 nodes per coordinate, 32 cores per node",
        citation="HECToR user guide; Alverson et al., HOTI 2010",
    )


# --------------------------------------------------------------------------- Blue Gene/Q
# Blue Gene/Q (Chen et al., "The IBM Blue Gene/Q Interconnection Network and Message Unit",
# SC11): a 5D torus, one node per router (the router is on the compute chip), 10 torus links
# of 2 GB/s per direction. Nodes: 16 user cores at 1.6 GHz with 4-wide FMA (8 flop/cycle) ->
# 204.8 GF, 42.6 GB/s DDR3. A midplane is a 4x4x4x4x2 torus of 512 nodes.
# Assumptions: 45 ns per hop; injection 20 GB/s (the sum of the 10 links), 45 ns.
_BGQ = dict(link_bw="2GB/s", link_lat="45ns", inject_bw="20GB/s", inject_lat="45ns")


@_preset("mira")
def mira() -> Machine:
    # ALCF Mira: 48 racks, 49,152 nodes, 5D torus 8 x 12 x 16 x 16 x 2 (ALCF Mira machine
    # overview; Chen et al., SC11).
    return Machine(
        name="mira",
        topology=Torus(dims=(8, 12, 16, 16, 2), nodes_per_router=1, wrap=True, **_BGQ),
        cores_per_node=16,
        flops_per_node="204.8GF",
        mem_bw_per_node="42.6GB/s",
        description="Mira-like Blue Gene/Q: 5D torus 8x12x16x16x2, 49,152 nodes",
        citation="ALCF Mira machine overview; Chen et al., The IBM Blue Gene/Q Interconnection Network and Message Unit, SC11",
    )


@_preset("mira-midplane")
def mira_midplane() -> Machine:
    # One BG/Q midplane: 4 x 4 x 4 x 4 x 2 = 512 nodes, a torus in every dimension (SC11).
    return Machine(
        name="mira-midplane",
        topology=Torus(dims=(4, 4, 4, 4, 2), nodes_per_router=1, wrap=True, **_BGQ),
        cores_per_node=16,
        flops_per_node="204.8GF",
        mem_bw_per_node="42.6GB/s",
        description="One Blue Gene/Q midplane: 5D torus 4x4x4x4x2, 512 nodes",
        citation="Chen et al., SC11",
    )


# --------------------------------------------------------------------------- Aries dragonflies
# Cray XC / Aries (Alverson, Froese, Kaplan, Roweth, "Cray XC Series Network", Cray white paper
# WP-Aries01-1112, 2012): a group (two cabinets) is 6 chassis x 16 blades = 96 Aries routers
# in rows (chassis) and columns (slots); 4 nodes per router; all-to-all green links along a
# row (1 link per pair) and black links along a column (3 links per pair); 10 optical global
# ports per router. Electrical links 5.25 GB/s, optical links 4.7 GB/s per direction; PCIe
# Gen3 x16 host interface, 16 GB/s peak per direction.
# Assumptions: 100 ns per local link and 150 ns per global link (router traversal included,
# longer optical cables), 100 ns injection; the global links between each pair of groups are
# spread evenly over the routers.
_ARIES = dict(a=96, p=4, h=10, cascade=(6, 16), local_mult=(1, 3), link_bw="5.25GB/s", link_lat="100ns",
              global_bw="4.7GB/s", global_lat="150ns", inject_bw="16GB/s", inject_lat="100ns")


@_preset("theta")
def theta() -> Machine:
    # ALCF Theta (Cray XC40): 24 racks = 12 Aries groups, 9,600 rank-3 (global) ports, i.e.
    # 800 per group and 72 links between each pair of groups (ALCF Theta machine overview).
    # Nodes: Intel Xeon Phi 7230 (64 cores, 1.3 GHz, 2 x AVX-512 FMA units: 32 flop/cycle ->
    # 2.66 TF), MCDRAM ~450 GB/s (ALCF). The 4,608 slots are all modelled as compute nodes
    # (Theta had 4,392 compute nodes plus service nodes).
    return Machine(
        name="theta",
        topology=Dragonfly(g=12, global_links=72, **_ARIES),
        cores_per_node=64,
        flops_per_node="2662.4GF",
        mem_bw_per_node="450GB/s",
        description="Theta-like Cray XC40: Aries dragonfly, 12 groups of 96 routers (6x16), 4 nodes per router",
        citation="Alverson et al., Cray XC Series Network, 2012; ALCF Theta machine overview",
    )


@_preset("edison")
def edison() -> Machine:
    # NERSC Edison (Cray XC30): 15 Aries groups, 12 global links between each pair of groups
    # (CODES dragonfly-custom model documentation, Mubarak et al.). Nodes: 2 x 12-core Xeon
    # E5-2695 v2 (2.4 GHz, AVX: 8 flop/cycle -> 460.8 GF), DDR3-1866 on 2 x 4 channels =
    # 119.4 GB/s (NERSC Edison configuration). The 5,760 slots are all modelled as compute
    # nodes (Edison had 5,586).
    return Machine(
        name="edison",
        topology=Dragonfly(g=15, global_links=12, **_ARIES),
        cores_per_node=24,
        flops_per_node="460.8GF",
        mem_bw_per_node="119.4GB/s",
        description="Edison-like Cray XC30: Aries dragonfly, 15 groups of 96 routers (6x16), 4 nodes per router",
        citation="Alverson et al., Cray XC Series Network, 2012; NERSC Edison configuration; CODES dragonfly-custom documentation",
    )


# --------------------------------------------------------------------------- test machines
# Small machines for tests and examples; node parameters are round numbers, not a real system.
_TINY_NODE = dict(cores_per_node=4, flops_per_node="100GF", mem_bw_per_node="20GB/s", citation="test machine")


@_preset("tiny-fattree")
def tiny_fattree() -> Machine:
    return Machine(name="tiny-fattree", topology=FatTree.from_radix(radix=4, levels=2),
                   description="2-level radix-4 fat-tree: 4 leaves of 2 nodes, 2 spines", **_TINY_NODE)


@_preset("tiny-fattree3")
def tiny_fattree3() -> Machine:
    return Machine(name="tiny-fattree3", topology=FatTree.from_radix(radix=4, levels=3),
                   description="3-level radix-4 fat-tree: 4 pods of 2 leaves and 2 L2, 4 spines, 16 nodes", **_TINY_NODE)


@_preset("tiny-torus")
def tiny_torus() -> Machine:
    return Machine(name="tiny-torus", topology=Torus(dims=(4, 4, 4)),
                   description="4x4x4 torus, one node per router", **_TINY_NODE)


@_preset("tiny-mesh")
def tiny_mesh() -> Machine:
    return Machine(name="tiny-mesh", topology=Torus.mesh(dims=(4, 4), nodes_per_router=2),
                   description="4x4 mesh, two nodes per router", **_TINY_NODE)


@_preset("tiny-dragonfly")
def tiny_dragonfly() -> Machine:
    return Machine(name="tiny-dragonfly", topology=Dragonfly(a=4, p=2, h=2),
                   description="dragonfly a=4, p=2, h=2: 9 groups, 72 nodes", **_TINY_NODE)


__all__ = ["Machine", "PRESETS", "get_machine"]
