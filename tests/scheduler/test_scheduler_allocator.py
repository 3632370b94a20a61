"""The allocator interface: state, registry, firstfree, and a constrained allocator that
reservations and backfilling must respect."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.allocators import ALLOCATORS, AllocState, Allocator, FirstFreeAllocator, make_allocator, register_allocator
from scheduler.errors import SchedulerError, UserError
from scheduler.job import Job
from scheduler.lifecycle import simulate
from scheduler.metrics import capacity_violations
from scheduler.workload import Exponential, LogNormal, PowerOfTwo, SyntheticWorkload, Uniform


def J(jid, nodes, submit=0.0, run=10.0, request=None):
    return Job(job_id=jid, job_size=nodes, submit_time=submit, run_time=run,
               request_time=run if request is None else request)


class Contiguous(Allocator):
    """Test allocator: the lowest run of consecutive free nodes (a topology constraint)."""

    name = "test-contiguous"
    count_only = False

    def select(self, job, state):
        k = job.nodes
        run = 0
        for i, free in enumerate(state.free.tolist()):
            run = run + 1 if free else 0
            if run == k:
                return np.arange(i - k + 1, i + 1)
        return None


@pytest.fixture
def contiguous():
    register_allocator(Contiguous)
    yield "test-contiguous"
    del ALLOCATORS["test-contiguous"]


def test_state_commit_release_copy():
    a = make_allocator("firstfree", n_nodes=6)
    st = a.new_state()
    assert st.n_free == 6 and st.owner.tolist() == [-1] * 6
    j = J(7, 4)
    nodes = a.select(j, st)
    assert nodes.tolist() == [0, 1, 2, 3]
    assert st.n_free == 6  # select is pure
    a.commit(j, nodes, st)
    assert st.n_free == 2 and st.owner.tolist() == [7, 7, 7, 7, -1, -1]
    c = st.copy()
    a.release(j, nodes, c)
    assert c.n_free == 6 and st.n_free == 2 and st.free.sum() == 2
    assert a.select(J(8, 3), st) is None and a.select(J(9, 2), st).tolist() == [4, 5]


def test_state_refuses_double_allocation_and_foreign_release():
    a = make_allocator("firstfree", n_nodes=4)
    st = a.new_state()
    a.commit(J(1, 2), np.array([0, 1]), st)
    with pytest.raises(SchedulerError, match=r"job 2 was given node\(s\) \[1\] that are already allocated \(to job\(s\) \[1\]\)"):
        a.commit(J(2, 2), np.array([1, 2]), st)
    with pytest.raises(SchedulerError, match="released node"):
        a.release(J(3, 1), np.array([0]), st)


def test_block_marks_nodes_busy_whether_or_not_free():
    a = make_allocator("firstfree", n_nodes=5)
    st = a.new_state()
    a.commit(J(1, 2), np.array([0, 1]), st)
    a.block([(J(2, 2), np.array([1, 2])), (J(3, 1), np.array([4]))], st)
    assert st.free.tolist() == [False, False, False, True, False] and st.n_free == 1
    assert st.owner.tolist() == [1, 1, 2, -1, 3]
    a.block([], st)
    assert st.n_free == 1


def test_registry_and_construction_errors():
    assert ALLOCATORS["firstfree"] is FirstFreeAllocator and FirstFreeAllocator.count_only
    with pytest.raises(UserError, match=r"unknown allocator 'nope'; valid: .*firstfree"):
        make_allocator("nope", n_nodes=4)
    with pytest.raises(UserError, match="n_nodes must be an int >= 1"):
        make_allocator("firstfree", n_nodes=-2)
    with pytest.raises(UserError, match="takes no option"):
        make_allocator("firstfree", n_nodes=4, order="hilbert")
    a = make_allocator("firstfree", n_nodes=4, topology="t", seed=3)
    assert (a.topology, a.seed) == ("t", 3)
    assert isinstance(a.new_state(), AllocState) and a.fits_empty(J(1, 4)) and not a.fits_empty(J(2, 5))


# Four nodes. J1 (node 0) and J3 (node 2) end at 10, J2 holds node 1 until 100, node 3 is
# free. The head J4 needs 2 nodes: by count it fits at 10 with one node to spare, so
# firstfree lets J5 (1 node, 50 s) backfill onto node 3 at t=2. On a contiguous allocator
# the only pair free at 10 is {2, 3}: J5 on node 3 would delay J4, so it must wait.
CONSTRAINED = [J(1, 1, 0, 10), J(2, 1, 0, 100), J(3, 1, 0, 10), J(4, 2, 1, 10), J(5, 1, 2, 50)]


def test_count_only_easy_backfills_on_extra_nodes():
    res = simulate(CONSTRAINED, n_nodes=4, backfill="easy")
    assert {j.job_id: j.start_time for j in res.jobs} == {1: 0, 2: 0, 3: 0, 4: 10, 5: 2}


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_reservations_respect_the_allocator(contiguous, backfill):
    res = simulate(CONSTRAINED, n_nodes=4, allocator=contiguous, backfill=backfill, record_reservations=True)
    got = {j.job_id: (j.start_time, j.assigned_nodes.tolist()) for j in res.jobs}
    assert got == {1: (0, [0]), 2: (0, [1]), 3: (0, [2]), 4: (10, [2, 3]), 5: (10, [0])}
    assert res.jobs[3].reservation_time == 10.0


def test_contiguous_allocator_rejects_jobs_that_never_fit(contiguous):
    class Gappy(Contiguous):
        name = "test-gappy"

        def select(self, job, state):
            return None if job.nodes > 2 else super().select(job, state)

    a = Gappy(n_nodes=4)
    res = simulate([J(1, 3), J(2, 2)], allocator=a, oversized="reject")
    assert [j.status for j in res.jobs] == ["rejected", "completed"]


@pytest.mark.parametrize("backfill", ["none", "firstfit", "easy", "conservative"])
def test_constrained_allocator_keeps_guarantees_on_a_workload(contiguous, backfill):
    jobs = SyntheticWorkload(
        n_jobs=150, inter_arrival=Exponential(mean=100.0), size=PowerOfTwo(low=1, high=8),
        run_time=LogNormal(median=600.0, sigma=1.0), request_factor=Uniform(low=1.0, high=3.0),
    ).generate(9)
    res = simulate(jobs, n_nodes=16, allocator=contiguous, backfill=backfill, record_reservations=True)
    assert capacity_violations(res.jobs, 16) == []
    for j in res.jobs:
        nodes = j.assigned_nodes
        assert (np.diff(nodes) == 1).all()  # contiguous
    if backfill == "conservative":
        history: dict[int, list[float]] = {}
        for _, jid, t in res.reservation_log:
            history.setdefault(jid, []).append(t)
        for j in res.jobs:
            h = history[j.job_id]
            assert all(b <= a for a, b in zip(h, h[1:])) and j.start_time == h[-1]


@pytest.mark.parametrize("seed", [0, 1])
def test_easy_guarantee_holds_through_a_constrained_allocator(contiguous, seed):
    # Exact estimates: every head starts exactly at the shadow time the allocator-driven
    # path computed when it became head, and later passes never move it.
    jobs = SyntheticWorkload(
        n_jobs=200, inter_arrival=Exponential(mean=80.0), size=PowerOfTwo(low=1, high=16),
        run_time=LogNormal(median=400.0, sigma=1.2),
    ).generate(seed)
    res = simulate(jobs, n_nodes=16, allocator=contiguous, backfill="easy", record_reservations=True)
    heads = {j.job_id: j for j in res.jobs if j.reservation_time is not None}
    assert len(heads) > 30
    assert all(j.start_time == j.reservation_time for j in heads.values())
    assert all(t == heads[jid].reservation_time for _, jid, t in res.reservation_log)
    assert all((np.diff(j.assigned_nodes) == 1).all() for j in res.jobs)
