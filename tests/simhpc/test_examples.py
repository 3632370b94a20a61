"""Every example experiment parses, and runs end to end at a reduced size (its traces ship with simhpc)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simhpc.experiment import load
from simhpc.experiment.runner import run_experiment

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SMALL_SIZES = 'workload.size={dist="power_of_two", low=16, high=64}'
REDUCED = {
    "default.toml": ["workload.jobs=12", "foreground.0.count=1"],
    "torus_interference.toml": ["workload.jobs=4", SMALL_SIZES, "foreground.0.count=1", "foreground.0.ranks=32"],
    "dragonfly_ugal.toml": ["workload.jobs=4", SMALL_SIZES],
    "cab_ctc_easy.toml": ["workload.limit=300"],
    # Cielo itself (9,216 nodes) is built at full size; only the jobs shrink.
    "cielo_evenodd.toml": ["workload.jobs=2", "workload.size=64"],
}


def test_every_example_is_covered():
    assert sorted(p.name for p in EXAMPLES.glob("*.toml")) == sorted(REDUCED)


@pytest.mark.parametrize("name", sorted(REDUCED))
def test_example_parses_at_full_size(name):
    exp = load(EXAMPLES / name)
    assert exp.name and exp.machine.build().n_nodes > 0


@pytest.mark.parametrize("name", sorted(REDUCED))
def test_example_runs_reduced(name):
    exp = load(EXAMPLES / name, REDUCED[name])
    r = run_experiment(exp, comm=None, progress=False)
    j = r.jobs
    ran = r.ran()
    assert ran.sum() + (j["status"] == "rejected").sum() == r.n_jobs
    assert set(j["status"][ran]) <= {"completed", "killed"}
    assert (j["wait"][ran] >= 0).all() and (j["run"][ran] >= 0).all()
    apps = ran & (j["app"] != "timekeeper") & (j["status"] == "completed")
    # Every example with skeleton apps runs some of them even at its reduced size.
    assert apps.any() == any(a.name != "timekeeper" for a in exp.apps)
    if exp.scheduler.ideal_baseline and apps.any():
        assert not np.isnan(j["ideal_run"][apps]).any()
        assert (j["run"][apps] >= j["ideal_run"][apps] * (1 - 1e-9)).all()
        assert (j["bytes_sent"][apps & (j["nodes"] > 1)] > 0).all()
    assert j["foreground"].sum() == sum(f.count for f in exp.foreground)
    assert (j["status"][j["foreground"]] == "completed").all()
    assert 0 < r.system["utilization"] <= 1


def test_examples_need_nothing_outside_the_repository():
    for p in sorted(EXAMPLES.rglob("*.toml")):
        text = p.read_text()
        assert "shared/traces" not in text and "../.." not in text, p
