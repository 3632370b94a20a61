"""Fat-trees: PGFT shapes and counts, pods and leaves, D-mod-k, ECMP, adaptive and explicit
routing, bisection and validation."""

from __future__ import annotations

import numpy as np
import pytest

from models.errors import TopologyError
from models.topology import KIND_DOWN, KIND_UP, FatTree
from tests_support import assert_route_summaries_match_routes


def max_link_load(t: FatTree, src: np.ndarray, dst: np.ndarray) -> int:
    _, links = t.routes(src, dst)
    return int(np.bincount(links, minlength=t.n_links).max())


# ----------------------------------------------------------------------------- shapes
def test_cab_shape_from_radix():
    t = FatTree.from_radix(radix=36, levels=3, pods=4)
    assert (t.down, t.up, t.parallel) == ((18, 18, 4), (1, 18, 2), (1, 1, 9))
    assert t.n_nodes == 1296 and t.switches_per_level() == (72, 72, 36) and t.n_routers == 180
    # Node links, leaf-L2 links and L2-spine links, each both ways.
    assert t.n_links == 2 * 1296 + 2 * 72 * 18 + 2 * 72 * 18
    assert (t.n_pods, t.nodes_per_leaf, t.leaves_per_pod, t.uplinks_per_leaf, t.n_spines) == (4, 18, 18, 18, 36)
    # Every switch uses exactly its 36 ports.
    deg = np.bincount(t.link_src[t.link_src >= t.n_nodes] - t.n_nodes, minlength=t.n_routers)
    assert (deg == 36).all()


def test_radix_form_of_the_constructor():
    a = FatTree(radix=36, levels=3, pods=4)
    assert a == FatTree.from_radix(radix=36, levels=3, pods=4)
    assert a == FatTree(levels=3, down=(18, 18, 4), up=(1, 18, 2), parallel=(1, 1, 9), radix=36)
    assert (a.pods, a.taper) == (4, 1.0)
    assert a.replace(pods=8).n_nodes == 2592  # Pinot from Cab
    assert FatTree(radix=8, levels=2, taper=3.0).taper == 3.0
    assert FatTree.kary_ntree(k=2, n=3).pods == 2  # explicit shapes report their pods too
    for kwargs, match in (
        (dict(levels=3), "give the shape"),
        (dict(levels=3, down=(2, 2, 2)), "down and up go together"),
        (dict(levels=2, down=(2, 2), up=(1, 2), pods=2), "leave them out"),
        (dict(radix=8, levels=2, parallel=(1, 2)), "parallel goes with an explicit shape"),
    ):
        with pytest.raises(TopologyError, match=match):
            FatTree(**kwargs)


def test_kary_ntree_counts():
    t = FatTree.kary_ntree(k=4, n=3)
    assert t.n_nodes == 64 and t.switches_per_level() == (16, 16, 16)
    assert t.n_links == 2 * 64 * 3
    assert t.diameter == 4


def test_two_level_from_radix():
    t = FatTree.from_radix(radix=8, levels=2)
    assert t.n_nodes == 32 and t.n_leaves == 8 and t.n_spines == 4
    assert t.n_pods == 8 and t.leaves_per_pod == 1  # in a 2-level tree a pod is a leaf
    assert t.diameter == 2 and t.bisection_links == 16


def test_one_level_tree_is_a_crossbar():
    t = FatTree.from_radix(radix=6, levels=1)
    assert t.n_nodes == 6 and t.n_routers == 1 and t.diameter == 0
    assert t.route(0, 5) == (0, 6 + 5)
    assert t.hops(0, 5) == 0


def test_taper_oversubscribes_the_leaves():
    t = FatTree.from_radix(radix=36, levels=2, taper=2.0)
    assert t.nodes_per_leaf == 24 and t.uplinks_per_leaf == 12
    assert t.n_nodes == 24 * 36
    # Half of the nodes send through half as many uplinks: 2:1.
    assert t.bisection_links == t.n_nodes // 2 // 2
    full = FatTree.from_radix(radix=36, levels=2)
    assert full.bisection_links == full.n_nodes // 2


def test_three_level_radix44_has_10648_nodes():
    t = FatTree.from_radix(radix=44, levels=3, pods=22)
    assert t.n_nodes == 10648 and t.switches_per_level() == (484, 484, 242)
    assert t.parallel == (1, 1, 2)


def test_pods_and_leaves_accessors():
    t = FatTree.from_radix(radix=8, levels=3, pods=4)  # 4 nodes/leaf, 4 leaves/pod, 4 L2/pod
    assert t.nodes_per_pod == 16
    assert t.leaf_of_node[17] == 4 and t.pod_of_node[17] == 1
    assert t.nodes_of_leaf(4).tolist() == [16, 17, 18, 19]
    assert t.nodes_of_pod(1).tolist() == list(range(16, 32))
    assert t.leaves_of_pod(1).tolist() == [4, 5, 6, 7]
    l2 = t.l2_of_pod(1)
    assert len(l2) == 4 and all(t.switch_level(int(r)) == 2 for r in l2)
    # Each leaf of the pod is wired to each L2 of the pod.
    for leaf in t.leaves_of_pod(1):
        targets = {t.up_port_target(int(leaf), q) for q in range(t.uplinks_per_leaf)}
        assert targets == set(l2.tolist())
        ups = t.uplinks(int(leaf))
        assert (t.link_kind[ups] == KIND_UP).all() and (t.link_src[ups] == t.n_nodes + leaf).all()
    assert (t.spines() == t.routers_at_level(3)).all() and len(t.spines()) == t.n_spines
    for sp in t.spines():
        assert len(t.uplinks(int(sp))) == 0
        dn = t.downlinks(int(sp))
        assert (t.link_kind[dn] == KIND_DOWN).all() and len(dn) == 8
    assert len(t.downlinks(0)) == 4  # ejection links of the leaf's nodes
    with pytest.raises(TopologyError, match="pod"):
        t.nodes_of_pod(4)
    with pytest.raises(TopologyError, match="L2"):
        FatTree.from_radix(radix=8, levels=2).l2_of_pod(0)


def test_locality_units_are_pods_and_spines():
    t = FatTree.from_radix(radix=8, levels=3, pods=4)
    u = t.locality_units()
    for pod in range(4):
        assert (u[t.leaves_of_pod(pod)] == pod).all() and (u[t.l2_of_pod(pod)] == pod).all()
    assert sorted(u[t.spines()].tolist()) == list(range(4, 4 + t.n_spines))
    ranks = t.partition(4)
    for pod in range(4):
        assert len(set(ranks[t.leaves_of_pod(pod)]) | set(ranks[t.l2_of_pod(pod)])) == 1
    assert np.bincount(ranks[t.spines()], minlength=4).tolist() == [t.n_spines // 4] * 4


# ----------------------------------------------------------------------------- routing
def test_dmodk_picks_uplink_by_destination():
    t = FatTree.from_radix(radix=4, levels=2)  # 2 nodes/leaf, 4 leaves, 2 spines
    for d in (2, 3, 5, 6):
        r = t.route(0, d)
        assert len(r) == 4
        spine = int(t.link_dst[r[1]]) - t.n_nodes
        assert spine == t.n_leaves + d % 2
    assert t.route(0, 1) == (0, t.n_nodes + 1)  # same leaf: up to the leaf and down
    assert t.hops(0, 1) == 0 and t.hops(0, 2) == 2


@pytest.mark.parametrize(
    "tree",
    [
        FatTree.from_radix(radix=8, levels=2),
        FatTree.from_radix(radix=12, levels=2),
        FatTree.from_radix(radix=8, levels=2, pods=4),
        FatTree.kary_ntree(k=4, n=3),
        FatTree.from_radix(radix=12, levels=3, pods=4),
    ],
    ids=["radix8-2l", "radix12-2l", "radix8-2l-parallel", "4ary3tree", "radix12-3l-parallel"],
)
def test_dmodk_shift_permutations_have_max_link_load_one(tree):
    N = tree.n_nodes
    src = np.arange(N)
    for shift in range(1, N):
        assert max_link_load(tree, src, (src + shift) % N) == 1, f"shift {shift}"


def test_ecmp_is_deterministic_spreads_and_depends_on_seed_and_key():
    t = FatTree.from_radix(radix=8, levels=3, pods=4, routing="ecmp", seed=1)
    s, d = 0, t.n_nodes - 1
    routes = {t.route(s, d, k) for k in range(400)}
    assert len(routes) == 16  # 4 L2 choices x 4 spine choices
    assert t.route(s, d, 7) == t.replace().route(s, d, 7)
    other = t.replace(seed=2)
    assert [other.route(s, d, k) for k in range(20)] != [t.route(s, d, k) for k in range(20)]
    # D-mod-k ignores the key.
    dm = t.replace(routing="dmodk")
    assert len({dm.route(s, d, k) for k in range(50)}) == 1


def test_route_via_explicit_ports():
    t = FatTree.from_radix(radix=8, levels=3, pods=4)
    s, d = 0, 40  # pods 0 and 2
    for q2 in range(4):
        for q3 in range(4):
            r = t.route_via(s, d, (q2, q3))
            leaf_up, l2_up = r[1], r[2]
            assert leaf_up == t.uplinks(0)[q2] and l2_up == t.uplinks(int(t.link_dst[leaf_up]) - t.n_nodes)[q3]
            assert len(r) == 6 and t.link_dst[r[-1]] == d
    # Same pod: only the leaf uplink is used; extra ports are ignored.
    r = t.route_via(0, 5, (3, 0))
    assert len(r) == 4 and r[1] == t.uplinks(0)[3]
    assert t.route_via(0, 40, (1, 2)) == t.route_via(0, 40, [1, 2, 0])
    with pytest.raises(TopologyError, match="up ports"):
        t.route_via(0, 40, (1,))
    with pytest.raises(TopologyError, match=r"up_ports\[1\]"):
        t.route_via(0, 40, (1, 4))


def test_route_restricted_avoids_forbidden_links():
    t = FatTree.from_radix(radix=8, levels=3, pods=4)
    s, d = 0, 40
    allowed = np.ones(t.n_links, dtype=bool)
    pref = t.route(s, d)
    assert t.route_restricted(s, d, allowed) == pref
    allowed[pref[2]] = False  # the preferred L2 -> spine link
    r = t.route_restricted(s, d, allowed)
    assert r is not None and pref[2] not in r and allowed[list(r)].all()
    # Only leaf uplink 2 and spine uplinks of its L2 ... allowed: routes must use it.
    allowed = np.ones(t.n_links, dtype=bool)
    ups = t.uplinks(0)
    allowed[ups] = False
    allowed[ups[2]] = True
    r = t.route_restricted(s, d, allowed)
    assert r[1] == ups[2]
    allowed[ups[2]] = False
    assert t.route_restricted(s, d, allowed) is None
    # A collection of ids works too.
    assert t.route_restricted(s, d, set(pref)) == pref


def test_adaptive_picks_least_backlogged_source_uplink_only():
    t = FatTree.from_radix(radix=8, levels=3, pods=4, routing="adaptive")
    s, d = 1, 50
    leaf_v = t.n_nodes + int(t.node_router[s])
    ups = t.uplinks(int(t.node_router[s]))
    asked = []

    def backlog(link):
        asked.append(link)
        return {int(ups[0]): 5.0, int(ups[1]): 1.0, int(ups[2]): 0.5, int(ups[3]): 0.5}[link]

    r = t.route_adaptive(s, d, 0, backlog)
    assert all(t.link_src[x] == leaf_v for x in asked) and len(asked) == 4
    dmodk_q = d % 4
    # Tie between ports 2 and 3: the D-mod-k port wins if it is among them, else the first
    # in cyclic order from it.
    expect = dmodk_q if dmodk_q in (2, 3) else (2 if (2 - dmodk_q) % 4 < (3 - dmodk_q) % 4 else 3)
    assert r[1] == ups[expect]
    # Above the leaf the route is D-mod-k's for that L2 choice.
    assert r == t.route_via(s, d, (expect, (d // 4) % 4))
    # With equal backlog the D-mod-k route is kept.
    assert t.route_adaptive(s, d, 0, lambda link: 1.0) == t.route(s, d)
    assert t.is_adaptive and not t.replace(routing="dmodk").is_adaptive


def test_bisection_and_diameter_closed_forms():
    t = FatTree.from_radix(radix=36, levels=3, pods=4)
    assert t.bisection_links == 648 and t.bisection_bandwidth == pytest.approx(648 * 4e9)
    assert t.diameter == 4
    tapered3 = FatTree.from_radix(radix=12, levels=3, taper=2.0, pods=4)  # 8 down, 4 up at leaves
    assert tapered3.bisection_links == tapered3.n_nodes // 4
    # A tree whose top level has a single child only climbs to level 2.
    t2 = FatTree(levels=3, down=(2, 3, 1), up=(1, 2, 2))
    assert t2.diameter == 2


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(levels=0, down=(), up=()), "levels"),
        (dict(levels=2, down=(4,), up=(1, 2)), "down must have 2 entries"),
        (dict(levels=2, down=(4, 0), up=(1, 2)), r"down\[1\]"),
        (dict(levels=2, down=(4, 4), up=(2, 2)), r"up\[0\]"),
        (dict(levels=2, down=(4, 4), up=(1, 2), parallel=(2, 1)), r"parallel\[0\]"),
        (dict(levels=2, down=(4, 4), up=(1, 2), routing="ospf"), "routing 'ospf'; valid: dmodk, ecmp, adaptive"),
        (dict(levels=2, down=(4, 4), up=(1, 2), radix=5), "level-1 switch needs 6 ports"),
        (dict(levels=1, down=(1,), up=(1,)), "at least 2 nodes"),
        (dict(levels=2, down=(4, 4), up=(1, 2), link_bw=-1), "link_bw"),
        (dict(levels=2, down=(4, 4), up=(1, 2), seed=-1), "seed"),
    ],
)
def test_invalid_parameters_raise_with_the_valid_range(kwargs, match):
    with pytest.raises(TopologyError, match=match):
        FatTree(**kwargs)


def test_from_radix_validation():
    with pytest.raises(TopologyError, match=r"valid tapers for radix 36 \(node:uplink ports\): 1 \(18:18\), 1.118 \(19:17\)"):
        FatTree.from_radix(radix=36, taper=1.1)
    with pytest.raises(TopologyError, match="pods"):
        FatTree.from_radix(radix=8, levels=3, pods=9)
    with pytest.raises(TopologyError, match="levels"):
        FatTree.from_radix(radix=8, levels=4)
    with pytest.raises(TopologyError, match="even radix"):
        FatTree.from_radix(radix=9, levels=3, taper=2.0)
    with pytest.raises(TopologyError, match="taper"):
        FatTree.from_radix(radix=8, taper=0.5)


@pytest.mark.parametrize("kw", [
    dict(levels=2, down=(4, 3), up=(1, 2)),
    dict(levels=3, down=(2, 2, 3), up=(1, 2, 2), inject_bw="8GB/s"),
    dict(levels=3, down=(2, 2, 3), up=(1, 2, 2), parallel=(1, 2, 1), routing="adaptive"),
    dict(levels=1, down=(5,), up=(1,)),
])
def test_route_summary_is_the_length_bandwidth_and_ejection_of_the_route(kw):
    assert_route_summaries_match_routes(FatTree(**kw))
