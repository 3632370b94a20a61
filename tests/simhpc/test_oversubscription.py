"""More ranks per node than the machine has cores: a valid run that is warned of and recorded.

The ranks of a node share its cores: compute given in flops slows down (the node model
divides the node's peak by max(cores, ranks on the node)); compute given in seconds does not.
"""

from __future__ import annotations

import warnings

import pytest

from apps import app, run_app
from apps.errors import OversubscriptionWarning
from simhpc.cli import main
from simhpc.experiment import loads
from simhpc.experiment.runner import run_experiment
from simhpc.results.hdf5 import read_results, write_results

# tiny-torus: 4 cores per node.
MSG = ("ranks_per_node=8 exceeds the machine's 4 cores per node: ranks share the cores, so compute given in "
       "flops takes up to 2x as long; compute given in seconds is not slowed")


@app("t-oversub-flops")
def _flops(mpi, *, flops=1e9):
    mpi.compute(flops=flops)


def test_run_app_warns_and_flops_compute_really_slows_down():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = run_app("tiny-torus", "t-oversub-flops", 4, ranks_per_node=4, comm=None)
    with pytest.warns(OversubscriptionWarning) as rec:
        over = run_app("tiny-torus", "t-oversub-flops", 8, ranks_per_node=8, comm=None)
    assert [str(w.message) for w in rec] == [MSG]
    assert rec[0].filename == __file__  # points at the caller's line
    assert over.runtime == pytest.approx(2 * fit.runtime, rel=1e-9)


def test_app_command_warns_once_in_one_line_naming_the_option(capsys):
    assert main(["app", "t-oversub-flops", "--ranks", "8", "--ranks-per-node", "8"]) == 0
    err = capsys.readouterr().err
    assert err == "simhpc: warning: --" + MSG.replace("ranks_per_node", "ranks-per-node", 1) + "\n"
    assert main(["app", "t-oversub-flops", "--ranks", "8", "--ranks-per-node", "4"]) == 0
    assert capsys.readouterr().err == ""


EXPERIMENT = """
name = "oversub"
[machine]
preset = "tiny-torus"
[workload]
jobs = 3
size = { dist = "constant", value = 8 }
run_time = { dist = "constant", value = "1min" }
[[apps]]
name = "t-oversub-flops"
request_time = "10min"
[scheduler]
ranks_per_node = %d
"""


def test_experiment_warns_once_and_records_it(tmp_path, capsys):
    with pytest.warns(OversubscriptionWarning) as rec:
        r = run_experiment(loads(EXPERIMENT % 8), comm=None, progress=False)
    # Once for the run, not again for each job's baselines.
    assert [str(w.message) for w in rec] == ["scheduler." + MSG]
    assert (r.jobs["status"] == "completed").all() and r.run["ranks_per_node"] == 8
    assert r.run["warnings"] == ["scheduler." + MSG]
    back = read_results(write_results(r, tmp_path / "r.h5"))
    assert back.summary()["warnings"] == ["scheduler." + MSG]
    assert main(["show", str(tmp_path / "r.h5")]) == 0
    assert f"warning: scheduler.{MSG}\n" in capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = run_experiment(loads(EXPERIMENT % 4), comm=None, progress=False)
    assert "warnings" not in r.run and "warnings" not in r.summary()
