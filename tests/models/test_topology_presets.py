"""Machine presets: node, router and link counts, diameters and bisections from the
published shapes; the Machine value object; the registry."""

from __future__ import annotations

import numpy as np
import pytest

from models.errors import TopologyError
from models.presets import PRESETS, Machine, get_machine
from models.topology import KIND_GLOBAL, KIND_LOCAL, Dragonfly, FatTree, Torus

# name: (family, nodes, routers, directed links, diameter)
EXPECTED = {
    # 72 leaves + 72 L2 + 36 spines; node, leaf-L2 and L2-spine links both ways.
    "cab": (FatTree, 1296, 180, 2 * (1296 + 72 * 18 + 72 * 18), 4),
    "pinot": (FatTree, 2592, 144 + 144 + 108, 2 * (2592 + 144 * 18 + 144 * 18), 4),
    "fattree44": (FatTree, 10648, 484 + 484 + 242, 2 * (10648 + 484 * 22 + 484 * 22), 4),
    # 2 node links per node + 6 torus links per router.
    "cielo": (Torus, 9216, 4608, 2 * 9216 + 6 * 4608, 8 + 6 + 12),
    "hector": (Torus, 2880, 1440, 2 * 2880 + 6 * 1440, 7 + 3 + 8),
    "mira": (Torus, 49152, 49152, 2 * 49152 + 10 * 49152, 4 + 6 + 8 + 8 + 1),
    "mira-midplane": (Torus, 512, 512, 2 * 512 + 10 * 512, 2 + 2 + 2 + 2 + 1),
    # 96 routers per group with 15 row + 5 column links; 72 (theta) or 12 (edison) global
    # links per group pair.
    "theta": (Dragonfly, 4608, 1152, 2 * 4608 + 1152 * 20 + 12 * 11 * 72, 4),
    "edison": (Dragonfly, 5760, 1440, 2 * 5760 + 1440 * 20 + 15 * 14 * 12, 4),
    "tiny-fattree": (FatTree, 8, 6, 2 * (8 + 4 * 2), 2),
    "tiny-fattree3": (FatTree, 16, 20, 2 * (16 + 8 * 2 + 8 * 2), 4),
    "tiny-torus": (Torus, 64, 64, 2 * 64 + 6 * 64, 6),
    "tiny-mesh": (Torus, 32, 16, 2 * 32 + 2 * 2 * 3 * 4, 6),
    "tiny-dragonfly": (Dragonfly, 72, 36, 2 * 72 + 36 * 3 + 9 * 8, 3),
}


def test_every_preset_is_covered():
    assert set(PRESETS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_counts_and_diameter(name):
    fam, nodes, routers, links, diam = EXPECTED[name]
    m = get_machine(name)
    t = m.topology
    assert isinstance(m, Machine) and m.name == name and isinstance(t, fam)
    assert (t.n_nodes, t.n_routers, t.n_links, t.diameter) == (nodes, routers, links, diam)
    assert m.description and m.citation
    assert m.flops_per_node > 0 and m.mem_bw_per_node > 0 and m.cores_per_node >= 1
    assert (t.link_lat > 0).all()
    d = m.describe()
    assert d["nodes"] == nodes and d["network"]["links"] == links


def test_published_shapes():
    cab = get_machine("cab").topology
    assert (cab.nodes_per_leaf, cab.leaves_per_pod, len(cab.l2_of_pod(0)), cab.n_pods, cab.n_spines) == (18, 18, 18, 4, 36)
    assert cab.bisection_links == 648
    cielo = get_machine("cielo").topology
    assert cielo.dims == (16, 12, 24) and cielo.nodes_per_router == 2 and cielo.wrap == (True,) * 3
    assert cielo.dim_bw[0] == cielo.dim_bw[2] == 2 * cielo.dim_bw[1]
    assert get_machine("cielo").cores_per_node == 16
    hector = get_machine("hector").topology
    assert hector.dims == (15, 6, 16) and hector.nodes_per_router == 2
    mira = get_machine("mira").topology
    assert mira.dims == (8, 12, 16, 16, 2) and mira.n_nodes == 49152
    assert get_machine("mira-midplane").topology.n_nodes == 512
    theta = get_machine("theta").topology
    assert (theta.a, theta.p, theta.h, theta.g, theta.cascade, theta.global_links) == (96, 4, 10, 12, (6, 16), 72)
    loc = theta.link_kind == KIND_LOCAL
    assert sorted(set(theta.link_bw[loc].tolist())) == [5.25e9, 3 * 5.25e9]
    assert set(theta.link_bw[theta.link_kind == KIND_GLOBAL].tolist()) == {4.7e9}


def test_tiny_presets_are_small():
    for name in ("tiny-fattree", "tiny-fattree3", "tiny-torus", "tiny-mesh", "tiny-dragonfly"):
        assert get_machine(name).n_nodes <= 128


def test_unknown_preset_lists_valid_names():
    with pytest.raises(TopologyError, match="unknown machine 'nope'; valid: cab, pinot"):
        get_machine("nope")


def test_machine_validation_and_units():
    t = Torus(dims=(4,))
    m = Machine("m", t, 8, "1.5TF", "100GB/s", "d", "c")
    assert m.flops_per_node == 1.5e12 and m.mem_bw_per_node == 1e11
    assert m.n_cores == 32 and m.peak_flops == pytest.approx(6e12)
    kw = dict(name="m", topology=t, cores_per_node=8, flops_per_node=1e9, mem_bw_per_node=1e9)
    for bad, match in (
        (dict(cores_per_node=0), "cores_per_node"),
        (dict(flops_per_node="lots"), "flops_per_node"),
        (dict(mem_bw_per_node=-1), "mem_bw_per_node"),
        (dict(topology="torus"), "topology"),
        (dict(name=""), "name"),
    ):
        with pytest.raises(TopologyError, match=match):
            Machine(**{**kw, **bad})


def test_whole_machine_routes_are_valid_on_the_large_presets():
    rng = np.random.default_rng(5)
    for name in ("mira", "fattree44", "theta"):
        t = get_machine(name).topology
        s = rng.integers(0, t.n_nodes, 2000)
        d = rng.integers(0, t.n_nodes, 2000)
        off, links = t.routes(s, d)
        nz = np.diff(off) > 0
        assert (t.link_src[links[off[:-1][nz]]] == s[nz]).all()
        assert (t.link_dst[links[off[1:][nz] - 1]] == d[nz]).all()
        inner = np.ones(len(links), dtype=bool)
        inner[off[1:][nz] - 1] = False
        idx = np.flatnonzero(inner)
        assert (t.link_dst[links[idx]] == t.link_src[links[idx + 1]]).all()
        assert ((np.diff(off) - 2)[nz] == t.hops_many(s, d)[nz]).all()
