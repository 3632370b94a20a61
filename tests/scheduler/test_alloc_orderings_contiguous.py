"""Node orderings (topological, axis orders, boxes, bisection, Hilbert) and the contiguity
allocators that run on them (first, best, largest and closest fit, closest fit by MIND)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alloc_helpers import build, job, machine
from models.topology import Torus
from models.topology.metrics import mind
from scheduler.allocators import make_allocator
from scheduler.allocators import hilbert_index, node_ordering
from scheduler.allocators.contiguous import sliding_max
from scheduler.errors import UserError


# ---------------------------------------------------------------------------------- orderings
@pytest.mark.parametrize("name", ["topological", "natural", "xyz", "zxy", "yzx", "boxes", "bisect", "hilbert"])
def test_orderings_are_permutations_keeping_routers_together(name):
    topo = machine("torus")  # 4 x 3 x 4, 2 nodes per router
    order = node_ordering(topo, name, n_nodes=topo.n_nodes)
    assert sorted(order.tolist()) == list(range(topo.n_nodes))
    r = order // topo.nodes_per_router
    assert (r[0::2] == r[1::2]).all()


def test_axis_orders_put_the_first_letter_slowest():
    topo = Torus(dims=(2, 3, 4))
    c = topo.coords_of_node(node_ordering(topo, "xyz", n_nodes=topo.n_nodes))
    assert c[:5].tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 3], [0, 1, 0]]
    assert np.array_equal(node_ordering(topo, "zyx", n_nodes=24), np.arange(24))  # router order
    c = topo.coords_of_node(node_ordering(topo, "yzx", n_nodes=24))
    assert c[:3].tolist() == [[0, 0, 0], [1, 0, 0], [0, 0, 1]]
    five = Torus(dims=(2, 2, 2, 2, 2))
    c = five.coords_of_node(node_ordering(five, "edcba", n_nodes=32))
    assert c[1].tolist() == [1, 0, 0, 0, 0]


def test_boxes_and_bisection_keep_boxes_consecutive():
    topo = Torus(dims=(4, 4, 4))
    order = node_ordering(topo, "boxes", n_nodes=64, box=(2, 2, 2))
    c = topo.coords_of_node(order).reshape(8, 8, 3)
    for blk in c:  # each run of 8 is one 2x2x2 box
        assert all(len(np.unique(blk[:, d])) == 2 for d in range(3))
        assert (blk // 2 == blk[0] // 2).all()
    order = node_ordering(topo, "bisect", n_nodes=64)
    c = topo.coords_of_node(order)
    for size, ext in ((32, (2, 4, 4)), (16, (2, 2, 4)), (8, (2, 2, 2)), (4, (1, 2, 2))):
        for blk in c.reshape(-1, size, 3):
            assert tuple(len(np.unique(blk[:, d])) for d in range(3)) == ext


@pytest.mark.parametrize("dims", [(8, 8), (4, 4, 4), (2, 2, 2, 2), (16, 16), (2, 2, 2, 2, 2)])
def test_hilbert_neighbours_are_one_hop_apart_on_power_of_two_cubes(dims):
    for topo in (Torus.mesh(dims=dims), Torus(dims=dims)):
        order = node_ordering(topo, "hilbert", n_nodes=topo.n_nodes)
        assert sorted(order.tolist()) == list(range(topo.n_nodes))
        assert (topo.hops_many(order[:-1], order[1:]) == 1).all()
    pts = np.array(list(itertools.product(range(dims[0]), repeat=len(dims))))
    h = hilbert_index(pts, int(np.log2(dims[0])))
    assert sorted(h.tolist()) == list(range(len(pts)))  # a bijection onto 0..n-1


def test_orderings_are_checked():
    ft = machine("ft3")
    with pytest.raises(UserError, match="ordering 'hilbert' needs a torus; on a fattree valid orderings are: topological, natural"):
        make_allocator("fifo0", n_nodes=ft.n_nodes, topology=ft, ordering="hilbert")
    with pytest.raises(UserError, match="unknown ordering 'xxy' for a 3D torus"):
        build("fifo0", "torus", ordering="xxy")
    with pytest.raises(UserError, match="option box goes with ordering='boxes' only"):
        build("fifo0", "torus", box=(2, 2, 2))
    with pytest.raises(UserError, match="a permutation of the 40 node ids"):
        build("fifo0", None, ordering=[0, 1, 2])
    custom = build("fifo0", None, ordering=list(range(39, -1, -1)))
    assert custom.select(job(1, 3), custom.new_state()).tolist() == [37, 38, 39]


# -------------------------------------------------------------------------------- contiguous
FREE = [0, 1, 3, 4, 5, 9, 10, 11, 12]  # runs of 2, 3 and 4 on a 16-node line


def state_with_free(alloc, free_positions):
    st = alloc.new_state()
    busy = np.setdiff1d(np.arange(alloc.n_nodes), free_positions)
    st.mark_busy(10_000, busy)
    return st


def line(name, n=16, **opts):
    return make_allocator(name, n_nodes=n, **opts)


@pytest.mark.parametrize("name,n,opts,expect", [
    ("firstfit", 4, {}, [9, 10, 11, 12]),
    ("firstfit", 4, {"gap": 1}, [0, 1, 3, 4]),
    ("firstfit", 3, {"gap": 0}, [3, 4, 5]),
    ("firstfit", 5, {}, [0, 1, 3, 4, 5]),  # no run of 5: halves 3 ([3..5]) and 2 ([0, 1])
    ("firstfit", 8, {}, [0, 1, 3, 4, 9, 10, 11, 12]),  # halves: 4 ([9..12]); the other 4 -> 2 + 2
    ("firstfit", 5, {"fallback": False}, None),
    ("bestfit", 3, {}, [3, 4, 5]),
    ("bestfit", 2, {}, [0, 1]),
    ("bestfit", 6, {}, [3, 4, 9, 10, 11, 12]),  # no run holds 6: largest runs first
    ("largestfit", 3, {}, [9, 10, 11]),
    ("largestfit", 8, {}, [0, 3, 4, 5, 9, 10, 11, 12]),
    ("largestfit", 3, {"gap": 1}, [0, 1, 3]),  # 0-5 is one run of 5 free nodes across node 2
    ("largestfit", 5, {"gap": 1}, [0, 1, 3, 4, 5]),
    ("largestfit", 6, {"gap": 3}, [0, 1, 3, 4, 5, 9]),  # one run of all 9 free nodes
    ("largestfit", 7, {"gap": 1}, [0, 1, 3, 4, 5, 9, 10]),  # no run holds 7: runs largest first
    ("closestfit", 5, {}, [0, 1, 3, 4, 5]),  # largest gap 2, the smallest possible
    ("closestfit", 4, {}, [9, 10, 11, 12]),
])
def test_contiguity_rules_on_a_line(name, n, opts, expect):
    alloc = line(name, **opts)
    got = alloc.select(job(1, n), state_with_free(alloc, FREE))
    if expect is None:
        assert got is None
    else:
        assert sorted(got.tolist()) == sorted(expect)


def largest_gap(pos):
    p = np.sort(np.asarray(pos))
    return int(np.diff(p).max()) if len(p) > 1 else 0


@settings(max_examples=60, deadline=None, derandomize=True)
@given(mask=st.lists(st.booleans(), min_size=2, max_size=13), frac=st.floats(0.0, 1.0))
def test_closest_fit_gap_is_minimal_by_brute_force(mask, frac):
    free = [i for i, f in enumerate(mask) if f]
    if len(free) < 2:
        return
    n = 2 + int(frac * (len(free) - 2))
    alloc = line("closestfit", n=len(mask))
    got = alloc.select(job(1, n), state_with_free(alloc, free))
    best = min(largest_gap(c) for c in itertools.combinations(free, n))
    assert largest_gap(got) == best
    # and among those, the smallest span
    span = min(c[-1] - c[0] for c in itertools.combinations(free, n) if largest_gap(c) == best)
    assert int(got.max() - got.min()) == span


@settings(max_examples=40, deadline=None, derandomize=True)
@given(a=st.lists(st.integers(-50, 50), min_size=1, max_size=40), w=st.integers(1, 40))
def test_sliding_max_matches_the_definition(a, w):
    arr = np.array(a)
    if w > len(arr):
        return
    assert sliding_max(arr, w).tolist() == [max(a[i:i + w]) for i in range(len(a) - w + 1)]


def test_closest_fit_by_mind_picks_the_window_of_smallest_mind():
    topo = machine("torus")
    alloc = build("closestfit-mind", "torus", max_windows=10_000)
    st = alloc.new_state()
    rng = np.random.default_rng(2)
    st.mark_busy(10_000, np.sort(rng.choice(topo.n_nodes, 40, replace=False)))
    n = 9
    got = alloc.select(job(1, n), st)
    fp = np.flatnonzero(st.free[alloc.order])
    minds = [mind(topo, alloc.order[fp[i:i + n]]) for i in range(len(fp) - n + 1)]
    assert mind(topo, got) == pytest.approx(min(minds))
    # With one candidate it is plain closest fit.
    one = build("closestfit-mind", "torus", max_windows=1)
    cf = build("closestfit", "torus")
    assert np.array_equal(one.select(job(1, n), st), cf.select(job(1, n), st))


def test_contiguous_options_are_validated():
    with pytest.raises(UserError, match=r"option gap must be an integer in 0..16; got -1"):
        line("firstfit", gap=-1)
    with pytest.raises(UserError, match="option fallback must be true or false"):
        line("firstfit", fallback="no")
    with pytest.raises(UserError, match="option max_windows must be an integer >= 1"):
        build("closestfit-mind", "torus", max_windows=0)
    with pytest.raises(UserError, match="needs a fattree or torus or dragonfly topology, got no topology"):
        line("closestfit-mind")
    assert line("firstfit").count_only and not line("firstfit", fallback=False).count_only
