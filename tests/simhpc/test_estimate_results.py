"""The estimate model and backfill options are recorded: replay summary, results file, runs."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np

from simhpc.cli import main
from simhpc.experiment import loads
from simhpc.experiment.runner import run_experiment
from simhpc.results import read_results
from simhpc.trace_replay import replay

SIX = Path(__file__).resolve().parents[1] / "data" / "backfill6.swf"


def test_replay_records_the_estimate_model_and_backfill_options(tmp_path):
    out = tmp_path / "r.h5"
    rep = replay(str(SIX), estimate="fmodel", estimate_options={"f": 0.5}, backfill="easy-sjbf",
                 backfill_options={"depth": 2}, kill_overrun=False, out=out)
    s = rep.summary()
    assert (s["estimate"], s["estimate_options"]) == ("fmodel", {"f": 0.5, "uniform": True})
    assert (s["backfill"], s["backfill_options"]) == ("easy-sjbf", {"depth": 2})
    res = read_results(out)
    rec = tomllib.loads(res.experiment_toml)["replay"]
    assert rec["estimate"] == "fmodel" and rec["estimate_options"] == {"f": 0.5, "uniform": True}
    assert rec["backfill_options"] == {"depth": 2}
    est, run = res.jobs["estimate"], res.jobs["trace_run"]
    assert np.all((est >= run) & (est <= 1.5 * run + 1e-9))
    assert res.jobs["partition"].dtype == np.int64 and (res.jobs["think_time"] == -1).all()


def test_cli_estimate_options_and_bad_values(capsys):
    assert main(["replay", str(SIX), "--estimate", "exact", "--backfill-option", "depth=3", "--json"]) == 0
    out = capsys.readouterr().out
    assert "exact, kills at the request" in out and "backfill=easy(depth=3)" in out
    assert main(["replay", str(SIX), "--estimate", "recent", "--estimate-option", "history=0"]) == 2
    assert "estimate model 'recent': history (the jobs averaged) must be an integer >= 1, got 0" in capsys.readouterr().err


EXPERIMENT = """
name = "estimates"
seed = 1

[machine]
preset = "tiny-fattree3"

[network]
model = "ideal"

[workload]
jobs = 6

[[apps]]
name = "timekeeper"

[scheduler]
ranks_per_node = 1
estimate = "exact"
"""


def test_an_experiment_plans_with_its_estimate_model():
    res = run_experiment(loads(EXPERIMENT), comm=None, progress=False)
    assert 'estimate = "exact"' in res.experiment_toml
    ran = ~np.isnan(res.jobs["start"])
    assert ran.any()
    np.testing.assert_array_equal(res.jobs["estimate"][ran], np.minimum(res.jobs["trace_run"], res.jobs["request"])[ran])
