"""APH, MIND and hop-bytes against hand-computed small cases, and the closed-form pair sums
against the hop matrix on large node sets."""

from __future__ import annotations

import numpy as np
import pytest

from models.errors import TopologyError
from models.topology import Dragonfly, FatTree, Torus, aph, hop_bytes, mind


def test_aph_on_a_two_level_fattree_by_hand():
    t = FatTree.from_radix(radix=4, levels=2)  # leaves of 2 nodes
    assert aph(t, [0, 1]) == 0.0  # same leaf: no inter-switch hop
    # (0,1): 0, (0,2): 2, (1,2): 2
    assert aph(t, [0, 1, 2]) == pytest.approx(4 / 3)
    assert aph(t, [0, 2, 4, 6]) == pytest.approx(2.0)
    assert aph(t, [5]) == 0.0 and aph(t, []) == 0.0


def test_aph_on_a_three_level_fattree_by_hand():
    t = FatTree.from_radix(radix=4, levels=3)  # 2 nodes/leaf, 4 nodes/pod
    # (0,2): same pod, other leaf = 2; (0,4) and (2,4): other pod = 4.
    assert aph(t, [0, 2, 4]) == pytest.approx(10 / 3)
    # All 16 nodes: per node, 1 same-leaf (0), 2 same-pod (2), 12 other-pod (4) -> 56/15.
    assert aph(t, np.arange(16)) == pytest.approx((2 * 2 + 12 * 4) / 15)


def test_mind_on_a_torus_by_hand():
    t = Torus(dims=(4, 4, 4))
    nodes = [t.node_at((0, 0, 0)), t.node_at((2, 0, 0)), t.node_at((1, 3, 3))]
    # distances: 2 (half the ring), 1+1+1, 1+1+1
    assert mind(t, nodes) == pytest.approx(8 / 3)
    assert aph(t, nodes) == mind(t, nodes)
    m = Torus.mesh(dims=(4,))
    assert mind(m, [0, 3]) == 3.0 and mind(Torus(dims=(4,)), [0, 3]) == 1.0
    # Two nodes per router: nodes sharing a router are 0 apart.
    t2 = Torus(dims=(4, 4), nodes_per_router=2)
    assert mind(t2, [0, 1, 2]) == pytest.approx((0 + 1 + 1) / 3)


def test_aph_on_a_dragonfly_by_hand():
    t = Dragonfly(a=4, p=2, h=2)
    # Node 0: group 0 router 0, which holds the link to group 1 landing on group 1's router 0
    # (node 8). Node 10 is on group 1's router 1.
    assert t.hops(0, 8) == 1 and t.hops(0, 10) == 2 and t.hops(8, 10) == 1
    assert aph(t, [0, 8, 10]) == pytest.approx(4 / 3)
    # Node 2 (group 0 router 1) to node 10: local, global, local.
    assert t.hops(2, 10) == 3


def test_hop_bytes():
    t = Dragonfly(a=4, p=2, h=2)
    assert hop_bytes(t, [0, 0], [8, 10], [100, 10]) == 120.0
    assert hop_bytes(t, 2, [10, 3], 1000) == 3000.0  # broadcasting; 2 -> 3 is on one router
    ft = FatTree.from_radix(radix=4, levels=2)
    assert hop_bytes(ft, [0, 0, 0], [1, 2, 0], [5, 7, 11]) == 14.0
    with pytest.raises(TopologyError, match="nbytes"):
        hop_bytes(ft, [0], [1], [-1])


@pytest.mark.parametrize(
    "topo",
    [
        FatTree.from_radix(radix=12, levels=3, pods=6),
        Torus(dims=(6, 5, 4), wrap=(True, False, True), nodes_per_router=2),
        Dragonfly(a=6, p=2, h=2, g=7, cascade=(2, 3)),
        Dragonfly(a=6, p=2, h=3, g=5),
    ],
    ids=["fattree", "torus", "dragonfly-cascade", "dragonfly-multi"],
)
def test_closed_form_pair_sums_match_the_hop_matrix(topo):
    rng = np.random.default_rng(2)
    for size in (2, 17, 150, topo.n_nodes):
        nodes = rng.permutation(topo.n_nodes)[:size]
        n = len(nodes)
        hm = topo.hop_matrix(nodes)
        expect = np.triu(hm, 1).sum() / (n * (n - 1) / 2)
        assert aph(topo, nodes) == pytest.approx(expect)
        assert mind(topo, nodes) == pytest.approx(expect)


def test_aph_of_a_whole_large_machine_is_fast_and_exact():
    t = Torus(dims=(8, 12, 16, 16, 2))
    # Mean ring distance: k even -> k/4; k = 2 wrapped -> 1/2; over distinct pairs.
    n = t.n_nodes
    ordered = sum(k / 4 for k in (8, 12, 16, 16, 2)) * n * n
    assert aph(t, np.arange(n)) == pytest.approx(ordered / (n * (n - 1)))
