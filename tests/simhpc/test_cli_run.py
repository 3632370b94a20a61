"""`simhpc run` end to end: the default experiment, results file, show; user errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from simhpc.cli import main


def _simhpc() -> list[str]:
    exe = shutil.which("simhpc", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "simhpc.cli"]


def test_default_experiment_end_to_end(tmp_path):
    """The README's first command: the bundled default experiment, sequential, no MPI."""
    out = tmp_path / "results.h5"
    p = subprocess.run([*_simhpc(), "run", "--out", str(out), "--json"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=600, env={**os.environ, "PMI_SIZE": "1"})
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert s["name"] == "default" and s["jobs"] == 300 and s["jobs_run"] == 300
    assert s["app_jobs"] > 50 and 0.5 < s["utilization"] <= 1.0 and s["ranks"] == 1
    assert out.exists()
    show = subprocess.run([*_simhpc(), "show", str(out), "--json"], capture_output=True, text=True, timeout=120)
    assert show.returncode == 0
    again = json.loads(show.stdout.strip().splitlines()[-1])
    assert again["makespan"] == s["makespan"] and again["events"] == s["events"]


def test_run_prints_config_and_applies_overrides(capsys):
    assert main(["run", "--print-config", "--set", "workload.jobs=7", "--seed", "11"]) == 0
    text = capsys.readouterr().out
    assert "jobs = 7" in text and "seed = 11" in text


@pytest.mark.parametrize("argv,message", [
    (["run", "nonexistent.toml"], "experiment file 'nonexistent.toml' does not exist"),
    (["run", "--set", "scheduler.order=fastest"], "scheduler.order: unknown value 'fastest'"),
    (["run", "--set", "workload"], "write KEY=VALUE"),
    (["run", "--out", "/no/such/dir/r.h5", "--set", "workload.jobs=2"], "does not exist"),
    (["run", "--out", ".", "--set", "workload.jobs=2"], "--out '.' is a directory"),
    # Checked when the run builds the scheduler: still named with the experiment it came from.
    (["run", "--no-out", "--set", "scheduler.backfill_options.depth=1"],
     "<default experiment>: scheduler: backfill 'easy' takes no option(s) depth"),
    (["show", "missing.h5"], "missing.h5"),
])
def test_user_mistakes_are_one_line_errors(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_a_small_run_writes_a_results_file(tmp_path, capsys):
    out = tmp_path / "r.h5"
    assert main(["run", "--quiet", "--out", str(out), "--set", "workload.jobs=10"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == f"results written to {out}"
    from simhpc.experiment import default_experiment_text, loads
    from simhpc.results.hdf5 import read_results

    r = read_results(out)
    assert r.n_jobs == 10 and r.name == "default" and "jobs = 10" in r.experiment_toml
    # The stored TOML rebuilds the experiment that ran.
    assert loads(r.experiment_toml) == loads(default_experiment_text(), overrides=["workload.jobs=10"])
    assert r.links is not None and r.run["ranks"] == 1 and r.run["events"] > 0
    # `simhpc show` prints the very summary the run ended with (after its header line).
    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].startswith(f"{out}: simhpc ") and shown[1:] == printed[:-1]
    assert any(line.startswith("mean wait") for line in shown)
