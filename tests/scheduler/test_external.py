"""ExternalPolicy: schedules chosen by a callable, and AllocatorChoice."""

from __future__ import annotations

import pytest

from scheduler import SyntheticWorkload
from scheduler.allocators import make_allocator
from scheduler.errors import UserError
from scheduler.external import AllocatorChoice, ExternalPolicy
from scheduler.job import Job
from scheduler.lifecycle import simulate


def _jobs(spec):
    """(submit, nodes, run) rows -> jobs with exact estimates."""
    return [Job(job_id=i, job_size=n, submit_time=float(s), request_time=float(r), run_time=float(r))
            for i, (s, n, r) in enumerate(spec)]


def _starts(res):
    return {j.job_id: j.start_time for j in res.jobs}


@pytest.mark.parametrize("backfill", ["none", "easy"])
@pytest.mark.parametrize("seed", [1, 2])
def test_always_first_is_fcfs(backfill, seed):
    jobs = SyntheticWorkload(n_jobs=150).generate(seed=seed)
    ref = simulate(jobs, n_nodes=64, ordering="fcfs", backfill=backfill)
    pol = ExternalPolicy(chooser=lambda sched, window: (0, 0), window=8, backfill=backfill)
    got = simulate(jobs, n_nodes=64, ordering="fcfs", backfill=pol)
    assert _starts(got) == _starts(ref)
    assert pol.decisions > 0


def test_chooser_sees_the_window_and_picks():
    # 4 nodes; job 0 (4 nodes, 10 s) runs first; jobs 1..3 wait for it.
    jobs = _jobs([(0, 4, 10), (1, 4, 5), (2, 2, 5), (3, 2, 5)])
    seen = []

    def last(sched, window):
        seen.append((sched.sim.now, [j.job_id for j in window]))
        return len(window) - 1, 0

    res = simulate(jobs, n_nodes=4, ordering="fcfs", backfill=ExternalPolicy(chooser=last, window=2))
    # At t=10 the window is jobs 1, 2 (K=2): job 2 starts; then 1, 3: job 3 starts beside it.
    assert seen[0] == (10.0, [1, 2])
    assert seen[1] == (10.0, [1, 3])
    assert _starts(res) == {0: 0.0, 1: 15.0, 2: 10.0, 3: 10.0}


def test_reserved_job_blocks_decisions_and_easy_backfills_around_it():
    # Job 0 holds 3 of 4 nodes until 10. At t=2 the chooser picks job 1 (4 nodes, reserved
    # for t=10); job 2 (1 node, 5 s) ends by then: EASY starts it now, "none" does not.
    jobs = _jobs([(0, 3, 10), (1, 4, 5), (1, 1, 5)])
    calls = []

    def pick_big(sched, window):
        calls.append([j.job_id for j in window])
        return 0, 0

    for backfill, start2 in (("easy", 1.0), ("none", 15.0)):
        calls.clear()
        pol = ExternalPolicy(chooser=pick_big, window=4, backfill=backfill)
        res = simulate(jobs, n_nodes=4, ordering="fcfs", backfill=pol)
        assert _starts(res)[1] == 10.0
        assert _starts(res)[2] == start2
        assert res.jobs[1].reservation_time == 10.0
        assert calls == [[1, 2]]  # one decision: none while job 1 is reserved


def test_allocator_choice_places_with_the_chosen_allocator():
    first = make_allocator("firstfree", n_nodes=16)
    rand = make_allocator("random", n_nodes=16, seed=3)
    jobs = _jobs([(0, 4, 10), (0, 4, 10)])
    pol = ExternalPolicy(chooser=lambda s, w: (0, 1), window=4, decide_single=True)
    res = simulate(jobs, allocator=AllocatorChoice([first, rand]), ordering="fcfs", backfill=pol)
    placed = [sorted(j.assigned_nodes.tolist()) for j in res.jobs]
    assert placed != [[0, 1, 2, 3], [4, 5, 6, 7]]  # random, not first-free
    assert len(set(placed[0]) | set(placed[1])) == 8
    pol0 = ExternalPolicy(chooser=lambda s, w: (0, 0), window=4, decide_single=True)
    res0 = simulate(jobs, allocator=AllocatorChoice([make_allocator("firstfree", n_nodes=16), rand]),
                    ordering="fcfs", backfill=pol0)
    assert [sorted(j.assigned_nodes.tolist()) for j in res0.jobs] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_a_chooser_answer_out_of_range_is_an_error():
    jobs = _jobs([(0, 4, 10), (1, 4, 5), (2, 2, 5)])
    with pytest.raises(Exception, match=r"the chooser answered \(slot 5, allocator 0\); valid: slots 0\.\.1, allocators 0\.\.0"):
        simulate(jobs, n_nodes=4, ordering="fcfs", backfill=ExternalPolicy(chooser=lambda s, w: (5, 0)))


def test_bad_settings_are_clear_errors():
    with pytest.raises(UserError, match="window must be an int >= 1"):
        ExternalPolicy(chooser=lambda s, w: (0, 0), window=0)
    with pytest.raises(UserError, match="backfill must be one of none, easy"):
        ExternalPolicy(chooser=lambda s, w: (0, 0), backfill="conservative")
    with pytest.raises(UserError, match="chooser must be callable"):
        ExternalPolicy(chooser=3)
    from models.presets import get_machine

    topo = get_machine("tiny-fattree3").topology
    jig = make_allocator("jigsaw", n_nodes=topo.n_nodes, topology=topo)
    with pytest.raises(UserError, match="keeps its own state"):
        AllocatorChoice([make_allocator("firstfree", n_nodes=topo.n_nodes), jig])


@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_random_choices_never_delay_a_reserved_job(backfill):
    import numpy as np

    jobs = SyntheticWorkload(n_jobs=300).generate(seed=7)  # exact estimates
    rng = np.random.default_rng(3)
    pol = ExternalPolicy(chooser=lambda s, w: (int(rng.integers(len(w))), 0), window=6, backfill=backfill)
    res = simulate(jobs, n_nodes=64, ordering="fcfs", backfill=pol)
    reserved = [j for j in res.jobs if j.reservation_time is not None]
    assert len(reserved) > 10 and pol.decisions > 50
    assert all(j.start_time <= j.reservation_time for j in reserved)
    assert _starts(res) != _starts(simulate(jobs, n_nodes=64, ordering="fcfs", backfill=backfill))
