"""Bounded slowdown's tau, percentiles, per-class figures, warm-up/cool-down trims and load
scaling, against hand-computed values; bad values are one clear error."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduler.errors import UserError
from scheduler.job import Job
from scheduler.lifecycle import simulate
from scheduler.load import scale_load
from scheduler.metrics import class_breakdown, job_table, run_classes, system_metrics
from scheduler.replay_engine import replay
from scheduler.trim import Trim, parse_window


def J(jid, nodes, submit, run, request=None):
    return Job(job_id=jid, job_size=nodes, submit_time=submit, run_time=run,
               request_time=run if request is None else request)


def three_jobs():
    # 4 nodes, strict FCFS: J1 2 nodes 0..120; J2 (all 4) 120..180; J3 (1 node, submitted at 30) 180..210.
    return [J(1, 2, 0, 120), J(2, 4, 0, 60), J(3, 1, 30, 30)]


@pytest.fixture
def three():
    res = simulate(three_jobs(), n_nodes=4, backfill="none")
    assert [(j.start_time, j.end_time) for j in res.jobs] == [(0, 120), (120, 180), (180, 210)]
    return res


def test_tau_bounds_the_slowdown(three):
    # responses 120, 180, 180; runs 120, 60, 30
    t = job_table(three.jobs, tau=100)
    assert t.bounded_slowdown.tolist() == [1.0, 1.8, 1.8]
    m = system_metrics(t, 4, tau=100)
    assert m.tau == 100 and m.mean_bounded_slowdown == pytest.approx(4.6 / 3)
    assert system_metrics(three.jobs, 4, tau=100).bounded_slowdown_p50 == 1.8


@pytest.mark.parametrize("tau", [0, -1, math.nan, math.inf, "10"])
def test_bad_tau_is_one_clear_error(three, tau):
    with pytest.raises(UserError, match=r"tau.*bounded-slowdown threshold.*\(0, inf\)"):
        job_table(three.jobs, tau=tau)
    with pytest.raises(UserError, match="tau"):
        replay(three_jobs(), nodes=4, tau=tau)


def test_percentiles_and_classes(three):
    m = system_metrics(three.jobs, 4)
    # waits 0, 120, 150: linear interpolation between order statistics
    assert (m.wait_p50, m.wait_p90, m.wait_p99) == (120.0, pytest.approx(144.0), pytest.approx(149.4))
    # bounded slowdowns 1, 3, 6
    assert (m.bounded_slowdown_p50, m.bounded_slowdown_p90) == (3.0, pytest.approx(5.4))
    size = m.classes["by_size"]
    assert size["class"] == ["1", "2", "3-4"] and size["jobs"] == [1, 1, 1]
    assert size["mean_wait"] == [150.0, 0.0, 120.0] and size["mean_bounded_slowdown"] == [6.0, 1.0, 3.0]
    run = m.classes["by_run"]
    # runs 120 s and 60 s are 1-10 min, 30 s under a minute; empty classes are left out
    assert run["class"] == ["< 1 min", "1-10 min"] and run["jobs"] == [1, 2]
    assert run["mean_wait"] == [150.0, 60.0] and run["wait_p50"] == [150.0, 60.0]
    idx, labels = run_classes(np.array([0, 59.9, 60, 599, 600, 3600, 36000, 1e9]))
    assert idx.tolist() == [0, 0, 1, 1, 2, 3, 4, 4] and len(labels) == 5


def test_trim_measures_part_of_the_run(three):
    t = job_table(three.jobs)
    mask = Trim(skip_first=1).mask(t.submit)
    assert mask.tolist() == [False, True, True]
    m = system_metrics(t, 4, measure=mask)
    # every job still counts as run; the per-job figures are J2's and J3's
    assert m.jobs == 3 and m.measured_jobs == 2
    assert m.mean_wait == 135.0 and m.max_wait == 150.0
    assert m.classes["by_size"]["class"] == ["1", "3-4"]
    # measured over their arrival window [0, 30]: J1's 2 nodes busy of 4, and the idle 2 nodes
    # never fit the waiting J2 (4 nodes), so no capacity is lost
    assert (m.measure_start, m.measure_end) == (0.0, 30.0)
    assert m.utilization == 0.5 and m.loss_of_capacity == 0.0
    assert m.makespan == 210  # the whole run's
    # [30, 120) alone: J3 (1 node) waits while 2 nodes idle: all of it lost
    w = Trim(window=(30, 121)).mask(t.submit)
    assert w.tolist() == [False, False, True]
    m2 = system_metrics(t, 4, measure=w)
    assert m2.measured_jobs == 1 and m2.mean_wait == 150.0 and m2.utilization == 0.0


def test_untrimmed_figures_are_unchanged(three):
    m = system_metrics(three.jobs, 4)
    assert m.measured_jobs == 3 and (m.measure_start, m.measure_end) == (0, 210)
    assert m.utilization == pytest.approx((2 * 120 + 4 * 60 + 1 * 30) / (4 * 210))
    assert m.loss_of_capacity == pytest.approx(2 * 90 / (4 * 210))


def test_skip_last_and_windows():
    submit = np.array([5.0, 0.0, 20.0, 10.0, 10.0])
    # submission order: 1, 0, 3, 4, 2 (ties keep their order)
    assert Trim(skip_first=1, skip_last=2).mask(submit).tolist() == [True, False, False, True, False]
    assert Trim(window="5:10").mask(submit).tolist() == [True, False, False, False, False]
    assert Trim(window="10s:").mask(submit).tolist() == [False, False, True, True, True]
    assert parse_window("1h:2d") == (3600.0, 172800.0)
    assert Trim(window="1min:").describe() == "--window 60:" and not Trim().active


@pytest.mark.parametrize("kwargs, message", [
    ({"skip_first": 3, "skip_last": 2}, "leaves no job of the 5 to measure"),
    ({"window": (100, 200)}, r"leaves no job of the 5 to measure \(submit times run from 0 to 20 s\)"),
])
def test_trim_that_leaves_nothing_is_an_error(kwargs, message):
    with pytest.raises(UserError, match=message):
        Trim(**kwargs).mask(np.array([5.0, 0.0, 20.0, 10.0, 10.0]))


@pytest.mark.parametrize("kwargs, message", [
    ({"skip_first": -1}, "skip_first"), ({"skip_last": 1.5}, "skip_last"),
    ({"window": "10"}, "START:END"), ({"window": "20:10"}, "start < end"), ({"window": "x:1"}, "cannot parse"),
])
def test_bad_trims(kwargs, message):
    with pytest.raises(UserError, match=message):
        Trim(**kwargs)


def test_replay_fails_before_simulating_when_the_trim_leaves_nothing():
    with pytest.raises(UserError, match="--skip-first 2 --skip-last 1 leaves no job of the 3"):
        replay(three_jobs(), nodes=4, skip_first=2, skip_last=1)


def test_load_scaling():
    jobs = [J(1, 1, 100, 5), J(2, 1, 110, 5), J(3, 1, 130, 5)]
    scaled = scale_load(jobs, 2.0)
    assert [j.submit_time for j in scaled] == [100, 105, 115]
    assert [j.submit_time for j in jobs] == [100, 110, 130]  # the originals are untouched
    assert [j.submit_time for j in scale_load(jobs, 0.5)] == [100, 120, 160]
    r = replay(jobs, nodes=1, load_factor=2.0, backfill="none")
    # arrivals 100, 105, 115 on one node: starts 100, 105, 115 (each runs 5 s)
    assert r.table.submit.tolist() == [100, 105, 115] and r.table.wait.tolist() == [0, 0, 0]
    assert r.summary()["load_factor"] == 2.0
    # at 4x the jobs queue: arrivals 100, 102.5, 107.5 -> starts 100, 105, 110
    r4 = replay(jobs, nodes=1, load_factor=4.0, backfill="none")
    assert r4.table.start.tolist() == [100, 105, 110] and r4.table.wait.tolist() == [0, 2.5, 2.5]


@pytest.mark.parametrize("factor", [0, -1.2, math.inf, math.nan])
def test_bad_load_factor_is_one_clear_error(factor):
    with pytest.raises(UserError, match=r"load_factor.*inter-arrival.*\(0, inf\)"):
        replay([J(1, 1, 0, 5)], nodes=1, load_factor=factor)


def test_replay_records_its_measurement():
    r = replay(three_jobs(), nodes=4, backfill="none", tau=60, skip_first=1)
    s = r.summary()
    assert s["tau"] == 60 and s["measured_jobs"] == 2 and s["trim"]["skip_first"] == 1
    assert s["wait_p50"] == 135.0 and s["classes"]["by_run"]["class"] == ["< 1 min", "1-10 min"]
    assert class_breakdown(r.table)["by_size"]["jobs"] == [1, 1, 1]
