"""Property tests of every allocator under random arrival/departure sequences.

Each case drives an allocator through a hypothesis-drawn sequence of arrivals (job sizes)
and departures and checks, at every step (see ``alloc_helpers.Driver``): ``select`` leaves
the state untouched and gives the same answer twice and on a copy; it returns exactly ``n``
sorted distinct free nodes or None (and a count-only allocator refuses only when ``n`` is
larger than the free count); ``commit`` never double-allocates; free/owner/n_free stay
consistent; releasing every job restores the empty state (links, partitions and all).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alloc_helpers import Driver, build, job, machine
from scheduler.allocators import ALLOCATORS

# (allocator, topology, options): every registered allocator at least once.
CASES = [
    ("firstfree", None, {}),
    ("random", None, {}),
    ("random", "ft3", {}),
    ("roundrobin", None, {}),
    ("roundrobin", "torus", {"ordering": "hilbert"}),
    ("dualend", "torus", {"ordering": "zxy", "threshold": 6}),
    ("dualend", None, {"by": "time", "threshold": 50.0}),
    ("fifo0", "torus", {"ordering": "boxes", "box": (2, 3, 2)}),
    ("fifo0", "dragonfly", {}),
    ("vpart", "torus", {"parts": 3, "ordering": "bisect"}),
    ("firstfit", "torus", {"gap": 2}),
    ("firstfit", None, {"fallback": False}),
    ("bestfit", "torus", {"ordering": "hilbert"}),
    ("largestfit", "torus", {}),
    ("closestfit", "torus", {"ordering": "hilbert"}),
    ("closestfit-mind", "torus", {"max_windows": 8}),
    ("closestfit-mind", "ft3", {"max_windows": 4}),
    ("treefit", "ft3", {}),
    ("treefit", "dragonfly", {}),
    ("t123", "ft3", {}),
    ("t123", "ft3-taper", {}),
    ("t123", "ft2", {}),
    ("jigsaw", "ft3", {}),
    ("jigsaw", "ft3-taper", {}),
    ("jigsaw", "ft3-par", {}),
    ("jigsaw", "ft2", {}),
    ("bgq-native", "bgq", {"block": (2, 2, 2)}),
    ("bgq-mesh", "bgq", {"block": (2, 2, 2)}),
    ("bgq-cfca", "bgq", {"block": (2, 2, 2), "sensitive_fraction": 0.5}),
    ("bgq-hybrid", "bgq", {"block": (2, 2, 2), "sensitive_fraction": 0.5}),
]


def test_every_registered_allocator_is_covered():
    assert {c[0] for c in CASES} == set(ALLOCATORS)


ops = st.lists(
    st.tuples(st.booleans(), st.integers(min_value=1, max_value=1 << 30), st.floats(min_value=0.0, max_value=1.0)),
    min_size=1,
    max_size=40,
)


@pytest.mark.parametrize("name,topo,opts", CASES, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
@settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seq=ops)
def test_random_arrivals_and_departures(name, topo, opts, seq):
    alloc = build(name, topo, seed=3, **opts)
    d = Driver(alloc)
    N = alloc.n_nodes
    for arrive, raw, u in seq:
        if arrive:
            # Sizes skewed small (most jobs are), but up to the whole machine.
            n = 1 + int((u ** 3) * (N - 1)) if raw % 4 else 1 + raw % N
            d.arrive(n, request=1.0 + 1000.0 * u)
        else:
            d.depart(raw)
    d.drain()


@pytest.mark.parametrize("name,topo,opts", CASES, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_a_filling_sequence_places_jobs_and_fits_the_empty_machine(name, topo, opts):
    alloc = build(name, topo, seed=5, **opts)
    d = Driver(alloc)
    N = alloc.n_nodes
    # The whole machine fits an empty machine, except under link reservation on a tapered
    # tree (a leaf has fewer up ports than nodes for a multi-leaf job).
    tapered = topo is not None and machine(topo).name == "fattree" and machine(topo).uplinks_per_leaf < machine(topo).nodes_per_leaf
    assert alloc.fits_empty(job(0, N)) == (not (name == "jigsaw" and tapered))
    sizes = [1, 2, 3, 5, 8, 1, 4, 2, 7, 1, 1, 3]
    for i, n in enumerate(sizes * 4):
        if d.arrive(min(n, N)) is None:
            d.depart(i)
    assert d.placed >= len(sizes)
    d.drain()


@pytest.mark.parametrize("name,topo,opts", [c for c in CASES if not build(c[0], c[1], **c[2]).count_only],
                         ids=lambda v: str(v))
@settings(max_examples=10, deadline=None, derandomize=True)
@given(sizes_a=st.lists(st.integers(1, 30), min_size=0, max_size=8),
       sizes_b=st.lists(st.integers(1, 30), min_size=1, max_size=8), n=st.integers(1, 40))
def test_a_placement_on_a_blocked_state_avoids_every_blocked_reservation(name, topo, opts, sizes_a, sizes_b, n):
    # Conservative backfilling selects on the current state with the reservations that start
    # inside a slot blocked: what it picks must be valid now and clear of those reservations.
    alloc = build(name, topo, seed=1, **opts)
    base = alloc.new_state()
    jid = 1
    for m in sizes_a:
        j = job(jid, min(m, alloc.n_nodes))
        jid += 1
        p = alloc.select(j, base)
        if p is not None:
            alloc.commit(j, p, base)
    planned = alloc.new_state()
    reservations = []
    for m in sizes_b:
        j = job(jid, min(m, alloc.n_nodes))
        jid += 1
        p = alloc.select(j, planned)
        if p is not None:
            alloc.commit(j, p, planned)
            reservations.append((j, p))
    win = base.copy()
    alloc.block(reservations, win)
    j = job(999, min(n, alloc.n_nodes))
    p = alloc.select(j, win)
    if p is not None:
        alloc.commit(j, p, base.copy())  # raises if the nodes, links or partition are taken now
        alloc.commit(j, p, planned)  # ... or by any blocked reservation


def test_random_draws_depend_on_the_job_not_on_trial_selects():
    alloc = build("random", None, seed=11)
    st0 = alloc.new_state()
    a = alloc.select(job(7, 5), st0)
    for jid in range(100, 120):  # trial selects of other jobs, as backfilling makes
        alloc.select(job(jid, 3), st0.copy())
    assert np.array_equal(alloc.select(job(7, 5), st0), a)
    other = build("random", None, seed=12).select(job(7, 5), st0)
    assert not np.array_equal(other, a)  # the run seed matters
    assert not np.array_equal(alloc.select(job(8, 5), st0), a)  # and so does the job


def test_roundrobin_sends_reclaimed_nodes_to_the_tail():
    alloc = build("roundrobin", None)  # 40 nodes
    d = Driver(alloc)
    a = d.arrive(10)
    assert a.tolist() == list(range(10))
    d.depart(0)  # nodes 0..9 go to the tail
    b = d.arrive(10)
    assert b.tolist() == list(range(10, 20))
    c = d.arrive(25)
    assert c.tolist() == list(range(5)) + list(range(20, 40))  # the tail, then the head of the reclaimed nodes


def test_dualend_packs_small_and_large_jobs_at_opposite_ends():
    alloc = build("dualend", None, threshold=4)  # 40 nodes, small: < 4 nodes
    d = Driver(alloc)
    assert d.arrive(2).tolist() == [0, 1]
    assert d.arrive(5).tolist() == [35, 36, 37, 38, 39]
    assert d.arrive(3).tolist() == [2, 3, 4]
    timed = build("dualend", None, by="time", threshold=60.0)
    d2 = Driver(timed)
    assert d2.arrive(2, request=30.0).tolist() == [0, 1]
    assert d2.arrive(2, request=600.0).tolist() == [38, 39]


def test_vpart_takes_an_even_share_from_each_block():
    alloc = build("vpart", None, parts=4)  # 40 nodes: blocks of 10
    d = Driver(alloc)
    assert d.arrive(8).tolist() == [0, 1, 10, 11, 20, 21, 30, 31]
    d.arrive(7)  # 2, 2, 2, 1
    busy = d.state.owner.reshape(4, 10)
    assert (busy != -1).sum(axis=1).tolist() == [4, 4, 4, 3]
    # Block 0 nearly full: it gives what it has, the others make up the rest evenly.
    d.arrive(5)
    d.arrive(20)
    assert d.state.n_free == 0


def test_fifo0_on_the_default_ordering_is_firstfree():
    a, b = Driver(build("fifo0", "torus")), Driver(build("firstfree", "torus"))
    for i, n in enumerate([3, 7, 1, 12, 5, 9, 2, 30, 4]):
        assert np.array_equal(a.arrive(n), b.arrive(n))
        if i % 3 == 2:
            a.depart(i)
            b.depart(i)
