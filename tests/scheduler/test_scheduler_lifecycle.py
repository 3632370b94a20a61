"""The job lifecycle on the kernel: submissions, the same-instant rule, kills, runners."""

from __future__ import annotations

import numpy as np
import pytest

from pdes import Entity, SimulationError, Simulator
from scheduler.allocators import make_allocator
from scheduler.backfill import make_backfill
from scheduler.errors import SchedulerError, UserError
from scheduler.job import Job
from scheduler.lifecycle import SchedulerEntity, TimekeeperRunner, simulate
from scheduler.ordering import make_ordering


def J(jid, nodes, submit, run, request=None, **kw):
    return Job(job_id=jid, job_size=nodes, submit_time=submit, run_time=run,
               request_time=run if request is None else request, **kw)


def starts(res):
    return {j.job_id: j.start_time for j in res.jobs}


def test_a_job_end_frees_nodes_before_a_start_at_the_same_instant():
    # J2 is submitted while J1 holds the machine; J3 is submitted exactly when J1 ends.
    jobs = [J(1, 4, 0, 10), J(2, 4, 5, 10), J(3, 4, 20, 5), J(4, 4, 30, 0), J(5, 4, 30, 7)]
    for backfill in ("none", "firstfit", "easy", "conservative"):
        res = simulate(jobs, n_nodes=4, backfill=backfill)
        # J4 runs zero seconds at 30: its end at 30 lets J5 start at 30 too.
        assert starts(res) == {1: 0, 2: 10, 3: 20, 4: 30, 5: 30}, backfill


def test_all_submissions_of_an_instant_are_seen_by_one_pass():
    # Only one of A (long) and B (short) fits at t=5; SJF must see both to pick B.
    jobs = [J(1, 2, 0, 100), J(2, 2, 5, 1000), J(3, 2, 5, 10)]
    assert starts(simulate(jobs, n_nodes=4, ordering="fcfs", backfill="none")) == {1: 0, 2: 5, 3: 100}
    assert starts(simulate(jobs, n_nodes=4, ordering="sjf", backfill="none")) == {1: 0, 2: 15, 3: 5}


def test_jobs_past_their_request_are_killed_at_walltime():
    jobs = [J(1, 2, 0, 100, request=60), J(2, 2, 0, 30, request=60)]
    res = simulate(jobs, n_nodes=4)
    j1, j2 = res.jobs
    assert (j1.status, j1.kill_reason, j1.end_time) == ("killed", "walltime", 60.0)
    assert (j2.status, j2.kill_reason, j2.end_time) == ("completed", "", 30.0)
    res = simulate(jobs, n_nodes=4, kill_overrun=False)
    assert (res.jobs[0].status, res.jobs[0].end_time) == ("completed", 100.0)


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_an_overrunning_job_that_is_not_killed_is_expected_to_end_at_any_moment(backfill):
    # J1 requests 10 s but runs 20. From t=10 it is expected to end "just after now": J3
    # (arriving at 12, 2 nodes x 5 s) cannot backfill, since it would hold nodes the head
    # J2 (4 nodes) needs at that moment; J2 starts when J1 really ends (20), J3 after it.
    jobs = [J(1, 2, 0, 20, request=10), J(2, 4, 1, 5), J(3, 2, 12, 5)]
    res = simulate(jobs, n_nodes=4, backfill=backfill, kill_overrun=False, record_reservations=True)
    assert starts(res) == {1: 0, 2: 20, 3: 25}
    j2_plan = [t for _, jid, t in res.reservation_log if jid == 2]
    assert j2_plan[0] == 10.0 and any(12.0 < t < 12.0 + 1e-9 for t in j2_plan)  # "just after 12"
    # Killed at its request instead, J1 frees the machine at 10.
    res = simulate(jobs, n_nodes=4, backfill=backfill)
    assert starts(res) == {1: 0, 2: 10, 3: 15}


def test_timekeeper_costs_o1_events_per_job_and_leaves_no_process():
    rng = np.random.Generator(np.random.PCG64(1))
    n = 500
    sub = np.cumsum(rng.integers(0, 50, n)).tolist()
    jobs = [J(i + 1, int(rng.integers(1, 9)), sub[i], int(rng.integers(0, 400))) for i in range(n)]
    res = simulate(jobs, n_nodes=16)
    # at most: one submission event per job (one per distinct instant), one end timer per
    # job, one scheduling pass per submission event and per end
    assert res.stats.events <= 4 * n
    assert res.stats.blocked == []


class HeapProbe(TimekeeperRunner):
    """A timekeeper that records the event-heap size at each launch."""

    def __init__(self):
        self.sizes = []

    def start(self, sched, job, nodes):
        self.sizes.append((len(sched.sim._heap), len(sched.running)))
        super().start(sched, job, nodes)


def test_submissions_are_scheduled_lazily():
    jobs = [J(i, 1, float(i), 5000.0) for i in range(1, 2001)]
    probe = HeapProbe()
    simulate(jobs, n_nodes=64, runner=probe)
    # The heap holds the running jobs' end timers and a handful of scheduler events,
    # never the 2000 future submissions.
    assert max(h - r for h, r in probe.sizes) <= 4


def test_oversized_jobs_error_or_are_rejected():
    jobs = [J(1, 2, 0, 10), J(2, 9, 1, 10), J(3, 1, 2, 10)]
    with pytest.raises(UserError, match=r"job 2 needs 9 nodes .* cannot fit the 8-node machine"):
        simulate(jobs, n_nodes=8)
    res = simulate(jobs, n_nodes=8, oversized="reject")
    assert [j.job_id for j in res.rejected] == [2]
    assert res.jobs[1].status == "rejected" and res.jobs[1].start_time is None
    assert starts(res) == {1: 0, 2: None, 3: 2}


def test_workload_errors():
    with pytest.raises(UserError, match="job id 1 appears more than once"):
        simulate([J(1, 1, 0, 1), J(1, 1, 1, 1)], n_nodes=2)
    res = simulate([J(1, 1, 0, 1)], n_nodes=2, copy=False)
    with pytest.raises(UserError, match="already simulated"):
        simulate(res.jobs, n_nodes=2, copy=False)
    with pytest.raises(UserError, match="give the machine size"):
        simulate([J(1, 1, 0, 1)])
    with pytest.raises(UserError, match="unknown allocator 'best'"):
        simulate([J(1, 1, 0, 1)], n_nodes=2, allocator="best")


def test_empty_and_fully_rejected_workloads_end_cleanly():
    res = simulate([], n_nodes=4)
    assert res.jobs == [] and res.stats.blocked == [] and res.stats.events == 0
    res = simulate([J(1, 8, 3, 5)], n_nodes=4, oversized="reject")
    assert res.jobs[0].status == "rejected" and res.stats.blocked == []


def test_inputs_are_left_untouched_by_default():
    jobs = [J(1, 1, 0, 5)]
    res = simulate(jobs, n_nodes=1)
    assert jobs[0].start_time is None and jobs[0].status == "pending"
    assert res.jobs[0] is not jobs[0] and res.jobs[0].end_time == 5.0


# -- runners and other entities ------------------------------------------------------------

class Apps(Entity):
    """Runs jobs for twice their trace run time and reports ends with the job_end service."""

    def __init__(self):
        self.killed = set()

    def run(self, data):
        job_id, seconds = data
        self.after(seconds, self.done, job_id)

    def done(self, job_id):
        if job_id not in self.killed:
            self.send(("scheduler", 0), "job_end", (job_id, "completed", None))


class AppRunner:
    enforces_walltime = False

    def __init__(self):
        self.apps = None

    def start(self, sched, job, nodes):
        sched.send(("apps", 0), "run", (job.job_id, 2 * job.run_time))

    def kill(self, sched, job, reason):
        self.apps.killed.add(job.job_id)
        sched.job_ended(job.job_id, "killed", {"reason": reason})


def build(jobs, n_nodes, runner=None, backfill="easy", apps_first=True, kill_overrun=True):
    sim = Simulator(comm=None)
    apps = None
    if apps_first:
        (apps,) = sim.add_entities(Apps, 1, name="apps")
    sched = sim.add_entity(
        SchedulerEntity, name="scheduler", jobs=jobs,
        allocator=make_allocator("firstfree", n_nodes=n_nodes),
        ordering=make_ordering("fcfs", n_nodes=n_nodes),
        backfill=make_backfill(backfill), runner=runner, kill_overrun=kill_overrun,
    )
    if not apps_first:
        (apps,) = sim.add_entities(Apps, 1, name="apps")
    if runner is not None:
        runner.apps = apps
    return sim, sched


def test_a_runner_reporting_ends_by_service_and_scheduler_walltime_kills():
    jobs = [J(1, 2, 0, 10, request=30), J(2, 2, 0, 20, request=30), J(3, 4, 5, 5, request=30)]
    runner = AppRunner()
    sim, sched = build(jobs, 4, runner=runner)
    sim.run()
    j1, j2, j3 = sched.jobs
    assert (j1.start_time, j1.end_time, j1.status) == (0, 20, "completed")  # ran 2 x 10 s
    assert (j2.end_time, j2.status, j2.kill_reason) == (30, "killed", "walltime")  # 2 x 20 > 30
    assert (j3.start_time, j3.end_time) == (30, 40)
    assert sim.stats.blocked == []


def test_an_end_reported_after_the_pass_of_its_instant_is_detected():
    # J1 ends at 10 through an entity added after the scheduler: its event at t=10 sorts
    # after the scheduler's pass at 10 (woken by J2's submission), which must not happen.
    jobs = [J(1, 2, 0, 5, request=10), J(2, 2, 10, 5, request=10)]
    sim, sched = build(jobs, 2, runner=AppRunner(), apps_first=False, kill_overrun=False)
    with pytest.raises(SimulationError, match="arrived after a scheduling pass at the same instant") as ei:
        sim.run()
    assert isinstance(ei.value.__cause__, SchedulerError)
    # Added before the scheduler, the same entity's end is seen first: J2 starts at 10.
    jobs = [J(1, 2, 0, 5, request=10), J(2, 2, 10, 5, request=10)]
    sim, sched = build(jobs, 2, runner=AppRunner(), apps_first=True, kill_overrun=False)
    sim.run()
    assert [j.start_time for j in sched.jobs] == [0.0, 10.0]


class EagerRunner(TimekeeperRunner):
    def start(self, sched, job, nodes):
        sched.job_ended(job.job_id, "completed", None)


def test_runner_misuse_is_reported():
    with pytest.raises(SimulationError, match="ended inside a scheduling pass"):
        simulate([J(1, 1, 0, 1)], n_nodes=1, runner=EagerRunner())
    sim, sched = build([J(1, 1, 0, 1)], 1)
    with pytest.raises(SchedulerError, match="job 7 is not running"):
        sched.job_ended(7)
