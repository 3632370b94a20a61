"""``simhpc replay``: output, JSON, CSV, and one-line errors for bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from simhpc.cli import main
from simhpc.traces import trace_path

DATA = Path(__file__).resolve().parents[1] / "data"
SIX = str(DATA / "backfill6.swf")


def run_cli(capsys, *argv):
    code = main(["replay", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_summary_table_and_json(capsys):
    code, out, err = run_cli(capsys, SIX, "--json")
    assert code == 0 and err == ""
    lines = out.strip().splitlines()
    summary = json.loads(lines[-1])
    # FCFS + EASY (tests/scheduler/test_backfill.py): starts 0, 10, 23, 3, 33, 33 for submits 0..5
    assert summary["jobs"] == 6 and summary["rejected"] == 0
    assert summary["makespan"] == 133.0
    assert summary["mean_wait"] == pytest.approx(87 / 6) and summary["max_wait"] == 29.0
    assert list(summary)[:8] == ["jobs", "rejected", "makespan", "mean_wait", "max_wait",
                                 "mean_bounded_slowdown", "utilization", "wall_s"]
    assert summary["order"] == "fcfs" and summary["backfill"] == "easy" and summary["allocator"] == "firstfree"
    assert summary["nodes"] == 8 and summary["filter"]["request_from_runtime"] == 1
    text = "\n".join(lines[:-1])
    for label in ("mean wait", "utilization", "loss of capacity", "makespan", "trace filter"):
        assert label in text


@pytest.mark.parametrize("order,backfill,starts", [
    ("fcfs", "none", [0, 10, 20, 30, 30, 30]),
    ("laf", "easy", [0, 10, 104, 20, 4, 20]),
    ("fcfs", "conservative", [0, 10, 20, 30, 30, 5]),
])
def test_policies_and_jobs_out(capsys, tmp_path, order, backfill, starts):
    out_csv = tmp_path / "jobs.csv"
    code, out, _ = run_cli(capsys, SIX, "--order", order, "--backfill", backfill, "--jobs-out", str(out_csv))
    assert code == 0 and f"wrote 6 job rows to {out_csv}" in out
    rows = list(csv.DictReader(open(out_csv)))
    assert [float(r["start"]) for r in rows] == starts


def test_nodes_option_rejects_and_counts_large_jobs(capsys):
    code, out, err = run_cli(capsys, SIX, "--nodes", "4", "--json")
    s = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and s["nodes"] == 4 and s["rejected"] == 3 and s["jobs"] == 3
    assert s["filter"]["too_large"] == 3


def test_cores_per_node(capsys):
    code, out, _ = run_cli(capsys, SIX, "--nodes", "4", "--cores-per-node", "2", "--json")
    s = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and s["rejected"] == 0 and s["cores_per_node"] == 2


def test_no_kill_and_limit(capsys, tmp_path):
    p = tmp_path / "t.swf"
    p.write_text("; MaxProcs: 4\n1 0 -1 100 4 -1 -1 4 50 -1 1 1 1 -1 -1 -1 -1 -1\n"
                 "2 1 -1 10 4 -1 -1 4 50 -1 1 1 1 -1 -1 -1 -1 -1\n")
    s = json.loads(run_cli(capsys, str(p), "--json")[1].strip().splitlines()[-1])
    assert s["killed"] == 1 and s["makespan"] == 60.0  # job 1 killed at 50, job 2 50..60
    s = json.loads(run_cli(capsys, str(p), "--json", "--no-kill")[1].strip().splitlines()[-1])
    assert s["killed"] == 0 and s["makespan"] == 110.0
    s = json.loads(run_cli(capsys, str(p), "--json", "--limit", "1")[1].strip().splitlines()[-1])
    assert s["jobs"] == 1


@pytest.mark.parametrize("argv,message", [
    (["--order", "lifo"], "unknown ordering policy 'lifo' (--order); valid: fcfs, sjf, ljf, saf, laf, sbp, mpp, wfp"),
    (["--backfill", "greedy"], "unknown backfill policy 'greedy' (--backfill); valid: none, firstfit, easy, easy-sjbf, conservative"),
    (["--allocator", "hilbert"], "unknown allocator 'hilbert' (--allocator); valid: "),
    (["--nodes", "-3"], "--nodes must be >= 1, got -3"),
    (["--nodes", "0"], "--nodes must be >= 1, got 0"),
    (["--cores-per-node", "0"], "--cores-per-node must be >= 1"),
    (["--strict", "--nodes", "4"], "job 1 needs 6 nodes (6 processes) but the machine has 4 (3 such job(s)); give --nodes 8 or more"),
    (["--machine", "nonesuch"], "unknown machine 'nonesuch'; valid: cab"),
    (["--allocator-option", "gap"], "--allocator-option 'gap': write KEY=VALUE"),
    (["--machine", "cab", "--nodes", "4"], "give either a machine preset (--machine) or its size"),
])
def test_bad_options_are_one_line_errors(capsys, argv, message):
    code, out, err = run_cli(capsys, SIX, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("simhpc: error: ")
    assert message in err


def test_bad_traces_are_one_line_errors(capsys, tmp_path):
    code, _, err = run_cli(capsys, str(tmp_path / "missing.swf"))
    assert code == 2 and "does not exist" in err and err.count("\n") == 1
    csv_file = tmp_path / "jobs.csv"
    csv_file.write_text("id,submit,run\n1,0,10\n")
    code, _, err = run_cli(capsys, str(csv_file), "--nodes", "4")
    assert code == 2 and "jobs.csv:1: expected 18 whitespace-separated SWF fields, found 1" in err
    assert err.count("\n") == 1
    bad = tmp_path / "bad.swf"
    bad.write_text("; MaxProcs: 4\n1 0 -1 10 4 -1 -1 4 x 0 1 1 1 -1 -1 -1 -1 -1\n")
    code, _, err = run_cli(capsys, str(bad))
    assert code == 2 and "bad.swf:2: field 9 (requested_time) is 'x', not a number" in err
    code, out, _ = run_cli(capsys, str(bad), "--skip-malformed", "--json")
    assert code == 0 and json.loads(out.strip().splitlines()[-1])["filter"]["malformed"] == 1


def test_a_trace_without_a_machine_size_names_the_replay_options(capsys, tmp_path):
    p = tmp_path / "nohdr.swf"
    p.write_text("1 0 -1 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    code, _, err = run_cli(capsys, str(p))
    assert code == 2 and err.count("\n") == 1
    assert err.strip().endswith("nohdr.swf: the header gives no machine size (no '; MaxProcs:' or '; MaxNodes:' "
                                "line); give it with --nodes N or --machine PRESET")
    code, out, _ = run_cli(capsys, str(p), "--nodes", "4", "--json")
    assert code == 0 and json.loads(out.strip().splitlines()[-1])["jobs"] == 1


def test_jobs_out_to_an_unwritable_place(capsys, tmp_path):
    code, _, err = run_cli(capsys, SIX, "--jobs-out", str(tmp_path / "no" / "such" / "dir.csv"))
    assert code == 2 and "cannot write --jobs-out" in err


def test_replay_of_the_lublin_trace(capsys):
    path = trace_path("lublin_256.swf")
    code, out, _ = run_cli(capsys, str(path), "--limit", "2000", "--backfill", "conservative", "--json")
    s = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and s["jobs"] == 2000 and s["nodes"] == 256 and 0 < s["utilization"] <= 1
