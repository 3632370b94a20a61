"""Determinism: the same inputs give identical job tables, run after run and process after
process (whatever the string-hash seed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler.backfill import BACKFILLS
from scheduler.lifecycle import simulate
from scheduler.metrics import job_table
from scheduler.ordering import ORDERINGS
from scheduler.swf import write_swf
from scheduler.workload import LogNormal, PowerOfTwo, SyntheticWorkload, Uniform
from simhpc.traces import trace_path

SRC = Path(__file__).resolve().parents[2]


def workload():
    return SyntheticWorkload(
        n_jobs=250, size=PowerOfTwo(low=1, high=16), run_time=LogNormal(median=900.0, sigma=1.2),
        request_factor=Uniform(low=0.8, high=3.0), users=6,
    ).generate(21)


@pytest.mark.parametrize("backfill", sorted(BACKFILLS))
@pytest.mark.parametrize("order", list(ORDERINGS))
def test_same_inputs_same_job_table(order, backfill):
    jobs = workload()
    a = simulate(jobs, n_nodes=16, ordering=order, backfill=backfill, kill_overrun=order != "sbp")
    b = simulate(jobs, n_nodes=16, ordering=order, backfill=backfill, kill_overrun=order != "sbp")
    assert job_table(a.jobs).equals(job_table(b.jobs))
    assert all((x.assigned_nodes == y.assigned_nodes).all() for x, y in zip(a.jobs, b.jobs))
    assert a.stats.events == b.stats.events


def _replay_csv(trace: Path, out: Path, hash_seed: str, *args: str) -> bytes:
    env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONHASHSEED=hash_seed)
    code = "import sys; from simhpc.cli import main; sys.exit(main(sys.argv[1:]))"
    subprocess.run([sys.executable, "-c", code, "replay", str(trace), "--jobs-out", str(out), *args],
                   check=True, env=env, capture_output=True, timeout=120)
    return out.read_bytes()


def test_identical_across_processes_and_hash_seeds(tmp_path):
    trace = tmp_path / "w.swf"
    write_swf(trace, workload(), max_procs=16)
    args = ("--order", "sbp", "--backfill", "conservative", "--no-kill")
    a = _replay_csv(trace, tmp_path / "a.csv", "1", *args)
    b = _replay_csv(trace, tmp_path / "b.csv", "12345", *args)
    assert a == b and a.count(b"\n") == 251


def test_identical_on_a_real_trace(tmp_path):
    path = trace_path("CTC-SP2-1996-3.1-cln.swf.gz")
    a = _replay_csv(path, tmp_path / "a.csv", "3", "--limit", "4000", "--order", "wfp")
    b = _replay_csv(path, tmp_path / "b.csv", "4", "--limit", "4000", "--order", "wfp")
    assert a == b
