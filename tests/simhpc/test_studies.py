"""Interference studies: the driver's invariants on small machines, determinism, the HDF5
file, the figure, config errors, ``simhpc study``, and the reproduction scripts' command lines."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simhpc.cli import main
from simhpc.studies import (
    BackgroundApp,
    ForegroundJob,
    InterferenceStudy,
    StudyConfigError,
    dumps_study,
    loads_study,
    read_study,
    run_study,
    write_study,
)
from simhpc.studies.hdf5 import StudyFileError
from tests_support import MPIRUN

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"

REL = 1e-12


def _study(**kw):
    base = dict(
        name="t", machine="tiny-torus", ranks_per_node=1, allocator="random", k=(0, 1, 3), seeds=2,
        foreground=ForegroundJob(app="even-odd", ranks=16, args={"iters": 4, "nbytes": "64KiB"}),
        background=(BackgroundApp(app="pairs", ranks=(8, 16), args={"iters": 3}),
                    BackgroundApp(app="stencil2d", ranks=12, args={"iters": 2, "face_bytes": "32KiB"}, weight=2)),
    )
    base.update(kw)
    return InterferenceStudy(**base)


@pytest.fixture(scope="module")
def static_res():
    return run_study(_study(), comm=None)


def _same(a, b):
    """Two StudyResults hold the same figures (wall-clock times aside)."""
    for name, v in a.runs.items():
        if name == "wall_s":
            continue
        w = b.runs[name]
        if v.dtype.kind == "f":
            assert np.array_equal(v, w, equal_nan=True), name
        else:
            assert list(v) == list(w), name
    assert np.array_equal(a.fg_nodes_ptr, b.fg_nodes_ptr) and np.array_equal(a.fg_node_ids, b.fg_node_ids)
    for name, v in a.hot.items():
        assert list(v) == list(b.hot[name]), name


# --------------------------------------------------------------------------- invariants
def test_k0_runs_are_the_foreground_alone(static_res):
    r = static_res.runs
    k0 = r["k"] == 0
    assert (r["status"][k0] == "ok").all()
    # Event for event the run alone: exactly the same runtime, no other traffic.
    assert np.array_equal(r["runtime"][k0], r["alone"][k0])
    assert (r["slowdown"][k0] == 1.0).all()
    assert (r["other_bytes"][k0] == 0).all() and (r["bg_jobs"][k0] == 0).all()


def test_background_never_speeds_the_foreground_up(static_res):
    r = static_res.runs
    ok = r["status"] == "ok"
    assert ok.sum() >= 5
    ideal, alone, run = r["ideal"][ok], r["alone"][ok], r["runtime"][ok]
    assert (ideal <= alone * (1 + REL)).all()
    assert (alone <= run * (1 + REL)).all()
    assert (r["slowdown"][ok] >= 1 - REL).all()
    assert np.allclose(r["slowdown"][ok], run / alone) and np.allclose(r["ideal_slowdown"][ok], run / ideal)
    # With background jobs on a 64-node torus under random placement, some run is slowed.
    assert r["slowdown"][ok & (r["k"] > 0)].max() > 1.05


def test_runs_record_background_placement_and_traffic(static_res):
    r = static_res.runs
    s = static_res
    for i in range(s.n_runs):
        if r["status"][i] != "ok":
            continue
        bg = json.loads(r["background"][i])
        assert len(bg) == r["k"][i] == r["bg_jobs"][i]
        assert r["bg_nodes"][i] == sum(b[3] for b in bg)
        assert r["bg_launches"][i] >= r["k"][i]
        nodes = s.fg_nodes_of(i)
        assert len(nodes) == r["fg_nodes"][i] == 16 and len(set(nodes.tolist())) == 16
        # even-odd: 8 pairs exchange 64 KiB both ways, 4 times.
        assert r["bytes"][i] == 4 * 16 * 65536 and r["messages"][i] == 4 * 16
        assert r["hop_bytes"][i] > 0 and r["aph"][i] > 0
        hot = s.hot_links_of(i)
        assert 1 <= len(hot) <= 5 and [h["rank"] for h in hot] == list(range(1, len(hot) + 1))
        utils = [h["utilization"] for h in hot]
        assert utils == sorted(utils, reverse=True) and math.isclose(utils[0], r["max_util"][i])
        assert all(h["kind"] == "local" and h["fg_bytes"] > 0 for h in hot)
        assert r["other_bytes"][i] >= sum(h["other_bytes"] for h in hot) - 1e-9
        if r["k"][i] == 0:
            assert all(h["other_bytes"] == 0 for h in hot)
            # Alone, utilization over the window matches the run alone's to within the
            # lookahead the window is longer by.
            assert all(abs(h["utilization"] - h["utilization_alone"]) < 0.02 for h in hot)


def test_background_jobs_are_the_same_draws_for_every_k(static_res):
    r = static_res.runs
    for seed in (0, 1):
        one = json.loads(r["background"][(r["k"] == 1) & (r["seed"] == seed)][0])
        three = json.loads(r["background"][(r["k"] == 3) & (r["seed"] == seed)][0])
        assert one == three[:1]


def test_determinism_and_by_k(static_res):
    again = run_study(_study(), comm=None)
    _same(static_res, again)
    rows = static_res.by_k()
    assert [x["k"] for x in rows] == [0, 1, 3] and all(x["runs"] == 2 for x in rows)
    assert rows[0]["slowdown"]["median"] == 1.0


def test_interference_free_allocator_gives_no_slowdown():
    # t123 on a 3-level fat-tree: no switch port carries two jobs' traffic, so the
    # foreground's run among background jobs is its run alone, to the last event.
    st = _study(machine="tiny-fattree3", allocator="t123", k=(2,), seeds=2,
                foreground=ForegroundJob(app="alltoall", ranks=4, args={"iters": 2, "nbytes": "16KiB"}),
                background=(BackgroundApp(app="pairs", ranks=4, args={"iters": 4, "nbytes": "64KiB"}),))
    r = run_study(st, comm=None).runs
    assert (r["status"] == "ok").all()
    assert np.array_equal(r["runtime"], r["alone"]) and (r["other_bytes"] == 0).all()


FT8 = {"name": "ft8", "topology": {"family": "fattree", "radix": 8, "levels": 3}, "cores_per_node": 4,
       "flops_per_node": "100GF", "mem_bw_per_node": "20GB/s"}  # 128 nodes, 4 per leaf


def test_link_reserving_allocator_confines_every_job_to_its_links(monkeypatch):
    # jigsaw reserves switch links for each job and the study routes each job only over its
    # own: the foreground's run among the background is its run alone. Without the
    # confinement the same placements share links (the check below that it matters).
    from scheduler.allocators.isolating import JigsawState

    st = _study(machine=FT8, allocator="jigsaw", k=(6,), seeds=4,
                foreground=ForegroundJob(app="alltoall", ranks=21, args={"iters": 2, "nbytes": "32KiB"}),
                background=(BackgroundApp(app="alltoall", ranks=(3, 30), args={"iters": 4, "nbytes": "64KiB"}),))
    r = run_study(st, comm=None).runs
    ok = r["status"] == "ok"
    assert ok.sum() >= 3
    assert (r["status"][~ok] == "unplaced").all() and all(r["reason"][~ok])
    assert np.array_equal(r["runtime"][ok], r["alone"][ok]) and (r["other_bytes"][ok] == 0).all()
    monkeypatch.setattr(JigsawState, "allowed_links", None)
    free = run_study(st, comm=None).runs
    assert list(free["status"]) == list(r["status"])
    assert (free["other_bytes"][ok] > 0).all() and (free["slowdown"][ok] > 1).all()


JIGSAW_TRACE_TOML = """
[study]
name = "jigsaw-trace"
mode = "trace"
seeds = 2
allocator = "jigsaw"
ranks_per_node = 1

[machine]
name = "ft8"
cores_per_node = 4
flops_per_node = "100GF"
mem_bw_per_node = "20GB/s"
topology = { family = "fattree", radix = 8, levels = 3 }

[foreground]
app = "alltoall"
ranks = 21
args = { iters = 3, nbytes = "32KiB", compute_s = 0.05 }

[[background]]
app = "pairs"
args = { iters = 60, nbytes = "64KiB", compute_s = 0.05 }

[workload]
kind = "synthetic"
jobs = 10
inter_arrival = { dist = "exponential", mean = "1s" }
size = { dist = "uniform", low = 3, high = 30 }
run_time = { dist = "constant", value = "2s" }
request_factor = { dist = "constant", value = 1.5 }
"""


def test_trace_runtime_is_measured_like_the_runtime_alone(monkeypatch):
    # In trace mode the runtime runs from the foreground's first rank start to its last rank
    # end, as alone and ideal do (not from the scheduler's launch to the end report, which
    # would add two messages' latency). Isolated by jigsaw's links, it is its run alone up
    # to the rounding of event times at a later start.
    from scheduler.allocators.isolating import JigsawState

    st = loads_study(JIGSAW_TRACE_TOML)
    r = run_study(st, comm=None).runs
    assert (r["status"] == "ok").all() and (r["bg_jobs"] >= 1).all() and (r["start"] > 0).all()
    assert np.allclose(r["runtime"], r["alone"], rtol=1e-10, atol=0) and (r["other_bytes"] == 0).all()
    assert np.allclose(r["end"] - r["start"], r["runtime"], rtol=1e-15)
    monkeypatch.setattr(JigsawState, "allowed_links", None)
    assert (run_study(st, comm=None).runs["other_bytes"] > 0).all()


def test_unplaced_runs_are_counted_with_a_reason():
    st = _study(k=(0, 5), seeds=1, background=(BackgroundApp(app="pairs", ranks=(9, 12), args={"iters": 2}),))
    res = run_study(st, comm=None)
    r = res.runs
    assert list(r["status"]) == ["ok", "unplaced"]
    assert "the machine has 64" in r["reason"][1] and math.isnan(r["runtime"][1])
    assert res.summary()["status"] == {"ok": 1, "unplaced": 1}


def test_parallel_simulation_mode_gives_the_same_rows_sequentially(static_res):
    # Sequentially both modes are the same code path; the MPI tests compare across ranks.
    par = run_study(dataclasses.replace(_study(), parallel="simulation"), comm=None)
    _same(static_res, par)


def test_trace_mode_inserts_the_foreground_into_a_workload():
    st = loads_study(TRACE_TOML)
    res = run_study(st, comm=None)
    r = res.runs
    assert list(r["k"]) == [-1, -1] and (r["status"] == "ok").all()
    assert (r["ideal"] <= r["alone"] * (1 + REL)).all() and (r["alone"] <= r["runtime"] * (1 + REL)).all()
    assert (r["bg_jobs"] >= 1).all()
    for i in range(2):
        bg = json.loads(r["background"][i])
        assert len(bg) == r["bg_jobs"][i] and all(b[1] == "pairs" for b in bg)
    # The window covers the foreground's run only: the link snapshot starts at its start.
    assert (r["max_util"] < 0.1).all()
    again = run_study(st, comm=None)
    _same(res, again)


TRACE_TOML = """
[study]
name = "trace"
mode = "trace"
seeds = 2
ranks_per_node = 1

[machine]
preset = "tiny-torus"

[foreground]
app = "even-odd"
ranks = 16
args = { iters = 3, compute_s = 0.05 }

[[background]]
app = "pairs"
args = { iters = 60, compute_s = 0.05 }

[workload]
kind = "synthetic"
jobs = 8
inter_arrival = { dist = "exponential", mean = "1s" }
size = { dist = "power_of_two", low = 4, high = 16 }
run_time = { dist = "constant", value = "2s" }
request_factor = { dist = "constant", value = 1.5 }
"""


# ------------------------------------------------------------------------- files, plot
def test_hdf5_round_trip_and_errors(static_res, tmp_path):
    p = write_study(static_res, tmp_path / "s.h5", created="2024-01-01T00:00:00+00:00")
    back = read_study(p)
    _same(static_res, back)
    assert back.name == "t" and back.mode == "static" and back.machine == static_res.machine
    assert back.foreground == static_res.foreground and back.study_toml == static_res.study_toml
    assert back.runs["wall_s"].tolist() == static_res.runs["wall_s"].tolist()
    assert back.summary()["by_k"] == static_res.summary()["by_k"]
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    import h5py

    with h5py.File(p) as f:
        assert f.attrs["schema"] == "simhpc-study" and f.attrs["schema_version"] == 1
        assert f["runs/slowdown"].attrs["unit"] == "" and f["runs/runtime"].attrs["unit"] == "s"
        assert list(f["summary/k"][()]) == [0, 1, 3]
    # The study can be read back from its own file and gives the same rows.
    _same(static_res, run_study(loads_study(back.study_toml), comm=None))
    with pytest.raises(StudyFileError, match="no such file"):
        read_study(tmp_path / "missing.h5")
    (tmp_path / "x.h5").write_text("not hdf5")
    with pytest.raises(StudyFileError, match="not an HDF5 file"):
        read_study(tmp_path / "x.h5")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f.attrs["schema"] = "simhpc-results"
    with pytest.raises(StudyFileError, match="expected 'simhpc-study'"):
        read_study(tmp_path / "other.h5")
    with pytest.raises(StudyFileError, match="is a directory"):
        write_study(static_res, tmp_path)


def test_plot_writes_a_png(static_res, tmp_path):
    from simhpc.studies import plot_study

    p = plot_study(static_res, tmp_path / "f.png")
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -------------------------------------------------------------------------- configuration
def test_toml_round_trip():
    st = _study(allocator_options={}, end_time="1s", eager_threshold="32KiB")
    text = dumps_study(st)
    back = loads_study(text)
    assert back == st and dumps_study(back) == text
    assert back.seeds == (0, 1) and back.end_time == 1.0 and back.eager_threshold == 32768
    tr = loads_study(TRACE_TOML)
    assert loads_study(dumps_study(tr)) == tr


def test_machine_objects_are_written_as_inline_topologies():
    from models.presets import get_machine

    st = _study(machine=get_machine("tiny-mesh"), k=(0,), background=())
    back = loads_study(dumps_study(st))
    a, b = st.build_machine().topology, back.build_machine().topology
    assert np.array_equal(a.link_dst, b.link_dst) and np.array_equal(a.link_bw, b.link_bw)


BAD = [
    ({"mode": "steady"}, "study.mode: unknown value 'steady'; valid: static, trace"),
    ({"allocator": "best"}, "study.allocator: unknown value 'best'; valid:"),
    ({"allocator": "t123"}, "study.allocator = 't123': allocator 't123' needs a fattree topology, got a torus"),
    ({"k": (0, 0)}, "study.k: the values must be distinct"),
    ({"k": (0, 40)}, "study.k: 40 background jobs of at least 8 node(s) plus the foreground's 16 need 336 nodes"),
    ({"seeds": 0}, "study.seeds: must be an integer >= 1"),
    ({"mapping": "cyclic"}, "study.mapping: unknown value 'cyclic'; valid: block, round_robin"),
    ({"parallel": "both"}, "study.parallel: unknown value 'both'; valid: runs, simulation"),
    ({"eager_threshold": -1}, "study.eager_threshold must be a whole number of bytes >= 0, got -1"),
    ({"background": ()}, "background: k > 0 needs at least one [[background]] app"),
    ({"background": (BackgroundApp(app="pairs"),)}, "background[pairs]: give its size"),
    ({"mode": "trace"}, "study.k: only used in static mode"),
    ({"mode": "trace", "k": None}, "workload: trace mode needs a [workload] table"),
]


@pytest.mark.parametrize("changes,msg", BAD)
def test_config_errors_name_the_key(changes, msg):
    with pytest.raises(StudyConfigError) as ei:
        _study(**changes)
    assert msg in str(ei.value)


def test_config_errors_of_jobs_and_files(tmp_path):
    with pytest.raises(StudyConfigError, match="unknown app 'evenodd'; valid: "):
        ForegroundJob(app="evenodd", ranks=4)
    with pytest.raises(StudyConfigError, match=r"app 'even-odd' has no parameter 'iter'; parameters: even-odd\(iters=10"):
        ForegroundJob(app="even-odd", ranks=4, args={"iter": 3})
    with pytest.raises(StudyConfigError, match="job-level app"):
        ForegroundJob(app="timekeeper", ranks=4, args={"runtime": 1})
    with pytest.raises(StudyConfigError, match=r"background\[pairs\]: give ranks or fraction, not both"):
        BackgroundApp(app="pairs", ranks=4, fraction=0.1)
    with pytest.raises(StudyConfigError, match=r"fraction: must be a finite number in \[0, 1\]"):
        BackgroundApp(app="pairs", fraction=(0.1, 1.5))
    with pytest.raises(StudyConfigError, match="foreground.ranks: 100 ranks at 1 per node need 100 nodes; machine tiny-torus has 64"):
        _study(foreground=ForegroundJob(app="ring", ranks=100))
    text = dumps_study(_study())
    with pytest.raises(StudyConfigError, match="study: unknown key\\(s\\) 'seed'; valid: name, mode, k, seeds"):
        loads_study(text.replace("seeds = [0, 1]", "seed = 1"))
    with pytest.raises(StudyConfigError, match="foreground: missing"):
        loads_study("[machine]\npreset = \"tiny-torus\"\n")
    with pytest.raises(StudyConfigError, match="machine.preset: unknown value 'nope'"):
        loads_study(text.replace('preset = "tiny-torus"', 'preset = "nope"'))
    with pytest.raises(StudyConfigError, match="--set nope.k: unknown key 'nope'; valid: study, machine"):
        loads_study(text, overrides=["nope.k=1"])
    assert loads_study(text, overrides=["study.seeds=4"]).seeds == (0, 1, 2, 3)


# ------------------------------------------------------------------------------ CLI
CLI_TOML = """
[study]
name = "cli"
k = [0, 2]
seeds = 2
ranks_per_node = 1

[machine]
preset = "tiny-fattree3"

[foreground]
app = "ring"
ranks = 6
args = { iters = 3 }

[[background]]
app = "pairs"
ranks = [2, 4]
args = { iters = 3 }
"""


def test_cli_study(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text(CLI_TOML)
    out_h5 = tmp_path / "r.h5"
    figs = tmp_path / "results" / "figures"  # missing: created (the README's `--plot results/`)
    assert main(["study", str(f), "--out", str(out_h5), "--plot", str(figs), "--json", "--hot"]) == 0
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert lines[0].startswith("study cli (static): ring x 6 ranks on tiny-fattree3 (16 nodes), random placement, 4 runs")
    assert "slowdown med" in lines[1] and lines[3].split()[:2] == ["0", "2/2"]
    s = json.loads(lines[-1])
    assert s["runs"] == 4 and s["status"] == {"ok": 4} and [x["k"] for x in s["by_k"]] == [0, 2]
    assert s["by_k"][0]["median_slowdown"] == 1.0
    assert read_study(out_h5).n_runs == 4 and (figs / "cli.png").exists()
    assert s["results"] == str(out_h5) and s["figure"] == str(figs / "cli.png")
    assert main(["study", str(f), "--print-config", "--set", "study.seeds=3"]) == 0
    assert "seeds = [0, 1, 2]" in capsys.readouterr().out


@pytest.mark.parametrize("args,msg", [
    (["--set", "study.allocator=nope"], "study.allocator: unknown value 'nope'"),
    (["--out", "/nonexistent-dir/x.h5"], "--out '/nonexistent-dir/x.h5': the folder '/nonexistent-dir' does not exist"),
    (["--plot", "/dev/null"], "--plot '/dev/null' exists and is not a folder"),
    (["--plot", "/dev/null/figures"], "--plot '/dev/null/figures' cannot be created: '/dev/null' is not a folder"),
    (["--out", ""], "--out is empty; give a file name, such as study.h5"),
])
def test_cli_errors_are_one_line(tmp_path, capsys, args, msg):
    f = tmp_path / "s.toml"
    f.write_text(CLI_TOML)
    assert main(["study", str(f), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("simhpc: error: ") and msg in err and "Traceback" not in err
    assert main(["study", str(tmp_path / "none.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err


# ------------------------------------------------------------------- reproduction scripts
REPROS = ["repro_obaida_liu", "repro_pollard", "repro_zhou", "repro_albing", "repro_jigsaw"]


@pytest.mark.parametrize("name", REPROS)
def test_repro_script_imports_and_has_help(name, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(SystemExit) as ei:
        mod.main(["--help"])
    assert ei.value.code == 0
    out = capsys.readouterr().out
    assert "--full" in out and "--out" in out and "--tiny" in out and "--scale" in out and "--dry-run" in out


# repro_zhou --tiny takes about 20 s (a 1,024-node all-to-all on three partitions); its
# command line is checked above.
@pytest.mark.parametrize("name", ["repro_obaida_liu", "repro_albing", "repro_pollard", "repro_jigsaw"])
def test_repro_tiny_mode_prints_a_table_and_json(name, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py"), "--tiny", "--out", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert any(line.startswith("reduced:") or line.startswith("tiny:") for line in lines)
    fig = json.loads(lines[-1])
    assert fig["script"] == name and fig["scale"] == "tiny"
    assert any(f.endswith(".png") for f in os.listdir(tmp_path))
    if name == "repro_pollard":
        # Every job of both workloads ran under both allocators; speedups per pattern and over
        # all jobs, with their sample counts adding up.
        sp = fig["speedup_t123_over_random"]
        assert sorted(sp) == ["all", "pairs", "stencil4d", "sub-a2a", "unstr-mesh"] and fig["jobs_not_ok"] == 0
        assert sum(v["n"] for k, v in sp.items() if k != "all") == sp["all"]["n"] > 0
        assert all(v["mean"] > 0 for v in sp.values() if v["n"])
        assert sorted(fig["cluster"]) == [f"x{f}/{a}" for f in (1, 2) for a in ("random", "t123", "t123-whole-pods")]
        assert all(v["utilization"]["n"] == 2 for v in fig["cluster"].values())
    if name == "repro_jigsaw":
        for by_mean in fig["machines"].values():
            for per in by_mean.values():
                assert sorted(per) == ["firstfree", "jigsaw", "t123", "t123-whole-pods"]
                assert per["firstfree"]["vs_firstfree"] == {"mean": 1.0, "se": 0.0, "n": 2}
                assert all(0 < v["utilization"]["mean"] <= 1 and v["utilization"]["n"] == 2 for v in per.values())
    if name == "repro_albing":
        # Every machine and policy over both logs; FIFO-0 is the baseline of itself.
        assert sorted(fig["machines"]) == ["dragonfly-best", "dragonfly-worst", "hector", "torus5d"]
        for per in fig["machines"].values():
            assert len(per) == 9 and per["fifo0"]["overall"]["improvement_pct"] == {"mean": 0.0, "se": 0.0, "n": 2}
            assert all(v[c]["mind"]["n"] == 2 for v in per.values() for c in ("small", "large", "overall"))
    if name == "repro_obaida_liu":
        # Every (message size, ranks per node) configuration, each job count over both seeds;
        # one job is its own baseline, and at 16 ranks per node the partners share a node.
        assert sorted(fig["configs"]) == ["1KiB/1", "1KiB/16", "1MiB/1", "1MiB/16"]
        for cfg in fig["configs"].values():
            assert [x["jobs"] for x in cfg["series"]] == [1, 3, 9]
            assert cfg["series"][0]["vs_one_job"] == {"mean": 1.0, "se": 0.0, "n": 2}
            assert all(x["runtime_us"]["n"] == 2 for x in cfg["series"])
        assert all(x["slowdown"]["mean"] == 1.0 for x in fig["configs"]["1MiB/16"]["series"])


TINY_UNDER_MPIRUN = {
    "repro_zhou-network": ["repro_zhou", "--view", "network", "--sizes", "1K"],
    "repro_zhou-scheduling": ["repro_zhou", "--view", "scheduling"],
    "repro_obaida_liu": ["repro_obaida_liu"], "repro_pollard": ["repro_pollard"],
    "repro_albing": ["repro_albing"], "repro_jigsaw": ["repro_jigsaw"],
}


def _figures(fig):
    """A script's JSON figures without its CPU and wall times (which no two runs share)."""
    if isinstance(fig, dict):
        return {k: _figures(v) for k, v in fig.items() if not (k.startswith("cpu_s") or k == "wall_s")}
    if isinstance(fig, list):
        return [_figures(v) for v in fig]
    return fig


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (pip install '.[mpi]')")
@pytest.mark.parametrize("case", sorted(TINY_UNDER_MPIRUN))
def test_repro_tiny_under_mpirun_gives_the_sequential_figures(case, tmp_path):
    """Under mpirun each rank runs its share of the script's runs, each one sequentially:
    the figures are the sequential run's (a run that joined the ranks' different runs into
    one parallel simulation gave one cell another cell's runtimes)."""
    name, *extra = TINY_UNDER_MPIRUN[case]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(SCRIPTS / f"{name}.py"), "--tiny", *extra]
    figs = []
    for launch, out in (([], "seq"), ([MPIRUN, "-n", "2"], "mpi")):
        p = subprocess.run([*launch, *cmd, "--out", str(tmp_path / out)], capture_output=True, text=True, env=env,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        figs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    assert _figures(figs[1]) == _figures(figs[0])


# Each --scale full setup is built (machines, workloads, partitions) and printed, not simulated.
FULL_SETUP = {
    "repro_obaida_liu": ["cielo torus 16x12x24 x 2 nodes = 9216 nodes", "jobs of 1024 ranks", "10 seeds"],
    "repro_pollard": ["fattree44 (10,648 nodes: 22 per leaf, 22 leaves per pod, 22 pods)", "15 workloads",
                      "512-4096 nodes"],
    "repro_zhou": ["8x4x8x16x2", "4x4x4x8x2    1024  TTTMT", "10,000 jobs x 5 seeds", "25 (slowdown, fraction)"],
    "repro_albing": ["2,816 compute + 64 service nodes", "100,000 jobs", "torus5d          torus       2816"],
    "repro_jigsaw": ["radix 18 (1,458 nodes), radix 22 (2,662 nodes), radix 28 (5,488 nodes)", "10000 jobs x 5 seeds",
                     "5,488         28"],
}


@pytest.mark.parametrize("name", REPROS)
def test_repro_full_dry_run_prints_the_published_setup(name):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py"), "--scale", "full", "--dry-run"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("full: ")
    for text in FULL_SETUP[name]:
        assert text in p.stdout, (text, p.stdout)
    fig = json.loads(p.stdout.strip().splitlines()[-1])
    assert fig["script"] == name and fig["scale"] == "full" and fig["dry_run"] is True


# ------------------------------------------------------------------------- docs, examples
def test_docs_list_every_column_of_the_file():
    from simhpc.studies.hdf5 import SUMMARY_COLUMNS
    from simhpc.studies.results import HOT_COLUMNS, RUN_COLUMNS

    text = (ROOT / "docs" / "studies.md").read_text()
    for name, (dt, unit, desc) in {**RUN_COLUMNS, **HOT_COLUMNS}.items():
        assert f"| `{name}` | {dt} | {unit} | {desc} |" in text, name
    for name, (unit, desc) in SUMMARY_COLUMNS.items():
        assert f"| `{name}` | {unit} | {desc} |" in text, name


def test_examples_load_and_the_static_one_runs():
    ex = ROOT / "examples" / "studies"
    st = loads_study((ex / "interference.toml").read_text(), overrides=["study.k=[0, 2]", "study.seeds=1"])
    r = run_study(st, comm=None).runs
    assert (r["status"] == "ok").all() and r["slowdown"][0] == 1.0
    tr = loads_study((ex / "interference_trace.toml").read_text())
    assert tr.mode == "trace" and tr.workload.time_scale == 1e-6


def test_topology_rank_mapping_in_a_study_keeps_the_alone_run_identical():
    fg = ForegroundJob(app="stencil3d", ranks=8, args={"grid": [4, 2, 1], "face_bytes": "32KiB", "iters": 3})
    runs = {m: run_study(_study(mapping=m, allocator="firstfree", k=(0, 2), seeds=1, foreground=fg), comm=None).runs
            for m in ("block", "topology")}
    for m, r in runs.items():
        assert (r["status"] == "ok").all(), m
        k0 = r["k"] == 0
        # The alone run repeats the rank placement of the run: event for event the same.
        assert np.array_equal(r["runtime"][k0], r["alone"][k0]), m
    # On nodes 0..7 of the 4x4x4 torus the 4x2x1 grid embeds exactly: fewer hop-bytes.
    assert (runs["topology"]["hop_bytes"] < runs["block"]["hop_bytes"]).all()


def test_repro_zhou_sizes_runs_only_the_partitions_named(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(SCRIPTS / "repro_zhou.py"), "--tiny", "--view", "network", "--out", str(tmp_path)]
    p = subprocess.run([*cmd, "--sizes", "1K"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    fig = json.loads(p.stdout.strip().splitlines()[-1])
    assert sorted(fig["network"]) == ["alltoall@1K/contention-free", "stencil3d@1K/contention-free"]
    assert fig["network"]["alltoall@1K/contention-free"]["ratio"] > 1.0  # the missing D wrap costs bisection
    halo = fig["network"]["stencil3d@1K/contention-free"]
    assert halo["busiest_link_flows"] == [6, 6] and abs(halo["ratio"] - 1.0) < 0.01  # no link busier: no slower
    # A size the scale does not have, or no size at all: one line naming the option.
    for bad, msg in (("8K", "8K is not a partition of the tiny scale"), ("3K", "'3K' is not a partition size"),
                     (",", "no partition size given")):
        p = subprocess.run([*cmd, "--sizes", bad], capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 2 and "--sizes" in p.stderr and msg in p.stderr and "Traceback" not in p.stderr


def test_repro_zhou_halo_link_flows_predict_the_mesh_penalty(monkeypatch):
    # On the reduced 4K partition, the halo's wrap-around exchanges go the long way on the
    # mesh: 8 flows share its busiest link against the torus's 6, and the halo runs 1.322
    # times as long (docs/studies.md), close to 8/6. On the reduced 2K partition both have 6.
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import repro_zhou as z

    assert [z.halo_link_flows("reduced", 4096, k) for k in ("torus", "mesh", "contention-free")] == [6, 8, 8]
    assert [z.halo_link_flows("reduced", 2048, k) for k in ("torus", "mesh")] == [6, 6]


def test_repro_zhou_spread_reruns_every_cell_perturbed(tmp_path):
    # --spread K: each cell K times, every link's bandwidth scaled by 1 + i * 1e-12; the
    # first run is the unperturbed one, and the ratio gets a mean +- standard error over K.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(SCRIPTS / "repro_zhou.py"), "--tiny", "--view", "network", "--sizes", "1K",
           "--out", str(tmp_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    plain = json.loads(p.stdout.strip().splitlines()[-1])["network"]
    p = subprocess.run([*cmd, "--spread", "3"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])["network"]
    for cell, fig in got.items():
        assert fig["ratio"] == plain[cell]["ratio"] and "ratio_spread" not in plain[cell]
        assert fig["ratio_spread"]["n"] == 3 and fig["ratio_range"][0] <= fig["ratio_spread"]["mean"] <= fig["ratio_range"][1]
        assert 1 <= fig["ratio_outcomes"] <= 3
        if fig["ratio_range"][0] == fig["ratio_range"][1]:
            assert fig["ratio_outcomes"] == 1
    assert "ratio, perturbed" in p.stdout and "outcomes" in p.stdout
    p = subprocess.run([*cmd, "--spread", "0"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2 and "--spread must be >= 1" in p.stderr and "Traceback" not in p.stderr


def test_repro_zhou_outcomes_count_ratios_apart_by_more_than_the_tolerance(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import repro_zhou as z

    # Runs a perturbation apart (about 1e-12) are one outcome; a changed decision is another.
    assert z.outcomes([1.2, 1.2 * (1 + 1e-12), 1.2 * (1 - 3e-12)]) == 1
    assert z.outcomes([1.2, 1.2 * (1 + 1e-12), 1.21, 1.19, 1.21]) == 3
    assert z.outcomes([1.0]) == 1
    # Chains of close values are measured from each value to the next, in sorted order.
    assert z.outcomes([1.0, 1.0 + 6e-10, 1.0 + 1.2e-9]) == 1 and z.outcomes([1.0, 1.0 + 2e-9]) == 2


def test_repro_zhou_perturbed_partition_scales_every_link(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import repro_zhou as z

    a = z.partition_machine("tiny", 1024, "mesh").topology
    b = z.partition_machine("tiny", 1024, "mesh", 3).topology
    assert np.allclose(b.link_bw / a.link_bw, 1.0 + 3e-12, rtol=0, atol=1e-15) and (b.link_bw != a.link_bw).all()
    assert b.wrap == a.wrap and b.dims == a.dims
