"""Job and system metrics against hand-computed values."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from scheduler.job import Job
from scheduler.lifecycle import simulate
from scheduler.metrics import capacity_violations, job_table, system_metrics


def J(jid, nodes, submit, run, request=None):
    return Job(job_id=jid, job_size=nodes, submit_time=submit, run_time=run,
               request_time=run if request is None else request)


@pytest.fixture
def three():
    # 4 nodes, strict FCFS: J1 2 nodes 0..120; J2 needs all 4 and waits for J1 (120..180);
    # J3 (1 node, submitted at 30) waits behind J2 (180..210).
    res = simulate([J(1, 2, 0, 120), J(2, 4, 0, 60), J(3, 1, 30, 30)], n_nodes=4, backfill="none")
    assert [(j.start_time, j.end_time) for j in res.jobs] == [(0, 120), (120, 180), (180, 210)]
    return res


def test_per_job_metrics(three):
    t = job_table(three.jobs)
    assert t.wait.tolist() == [0, 120, 150]
    assert t.response.tolist() == [120, 180, 180]
    assert t.run.tolist() == [120, 60, 30]
    assert t.slowdown.tolist() == [1, 3, 6]
    assert t.bounded_slowdown.tolist() == [1, 3, 6]
    assert t.nodes.tolist() == [2, 4, 1] and t.status.tolist() == ["completed"] * 3


def test_system_metrics(three):
    m = system_metrics(three.jobs, 4)
    assert (m.t_first_submit, m.t_last_end, m.makespan) == (0, 210, 210)
    assert m.utilization == pytest.approx((2 * 120 + 4 * 60 + 1 * 30) / (4 * 210))
    # Only on [30, 120) do idle nodes (2) meet a waiting job that fits them (J3, 1 node):
    # J2 alone (4 nodes) never fits the 2 idle nodes; after 180 nothing waits.
    assert m.loss_of_capacity == pytest.approx(2 * 90 / (4 * 210))
    assert m.mean_wait == pytest.approx(90) and m.max_wait == 150
    assert m.mean_bounded_slowdown == pytest.approx(10 / 3)
    assert m.queue_times.tolist() == [0, 30, 120, 180] and m.queue_lengths.tolist() == [1, 2, 1, 0]
    assert m.busy_times.tolist() == [0, 120, 180, 210] and m.busy_nodes.tolist() == [2, 4, 1, 0]
    # one sample per simulated minute from the first submission
    assert m.sample_times.tolist() == [0, 60, 120, 180]
    assert m.busy_samples.tolist() == [2, 2, 4, 1]
    assert m.utilization_samples.tolist() == [0.5, 0.5, 1.0, 0.25]
    assert m.queue_samples.tolist() == [1, 2, 1, 0]
    assert set(m.scalars()) >= {"utilization", "makespan", "loss_of_capacity"}
    assert all(isinstance(v, np.ndarray) for v in m.arrays().values())


def test_bounded_slowdown_uses_tau_ten_seconds():
    jobs = [J(1, 1, 0, 20), J(2, 1, 0, 2), J(3, 1, 0, 0)]
    res = simulate(jobs, n_nodes=1, backfill="none")
    t = job_table(res.jobs)
    # J2 waits 20, runs 2: slowdown 22/2 = 11, bounded max(22/10, 1) = 2.2
    assert t.slowdown[1] == 11 and t.bounded_slowdown[1] == pytest.approx(2.2)
    # J3 runs 0 s: slowdown undefined (NaN), bounded 22/10
    assert math.isnan(t.slowdown[2]) and t.bounded_slowdown[2] == pytest.approx(2.2)
    m = system_metrics(t, 1)
    assert m.mean_slowdown == pytest.approx(6.0)  # NaN ignored: (1 + 11) / 2


def test_rejected_and_killed_jobs_are_counted():
    jobs = [J(1, 2, 0, 100, request=50), J(2, 9, 0, 10), J(3, 1, 5, 10)]
    res = simulate(jobs, n_nodes=4, oversized="reject")
    m = system_metrics(res.jobs, 4)
    assert (m.jobs, m.rejected, m.killed) == (2, 1, 1)
    t = job_table(res.jobs)
    assert math.isnan(t.start[1]) and t.status[1] == "rejected" and t.kill_reason[0] == "walltime"


def test_empty_run():
    m = system_metrics([], 4)
    assert m.jobs == 0 and m.utilization == 0.0 and len(m.sample_times) == 0


def test_csv_output(three, tmp_path):
    t = job_table(three.jobs)
    p = tmp_path / "jobs.csv"
    assert t.to_csv(p) == 3
    rows = list(csv.DictReader(open(p)))
    assert rows[1]["job_id"] == "2" and rows[1]["wait"] == "120" and rows[1]["status"] == "completed"
    assert rows[0]["reservation"] == "" and rows[0]["foreground"] == "0"


def test_tables_compare_exactly(three):
    a = job_table(three.jobs)
    b = job_table(three.jobs)
    assert a.equals(b)
    b.start[0] += 1
    assert not a.equals(b)


def test_capacity_violations_finds_overlaps():
    a, b = J(1, 2, 0, 10), J(2, 2, 0, 10)
    for j, nodes in ((a, [0, 1]), (b, [1, 2])):
        j.start_time, j.end_time, j.assigned_nodes = 0.0, 10.0, np.array(nodes)
    problems = capacity_violations([a, b], 3)
    assert "4 nodes busy at t=0.0 on a 3-node machine" in problems
    assert any("node 1 ran jobs 1 and 2" in p for p in problems)
    b.assigned_nodes = np.array([2, 3])
    b.start_time = 10.0
    b.end_time = 20.0
    assert capacity_violations([a, b], 4) == []
