"""The benchmark scripts run end to end on tiny inputs and end with their JSON line.

These check that the scripts work and that what they compare is the same simulation
(identical event counts); they time nothing. The figures come from running the scripts.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from tests_support import MPIRUN

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _run(*argv: str) -> tuple[str, dict]:
    out = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300, check=True)
    return out.stdout, json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (pip install '.[mpi]')")
def test_bench_parallel_compares_the_same_events_at_every_rank_count():
    text, res = _run(str(SCRIPTS / "bench_parallel.py"), "--lps", "120", "--end", "6", "--rounds", "1", "--ranks", "2,3")
    assert res["bench"] == "parallel" and set(res["speedup"]) == {"2", "3"}
    for p in ("2", "3"):
        rows = [res["results"][f"{p}:{how}"] for how in ("seq", "1", p)]
        assert len({r["events"] for r in rows}) == 1 and rows[0]["events"] > 0
        assert rows[0]["windows"] == 0 and rows[1]["windows"] > 0
        assert rows[1]["remote_fraction"] == 0 and rows[2]["remote_fraction"] > 0.05
        assert res["speedup"][p] > 0 and res["p1_vs_sequential"][p] > 0
    assert "speedup" in text.splitlines()[1]  # the table's header


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (pip install '.[mpi]')")
def test_bench_oversubscribe_runs_the_same_events_in_every_mode():
    text, res = _run(str(SCRIPTS / "bench_oversubscribe.py"), "--rounds", "1", "--end", "40")
    assert res["bench"] == "oversubscribe" and res["events"] > 0 and res["windows"] > 0
    assert [r["config"] for r in res["results"]] == ["seq", "P=2 spin", "P=2 block", "P=4 spin", "P=4 block"]
    assert all(r["wall_s"] > 0 and r["cpu_s"] > 0 for r in res["results"])
    assert res["block_vs_spin_p4_wall"] > 0 and "P4/P2" in text


def test_predict_parallel_reports_every_rank_count():
    text, res = _run(str(SCRIPTS / "predict_parallel.py"), "--cases", "phold", "--lps", "160")
    pred = res["cases"]["phold"]["predicted"]
    assert sorted(pred, key=int) == ["1", "2", "4", "8", "16"] and res["cases"]["phold"]["windows"] > 0
    assert pred["1"]["speedup_bound"] == 1.0 and all(1.0 <= pred[p]["speedup_bound"] <= int(p) for p in pred)
    assert "speedup bound" in text


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (pip install '.[mpi]')")
def test_bench_experiment_times_every_way_of_using_the_ranks():
    text, res = _run(str(SCRIPTS / "bench_experiment.py"), "--rounds", "1", "--simulation",
                     "--set", "workload.jobs=3", "--set", "foreground.0.count=1")
    assert [r["config"] for r in res["results"]] == ["sequential", "P=2 baselines", "P=2 simulation"]
    assert all(r["wall_s"] > 0 and r["cpu_s"] > 0 for r in res["results"]) and "wall vs seq" in text


def test_bench_parallel_refuses_p_of_one():
    out = subprocess.run([sys.executable, str(SCRIPTS / "bench_parallel.py"), "--ranks", "1,2"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "P > 1" in out.stderr


def test_bench_kernel_runs_every_implementation_on_a_tiny_model():
    # SimPy comes with the bench extra only: the SimPy baselines are left out here.
    impls = "pdes-service,pdes-process,bare-greenlet,bare-callback"
    _, res = _run(str(SCRIPTS / "bench_kernel.py"), "--sizes", "50", "--events", "4", "--rounds", "1", "--impls", impls)
    assert res["bench"] == "kernel"
    rates = res["events_per_s"]
    assert set(rates) == set(impls.split(","))
    assert set(res["ratios"]) == {"pdes-process/bare-greenlet", "pdes-service/bare-callback"}
    assert all(v["50"] > 0 for v in rates.values())


# ------------------------------------------------------------------- the shared harness
def test_every_script_opens_with_the_harness():
    import ast

    # Scripts are what runs (a __main__ block); harness.py and sched_reference.py (the
    # scheduler benchmark's baseline) are modules the scripts import.
    scripts = sorted(p for p in SCRIPTS.glob("*.py") if "__main__" in p.read_text())
    assert len(scripts) >= 13 and {"harness.py", "sched_reference.py"} <= {p.name for p in SCRIPTS.glob("*.py")}
    for path in scripts:
        tree = ast.parse(path.read_text())
        imported = {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
        assert "harness" in imported, f"{path.name} does not import the harness"
        # The harness alone puts the repository root on sys.path.
        assert "sys.path.insert" not in path.read_text(), path.name


def test_harness_scale_table_and_figures(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import harness as h

    ap = h.parser("Title.\n\nMore.", scales=True, rounds=3, seed=1)
    table = {"full": 3, "reduced": 2, "tiny": 1}
    assert h.scaled(ap.parse_args([]), table) == ("reduced", 2)
    assert h.scaled(ap.parse_args(["--tiny"]), table) == ("tiny", 1)
    assert h.scaled(ap.parse_args(["--full", "--rounds", "5"]), table) == ("full", 3)
    with pytest.raises(KeyError, match="tiny"):
        h.scaled(ap.parse_args([]), {"full": 3, "reduced": 2})
    assert h.median([3.0, 1.0, 2.0, 10.0]) == 2.5 and h.ratio(3.0, 2.0) == 1.5 and math.isnan(h.ratio(1.0, 0.0))
    assert h.r4(1 / 3) == 0.3333 and h.r4(float("nan")) is None and h.r4("x") == "x"
    assert h.table([["a", "1,000"]], ["name", "n"], align="lr").splitlines() == ["name  n    ", "----  -----", "a     1,000"]



def test_deal_checkpoint_saves_each_run_and_a_rerun_skips_the_saved_ones(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import harness as h

    calls = []

    def fn(x):
        calls.append(x)
        return {"x": x, "half": x[1] / 2, "nan": float("nan"), "key": {1: (x[1],)}}

    items = [("full", i) for i in range(5)]
    first = h.deal(items, fn, None, checkpoint=tmp_path / "part")
    assert calls == items
    calls.clear()
    again = h.deal(items, fn, None, checkpoint=tmp_path / "part")
    assert calls == [] and [r["key"] for r in again] == [r["key"] for r in first]
    assert [r["half"] for r in again] == [0.0, 0.5, 1.0, 1.5, 2.0] and math.isnan(again[0]["nan"])
    # A record cut short by a kill is run again; the records before it are kept.
    (f,) = (tmp_path / "part").iterdir()
    f.write_bytes(f.read_bytes()[:-5])
    assert [r["x"] for r in h.deal(items, fn, None, checkpoint=tmp_path / "part")] == items and calls == [items[-1]]
    calls.clear()
    # Items not saved yet run; without a checkpoint everything runs.
    assert [r["x"] for r in h.deal(items + [("full", 9)], fn, None, checkpoint=tmp_path / "part")][-1] == ("full", 9)
    assert calls == [("full", 9)]
    assert len(h.deal(items, fn, None)) == 5 and len(calls) == 6
    ap = h.parser("T.", scales=True)
    assert h.checkpoint(ap.parse_args([]), "a") is None
    assert h.checkpoint(ap.parse_args(["--checkpoint", str(tmp_path)]), "a") == tmp_path / "a"
    (tmp_path / "f").write_text("")
    with pytest.raises(SystemExit, match="is not a folder"):
        h.checkpoint(ap.parse_args(["--checkpoint", str(tmp_path / "f")]), "a")


@pytest.mark.parametrize("argv", [["bench_partitions.py", "--configs", "bgq-cfca:least-blocking:0:60"],
                                  ["bench_allocators.py", "--fattree-study", "--configs", "8:4:jigsaw:0:60"]])
def test_replay_benchmarks_compare_identical_schedules_with_a_baseline_tree(argv):
    # This checkout as its own baseline: the schedules must hash the same.
    root = str(SCRIPTS.parent)
    text, res = _run(str(SCRIPTS / argv[0]), *argv[1:], "--rounds", "1", "--baseline-tree", root)
    (case,) = res["cases"]
    assert case["same_schedule"] is True and case["deterministic"] is True and len(case["hash"]) == 64
    assert case["cpu_s"] > 0 and case["baseline_cpu_s"] > 0 and res["baseline_tree"] == root

TINY = {
    "bench_allocators.py": ["--probes", "10"],
    "bench_apps.py": ["--ranks", "64", "--rounds", "1", "--no-parallel"],
    "bench_network.py": ["--rounds", "1", "--no-mpi"],
    "bench_scheduler.py": ["--limit", "500", "--repeat", "1"],
    "bench_topology.py": ["--pairs", "2000", "--scalar-pairs", "500", "--repeats", "1"],
    "isolation_utilization.py": ["--jobs", "100"],
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_run_ends_with_one_json_line(name):
    text, res = _run(str(SCRIPTS / name), *TINY[name])
    lines = text.strip().splitlines()
    assert len(lines) > 1 and isinstance(res, dict) and res
    assert sum(line.lstrip().startswith("{") for line in lines) == 1  # the JSON object is the last line only


def test_bench_gym_times_the_same_schedules():
    pytest.importorskip("gymnasium")
    text, res = _run(str(SCRIPTS / "bench_gym.py"), "--rounds", "1", "--windows", "2", "--sim-jobs", "16",
                     "--sim-windows", "1", "--networks", "flow", "--sim-machine", "tiny-fattree3")
    assert sum(line.lstrip().startswith("{") for line in text.strip().splitlines()) == 1
    for mode in ("trace", "simulated/flow"):
        t = res["modes"][mode]
        assert t["same_schedule"] and t["steps"] > 0 and t["steps_per_s"] > 0


def test_bench_scale_reports_cost_and_memory_per_rank():
    text, res = _run(str(SCRIPTS / "bench_scale.py"), "--machine", "tiny-torus", "--ranks", "16,64", "--rounds", "1",
                     "--floor", "--floor-shape", "3,4")
    r16, r64 = res["results"]["16"], res["results"]["64"]
    # An allreduce by recursive doubling: more ranks, more events and messages per rank.
    assert r64["events"] > 4 * r16["events"] > 0 and r64["messages"] > 4 * r16["messages"]
    assert r16["per_event_vs_smallest"] == 1.0 and r64["us_per_event"] > 0 and r64["peak_mib"] > 0
    assert "KiB/rank" in text and res["baseline"] == "16 ranks"
    # The greenlet-per-rank floor, at the same rank counts: its bound is relative to the
    # smallest job (1 there).
    assert r16["bound_vs_smallest"] == 1.0 and r16["floor_vs_smallest"] == 1.0
    assert r64["floor_us_per_event"] > 0 and r64["floor_random_us_per_event"] > 0 and r64["greenlet_life_us"] >= 0
    assert "floor us/ev" in text and res["floor_events_per_rank"] == 40
    # The floor of a message's shape (3 calls below its loop, 4 objects of its own per event), beside it.
    assert res["floor_shape"] == {"depth": 3, "objects": 4} and "shaped random" in text
    assert r16["shaped_bound_vs_smallest"] == 1.0 and r16["shaped_vs_smallest"] == 1.0
    assert r64["shaped_us_per_event"] > 0 and r64["shaped_random_us_per_event"] > 0


def test_bench_scale_refuses_a_bad_floor_shape():
    for bad, says in (("6", "two whole numbers"), ("0,3", "DEPTH must be >= 1"), ("2,-1", "OBJECTS >= 0")):
        p = subprocess.run([sys.executable, str(SCRIPTS / "bench_scale.py"), "--floor", "--floor-shape", bad],
                           capture_output=True, text=True)
        assert p.returncode != 0 and says in p.stderr, (bad, p.stderr)
    p = subprocess.run([sys.executable, str(SCRIPTS / "bench_scale.py"), "--floor-shape", "2,2"], capture_output=True, text=True)
    assert p.returncode != 0 and "needs --floor" in p.stderr


def test_harness_compiles_a_trees_packages_for_the_timed_children(tmp_path):
    """Benchmarks time child processes: their bytecode is written first, so that no child
    pays for compiling the packages (as none does on a user's second run)."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        import harness
    finally:
        sys.path.remove(str(SCRIPTS))
    (tmp_path / "pdes").mkdir()
    (tmp_path / "pdes" / "kernel.py").write_text("X = 1\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "conf.py").write_text("Y = 2\n")
    harness.compiled(tmp_path)
    assert list((tmp_path / "pdes" / "__pycache__").glob("kernel.*.pyc"))
    assert not (tmp_path / "docs" / "__pycache__").exists()  # not one of simhpc's packages
