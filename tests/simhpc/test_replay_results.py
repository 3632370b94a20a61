"""One job-record schema: replays write the results file of ``simhpc run``, and no job of a
workload is dropped without being counted by reason."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from scheduler.job import Job, JobStatus
from scheduler.swf import DROP_REASONS, read_swf
from simhpc.cli import main
from simhpc.experiment import loads
from simhpc.experiment.runner import run_experiment
from simhpc.trace_replay import replay, replay_results
from simhpc.results import JOB_COLUMNS, read_results
from simhpc.results.model import REJECT_REASONS

SIX = Path(__file__).resolve().parents[1] / "data" / "backfill6.swf"

# The header says 8 processors; the machine of the experiment below has 16 nodes.
HEADER_SMALLER = """; MaxProcs: 8
; MaxNodes: 8
1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1
2 10 -1 50 12 -1 -1 12 100 -1 1 2 1 -1 -1 -1 -1 -1
3 20 -1 50 40 -1 -1 40 100 -1 1 2 1 -1 -1 -1 -1 -1
4 30 -1 -1 2 -1 -1 2 100 -1 5 2 1 -1 -1 -1 -1 -1
5 40 -1 300 2 -1 -1 2 100 -1 1 3 1 -1 -1 -1 -1 -1
"""

EXPERIMENT = """
name = "header-smaller"
seed = 1

[machine]
preset = "tiny-fattree3"

[network]
model = "ideal"

[workload]
kind = "swf"
trace = "t.swf"

[[apps]]
name = "timekeeper"

[scheduler]
ranks_per_node = 1
"""


def test_reasons_are_one_list():
    assert set(DROP_REASONS) <= set(REJECT_REASONS)


def test_job_build_is_the_one_constructor():
    a = Job(job_id=3, job_size=4, submit_time=1, request_time=10, run_time=5, user=2)
    b = Job.build(job_id=3, job_size=4, submit_time=1, request_time=10, run_time=5, user=2)
    fields = ("job_id", "job_size", "nodes", "submit_time", "request_time", "run_time", "app_name", "app_args",
              "queue_name", "sched_args", "user", "group", "foreground", "start_time", "end_time", "status", "seq")
    assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]
    assert [getattr(a.fresh(), f) for f in fields] == [getattr(a, f) for f in fields]
    from scheduler.errors import UserError

    with pytest.raises(UserError, match="job_size"):
        Job.build(job_id=1, job_size=0, submit_time=0, request_time=1, run_time=1)


def test_replay_results_use_the_run_schema():
    rep = replay(SIX, nodes=4)
    res = replay_results(rep)
    assert set(JOB_COLUMNS) <= set(res.jobs)
    j = res.jobs
    assert res.n_jobs == 6 and (j["status"] == "rejected").sum() == 3
    ran = j["status"] == "completed"
    # As timekeeper jobs of a run: no network figures, nothing sent.
    assert np.isnan(j["app_run"]).all() and np.isnan(j["ideal_run"]).all()
    assert (j["bytes_sent"][ran] == 0).all() and (j["messages"][ran] == 0).all()
    assert np.array_equal(j["run"][ran], j["trace_run"][ran])
    assert res.system["rejected_by_reason"]["larger_than_machine"] == 3
    assert res.summary()["rejected_by_reason"] == rep.summary()["rejected_by_reason"] == {"larger_than_machine": 3}
    assert res.links is None and res.network == {} and "network_model" not in res.summary()


def test_replay_out_show_and_plot_end_to_end(tmp_path, capsys):
    out, swf, figs = tmp_path / "r.h5", tmp_path / "r.swf", tmp_path / "figs"
    assert main(["replay", str(SIX), "--nodes", "4", "--out", str(out), "--swf-out", str(swf), "--json"]) == 0
    text = capsys.readouterr().out
    assert "not simulated" in text and "3 larger than the machine" in text
    assert json.loads(text[text.index("\n{") + 1:])["results"] == str(out)
    res = read_results(out)
    assert res.n_jobs == 6 and res.name == "backfill6"
    assert main(["show", str(out), "--jobs", "6"]) == 0
    shown = capsys.readouterr().out
    assert "3 larger than the machine" in shown and "network model" in shown
    pytest.importorskip("matplotlib")
    assert main(["plot", str(out), "--out", str(figs)]) == 0
    assert (figs / "wait_cdf.png").exists() and (figs / "utilization.png").exists()
    # The SWF schedule: simulated waits and run times, rejected jobs with status 5.
    tr = read_swf(swf, reject_too_large=False)
    status = dict(zip(tr.records[:, 0].astype(int).tolist(), tr.records[:, 10].astype(int).tolist()))
    assert [status[k] for k in (1, 2, 3)] == [5, 5, 5] and {status[k] for k in (4, 5, 6)} == {1}
    waits = {int(r[0]): r[2] for r in tr.records}
    assert waits == {int(k): (float(w) if s == "completed" else -1.0)
                     for k, w, s in zip(res.jobs["job_id"], np.nan_to_num(res.jobs["wait"], nan=-1), res.jobs["status"])}


def test_swf_out_writes_a_killed_job_with_its_killed_run_time(tmp_path):
    trace = tmp_path / "k.swf"
    # Job 1 runs 500 s but asked for 100 s: killed at 100 s.
    trace.write_text("; MaxNodes: 4\n1 0 -1 500 2 -1 -1 2 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
                     "2 5 -1 30 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1\n")
    rep = replay(trace, swf_out=tmp_path / "out.swf")
    assert rep.jobs[0].status == JobStatus.KILLED
    rec = read_swf(tmp_path / "out.swf").records
    assert rec[0].tolist()[:4] == [1, 0, 0, 100] and rec[0][10] == 0
    assert rec[1].tolist()[:4] == [2, 5, 95, 30] and rec[1][10] == 1


def test_a_trace_job_that_fits_the_machine_runs_whatever_the_header_says(tmp_path, capsys):
    (tmp_path / "t.swf").write_text(HEADER_SMALLER)
    (tmp_path / "exp.toml").write_text(EXPERIMENT)
    out = tmp_path / "r.h5"
    assert main(["run", str(tmp_path / "exp.toml"), "--quiet", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    res = read_results(out)
    j = res.jobs
    status = dict(zip(j["job_id"].tolist(), j["status"].tolist()))
    # Job 2 asks for 12 > MaxProcs 8 processors but fits the 16-node machine: it runs.
    assert status == {1: "completed", 2: "completed", 3: "rejected", 5: "killed"}
    reasons = res.system["rejected_by_reason"]
    assert reasons["larger_than_machine"] == 1 and reasons["cancelled"] == 1
    assert sum(reasons.values()) == 2
    assert "1 larger than the machine" in printed and "1 cancelled in the trace" in printed
    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "1 larger than the machine" in shown and "1 cancelled in the trace before it started (status 5)" in shown


def test_default_kind_of_run_counts_nothing_as_rejected():
    exp = loads(EXPERIMENT.replace('kind = "swf"\ntrace = "t.swf"', "jobs = 5"))
    res = run_experiment(exp, comm=None, progress=False)
    assert res.system["rejected_by_reason"] == {k: 0 for k in REJECT_REASONS}
    assert "rejected_by_reason" in res.summary() and res.summary()["rejected_by_reason"] == {}
