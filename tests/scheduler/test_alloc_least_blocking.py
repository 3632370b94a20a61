"""Least-blocking partition selection (Cobalt's scheme, as in Zhou et al.'s BG/Q study)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alloc_helpers import Driver, build, job
from models.topology import Torus
from scheduler.allocators import make_allocator
from scheduler.allocators.torus_partitions import POLICY_KINDS
from scheduler.errors import UserError
from test_alloc_torus_partitions import check_partitions

POLICIES = ["bgq-native", "bgq-mesh", "bgq-cfca", "bgq-hybrid"]


def line(n_mid: int, name: str, **kw):
    topo = Torus(dims=(2, 2 * n_mid, 2))  # a ring of n_mid midplanes of 8 nodes
    return make_allocator(name, n_nodes=topo.n_nodes, topology=topo, block=(2, 2, 2), **kw)


def blocked_counts(alloc, state, vol, kind):
    """{(origin, shape): partitions it blocks} for every free ``kind`` prism of volume ``vol``,
    by plain set arithmetic over every prism of the policy's kinds."""
    G = alloc.grid
    busy_mp = set(np.flatnonzero(state.midplane != -1).tolist())
    busy_cab = {(d, s) for d in range(alloc.D) for s in np.flatnonzero(state.cable[d] != -1).tolist()}

    def holds(o, L, k):
        _, cables = alloc.wiring(o, L, k)
        return set(alloc._midplanes(o, L).tolist()), {(d, s) for d, c in enumerate(cables) for s in c.tolist()}

    prisms = [(o, L) for L in alloc.shapes
              for o in itertools.product(*(range(g) if l < g else range(1) for l, g in zip(L, G)))]
    free_ref = []
    for o, L in prisms:
        for k in POLICY_KINDS[alloc.policy]:
            m, c = holds(o, L, k)
            if not (m & busy_mp) and not (c & busy_cab):
                free_ref.append((m, c))
    out = {}
    for o, L in prisms:
        if int(np.prod(L)) != vol:
            continue
        m, c = holds(o, L, kind)
        if m & busy_mp or c & busy_cab:
            continue
        out[(o, L)] = sum(1 for rm, rc in free_ref if rm & m or rc & c)
    return out


def test_least_blocking_takes_the_midplane_that_closes_off_nothing():
    ff = line(6, "bgq-native")
    d = Driver(ff)
    for _ in range(5):
        d.arrive(8)  # midplanes 0..4
    for _ in range(3):
        d.depart(1)  # free midplanes 1, 2, 3: jobs left on 0 and 4
    lb = line(6, "bgq-native", selection="least-blocking")
    j = job(99, 8)
    # First fit opens the run 1-3; midplane 5 is the only free one that blocks no other partition.
    assert np.array_equal(ff.select(j, d.state), ff.mp_nodes[1])
    assert np.array_equal(lb.select(j, d.state), lb.mp_nodes[5])
    counts = blocked_counts(lb, d.state, 1, "torus")
    assert counts[((0, 5, 0), (1, 1, 1))] == 1 and counts[((0, 1, 0), (1, 1, 1))] == 3


def test_least_blocking_on_an_empty_machine_is_first_fit():
    for name in POLICIES:
        ff, lb = line(4, name), line(4, name, selection="least-blocking")
        st_ = ff.new_state()
        for n in (8, 16, 24, 32):
            assert np.array_equal(ff.select(job(1, n), st_), lb.select(job(1, n), st_))


@pytest.mark.parametrize("name", POLICIES)
@settings(max_examples=30, deadline=None, derandomize=True)
@given(seq=st.lists(st.tuples(st.booleans(), st.integers(1, 96), st.integers(0, 99), st.booleans()),
                   min_size=1, max_size=25))
def test_least_blocking_picks_a_partition_that_blocks_the_fewest(name, seq):
    alloc = build(name, "bgq", block=(2, 2, 2), selection="least-blocking")  # grid 2 x 3 x 2
    d = Driver(alloc)
    for arrive, n, k, sens in seq:
        if not arrive:
            d.depart(k)
            continue
        j = job(0, n, sched_args={"comm_sensitive": sens})
        need = -(-n // alloc.nodes_per_mp)
        vol = min(v for v in alloc.volumes if v >= need)
        kind, _ = alloc.kind_for(j)
        counts = blocked_counts(alloc, d.state, vol, kind)
        got = d.arrive(n, sched_args={"comm_sensitive": sens})
        assert (got is None) == (not counts)
        if got is not None:
            info = d.state.placements[d.next_id - 1]
            assert counts[(info.block_origin, info.blocks)] == min(counts.values())
            check_partitions(alloc, d.state)
    d.drain()


def test_selection_option_is_validated():
    with pytest.raises(UserError, match="option selection must be one of first-fit, least-blocking; got 'best'"):
        line(3, "bgq-native", selection="best")


def test_least_blocking_refuses_a_grid_with_too_many_prisms():
    topo = Torus(dims=(8, 8, 8, 8))  # 4 x 4 x 4 x 4 midplanes of 2x2x2x2: 13^4 = 28,561 prisms
    with pytest.raises(UserError, match="28,561"):
        make_allocator("bgq-native", n_nodes=topo.n_nodes, topology=topo, block=(2, 2, 2, 2), selection="least-blocking")
    make_allocator("bgq-native", n_nodes=topo.n_nodes, topology=topo, block=(2, 2, 2, 2))  # first fit: no table
