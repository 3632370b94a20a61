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
    # 40 background jobs and 4 foreground all-to-alls, every one run.
    assert s["name"] == "default" and s["jobs"] == 44 and s["jobs_run"] == 44
    assert s["app_jobs"] > 20 and 0.5 < s["utilization"] <= 1.0 and s["ranks"] == 1
    # What the default run is for: randomly placed neighbours visibly slow the jobs down.
    assert s["interference_jobs"] == s["network_jobs"] >= 20
    assert s["mean_interference_slowdown"] > 1.05 and s["max_interference_slowdown"] > 1.5
    assert s["foreground_interference_slowdown"] > 1.3
    assert s["mean_network_slowdown"] > s["mean_interference_slowdown"]
    line = next(x for x in p.stdout.splitlines() if "as long as alone on the same nodes" in x)
    assert f"{s['mean_interference_slowdown']:.2f}x" in line and "foreground jobs" in line
    assert out.exists()
    show = subprocess.run([*_simhpc(), "show", str(out), "--json"], capture_output=True, text=True, timeout=120)
    assert show.returncode == 0
    again = json.loads(show.stdout.strip().splitlines()[-1])
    assert again["makespan"] == s["makespan"] and again["events"] == s["events"]


def test_the_console_script_returns_mains_status_and_leaves_the_run_to_the_os(monkeypatch):
    """`simhpc` (simhpc.cli.console) is main() in a process about to end: what the command
    built is frozen, so the interpreter's last collection does not walk it."""
    import gc
    import weakref

    import simhpc.cli as cli

    class Obj:
        pass

    def fake_main() -> int:
        o = Obj()
        o.me = o  # garbage in a cycle, as a finished simulator is
        refs.append(weakref.ref(o))
        return 3

    refs: list = []
    monkeypatch.setattr(cli, "main", fake_main)
    gc.collect()
    try:
        assert cli.console() == 3
        gc.collect()
        assert refs[0]() is not None  # frozen: the collection left it alone
    finally:
        gc.unfreeze()
    gc.collect()
    assert refs[0]() is None


@pytest.mark.slow
def test_default_experiment_under_a_packing_allocator_shows_no_interference():
    """The comparison the default experiment's comment suggests: first-fit keeps jobs on few
    leaves of the tapered tree, so their runtimes hardly change with neighbours."""
    from simhpc.experiment import default_experiment_text, loads
    from simhpc.experiment.runner import run_experiment

    exp = loads(default_experiment_text(), overrides=["scheduler.allocator=firstfit"])
    s = run_experiment(exp, comm=None, progress=False).summary()
    assert s["jobs_run"] == 44 and s["interference_jobs"] >= 20
    assert s["mean_interference_slowdown"] < 1.02 and s["foreground_interference_slowdown"] < 1.02


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
    (["run", "--no-out", "--set", "scheduler.backfill_options.reserve=1"],
     "<default experiment>: scheduler: backfill 'easy' takes no option(s) reserve"),
    (["show", "missing.h5"], "missing.h5"),
])
def test_user_mistakes_are_one_line_errors(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_a_small_run_writes_a_results_file(tmp_path, capsys):
    out = tmp_path / "r.h5"
    small = ["workload.jobs=10", "foreground.0.count=1"]
    assert main(["run", "--quiet", "--out", str(out), *(a for k in small for a in ("--set", k))]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == f"results written to {out}"
    from simhpc.experiment import default_experiment_text, loads
    from simhpc.results.hdf5 import read_results

    r = read_results(out)
    assert r.n_jobs == 11 and r.name == "default" and "jobs = 10" in r.experiment_toml
    # The stored TOML rebuilds the experiment that ran.
    assert loads(r.experiment_toml) == loads(default_experiment_text(), overrides=small)
    assert r.links is not None and r.run["ranks"] == 1 and r.run["events"] > 0
    # `simhpc show` prints the very summary the run ended with (after its header line).
    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].startswith(f"{out}: simhpc ") and shown[1:] == printed[:-1]
    assert any(line.startswith("mean wait") for line in shown)


def test_predict_ranks_records_and_prints_the_parallel_prediction(tmp_path, capsys):
    out = tmp_path / "p.h5"
    small = ["workload.jobs=4", "foreground.0.count=1", "scheduler.alone_baseline=false", "scheduler.ideal_baseline=false"]
    assert main(["run", "--quiet", "--out", str(out), "--predict-ranks", "4,2",
                 *(a for k in small for a in ("--set", k))]) == 0
    text = capsys.readouterr().out
    table = text.split("parallel prediction (the same windows and events under mpirun -n P):")[1].strip().splitlines()
    assert [r.split()[0] for r in table[2:4]] == ["2", "4"]
    from simhpc.results.hdf5 import read_results

    run = read_results(out).run
    assert list(run["predicted_ranks"]) == [2, 4] and run["windows"] > 0
    assert all(1.0 <= b <= p for b, p in zip(run["predicted_speedup_bound"], (2, 4)))
    assert main(["run", "--no-out", "--predict-ranks", "0"]) == 2
    assert "--predict-ranks takes rank counts >= 1" in capsys.readouterr().err


def test_auto_parallel_spreads_only_large_machines_over_ranks():
    from simhpc.experiment.runner import AUTO_NODES_PER_RANK, parallel_mode
    from simhpc.experiment.spec import ConfigError

    assert parallel_mode("auto", 64, 2) == "baselines"
    assert parallel_mode("auto", 2 * AUTO_NODES_PER_RANK, 2) == "simulation"
    assert parallel_mode("auto", 2 * AUTO_NODES_PER_RANK, 4) == "baselines"
    assert parallel_mode("simulation", 64, 2) == "simulation"
    with pytest.raises(ConfigError, match="parallel.*auto.*simulation.*baselines"):
        parallel_mode("both", 64, 2)
