"""Dragonflies: global link arrangements join every pair of groups, cascade groups, minimal,
Valiant and UGAL-L routing, and validation."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from models.errors import TopologyError
from models.topology import KIND_GLOBAL, KIND_LOCAL, Dragonfly

CONFIGS = [
    dict(a=4, p=2, h=2),
    dict(a=4, p=2, h=2, arrangement="relative"),
    dict(a=6, p=1, h=3, g=7),
    dict(a=6, p=1, h=3, g=7, global_links=1),
    dict(a=5, p=1, h=3, g=4, arrangement="relative"),
    dict(a=8, p=1, h=2, g=6, cascade=(2, 4)),
    dict(a=96, p=4, h=10, g=12, global_links=72, cascade=(6, 16), local_mult=(1, 3)),
]


def group_of_vertex(t: Dragonfly, v: np.ndarray) -> np.ndarray:
    return (v - t.n_nodes) // t.a


@pytest.mark.parametrize("kw", CONFIGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_every_group_pair_has_its_global_links(kw):
    t = Dragonfly(**kw)
    m = t.global_links
    gl = t.link_kind == KIND_GLOBAL
    src, dst = t.link_src[gl], t.link_dst[gl]
    pairs = Counter(zip(group_of_vertex(t, src).tolist(), group_of_vertex(t, dst).tolist()))
    assert all(g1 != g2 for g1, g2 in pairs)
    assert len(pairs) == t.g * (t.g - 1) and set(pairs.values()) == {m}
    # Each router uses at most h global ports, and every global link has its reverse.
    per_router = np.bincount(src - t.n_nodes, minlength=t.n_routers)
    assert per_router.max() <= t.h
    assert per_router.max() - per_router.min() <= 1  # spread evenly over the routers
    fwd = set(zip(src.tolist(), dst.tolist()))
    assert all((v, u) in fwd for u, v in fwd)
    for g1, g2 in ((0, t.g - 1), (t.g - 1, 0), (1, 2)):
        ids = t.global_links_between(g1, g2)
        assert len(ids) == m and (group_of_vertex(t, t.link_src[ids]) == g1).all() and (group_of_vertex(t, t.link_dst[ids]) == g2).all()


def test_default_group_count_and_canonical_sizes():
    t = Dragonfly(a=4, p=2, h=2)
    assert (t.g, t.global_links) == (9, 1)
    assert t.n_routers == 36 and t.n_nodes == 72
    assert t.n_links == 2 * 72 + 36 * 3 + 9 * 8
    assert t.diameter == 3 and t.bisection_links == 4 * 5


def test_absolute_arrangement_connects_ports_to_groups_in_order():
    t = Dragonfly(a=4, p=1, h=2)  # 9 groups, router x of group G has ports to peers 2x, 2x+1
    def peers(G, x):
        out = t.out_links(t.n_nodes + G * 4 + x)
        out = out[t.link_kind[out] == KIND_GLOBAL]
        return sorted(group_of_vertex(t, t.link_dst[out]).tolist())
    assert peers(0, 0) == [1, 2] and peers(0, 3) == [7, 8]
    assert peers(3, 0) == [0, 1] and peers(3, 1) == [2, 4] and peers(3, 3) == [7, 8]
    assert peers(8, 3) == [6, 7]


def test_relative_arrangement_is_circulant():
    t = Dragonfly(a=4, p=1, h=2, arrangement="relative")
    for G in range(9):
        for x in range(4):
            out = t.out_links(t.n_nodes + G * 4 + x)
            out = out[t.link_kind[out] == KIND_GLOBAL]
            assert sorted(group_of_vertex(t, t.link_dst[out]).tolist()) == sorted((G + q + 1) % 9 for q in (2 * x, 2 * x + 1))


def _all_pairs(t):
    s, d = np.meshgrid(np.arange(t.n_nodes), np.arange(t.n_nodes), indexing="ij")
    return s.ravel(), d.ravel()


def _route_groups(t, r):
    """Groups a route's router sequence passes through, in order, without repeats."""
    routers = [int(t.link_dst[r[0]])] + [int(t.link_dst[x]) for x in r[1:-1]]
    groups = [(v - t.n_nodes) // t.a for v in routers]
    return [g for i, g in enumerate(groups) if i == 0 or g != groups[i - 1]]


def test_minimal_routes_take_one_global_link_and_at_most_three_hops():
    t = Dragonfly(a=4, p=2, h=2)
    s, d = _all_pairs(t)
    off, links = t.routes(s, d)
    hops = np.diff(off) - 2
    hops[s == d] = 0
    assert hops.max() == 3
    nglob = np.add.reduceat((t.link_kind[links] == KIND_GLOBAL).astype(int), off[:-1][np.diff(off) > 0])
    diff_group = (t.group_of_node[s] != t.group_of_node[d])[np.diff(off) > 0]
    assert (nglob == diff_group).all()


def test_valiant_routes_have_at_most_five_router_hops_and_detour_via_a_third_group():
    t = Dragonfly(a=4, p=2, h=2, routing="valiant", seed=4)
    s, d = _all_pairs(t)
    for key in (0, 1, 12345):
        off, links = t.routes(s, d, np.full(len(s), key))
        hops = np.diff(off) - 2
        assert hops[s != d].max() <= 5
    inter = t.group_of_node[s] != t.group_of_node[d]
    for i in np.flatnonzero(inter)[::97]:
        r = t.route(int(s[i]), int(d[i]), 77)
        gs = _route_groups(t, r)
        assert len(gs) == 3 and gs[0] == t.group_of_node[s[i]] and gs[2] == t.group_of_node[d[i]]
        assert gs[1] not in (gs[0], gs[2])
    # The key selects the intermediate group: many keys reach every other group.
    mids = {_route_groups(t, t.route(0, 71, k))[1] for k in range(300)}
    assert mids == set(range(9)) - {0, 8}
    # Traffic inside a group stays minimal.
    assert t.route(0, 7, 5) == t.replace(routing="minimal").route(0, 7)


def test_cascade_groups_have_row_and_column_links():
    t = Dragonfly(a=6, p=1, h=2, g=5, cascade=(2, 3), local_mult=(1, 3), link_bw="5GB/s", global_bw="4GB/s")
    loc = t.link_kind == KIND_LOCAL
    u, v = t.link_src[loc] - t.n_nodes, t.link_dst[loc] - t.n_nodes
    assert ((u // 6) == (v // 6)).all()
    xu, xv = u % 6, v % 6
    same_row = xu // 3 == xv // 3
    same_col = xu % 3 == xv % 3
    assert (same_row ^ same_col).all()
    assert (t.link_bw[loc][same_row] == 5e9).all() and (t.link_bw[loc][same_col] == 15e9).all()
    assert loc.sum() == 5 * 6 * (2 + 1)
    assert (t.link_bw[t.link_kind == KIND_GLOBAL] == 4e9).all()
    # Within a group, off-row and off-column: row link first, then the column link.
    r = t.route(0, 5)  # router 0 (row 0, col 0) -> router 5 (row 1, col 2)
    mids = [int(t.link_dst[x]) - t.n_nodes for x in r[:-1]]
    assert mids == [0, 2, 5]
    assert t.hops(0, 5) == 2 and t.hops(0, 3) == 1 and t.hops(0, 2) == 1


def test_cascade_diameter_with_one_link_per_group_pair():
    t = Dragonfly(a=6, p=1, h=1, cascade=(2, 3))  # g = 7, m = 1
    assert t.global_links == 1 and t.diameter == 5


def test_parallel_global_links_share_minimal_traffic():
    t = Dragonfly(a=6, p=2, h=3, g=4)  # m = 6 links between each pair of groups
    assert t.global_links == 6
    src = t.nodes_of_group(0)
    dst = t.nodes_of_group(1)
    s, d = np.meshgrid(src, dst, indexing="ij")
    _, links = t.routes(s.ravel(), d.ravel())
    used = set(links[t.link_kind[links] == KIND_GLOBAL].tolist())
    assert used == set(t.global_links_between(0, 1).tolist())


def test_ugal_reads_only_source_router_ports_and_detours_under_load():
    t = Dragonfly(a=4, p=2, h=2, routing="ugal")
    s, d = 2, 70  # router 1 of group 0 -> router 35 of group 8
    src_router_v = t.n_nodes + int(t.node_router[s])
    rmin = t.route(s, d, 3)
    asked = []

    def idle(link):
        asked.append(link)
        return 0.0

    assert t.route_adaptive(s, d, 3, idle) == rmin
    assert asked and all(t.link_src[x] == src_router_v for x in asked)

    def congested(link):
        return 10.0 if link == rmin[1] else 0.0

    rv = t.route_adaptive(s, d, 3, congested)
    assert rv != rmin and rv == t.replace(routing="valiant").route(s, d, 3)
    assert len(_route_groups(t, rv)) == 3
    # Load on both first ports: compare queue x hops.
    val = t.replace(routing="valiant").route(s, d, 3)
    hm, hv = len(rmin) - 2, len(val) - 2
    assert t.route_adaptive(s, d, 3, lambda link: 1.0) == rmin  # 1*hm <= 1*hv
    assert t.is_adaptive
    assert t.route(s, d, 3) == rmin and t.routes([s], [d], [3])[1].tolist() == list(rmin)
    assert hm <= hv


def test_oblivious_routings_ignore_backlog():
    t = Dragonfly(a=4, p=2, h=2, routing="valiant")
    assert t.route_adaptive(2, 70, 9, lambda link: 1e9) == t.route(2, 70, 9)


def test_locality_units_are_groups():
    t = Dragonfly(a=4, p=2, h=2)
    assert (t.locality_units() == np.arange(36) // 4).all()
    ranks = t.partition(3)
    assert np.bincount(ranks, weights=t.router_nodes).tolist() == [24.0] * 3
    assert t.group_of_node[71] == 8 and t.group_of_router(5) == 1
    assert t.routers_of_group(2).tolist() == [8, 9, 10, 11]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(a=0, p=1, h=1), r"a \(routers per group\)"),
        (dict(a=4, p=1, h=2, g=10), r"g \(groups\) must be an integer in 1..9"),
        (dict(a=4, p=1, h=2, g=5, global_links=3), r"global_links \(links per group pair\) must be an integer in 1..2"),
        (dict(a=4, p=1, h=2, g=1, global_links=2), "single group"),
        (dict(a=4, p=1, h=2, cascade=(3, 2)), "rows \\* cols == a"),
        (dict(a=4, p=1, h=2, local_mult=(1, 3)), "needs cascade"),
        (dict(a=4, p=1, h=2, arrangement="palmtree"), "valid: absolute, relative"),
        (dict(a=4, p=1, h=2, routing="ecmp"), "valid: minimal, valiant, ugal"),
        (dict(a=4, p=1, h=0, g=2), r"g \(groups\)"),
        (dict(a=1, p=1, h=0), "at least 2 nodes"),
    ],
)
def test_invalid_parameters_raise(kwargs, match):
    with pytest.raises(TopologyError, match=match):
        Dragonfly(**kwargs)
