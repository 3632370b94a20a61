"""Running experiments end to end: emergent runtimes, failures, deadlocks, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from apps.registry import app
from simhpc.experiment import dumps, loads
from simhpc.experiment.runner import ExperimentError, build_workload, run_experiment


@app("test-boom")
def _boom(mpi, *, at=1.0):
    """Rank 1 raises after ``at`` seconds; the others wait in a barrier."""
    mpi.compute(seconds=at)
    if mpi.rank == 1:
        raise RuntimeError("rank 1 exploded")
    mpi.barrier()


@app("test-stuck")
def _stuck(mpi):
    """Every rank waits for a message nobody sends."""
    mpi.recv(source=(mpi.rank + 1) % mpi.size, tag=99)


SMALL = """
name = "small"
seed = 3

[machine]
preset = "tiny-fattree3"

[network]
model = "packet"
chunk_size = "8KiB"

[workload]
jobs = 24
inter_arrival = { dist = "exponential", mean = "20s" }
size = { dist = "power_of_two", low = 2, high = 16 }
run_time = { dist = "uniform", low = "30s", high = "5min" }
request_factor = 2.0

[[apps]]
name = "timekeeper"
weight = 2

[[apps]]
name = "pairs"
args = { iters = 4, nbytes = "128KiB", compute_s = 2.0 }
request_time = "10min"

[[apps]]
name = "allreduce"
args = { iters = 4, nbytes = "64KiB", compute_s = 1.0 }
request_time = "10min"

[scheduler]
allocator = "random"
ranks_per_node = 2
"""


@pytest.fixture(scope="module")
def small():
    return run_experiment(loads(SMALL), comm=None, progress=False)


def test_every_job_runs_and_app_runtimes_emerge_from_the_network(small):
    r = small
    j = r.jobs
    assert r.n_jobs == 24 and (j["status"] == "completed").all()
    apps = j["app"] != "timekeeper"
    assert apps.sum() >= 4
    # Timekeeper jobs run exactly their trace time; app jobs their emergent time.
    tk = ~apps
    assert np.allclose(j["run"][tk], j["trace_run"][tk])
    # An app job's runtime is its compute plus communication: longer than the compute alone,
    # and no shorter than on the ideal network with the same nodes.
    pairs = j["app"] == "pairs"
    assert (j["run"][pairs] > 4 * 2.0).all()
    both = apps & ~np.isnan(j["ideal_run"])
    assert both.sum() == apps.sum()
    assert (j["run"][both] >= j["ideal_run"][both] * (1 - 1e-12)).all()
    multi = both & (j["nodes"] > 1)
    assert (j["bytes_sent"][multi] > 0).all()
    # Hop-bytes count inter-switch hops: zero for a job inside one leaf.
    assert (j["hop_bytes"][multi & (j["aph"] > 0)] > 0).all() and (j["hop_bytes"][j["aph"] == 0] == 0).all()
    assert (j["bytes_sent"][tk] == 0).all()
    # Allocation metrics and nodes are recorded for every job.
    assert not np.isnan(j["aph"]).any()
    for i in range(r.n_jobs):
        assert len(r.nodes_of(i)) == j["nodes"][i]
    # Capacity is never exceeded: at every job start, the running jobs' nodes are disjoint.
    for i in range(r.n_jobs):
        overlap = (j["start"] < j["end"][i]) & (j["end"] > j["start"][i])
        overlap[i] = False
        for k in np.flatnonzero(overlap):
            assert not set(r.nodes_of(i).tolist()) & set(r.nodes_of(k).tolist())
    s = r.summary()
    assert s["jobs_run"] == 24 and s["app_jobs"] == int(apps.sum()) and s["events"] > 0
    assert r.links is not None and r.links["bytes"].sum() > 0


def test_runs_are_deterministic():
    a = run_experiment(loads(SMALL, overrides=["workload.jobs=10"]), comm=None, progress=False)
    b = run_experiment(loads(SMALL, overrides=["workload.jobs=10"]), comm=None, progress=False)
    for k, v in a.jobs.items():
        assert np.array_equal(v, b.jobs[k], equal_nan=v.dtype.kind == "f"), k
    assert np.array_equal(a.links["busy"], b.links["busy"])
    c = run_experiment(loads(SMALL, overrides=["workload.jobs=10", "seed=4"]), comm=None, progress=False)
    assert not np.array_equal(a.jobs["submit"], c.jobs["submit"])


def test_the_progress_bar_changes_nothing_but_the_display():
    from simhpc.results import results_diff

    exp = loads(SMALL, overrides=["workload.jobs=10"])
    quiet = run_experiment(exp, comm=None, progress=False)
    shown = run_experiment(exp, comm=None, progress=True)
    assert results_diff(quiet, shown) == []
    # The bar's ticks are events of their own; the run statistics leave them out.
    assert shown.run["events"] == quiet.run["events"]
    assert shown.run["events_per_rank"] == quiet.run["events_per_rank"]


def test_a_failing_app_fails_its_job_and_the_run_goes_on():
    exp = loads(SMALL, overrides=["workload.jobs=6", "apps.1.name=\"test-boom\"", "apps.1.args={}",
                                  "apps.0.weight=1", "apps.1.weight=3", "scheduler.ideal_baseline=false"])
    r = run_experiment(exp, comm=None, progress=False)
    j = r.jobs
    boom = j["app"] == "test-boom"
    assert boom.any()
    assert (j["status"][boom] == "failed").all()
    assert all("rank 1 failed: RuntimeError: rank 1 exploded" in x for x in j["kill_reason"][boom])
    # It failed when rank 1 raised, one second after its start.
    assert np.allclose(j["run"][boom], 1.0, atol=1e-5)
    assert (j["status"][~boom] == "completed").all()


def test_a_deadlocked_app_is_killed_at_its_walltime():
    exp = loads(SMALL, overrides=["workload.jobs=5", "apps.1.name=\"test-stuck\"", "apps.1.args={}",
                                  "apps.1.request_time=\"2min\"", "apps.1.weight=5", "scheduler.ideal_baseline=false"])
    r = run_experiment(exp, comm=None, progress=False)
    j = r.jobs
    stuck = j["app"] == "test-stuck"
    assert stuck.any()
    assert (j["status"][stuck] == "killed").all() and (j["kill_reason"][stuck] == "walltime").all()
    assert np.allclose(j["run"][stuck], 120.0)


def test_a_deadlock_without_walltime_kills_is_reported_with_the_blocked_ranks():
    exp = loads(SMALL, overrides=["workload.jobs=3", "apps.1.name=\"test-stuck\"", "apps.1.args={}",
                                  "apps.1.weight=50", "scheduler.kill_overrun=false", "scheduler.ideal_baseline=false"])
    with pytest.raises(ExperimentError) as ei:
        run_experiment(exp, comm=None, progress=False)
    msg = str(ei.value)
    assert "never ended" in msg and "test-stuck" in msg and "recv" in msg


@app("test-skip-allreduce")
def _skip_allreduce(mpi):
    """Rank 0 skips the allreduce the others enter: they block inside the collective."""
    if mpi.rank != 0:
        mpi.allreduce(8)


def test_a_deadlock_inside_a_collective_names_the_app_line_as_simhpc_app_does():
    from apps import DeadlockError, run_app

    with pytest.raises(DeadlockError) as alone:
        run_app("tiny-torus", "test-skip-allreduce", 4, ranks_per_node=1, comm=None)
    exp = loads('[machine]\npreset = "tiny-torus"\n[workload]\njobs = 1\n'
                'size = { dist = "constant", value = 4 }\nrun_time = { dist = "constant", value = "1min" }\n'
                '[[apps]]\nname = "test-skip-allreduce"\nrequest_time = "10min"\n'
                '[scheduler]\nkill_overrun = false\nranks_per_node = 1\n')
    with pytest.raises(ExperimentError) as ei:
        run_experiment(exp, comm=None, progress=False)
    msg = str(ei.value)
    line = _skip_allreduce.__code__.co_firstlineno + 4  # the allreduce call
    where = f"at _skip_allreduce (test_experiment_run.py:{line})"
    rank_lines = [x.strip() for x in str(alone.value).splitlines()[1:]]
    assert len(rank_lines) == 3 and all(x.endswith(where) and "allreduce(" in x for x in rank_lines)
    # The same rank lines (ranks, nodes, the collective and its message, the app line).
    assert "job 1 (test-skip-allreduce, 4 ranks) never ended" in msg
    assert [x.strip() for x in msg.splitlines() if x.strip().startswith("rank ")] == rank_lines


def test_jobs_larger_than_the_machine_are_rejected_and_counted():
    exp = loads(SMALL, overrides=["workload.jobs=8", 'workload.size={dist="choice", values=[4, 64]}'])
    r = run_experiment(exp, comm=None, progress=False)
    big = r.jobs["job_size"] == 64  # 32 nodes at 2 ranks per node; the machine has 16
    assert big.any() and (r.jobs["status"][big] == "rejected").all()
    assert r.summary()["rejected"] == int(big.sum())
    assert np.isnan(r.jobs["start"][big]).all()


def test_an_experiment_replays_a_trace_without_a_header_on_its_own_machine(tmp_path):
    # No '; MaxProcs:' or '; MaxNodes:' line: the experiment's machine gives the size.
    (tmp_path / "nohdr.swf").write_text("1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                                        "2 10 -1 50 64 -1 -1 64 100 -1 1 1 1 -1 -1 -1 -1 -1\n")
    exp = loads('[machine]\npreset = "tiny-fattree3"\n[workload]\nkind = "swf"\ntrace = "nohdr.swf"\n'
                '[scheduler]\nranks_per_node = 2\n', base_dir=str(tmp_path))
    r = run_experiment(exp, comm=None, progress=False)
    # 64 processes at 2 per node need 32 nodes of the 16: rejected and counted, not an error.
    assert list(r.jobs["status"]) == ["completed", "rejected"]
    assert r.system["rejected_by_reason"]["larger_than_machine"] == 1


def test_foreground_jobs_are_inserted_at_chosen_times():
    exp = loads(SMALL + """
[[foreground]]
app = "stencil3d"
ranks = 8
args = { iters = 3, face_bytes = "16KiB" }
request_time = "10min"
count = 2
at = ["100s", "200s"]
""", overrides=["workload.jobs=6"])
    jobs, _, report = build_workload(exp, 2, 16)
    fg = [j for j in jobs if j.foreground]
    assert [j.submit_time for j in fg] == [100.0, 200.0] and report["foreground"] == 2
    r = run_experiment(exp, comm=None, progress=False)
    f = r.jobs["foreground"]
    assert f.sum() == 2 and (r.jobs["app"][f] == "stencil3d").all() and (r.jobs["status"][f] == "completed").all()


def test_topology_rank_mapping_embeds_a_cartesian_app_and_its_ideal_baseline_uses_it():
    # One 8-rank stencil on nodes 0..7 of a 4x4x4 torus (x fastest: a 4x2x1 box). With the
    # grid 4x2x1 and block mapping, grid neighbours along the first dimension are 2 hops
    # apart; topology-aware mapping embeds the grid in the box (every neighbour 1 hop away).
    def run(mapping):
        exp = loads(f"""
seed = 1
[machine]
preset = "tiny-torus"
[workload]
jobs = 1
size = 8
run_time = "1min"
[[apps]]
name = "stencil3d"
args = {{ grid = [4, 2, 1], face_bytes = "32KiB", iters = 3 }}
request_time = "10min"
[scheduler]
allocator = "firstfree"
ranks_per_node = 1
mapping = "{mapping}"
""")
        return run_experiment(exp, comm=None, progress=False).jobs

    block, topo = run("block"), run("topology")
    assert (block["status"] == "completed").all() and (topo["status"] == "completed").all()
    assert list(block["nodes"]) == list(topo["nodes"]) == [8]
    # Same bytes, fewer hops: the mapping changed where the traffic goes.
    assert topo["bytes_sent"][0] == block["bytes_sent"][0] > 0
    assert topo["hop_bytes"][0] < block["hop_bytes"][0]
    # The ideal baseline repeats the job with the same rank placement, so it is never slower
    # than the run itself, and the embedded job is faster on the ideal network too.
    assert topo["run"][0] >= topo["ideal_run"][0] * (1 - 1e-12)
    assert topo["ideal_run"][0] < block["ideal_run"][0]


def test_an_unknown_mapping_names_the_valid_ones():
    with pytest.raises(Exception, match="block, round_robin, topology"):
        loads('[machine]\npreset = "tiny-torus"\n[scheduler]\nmapping = "snake"\n')


def test_app_run_is_the_ranks_runtime_and_equals_the_ideal_baseline_on_the_ideal_network():
    exp = loads("""
seed = 5
[machine]
preset = "tiny-fattree3"
[network]
model = "ideal"
[workload]
jobs = 8
inter_arrival = { dist = "exponential", mean = "2s" }
size = { dist = "power_of_two", low = 2, high = 8 }
run_time = "1min"
[[apps]]
name = "pairs"
args = { iters = 4, nbytes = "256KiB", compute_s = 0.5 }
request_time = "10min"
[scheduler]
ranks_per_node = 1
""")
    j = run_experiment(exp, comm=None, progress=False).jobs
    done = j["status"] == "completed"
    assert done.all()
    # The scheduler's view adds the launch and end-report messages; the app's own runtime does not.
    assert (j["app_run"] < j["run"]).all() and (j["app_run"] > 4 * 0.5).all()
    # Without contention the run is the ideal baseline, so the network slowdown is exactly 1.
    np.testing.assert_allclose(j["app_run"], j["ideal_run"], rtol=1e-12)


def test_an_experiment_runs_with_credit_flow_control():
    text = SMALL.replace('chunk_size = "8KiB"', 'chunk_size = "8KiB"\nbuffers = "credit"\nbuffer_size = "16KiB"')
    exp = loads(text, overrides=["workload.jobs=4"])
    assert (exp.network.buffers, exp.network.buffer_size, exp.network.vcs) == ("credit", 16384, None)
    assert loads(dumps(exp)).network == exp.network  # the buffer keys survive a round trip
    j = run_experiment(exp, comm=None, progress=False).jobs
    assert (j["status"] == "completed").all()
    # The ideal baseline ignores the buffers (apps without a runtime of their own are NaN).
    m = np.isfinite(j["ideal_run"])
    assert m.any() and (j["app_run"][m] >= j["ideal_run"][m]).all()


def test_an_experiment_runs_on_the_flow_model_between_ideal_and_packet():
    text = SMALL.replace('model = "packet"\nchunk_size = "8KiB"', 'model = "flow"\nflow_segment = "256KiB"')
    exp = loads(text, overrides=["workload.jobs=10"])
    assert exp.network.model == "flow" and exp.network.flow_segment == 256 * 1024
    assert loads(dumps(exp)).network == exp.network  # flow_segment survives a round trip
    r = run_experiment(exp, comm=None, progress=False)
    j = r.jobs
    assert (j["status"] == "completed").all()
    apps = j["app"] != "timekeeper"
    assert apps.sum() >= 2
    assert (j["run"][apps] >= j["ideal_run"][apps] * (1 - 1e-12)).all()
    assert r.links["bytes"].sum() > 0


def test_metrics_tau_trim_and_load_factor_of_an_experiment():
    over = ["workload.jobs=10", "apps.1.weight=0", "apps.2.weight=0"]
    base = run_experiment(loads(SMALL, overrides=over), comm=None, progress=False)
    r = run_experiment(loads(SMALL, overrides=over + ["workload.load_factor=2", "metrics.tau=1min",
                                                      "metrics.skip_first=2", "metrics.skip_last=3"]),
                       comm=None, progress=False)
    # Inter-arrival times halved, from the first submission on; sizes and run times kept.
    s0, s1 = np.sort(base.jobs["submit"]), np.sort(r.jobs["submit"])
    assert s1 == pytest.approx(s0[0] + (s0 - s0[0]) / 2)
    assert np.array_equal(np.sort(base.jobs["trace_run"]), np.sort(r.jobs["trace_run"]))
    # Bounded slowdown with tau = 60 s; the per-job figures cover the 5 middle jobs only.
    j = r.jobs
    expect = np.maximum((j["wait"] + j["run"]) / np.maximum(j["run"], 60.0), 1.0)
    assert j["bounded_slowdown"] == pytest.approx(expect)
    assert r.system["tau"] == 60.0 and r.system["measured_jobs"] == 5
    order = np.argsort(j["submit"], kind="stable")[2:-3]
    assert r.system["mean_wait"] == pytest.approx(float(np.mean(j["wait"][order])))
    assert "[metrics]" in dumps(loads(SMALL, overrides=over + ["metrics.tau=1min"]))


def test_a_trim_that_leaves_no_job_fails_before_the_run():
    with pytest.raises(Exception, match="metrics: the trim .* leaves no job of the 10"):
        run_experiment(loads(SMALL, overrides=["workload.jobs=10", "metrics.skip_first=6", "metrics.skip_last=4"]),
                       comm=None, progress=False)
