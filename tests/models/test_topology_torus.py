"""Tori and meshes: coordinates, links, dimension-order routing (shorter direction, ties go
+, mesh dimensions), per-dimension bandwidth, diameter, bisection and validation."""

from __future__ import annotations

import numpy as np
import pytest

from models.errors import TopologyError
from models.topology import KIND_LOCAL, Torus
from tests_support import assert_route_summaries_match_routes


def router_path(t: Torus, s: int, d: int) -> list[tuple[int, ...]]:
    """Grid coordinates of the routers a route visits."""
    r = t.route(s, d)
    routers = [int(t.link_dst[r[0]]) - t.n_nodes] + [int(t.link_dst[x]) - t.n_nodes for x in r[1:-1]]
    return [tuple(int(c) for c in t.coords_of_router(x)) for x in routers]


def test_counts_and_numbering():
    t = Torus(dims=(4, 3, 5), nodes_per_router=2)
    assert t.n_routers == 60 and t.n_nodes == 120
    assert t.n_links == 2 * 120 + 60 * 6
    assert t.coords_of_node(2 * (1 + 4 * 2 + 12 * 3)).tolist() == [1, 2, 3]
    assert t.node_at((1, 2, 3), 1) == 2 * 45 + 1
    assert t.router_at((3, 2, 4)) == 59
    assert t.coords_of_node([[0, 1], [2, 3]]).shape == (2, 2, 3)
    with pytest.raises(TopologyError, match=r"coords\[1\]"):
        t.router_at((0, 3, 0))


def test_tie_of_half_the_ring_goes_plus():
    t = Torus(dims=(4,))
    assert router_path(t, 0, 2) == [(0,), (1,), (2,)]
    assert router_path(t, 2, 0) == [(2,), (3,), (0,)]
    assert router_path(t, 1, 3) == [(1,), (2,), (3,)]
    assert router_path(t, 0, 3) == [(0,), (3,)]  # shorter way round: minus
    assert router_path(t, 3, 0) == [(3,), (0,)]  # shorter way round: plus through the wrap
    t3 = Torus(dims=(6, 4, 8))
    s, d = t3.node_at((5, 3, 6)), t3.node_at((2, 1, 2))  # offsets 3 = 6/2, 2 = 4/2, 4 = 8/2
    path = router_path(t3, s, d)
    assert path == [(5, 3, 6), (0, 3, 6), (1, 3, 6), (2, 3, 6), (2, 0, 6), (2, 1, 6), (2, 1, 7), (2, 1, 0), (2, 1, 1), (2, 1, 2)]


def test_dimension_order_corrects_dimension_zero_first():
    t = Torus(dims=(5, 5, 5))
    path = router_path(t, t.node_at((0, 0, 0)), t.node_at((2, 1, 4)))
    assert path == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (2, 1, 0), (2, 1, 4)]


def test_mesh_has_no_wrap_links_and_routes_straight():
    t = Torus.mesh(dims=(4, 3))
    rl = t.link_kind == KIND_LOCAL
    cs = t.coords_of_router(t.link_src[rl] - t.n_nodes)
    cd = t.coords_of_router(t.link_dst[rl] - t.n_nodes)
    diff = np.abs(cs - cd)
    assert (diff.sum(axis=1) == 1).all()  # neighbours only: no 0 <-> k-1 wrap links
    assert rl.sum() == 2 * (3 * 3 + 4 * 2)
    assert t.link_id(t.router_at((3, 0)), 0, +1) == -1 and t.link_id(t.router_at((0, 0)), 0, -1) == -1
    assert router_path(t, t.node_at((0, 0)), t.node_at((3, 0))) == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert t.hops(t.node_at((0, 0)), t.node_at((3, 2))) == 5
    assert t.diameter == 5


def test_mixed_wrap_per_dimension():
    t = Torus(dims=(4, 4), wrap=(True, False))
    assert t.hops(t.node_at((0, 0)), t.node_at((3, 3))) == 1 + 3
    assert t.link_id(t.router_at((3, 0)), 0, +1) >= 0  # torus dimension wraps
    assert t.link_id(t.router_at((0, 3)), 1, +1) == -1  # mesh dimension does not
    assert t.diameter == 2 + 3
    assert router_path(t, t.node_at((0, 3)), t.node_at((3, 0))) == [(0, 3), (3, 3), (3, 2), (3, 1), (3, 0)]


def test_size_two_wrapped_dimension_has_both_links():
    t = Torus(dims=(2, 3), wrap=True)
    r0, r1 = t.router_at((0, 0)), t.router_at((1, 0))
    plus, minus = t.link_id(r0, 0, +1), t.link_id(r0, 0, -1)
    assert plus != minus and t.link_dst[plus] == t.link_dst[minus] == t.n_nodes + r1
    assert router_path(t, t.node_at((0, 0)), t.node_at((1, 0))) == [(0, 0), (1, 0)]
    assert t.route(t.node_at((0, 0)), t.node_at((1, 0)))[1] == plus  # tie: + direction


def test_gemini_link_multiplicity_sets_dimension_bandwidth():
    t = Torus(dims=(4, 4, 4), nodes_per_router=2, link_bw="4.68GB/s", link_mult=(2, 1, 2), inject_bw="6GB/s")
    assert t.dim_bw == pytest.approx((9.36e9, 4.68e9, 9.36e9))
    r = t.router_at((1, 1, 1))
    for dim, bw in ((0, 9.36e9), (1, 4.68e9), (2, 9.36e9)):
        for sgn in (1, -1):
            assert t.link_bw[t.link_id(r, dim, sgn)] == pytest.approx(bw)
    assert t.link_bw[0] == 6e9
    per_dim = Torus(dims=(4, 4), link_bw=("1GB/s", "3GB/s"), link_lat=("50ns", "80ns"))
    assert per_dim.dim_bw == (1e9, 3e9) and per_dim.dim_lat == pytest.approx((5e-8, 8e-8))


def test_diameter_and_bisection_closed_forms():
    t = Torus(dims=(16, 12, 24), nodes_per_router=2, link_mult=(2, 1, 2), link_bw="4.68GB/s")
    assert t.diameter == 8 + 6 + 12
    # Cutting Z (24) severs 16 * 12 rings twice; Y ties on bandwidth with more links.
    assert t.bisection_links == 2 * 16 * 12
    assert t.bisection_bandwidth == pytest.approx(2 * 16 * 12 * 9.36e9)
    assert Torus(dims=(8, 8, 8)).bisection_links == 2 * 64
    assert Torus.mesh(dims=(8, 8)).bisection_links == 8
    bgq = Torus(dims=(4, 4, 4, 4, 2))
    assert bgq.diameter == 2 + 2 + 2 + 2 + 1 and bgq.bisection_links == 2 * 128


def test_locality_units_are_slabs_of_the_largest_dimension():
    t = Torus(dims=(4, 6, 3), nodes_per_router=2)
    assert t.slab_dim == 1
    u = t.locality_units()
    assert (u == t.coords_of_router(np.arange(t.n_routers))[:, 1]).all()
    ranks = t.partition(3)
    for slab in range(6):
        assert len(set(ranks[u == slab])) == 1
    assert np.bincount(ranks, weights=t.router_nodes).tolist() == [48.0] * 3
    # More ranks than slabs: slabs are split, nodes stay balanced.
    ranks = t.partition(12)
    assert np.bincount(ranks, weights=t.router_nodes).tolist() == [12.0] * 12
    assert Torus(dims=(4, 8, 8)).slab_dim == 2  # ties: the last largest dimension


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(dims=()), "at least one dimension"),
        (dict(dims=(4, 0)), r"dims\[1\]"),
        (dict(dims=(4, 4), wrap=(True,)), "wrap must be a bool or 2 bools"),
        (dict(dims=(4, 4), link_mult=(1, 0)), r"link_mult\[1\]"),
        (dict(dims=(4, 4), link_bw=("1GB/s",)), "one value or one per dimension"),
        (dict(dims=(4,), nodes_per_router=0), "nodes_per_router"),
        (dict(dims=(1,)), "at least 2 nodes"),
        (dict(dims=(4,), routing="ugal"), "valid: dor, adaptive"),
        (dict(dims=(4,), link_lat="-5ns"), "link_lat"),
    ],
)
def test_invalid_parameters_raise(kwargs, match):
    with pytest.raises(TopologyError, match=match):
        Torus(**kwargs)


@pytest.mark.parametrize("dims,wrap", [((4, 3, 5), True), ((4, 3, 5), False), ((5, 2, 6), (True, False, True)), ((2, 2), True), ((7,), True)])
def test_every_route_matches_the_vectorized_routes(dims, wrap):
    # A route's hops in one dimension are a slice of that dimension's ring: every pair,
    # both ways round (ties of k/2 included) and on meshes, against the vectorized routes.
    t = Torus(dims=dims, wrap=wrap, nodes_per_router=2)
    n = t.n_nodes
    src = np.repeat(np.arange(n), n)
    dst = np.tile(np.arange(n), n)
    keep = src != dst
    off, links = t.routes(src[keep], dst[keep])
    for i, (s, d) in enumerate(zip(src[keep].tolist(), dst[keep].tolist())):
        assert t.route(s, d) == tuple(links[off[i]:off[i + 1]].tolist())


@pytest.mark.parametrize("kw", [
    dict(dims=(5, 4, 3), nodes_per_router=2),
    dict(dims=(4, 1, 5), wrap=False),
    dict(dims=(6, 7), wrap=(True, False), link_bw=(1e9, 2e9)),
    dict(dims=(8,), nodes_per_router=3, link_mult=(2,)),
])
def test_route_summary_is_the_length_bandwidth_and_ejection_of_the_route(kw):
    assert_route_summaries_match_routes(Torus(**kw))
