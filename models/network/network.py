"""A network attached to a simulator: NIC and router entities, placement and lookahead.

Usage::

    topo = get_machine("tiny-fattree").topology
    sim = Simulator(lookahead=network_lookahead(topo))
    net = Network(sim, topo, NetworkConfig(model="packet"), mem_bw=20e9)
    ...  # NetworkNode entities are sim.entity("node", i); subclass NetworkNode for hooks
    sim.run()
    stats = net.stats()

Placement for parallel runs: the topology partitions its routers over the ranks (a pod, a
dragonfly group or a torus slab per rank, balanced by node count) and every node lives with
its router. A router and its nodes form one locality group, so injection and ejection links
may be shorter than the lookahead; the lookahead is the minimum latency of router-to-router
links, which is what a conservative window may span. Results are identical for any number of
ranks: every tie is broken by the kernel's (time, entity, counter) key.
"""

from __future__ import annotations



import numpy as np

from pdes import ConfigError, Simulator
from pdes.placement import ByRanks

from ..topology import KIND_EJECT, KIND_INJECT, Topology
from .config import NetworkConfig
from .credits import CreditRouter
from .flow import SOLVER_TYPE, FlowSolver
from .node import NetworkNode
from .router import Router
from .state import NetState, NetworkStats, gather_stats

NODE_TYPE = "node"
ROUTER_TYPE = "router"


def network_lookahead(topology: Topology) -> float:
    """The lookahead for a network: the minimum router-to-router latency.

    Injection and ejection links stay inside a locality group, so only router-to-router
    links cross ranks and this bounds every crossing link's latency for any partition. It
    does not depend on the number of ranks (the layers above use ``sim.lookahead`` as a
    model delay, so a partition-dependent value would change results with P). A topology
    with a single router falls back to the minimum latency of any link.
    """
    kind = topology.link_kind
    inter = (kind != KIND_INJECT) & (kind != KIND_EJECT)
    lat = topology.link_lat[inter] if inter.any() else topology.link_lat
    return float(lat.min())


class Network:
    """The network of one simulation: registers the entities and owns the per-rank state.

    Args:
        sim: the simulator (its lookahead must not exceed :func:`network_lookahead`).
        topology: the machine's topology.
        config: transport model, chunk size and overheads.
        mem_bw: the node memory bandwidth used for intra-node copies when the config gives
            none (bytes/s).
        node_cls: the compute-node entity class (a :class:`NetworkNode` subclass); it is
            constructed as ``node_cls(network, *node_args)``.
    """

    def __init__(
        self,
        sim: Simulator,
        topology: Topology,
        config: NetworkConfig | None = None,
        *,
        mem_bw: float = 10e9,
        node_cls: type[NetworkNode] = NetworkNode,
        node_args: tuple = (),
    ):
        config = config or NetworkConfig()
        if not isinstance(topology, Topology):
            raise ConfigError(f"Network needs a Topology, got {type(topology).__name__}")
        if not (isinstance(node_cls, type) and issubclass(node_cls, NetworkNode)):
            raise ConfigError(f"node_cls must be a subclass of NetworkNode, got {node_cls!r}")
        la = network_lookahead(topology)
        if sim.lookahead > la:
            raise ConfigError(
                f"the simulator's lookahead {sim.lookahead!r} s exceeds the network's minimum "
                f"router-to-router latency {la!r} s; use network_lookahead(topology)"
            )
        if topology.routing in topology.PER_HOP_ROUTINGS and config.model != "ideal" and not (
                config.model == "packet" and config.buffers == "credit"):
            raise ConfigError(
                f"{topology.name} routing {topology.routing!r} chooses a port at every router from its credits: "
                f"it needs model='packet' with buffers='credit' (got model={config.model!r}, buffers={config.buffers!r}); "
                f"valid routings otherwise: {', '.join(r for r in topology.ROUTINGS if r not in topology.PER_HOP_ROUTINGS)}"
            )
        self.sim = sim
        self.topology = topology
        self.config = config
        n, r = topology.n_nodes, topology.n_routers

        # Placements as functions of the rank count, so that the kernel's statistics mode
        # (predict_ranks) can place the machine for counts other than this run's.
        parts: dict[int, np.ndarray] = {}

        def routers_on(p: int) -> np.ndarray:
            if p not in parts:
                if p == 1 or topology.routing in topology.GLOBAL_STATE_ROUTINGS:
                    # An oracle routing reads ports anywhere: every port must be on the deciding rank.
                    parts[p] = np.zeros(r, dtype=np.int32)
                else:
                    parts[p] = topology.partition(p)
            return parts[p]

        router_rank = routers_on(sim.size)
        node_router = topology.node_router
        packet = config.model == "packet"
        # Entity ids: nodes first, then routers (if any), after whatever the model added.
        node_off = sim.n_entities
        router_off = node_off + n
        v = topology.link_dst.astype(np.int64)
        link_dst_eid = np.where(v < n, node_off + v, router_off + (v - n))
        u = topology.link_src.astype(np.int64)
        link_src_eid = np.where(u < n, node_off + u, router_off + (u - n))
        self.state = NetState(topology, config, link_dst_eid=link_dst_eid, mem_bw=mem_bw, link_src_eid=link_src_eid)
        self.router_rank = router_rank
        self.node_rank = router_rank[node_router]
        # The flow model's solver takes the id after the nodes (where routers would be).
        self.solver_eid = router_off if config.model == "flow" else -1
        self.nodes = sim.add_entities(
            node_cls, n, self, *node_args, name=NODE_TYPE,
            placement=ByRanks(lambda p: routers_on(p)[node_router]), group=lambda i: ("net", int(node_router[i])),
        )
        self.routers = []
        if packet:
            router_cls = CreditRouter if self.state.credits is not None else Router
            self.routers = sim.add_entities(
                router_cls, r, self, name=ROUTER_TYPE, placement=ByRanks(routers_on), group=lambda i: ("net", i),
            )
        cs = self.state.credits
        if cs is not None and not sim.predict_ranks:
            # Credits for links whose sender is on this rank may stay deferred (see
            # models.network.credits); the statistics mode counts every event, so not there.
            src_rank = np.where(u < n, router_rank[node_router[np.minimum(u, n - 1)]], router_rank[np.maximum(u - n, 0)])
            cs.enable_deferred(sim, (src_rank == sim.rank).tolist())
        self.node_offset = node_off
        self.solver: FlowSolver | None = None
        if config.model == "flow":
            self.solver = sim.add_entity(FlowSolver, self, name=SOLVER_TYPE, rank=0)

    def node_eid(self, node: int) -> int:
        """Kernel entity id of compute node ``node``."""
        return self.node_offset + node

    def stats(self) -> NetworkStats:
        """Traffic statistics of the run (call after ``sim.run()`` on every rank)."""
        sim = self.sim
        st = self.state
        mine = _StateView(st)
        if sim.comm is not None and sim.size > 1:
            views = sim.comm.allgather(mine)
        else:
            views = [mine]
        out = gather_stats(views, sim.stats.end_time)
        if self.config.model == "flow":
            # A flow never runs a link above its capacity: its bytes over its bandwidth is the
            # time the link would have been busy at full rate, as in the packet model.
            out.link_busy = out.link_bytes / self.topology.link_bw
        elif self.config.model == "ideal":
            # No contention: a link is busy for exactly its bytes over its bandwidth. (Computed
            # here rather than summed per message, so the figure is the same for any P.)
            # Utilization is not defined (no link is ever occupied): marked, never bytes/bw/duration.
            out.link_busy = out.link_bytes / self.topology.link_bw
            out.contention = False
        return out


class _StateView:
    """The picklable part of a NetState (what stats() gathers across ranks)."""

    def __init__(self, st: NetState):
        self.bytes = st.bytes
        self.busy = st.busy
        self.maxq = st.maxq
        self.jobs = st.jobs
        self.messages = st.messages
        self.chunks = st.chunks
        self.intra_messages = st.intra_messages
        self.flows = st.flows
        self.recomputes = st.recomputes
        self.touched = st.touched
        self.touched_max = st.touched_max
        self.local = st.local
        self.stalls = st.credits.stalls if st.credits is not None else 0


__all__ = ["Network", "NetworkNode", "Router", "network_lookahead", "NODE_TYPE", "ROUTER_TYPE"]
