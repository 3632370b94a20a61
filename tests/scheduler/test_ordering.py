"""Queue ordering policies: keys, tie-breaks, fair share, queues, WFP, the registry."""

from __future__ import annotations

import math

import pytest

from scheduler.errors import UserError
from scheduler.job import Job
from scheduler.ordering import (
    FCFS,
    LAF,
    LJF,
    ORDERINGS,
    SAF,
    SJF,
    WFP,
    MultiQueuePriority,
    QueueSpec,
    ScoreBasedPriority,
    make_ordering,
)

DAY = 86400.0


def job(jid, nodes, submit, request, user=0, queue=""):
    j = Job(job_id=jid, job_size=nodes, submit_time=submit, request_time=request, run_time=request,
            user=user, queue_name=queue)
    j.seq = jid
    return j


def ids(jobs):
    return [j.job_id for j in jobs]


def test_registry_holds_the_six_policies_and_rejects_unknown_names():
    assert list(ORDERINGS) == ["fcfs", "sjf", "ljf", "saf", "laf", "sbp", "mpp", "wfp"]
    assert isinstance(make_ordering("fcfs", n_nodes=4), FCFS)
    with pytest.raises(UserError, match=r"unknown ordering policy 'lifo'; valid: fcfs, sjf, ljf, saf, laf, sbp, mpp, wfp"):
        make_ordering("lifo", n_nodes=4)
    with pytest.raises(UserError, match="takes no option"):
        make_ordering("fcfs", n_nodes=4, weight=1)
    with pytest.raises(UserError, match="n_nodes must be an integer >= 1"):
        make_ordering("fcfs", n_nodes=0)


def test_fcfs_orders_by_submit_time_then_arrival():
    jobs = [job(3, 1, 5, 10), job(1, 8, 0, 99), job(2, 4, 5, 1)]
    assert ids(FCFS(n_nodes=8).order(jobs, 10)) == [1, 2, 3]


def test_saf_and_laf_use_requested_node_hours_with_fcfs_ties():
    jobs = [job(1, 4, 0, 100), job(2, 1, 1, 300), job(3, 2, 2, 200), job(4, 8, 3, 10), job(5, 1, 4, 80)]
    # node-seconds: 400, 300, 400, 80, 80
    assert ids(SAF(n_nodes=8).order(jobs, 10)) == [4, 5, 2, 1, 3]
    assert ids(LAF(n_nodes=8).order(jobs, 10)) == [1, 3, 2, 4, 5]
    assert not SAF.dynamic and not LAF.dynamic


def test_sjf_and_ljf_use_the_estimate_alone_with_fcfs_ties():
    jobs = [job(1, 4, 0, 100), job(2, 1, 1, 300), job(3, 2, 2, 200), job(4, 8, 3, 10), job(5, 1, 4, 100)]
    # Without an estimate set (no scheduler yet) the request counts: 100, 300, 200, 10, 100.
    assert ids(SJF(n_nodes=8).order(jobs, 10)) == [4, 1, 5, 3, 2]
    assert ids(LJF(n_nodes=8).order(jobs, 10)) == [2, 3, 1, 5, 4]
    # The estimate, once set, replaces the request.
    jobs[1].estimate = 5.0
    assert ids(SJF(n_nodes=8).order(jobs, 10)) == [2, 4, 1, 5, 3]
    assert not SJF.dynamic and not LJF.dynamic


def test_wfp_favours_old_and_large_jobs():
    jobs = [job(1, 1, 0, 100), job(2, 8, 50, 100), job(3, 2, 90, 10)]
    now = 100.0
    # (wait/request)^3 * nodes: 1.0, 0.125*8 = 1.0, 1.0*2 = 2.0 -> 3 first, 1 and 2 tie (arrival)
    w = WFP(n_nodes=8)
    assert [-w.key(j, now) for j in jobs] == [1.0, 1.0, 2.0]
    assert ids(w.order(jobs, now)) == [3, 1, 2]
    assert ids(w.order(jobs, 90.0)) == [1, 2, 3]  # job 3 has not waited yet
    assert WFP.dynamic


def test_wfp_counts_a_request_under_one_second_as_one():
    j = job(1, 2, 0, 0)
    assert WFP(n_nodes=4).key(j, 2.0) == -(2.0**3) * 2


def test_sbp_fairshare_factor_by_hand():
    p = ScoreBasedPriority(n_nodes=10, weight_fairshare=1.0, weight_age=0.0, weight_size=0.0, half_life=1e30)
    a, b, c = job(1, 2, 0, 100, user=1), job(2, 4, 0, 100, user=2), job(3, 1, 0, 100, user=3)
    for j in (a, b, c):
        p.job_submitted(j, 0.0)
    assert p.fairshare(1) == p.fairshare(2) == p.fairshare(3) == 1.0  # no usage yet
    a.start_time = 0.0
    p.job_ended(a, 30.0)  # user 1 used 2 * 30 = 60 node-seconds
    b.start_time = 0.0
    p.job_ended(b, 5.0)  # user 2 used 4 * 5 = 20
    # shares 1/3 each; user 1 holds 60/80 of the usage: F = 2^(-(0.75) * 3)
    assert p.fairshare(1) == pytest.approx(2 ** -2.25)
    assert p.fairshare(2) == pytest.approx(2 ** -0.75)
    assert p.fairshare(3) == 1.0
    queued = [job(4, 1, 0, 10, user=1), job(5, 1, 0, 10, user=2), job(6, 1, 0, 10, user=3)]
    assert ids(p.order(queued, 40.0)) == [6, 5, 4]


def test_sbp_usage_decays_with_the_half_life():
    p = ScoreBasedPriority(n_nodes=10, weight_fairshare=1.0, weight_age=0.0, weight_size=0.0, half_life=100.0)
    a, b = job(1, 1, 0, 1000, user=1), job(2, 1, 0, 1000, user=2)
    p.job_submitted(a, 0)
    p.job_submitted(b, 0)
    a.start_time = 0.0
    p.job_ended(a, 100.0)  # 100 node-s charged at t=100
    b.start_time = 200.0
    p.job_ended(b, 300.0)  # 100 node-s at t=300; user 1's has decayed to 25 by then
    assert p.fairshare(1) == pytest.approx(2 ** (-(25 / 125) * 2))
    assert p.fairshare(2) == pytest.approx(2 ** (-(100 / 125) * 2))


def test_sbp_survives_very_long_traces():
    p = ScoreBasedPriority(n_nodes=10, half_life=1.0)
    j = job(1, 1, 0, 10, user=1)
    p.job_submitted(j, 0)
    for t in [*range(0, 5000, 100), 50000, 50100]:
        j.start_time = float(t)
        p.job_ended(j, t + 10.0)
    assert math.isfinite(p._total) and p.fairshare(1) == pytest.approx(0.5)


def test_sbp_age_and_size_terms():
    p = ScoreBasedPriority(n_nodes=10, weight_fairshare=0.0, weight_age=100.0, weight_size=10.0, max_age=1000.0)
    young_big, old_small = job(1, 10, 900, 50), job(2, 1, 0, 50)
    for j in (young_big, old_small):
        p.job_submitted(j, 1000)
    assert p.score(young_big, 1000.0) == pytest.approx(100 * 0.1 + 10 * 1.0)
    assert p.score(old_small, 1000.0) == pytest.approx(100 * 1.0 + 10 * 0.1)
    assert p.score(old_small, 5000.0) == pytest.approx(101.0)  # age capped at max_age
    assert ids(p.order([young_big, old_small], 1000)) == [2, 1]


def test_sbp_rejects_bad_weights():
    with pytest.raises(UserError, match=r"half_life must be a finite number in \(0, inf\)"):
        ScoreBasedPriority(n_nodes=4, half_life=0)
    with pytest.raises(UserError, match=r"weight_age must be a finite number in \[0, inf\)"):
        ScoreBasedPriority(n_nodes=4, weight_age=-1)


def test_mpp_assigns_queues_by_name_and_conditions():
    queues = [
        QueueSpec(name="debug", priority=3, max_nodes=2, max_request=600),
        QueueSpec(name="large", priority=2, min_nodes=16),
        QueueSpec(name="normal", priority=1, max_nodes=15),
    ]
    p = MultiQueuePriority(n_nodes=64, queues=queues)
    jobs = [
        job(1, 4, 0, 100),  # normal
        job(2, 1, 1, 100),  # debug
        job(3, 32, 2, 100),  # large
        job(4, 1, 3, 3600),  # too long for debug: normal
        job(5, 1, 4, 100, queue="normal"),  # asks for normal and is accepted there
        job(6, 32, 5, 100, queue="debug"),  # asks for debug, too big: falls to large
    ]
    for j in jobs:
        p.job_submitted(j, 10)
    assert p.assigned == {1: "normal", 2: "debug", 3: "large", 4: "normal", 5: "normal", 6: "large"}
    assert ids(p.order(jobs, 10)) == [2, 3, 6, 1, 4, 5]


def test_mpp_jobs_no_queue_accepts_go_last():
    p = MultiQueuePriority(n_nodes=64, queues=[{"name": "small", "priority": 1, "max_nodes": 4}])
    jobs = [job(1, 8, 0, 10), job(2, 2, 1, 10)]
    for j in jobs:
        p.job_submitted(j, 1)
    assert p.assigned == {1: "", 2: "small"}
    assert ids(p.order(jobs, 1)) == [2, 1]


def test_mpp_default_queues_favour_large_jobs():
    p = MultiQueuePriority(n_nodes=64)
    assert [(q.name, q.priority, q.min_nodes) for q in p.queues] == [("large", 2, 8), ("default", 1, 1)]


def test_mpp_rejects_bad_queue_specs():
    with pytest.raises(UserError, match="min_nodes must be an integer >= 1"):
        QueueSpec(name="q", priority=1, min_nodes=0)
    with pytest.raises(UserError, match="max_nodes must be an integer >= min_nodes"):
        QueueSpec(name="q", priority=1, min_nodes=4, max_nodes=2)
    with pytest.raises(UserError, match="queue names must be unique"):
        MultiQueuePriority(n_nodes=4, queues=[QueueSpec(name="a", priority=1), QueueSpec(name="a", priority=2)])
    with pytest.raises(UserError, match="bad queue"):
        MultiQueuePriority(n_nodes=4, queues=[{"name": "a", "prio": 1}])
