"""The system time series are sized by what happened, not by the makespan: a trace job of run
time 1e10 s or 1e30 s gives a few step-function entries and at most MAX_SAMPLES + 1 samples
(the sampling step widens), through a replay and through an experiment."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simhpc
from scheduler.metrics import MAX_SAMPLES, sampling_step
from simhpc.results import read_results

SAMPLED = ("sample_times", "utilization_samples", "busy_samples", "queue_samples")
STEPS = ("busy_times", "busy_nodes", "queue_times", "queue_lengths")


def _trace(tmp_path, run_time: str):
    path = tmp_path / f"two-{run_time}.swf"
    path.write_text("; MaxNodes: 4\n"
                    f"1 0 0 {run_time} 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
                    f"2 5 0 {run_time} 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n")
    return path


def _check_series(series, system, makespan):
    for name in SAMPLED:
        assert len(series[name]) <= MAX_SAMPLES + 1, name
    for name in STEPS:
        assert len(series[name]) <= 4, name
    t = series["sample_times"]
    step = system["interval"]
    # A regular grid of whole multiples of the requested minute, over the whole run.
    assert (step / 60).is_integer() and step >= makespan / MAX_SAMPLES
    assert t[0] == system["t_first_submit"] and np.all(np.diff(t) > 0)
    assert t[-1] <= system["t_last_end"] < t[-1] + 2 * step
    assert series["busy_samples"][0] == 2 and series["utilization_samples"][0] == 2 / system["n_nodes"]


@pytest.mark.parametrize("run_time,makespan", [("1e8", 1e8 + 5), ("1e10", 1e10 + 5), ("1e30", 1e30)])
def test_replay_of_a_very_long_trace_is_small(tmp_path, run_time, makespan):
    out = tmp_path / "r.h5"
    res = simhpc.replay(str(_trace(tmp_path, run_time)), out=str(out))
    assert res.metrics.makespan == pytest.approx(makespan)
    r = read_results(out)
    _check_series(r.series, r.system, makespan)
    assert out.stat().st_size < 200_000


@pytest.mark.parametrize("run_time", ["1e10", "1e30"])
def test_experiment_of_a_very_long_trace_is_small(tmp_path, run_time):
    trace = _trace(tmp_path, run_time)
    exp = simhpc.loads_experiment(f"""
name = "long"
[machine]
preset = "tiny-fattree"
[network]
model = "ideal"
[workload]
kind = "swf"
trace = "{trace}"
[[apps]]
name = "timekeeper"
[scheduler]
ranks_per_node = 1
ideal_baseline = false
""")
    res = simhpc.run_experiment(exp, progress=False)
    out = tmp_path / "e.h5"
    simhpc.write_results(res, out)
    _check_series(res.series, res.system, float(run_time) + (5 if float(run_time) < 1e20 else 0))
    assert out.stat().st_size < 200_000


def test_the_sampling_step_is_the_interval_up_to_max_samples():
    assert sampling_step(0.0, 60.0) == 60.0
    assert sampling_step(60.0 * MAX_SAMPLES, 60.0) == 60.0  # unchanged: the same samples as ever
    assert sampling_step(60.0 * MAX_SAMPLES + 1, 60.0) == 120.0
    for span in (1e7, 1e10, 1e30):
        step = sampling_step(span, 60.0)
        assert (step / 60).is_integer() and span / step <= MAX_SAMPLES and math.isfinite(step)
