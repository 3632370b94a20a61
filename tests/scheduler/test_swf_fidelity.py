"""SWF fidelity: the status field (cancelled jobs), partial-execution records, fields 16-18."""

from __future__ import annotations

import pytest

from scheduler.errors import SwfError
from scheduler.lifecycle import simulate
from scheduler.swf import read_swf, write_swf

HEAD = "; MaxNodes: 16\n"


def line(jid, submit, run, procs, request, status, user=1, part=-1, prec=-1, think=-1):
    return f"{jid} {submit} -1 {run} {procs} -1 -1 {procs} {request} -1 {status} {user} 1 -1 -1 {part} {prec} {think}\n"


def write(tmp_path, body):
    p = tmp_path / "t.swf"
    p.write_text(HEAD + body)
    return p


def test_cancelled_before_start_are_counted_not_simulated(tmp_path):
    body = (line(1, 0, 100, 4, 200, 1)
            + line(2, 5, -1, 4, 200, 5)     # cancelled in the queue (no run time)
            + line(3, 6, 0, 4, 200, 5)      # cancelled in the queue (run time 0)
            + line(4, 7, 50, 4, 200, 5)     # cancelled while running: it ran 50 s
            + line(5, 8, -1, 4, 200, 1))    # no run time, not cancelled
    tr = read_swf(write(tmp_path, body))
    rep = tr.report
    assert [j.job_id for j in tr.jobs] == [1, 4]
    assert (rep.cancelled, rep.no_run_time, rep.cancelled_after_start, rep.kept) == (2, 1, 1, 2)
    assert rep.dropped == 3
    assert tr.report.by_reason()["cancelled"] == 2 and tr.report.by_reason()["no_run_time"] == 1
    assert tr.jobs[1].run_time == 50


def test_partial_executions_with_a_summary_line_are_the_summary(tmp_path):
    # Job 2 was checkpointed once: its summary (status 1, 300 s in all) and its two parts.
    body = (line(1, 0, 100, 4, 200, 1)
            + line(2, 10, 300, 8, 400, 1)
            + line(2, 10, 100, 8, 400, 2)
            + line(2, 10, 200, 8, 400, 3)
            + line(3, 20, 30, 2, 60, 1))
    tr = read_swf(write(tmp_path, body))
    assert [(j.job_id, j.run_time, j.nodes) for j in tr.jobs] == [(1, 100, 4), (2, 300, 8), (3, 30, 2)]
    assert tr.report.partial_records == 2 and tr.report.kept == 3 and tr.report.lines == 5
    assert tr.records.shape == (5, 18)  # every line as read
    res = simulate(tr.jobs, n_nodes=16)
    assert [j.job_id for j in res.jobs] == [1, 2, 3]


def test_partial_executions_without_a_summary_are_merged(tmp_path):
    body = (line(7, 10, 100, 8, 400, 2, user=3)
            + line(7, 10, 50, 8, 400, 2, user=3)
            + line(7, 10, 25, 8, 400, 4, user=3)
            + line(8, 12, 40, 2, 60, 2)
            + line(8, 12, 10, 2, 60, 3))
    tr = read_swf(write(tmp_path, body))
    assert [(j.job_id, j.submit_time, j.run_time, j.request_time, j.user) for j in tr.jobs] == [
        (7, 10, 175, 400, 3), (8, 12, 50, 60, 1)]
    assert tr.report.partial_records == 3  # five part lines, two jobs


@pytest.mark.parametrize("body,where,message", [
    (line(1, 0, 10, 4, 20, 1) + line(1, 5, 10, 4, 20, 1), 3,
     "job 1 is also on line 2, and neither line is a partial-execution record"),
    (line(1, 0, 10, 4, 20, 2) + line(1, 9, 10, 4, 20, 3), 3,
     "job 1: submit time 9 contradicts 0 on line 2"),
    (line(1, 0, 10, 4, 20, 2) + line(1, 0, 10, 6, 20, 3), 3,
     "job 1: requested processors 6 contradicts 4 on line 2"),
    (line(1, 0, 10, 4, 20, 3) + line(1, 0, 10, 4, 20, 2), 3,
     "job 1: line 2 is its last partial execution \\(status 3\\) but this line continues it"),
    (line(1, 0, 30, 4, 20, 1) + line(1, 0, 10, 4, 20, 2) + line(1, 0, 20, 4, 20, 0), 4,
     "job 1 is also on line 2, and neither line is a partial-execution record"),
])
def test_contradicting_partial_records_name_their_lines(tmp_path, body, where, message):
    with pytest.raises(SwfError, match=f"t.swf:{where}: {message}"):
        read_swf(write(tmp_path, body))


def test_fields_16_to_18_are_kept_and_written(tmp_path):
    body = line(1, 0, 100, 4, 200, 1, part=2, prec=-1, think=-1) + line(2, 300, 60, 2, 100, 1, part=2, prec=1, think=200)
    tr = read_swf(write(tmp_path, body))
    assert [(j.partition, j.preceding_job, j.think_time) for j in tr.jobs] == [(2, -1, -1), (2, 1, 200)]
    fresh = [j.fresh() for j in tr.jobs]
    assert (fresh[1].partition, fresh[1].preceding_job, fresh[1].think_time) == (2, 1, 200)
    out = tmp_path / "out.swf"
    write_swf(out, tr.jobs, max_nodes=16)
    back = read_swf(out)
    assert [(j.partition, j.preceding_job, j.think_time) for j in back.jobs] == [(2, -1, -1), (2, 1, 200)]
