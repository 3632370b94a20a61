"""The baselines of an experiment's app jobs: alone on their nodes (``alone_run``, the same
network model) and alone on the ideal network (``ideal_run``), and the slowdowns built on them."""

from __future__ import annotations

import re
import h5py
import numpy as np
import pytest

from simhpc.experiment import ConfigError, loads
from simhpc.experiment.runner import run_experiment

# A 2:1 tapered fat-tree (4 leaves of 8 nodes, 4 uplinks each) and jobs of heavy traffic
# arriving microseconds apart, so that randomly placed jobs share uplinks.
BUSY = """
name = "busy"
seed = 2
[machine]
topology = { family = "fattree", radix = 12, levels = 2, pods = 4, taper = 2.0, link_bw = "10GB/s", link_lat = "100ns" }
cores_per_node = 4
flops_per_node = "500GF"
mem_bw_per_node = "100GB/s"
[network]
chunk_size = "32KiB"
[workload]
jobs = 6
resolution = "1us"
inter_arrival = { dist = "exponential", mean = "20us" }
size = { dist = "choice", values = [4, 8] }
run_time = "1ms"
[[apps]]
name = "pairs"
args = { iters = 6, nbytes = "256KiB" }
request_time = "1s"
[scheduler]
allocator = "random"
ranks_per_node = 1
alone_baseline = true
"""


@pytest.fixture(scope="module")
def busy():
    return run_experiment(loads(BUSY), comm=None, progress=False)


def test_neighbours_slow_jobs_down_and_the_baselines_are_ordered(busy):
    j = busy.jobs
    done = j["status"] == "completed"
    assert done.sum() == 6
    alone, ideal, run = j["alone_run"][done], j["ideal_run"][done], j["app_run"][done]
    assert np.isfinite(alone).all() and np.isfinite(ideal).all()
    # Contention only adds time: ideal <= alone <= with the neighbours (to rounding).
    assert (ideal <= alone * (1 + 1e-12)).all() and (alone <= run * (1 + 1e-9)).all()
    assert (run / alone).max() > 1.1  # random placement on a tapered tree: shared uplinks
    s = busy.summary()
    assert s["interference_jobs"] == s["network_jobs"] == 6
    assert s["mean_interference_slowdown"] == pytest.approx(float(np.mean(run / alone)), rel=1e-12)
    assert s["max_interference_slowdown"] == pytest.approx(float(np.max(run / alone)), rel=1e-12)
    assert s["mean_network_slowdown"] == pytest.approx(float(np.mean(run / ideal)), rel=1e-12)


def test_a_job_without_neighbours_runs_exactly_as_alone():
    exp = loads(BUSY, overrides=["workload.jobs=1"])
    j = run_experiment(exp, comm=None, progress=False).jobs
    assert j["status"][0] == "completed"
    assert j["alone_run"][0] == j["app_run"][0]
    assert j["ideal_run"][0] < j["alone_run"][0]


def test_the_baselines_are_off_when_asked(tmp_path):
    exp = loads(BUSY, overrides=["workload.jobs=2", "scheduler.alone_baseline=false",
                                 "scheduler.ideal_baseline=false"])
    r = run_experiment(exp, comm=None, progress=False)
    assert np.isnan(r.jobs["alone_run"]).all() and np.isnan(r.jobs["ideal_run"]).all()
    s = r.summary()
    assert not any("slowdown" in k and ("interference" in k or "network" in k) for k in s)
    from simhpc.cli.show_cmd import slowdown_line, summary_text

    assert slowdown_line(s) == "" and "as long as" not in summary_text(s)


def test_alone_run_is_stored_and_files_without_it_read_as_nan(busy, tmp_path):
    from simhpc.results.hdf5 import read_results, write_results

    p = tmp_path / "r.h5"
    write_results(busy, p)
    back = read_results(p)
    np.testing.assert_array_equal(back.jobs["alone_run"], busy.jobs["alone_run"])
    assert back.summary() == busy.summary()
    # A file written before the column existed (same schema version): NaN, no interference figures.
    with h5py.File(p, "a") as f:
        del f["jobs/alone_run"]
    old = read_results(p)
    assert np.isnan(old.jobs["alone_run"]).all()
    assert "mean_interference_slowdown" not in old.summary() and "mean_network_slowdown" in old.summary()


def test_the_slowdown_line_says_how_much_longer_jobs_ran():
    from simhpc.cli.show_cmd import slowdown_line

    s = {"mean_interference_slowdown": 1.234, "max_interference_slowdown": 2.0, "interference_jobs": 7,
         "mean_network_slowdown": 3.5, "max_network_slowdown": 9.25, "network_jobs": 7,
         "foreground_interference_slowdown": 1.7, "foreground_network_slowdown": 4.0}
    assert slowdown_line(s) == ("7 app job(s) ran on average 1.23x as long as alone on the same nodes (worst 2.00x) "
                                "and 3.50x as long as on an ideal network (worst 9.25x); "
                                "foreground jobs 1.70x (alone), 4.00x (ideal).")
    only_ideal = {"mean_network_slowdown": 1.5, "max_network_slowdown": 2.0, "network_jobs": 3}
    assert slowdown_line(only_ideal) == ("3 app job(s) ran on average 1.50x as long as on an ideal network "
                                         "(worst 2.00x).")


def test_the_interference_figure_shows_each_file(busy):
    pytest.importorskip("matplotlib")
    from simhpc import plots

    ax = plots.interference_slowdown([busy, busy], labels=["a", "b"]).axes[0]
    assert ax.get_ylabel() == "runtime / runtime alone on the same nodes"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["pairs"]
    nothing = run_experiment(loads(BUSY, overrides=["workload.jobs=1", "scheduler.alone_baseline=false"]),
                             comm=None, progress=False)
    with pytest.raises(plots.NoDataError, match="alone_run"):
        plots.interference_slowdown(nothing)


@pytest.mark.parametrize("override,message", [
    ("scheduler.alone_baseline=1", "scheduler.alone_baseline: must be true or false"),
    ("workload.resolution=0", "workload.resolution: must be a time > 0"),
    ('workload.resolution="fast"', "workload.resolution"),
])
def test_bad_baseline_and_resolution_values_are_named(override, message):
    with pytest.raises(ConfigError, match=message):
        loads(BUSY, overrides=[override])


def test_resolution_is_for_synthetic_workloads_and_sets_the_time_grid():
    with pytest.raises(ConfigError, match="workload.resolution: only valid with kind = \"synthetic\""):
        loads('[machine]\npreset = "tiny-torus"\n[workload]\nkind = "swf"\ntrace = "builtin:lublin_256.swf"\n'
              'resolution = "1s"\n')
    from simhpc.experiment.runner import build_workload

    exp = loads(BUSY, overrides=["workload.jobs=50"])
    jobs, _, _ = build_workload(exp, 1, 32)
    submit = np.array([j.submit_time for j in jobs])
    assert np.allclose(submit * 1e6, np.round(submit * 1e6), atol=1e-6)  # on the 1 us grid
    assert submit.max() < 0.01 and len(set(submit.tolist())) > 40  # not rounded to whole seconds


def test_values_changed_by_a_rule_are_counted_in_the_results(tmp_path):
    """A synthetic run time below the time step is raised to one step: counted, stored and shown."""
    from simhpc.cli.show_cmd import summary_text
    from simhpc.results.hdf5 import read_results, write_results

    exp = loads(BUSY, overrides=["workload.jobs=3", 'workload.run_time="0.2us"', "apps.0.name=\"timekeeper\"",
                                 "apps.0.args={}", "scheduler.alone_baseline=false"])
    r = run_experiment(exp, comm=None, progress=False)
    assert r.system["adjusted_by_rule"]["run_time_raised"] == 3
    assert (r.jobs["trace_run"] == 1e-6).all()
    back = read_results(write_results(r, tmp_path / "r.h5"))
    assert back.summary()["adjusted_by_rule"] == {"run_time_raised": 3}
    assert re.search(r"\nadjusted by a rule +3 run time raised\n", summary_text(back.summary()))
