"""Runtime estimate models: what each sets, how schedules follow, kills stay at the request."""

from __future__ import annotations

import pytest

from scheduler.errors import UserError
from scheduler.estimates import ESTIMATES, FModel, make_estimate
from scheduler.job import Job, JobStatus
from scheduler.lifecycle import simulate
from scheduler.metrics import capacity_violations
from scheduler.workload import Exponential, LogNormal, PowerOfTwo, SyntheticWorkload, Uniform


def J(jid, nodes, submit, run, request=None, **kw):
    return Job(job_id=jid, job_size=nodes, submit_time=submit, run_time=run,
               request_time=run if request is None else request, **kw)


def starts(res):
    return {j.job_id: j.start_time for j in res.jobs}


def synthetic(n=200, seed=1):
    return SyntheticWorkload(
        n_jobs=n, inter_arrival=Exponential(mean=90.0), size=PowerOfTwo(low=1, high=32),
        run_time=LogNormal(median=600.0, sigma=1.0), request_factor=Uniform(low=1.0, high=4.0),
        max_run_time=20000.0,
    ).generate(seed)


def test_registry_and_bad_parameters_are_clear_errors():
    assert list(ESTIMATES) == ["user", "exact", "fmodel", "recent"]
    with pytest.raises(UserError, match="unknown estimate model 'perfect'; valid: user, exact, fmodel, recent"):
        make_estimate("perfect")
    with pytest.raises(UserError, match=r"estimate model 'fmodel': f \(the badness factor\) must be a finite number in \[0, inf\), got -0.5"):
        make_estimate("fmodel", f=-0.5)
    with pytest.raises(UserError, match="estimate model 'recent': history .* must be an integer >= 1, got 0"):
        make_estimate("recent", history=0)
    with pytest.raises(UserError, match="estimate model 'fmodel' takes no option.* factor; valid: f, uniform"):
        make_estimate("fmodel", factor=2)
    with pytest.raises(UserError, match="estimate model 'exact' takes no option.* f; valid: none"):
        make_estimate("exact", f=1)
    with pytest.raises(UserError, match="uniform must be true or false"):
        make_estimate("fmodel", uniform="yes")


# 4 nodes. J1 (2 nodes) requests 100 s but runs 10; J2 needs the whole machine; J3 (2 nodes,
# 20 s) arrives while J2 waits.
EXACT_JOBS = [(1, 2, 0, 10, 100), (2, 4, 1, 10, 10), (3, 2, 2, 20, 20)]


def test_user_estimates_plan_with_the_request_and_exact_with_the_run_time():
    jobs = [J(*t) for t in EXACT_JOBS]
    # user: J2's shadow is J1's request end (100); J3 ends at 22 and backfills; J2 then
    # waits for J3.
    user = simulate(jobs, n_nodes=4, backfill="easy")
    assert starts(user) == {1: 0, 2: 22, 3: 2}
    assert [j.estimate for j in user.jobs] == [100, 10, 20]
    assert user.estimate == "user" and user.estimate_options == {}
    # exact: the shadow is 10; J3 would hold 2 nodes past it with no extra node.
    exact = simulate(jobs, n_nodes=4, backfill="easy", estimate="exact")
    assert starts(exact) == {1: 0, 2: 10, 3: 20}
    assert [j.estimate for j in exact.jobs] == [10, 10, 20]
    assert exact.estimate == "exact"


def test_kills_stay_at_the_request_whatever_the_estimate():
    jobs = [J(1, 2, 0, 100, 60)]
    for model in ("user", "exact", "fmodel", "recent"):
        res = simulate(jobs, n_nodes=4, estimate=model)
        (j,) = res.jobs
        assert (j.status, j.end_time, j.kill_reason) == (JobStatus.KILLED, 60, "walltime"), model
        assert j.estimate <= 60, model  # capped: the job cannot outlive its request
    free = simulate(jobs, n_nodes=4, estimate="exact", kill_overrun=False)
    assert (free.jobs[0].status, free.jobs[0].end_time, free.jobs[0].estimate) == (JobStatus.COMPLETED, 100, 100)


def test_fmodel_draws_within_its_band_reproducibly():
    jobs = synthetic()
    res = simulate(jobs, n_nodes=32, estimate="fmodel", estimate_options={"f": 2.0}, kill_overrun=False, seed=4)
    est = [j.estimate for j in res.jobs]
    assert all(j.run_time <= j.estimate <= 3.0 * j.run_time + 1e-9 for j in res.jobs)
    assert len({round(e / j.run_time, 6) for e, j in zip(est, res.jobs)}) > 100  # really drawn
    again = simulate(jobs, n_nodes=32, estimate="fmodel", estimate_options={"f": 2.0}, kill_overrun=False, seed=4)
    assert [j.estimate for j in again.jobs] == est and starts(again) == starts(res)
    other = simulate(jobs, n_nodes=32, estimate="fmodel", estimate_options={"f": 2.0}, kill_overrun=False, seed=5)
    assert [j.estimate for j in other.jobs] != est
    fixed = simulate(jobs, n_nodes=32, estimate=FModel(f=1.0, uniform=False), kill_overrun=False)
    assert all(j.estimate == 2.0 * j.run_time for j in fixed.jobs)
    assert fixed.estimate_options == {"f": 1.0, "uniform": False}


def test_fmodel_with_f_zero_is_exact():
    jobs = synthetic(seed=2)
    a = simulate(jobs, n_nodes=32, backfill="conservative", estimate="exact")
    b = simulate(jobs, n_nodes=32, backfill="conservative", estimate="fmodel", estimate_options={"f": 0.0})
    assert starts(a) == starts(b)


def test_recent_learns_from_the_users_last_ended_jobs():
    # One user, one job at a time on 4 nodes: each job is submitted after the last ended.
    # (Each runs within its estimate, so no correction changes what was learnt.)
    jobs = [J(1, 1, 0, 10, 100, user=7), J(2, 1, 20, 8, 100, user=7), J(3, 1, 60, 5, 100, user=7),
            J(4, 1, 70, 1, 100, user=7), J(5, 1, 80, 1, 100, user=8)]
    res = simulate(jobs, n_nodes=4, estimate="recent")
    est = {j.job_id: j.estimate for j in res.jobs}
    # J1: no history -> request; J2: mean(10); J3: mean(10, 8); J4: mean(8, 5) (history 2);
    # J5: another user with no history -> request.
    assert est == {1: 100, 2: 10, 3: 9, 4: 6.5, 5: 100}
    three = simulate(jobs, n_nodes=4, estimate="recent", estimate_options={"history": 3})
    assert three.jobs[3].estimate == pytest.approx(23 / 3)


def test_recent_raises_an_estimate_that_runs_out_to_the_request():
    # J2's estimate (10, learnt from J1) runs out at 30 while it runs to 70: it becomes the
    # request (100). J3 needs the whole machine: at 22 its shadow is J2's expected end.
    jobs = [J(1, 4, 0, 10, 100, user=1), J(2, 2, 20, 50, 100, user=1), J(3, 4, 21, 5, 5, user=2),
            J(4, 2, 22, 40, 40, user=3)]
    res = simulate(jobs, n_nodes=4, backfill="easy", estimate="recent", record_reservations=True)
    by = {j.job_id: j for j in res.jobs}
    assert by[2].estimate == 100  # corrected
    # At 22 J3's shadow is 30 (J2's estimate): J4 (40 s) would delay it, no backfill. At 30
    # the correction moves J3's shadow to 120 (the request): J4 then backfills at 30.
    log = [(t, jid, s) for t, jid, s in res.reservation_log if jid == 3]
    assert log[0] == (21, 3, 30) and (30, 3, 120) in log
    assert starts(res) == {1: 0, 2: 20, 3: 70, 4: 30}


@pytest.mark.parametrize("backfill", ["easy", "easy-sjbf", "conservative"])
@pytest.mark.parametrize("model", ["exact", "fmodel", "recent"])
def test_every_model_keeps_the_machine_within_capacity(backfill, model):
    jobs = synthetic(n=250, seed=6)
    for j in jobs:
        j.user = j.job_id % 5
    res = simulate(jobs, n_nodes=32, backfill=backfill, estimate=model)
    assert capacity_violations(res.jobs, 32) == []
    assert all(j.end_time is not None and j.end_time - j.start_time <= j.request_time for j in res.jobs)
