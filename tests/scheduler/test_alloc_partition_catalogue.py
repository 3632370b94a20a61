"""The tabulated partition search against the straightforward algorithms.

``select`` looks partitions up in a catalogue of every prism (packed bits, answers kept per
busy state). These tests compare it, on random states of small grids, with first fit by
scanning the grid (``_first_fit``, the path of grids too large to tabulate) and with
least-blocking by plain counting over dense 0/1 matrices; and check ``fits_empty`` against a
select on the empty machine.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alloc_helpers import Driver, job
from models.topology import Torus
from scheduler.allocators import make_allocator
from scheduler.allocators.torus_partitions import POLICY_KINDS
from scheduler.errors import UserError

POLICIES = ["bgq-native", "bgq-mesh", "bgq-cfca", "bgq-hybrid"]
#: (torus dims, midplane) -> grids 2x3x2, 3x2x2x1 and 4x2x1.
MACHINES = [((4, 6, 4), (2, 2, 2)), ((6, 4, 4, 2), (2, 2, 2, 2)), ((8, 4, 2), (2, 2, 2))]


def make(name: str, m: int, **kw):
    dims, block = MACHINES[m]
    topo = Torus(dims=dims)
    return make_allocator(name, n_nodes=topo.n_nodes, topology=topo, block=block, **kw)


def prisms(alloc) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every (origin, shape) in first-fit order."""
    G = alloc.grid
    return [(o, L) for L in alloc.shapes
            for o in itertools.product(*(range(g) if l < g else range(1) for l, g in zip(L, G)))]


def holds(alloc, o, L, kind) -> np.ndarray:
    """0/1 row: the midplanes, then each dimension's segments, a ``kind`` prism holds."""
    row = np.zeros(alloc.n_mp * (1 + alloc.D), dtype=np.int64)
    row[alloc._midplanes(o, L)] = 1
    for d, c in enumerate(alloc.wiring(o, L, kind)[1]):
        row[alloc.n_mp * (1 + d) + c] = 1
    return row


def reference(alloc, state, vol: int, kind: str, least: bool):
    """(origin, shape) the selection should take, by dense counting; None if none is free."""
    busy = np.concatenate([state.midplane != -1, (state.cable != -1).reshape(-1)]).astype(np.int64)
    ps = prisms(alloc)
    ref = np.array([holds(alloc, o, L, k) for k in POLICY_KINDS[alloc.policy] for o, L in ps])
    ref_free = ref @ busy == 0
    cands = [(o, L) for o, L in ps if int(np.prod(L)) == vol and holds(alloc, o, L, kind) @ busy == 0]
    if not cands:
        return None
    if not least:
        return cands[0]
    blocked = [int(((ref @ holds(alloc, o, L, kind)) > 0)[ref_free].sum()) for o, L in cands]
    return cands[int(np.argmin(blocked))]


def tabulated(alloc, state, vol: int, kind: str):
    i = alloc._find(state, vol, kind)
    if i < 0:
        return None
    L, o = alloc._catalogue.prisms[i]
    return o, L


def check_state(alloc, state) -> None:
    least = alloc.selection == "least-blocking"
    for kind in POLICY_KINDS[alloc.policy]:
        for vol in alloc.volumes:
            want = reference(alloc, state, vol, kind, least)
            assert tabulated(alloc, state, vol, kind) == want
            if not least:
                assert alloc._first_fit(state, vol, kind) == want
            # The kept answer is the one computed afresh.
            alloc._memo.clear()
            assert tabulated(alloc, state, vol, kind) == want


@pytest.mark.parametrize("selection", ["first-fit", "least-blocking"])
@pytest.mark.parametrize("name", POLICIES)
@settings(max_examples=12, deadline=None, derandomize=True)
@given(m=st.integers(0, len(MACHINES) - 1),
       seq=st.lists(st.tuples(st.booleans(), st.integers(1, 48), st.integers(0, 99), st.booleans()),
                    min_size=1, max_size=14))
def test_tabulated_search_matches_the_reference(name, selection, m, seq):
    alloc = make(name, m, selection=selection)
    d = Driver(alloc)
    for arrive, n, k, sens in seq:
        if arrive:
            d.arrive(n, sched_args={"comm_sensitive": sens})
        else:
            d.depart(k)
        check_state(alloc, d.state)
    # A state holding reservations too (block: a union of partitions).
    if d.running:
        other = Driver(make(name, m, selection=selection))
        for n in (8, 16, 8):
            other.arrive(n)
        blocked = d.state.copy()
        alloc.block([(j, p) for j, p in other.running.values()], blocked)
        check_state(alloc, blocked)
    d.drain()


@pytest.mark.parametrize("name", POLICIES)
@settings(max_examples=15, deadline=None, derandomize=True)
@given(m=st.integers(0, len(MACHINES) - 1),
       seq=st.lists(st.tuples(st.booleans(), st.integers(1, 48), st.integers(0, 99), st.booleans()),
                    min_size=1, max_size=25))
def test_first_fit_places_as_the_grid_scan_does(name, m, seq):
    fast = Driver(make(name, m))
    scan = make(name, m)
    scan._tabulated = False  # the scanning path of grids too large to tabulate
    slow = Driver(scan)
    for arrive, n, k, sens in seq:
        if not arrive:
            fast.depart(k)
            slow.depart(k)
            continue
        a = fast.arrive(n, sched_args={"comm_sensitive": sens})
        b = slow.arrive(n, sched_args={"comm_sensitive": sens})
        assert (a is None) == (b is None)
        if a is not None:
            assert np.array_equal(a, b)
            ia, ib = a.info, b.info
            assert (ia.kind, ia.block_origin, ia.blocks, ia.wrap) == (ib.kind, ib.block_origin, ib.blocks, ib.wrap)
            assert np.array_equal(ia.midplanes, ib.midplanes)
            assert all(np.array_equal(x, y) for x, y in zip(ia.cables, ib.cables))


@pytest.mark.parametrize("name", POLICIES)
def test_fits_empty_is_select_on_the_empty_machine(name):
    for m in range(len(MACHINES)):
        alloc = make(name, m, sensitive_fraction=0.5)
        for n in list(range(1, alloc.n_nodes + 3)):
            j = job(n, n)
            assert alloc.fits_empty(j) == (alloc.select(j, alloc.new_state()) is not None)
        bad = job(1, 8, sched_args={"comm_sensitive": "yes"})
        with pytest.raises(UserError, match="comm_sensitive"):
            alloc.fits_empty(bad)


def test_placements_share_read_only_wiring():
    alloc = make("bgq-cfca", 0, selection="least-blocking")
    st_ = alloc.new_state()
    a = alloc.select(job(1, 16), st_)
    b = alloc.select(job(2, 16), st_)
    assert a.info.midplanes is b.info.midplanes
    assert not a.info.midplanes.flags.writeable
    assert all(not c.flags.writeable for c in a.info.cables)
    a[0] = a[0]  # the node array itself is the job's own


@pytest.mark.parametrize("name", POLICIES)
def test_catalogue_overlaps_are_the_shared_columns(name):
    for m in range(len(MACHINES)):
        cat = make(name, m)
        cat.select(job(1, 8), cat.new_state())
        cat = cat._catalogue
        held = cat.held.astype(np.int64)
        assert np.array_equal(cat.overlap(), np.packbits(held @ held.T > 0, axis=1))
        for kind in cat.kinds:
            lo = cat.offset[kind]
            assert np.array_equal(cat.overlap(kind), cat.overlap()[lo:lo + len(cat.prisms)])
