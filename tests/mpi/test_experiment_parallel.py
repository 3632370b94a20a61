"""An experiment gives identical job tables and link statistics for any number of ranks."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("parallel", ["simulation", "baselines"])
def test_experiment_identical_to_sequential(parallel):
    from mpi4py import MPI

    from simhpc.experiment import loads
    from simhpc.experiment.runner import run_experiment
    from tests_support import load_test_module

    SMALL = load_test_module("simhpc/test_experiment_run.py").SMALL

    comm = MPI.COMM_WORLD
    # Both baselines on: their runs are dealt out over the ranks and gathered.
    exp = loads(SMALL, overrides=["workload.jobs=12", "scheduler.alone_baseline=true"])
    par = run_experiment(exp, comm=comm, progress=False, parallel=parallel)
    if comm.rank != 0:
        assert par is None
        return
    seq = run_experiment(exp, comm=None, progress=False)
    for k, v in seq.jobs.items():
        assert np.array_equal(v, par.jobs[k], equal_nan=v.dtype.kind == "f"), k
    assert np.isfinite(par.jobs["alone_run"]).sum() == np.isfinite(par.jobs["ideal_run"]).sum() > 0
    assert np.array_equal(seq.job_nodes, par.job_nodes)
    for k in ("bytes", "busy", "max_queue"):
        assert np.array_equal(seq.links[k], par.links[k]), k
    assert seq.system == par.system
    assert seq.run["events"] == par.run["events"] and par.run["mpi_ranks"] == comm.size
    # baselines: every rank runs the whole simulation (one rank's worth of windows: none).
    sim_ranks = comm.size if parallel == "simulation" or comm.size == 1 else 1
    assert par.run["ranks"] == sim_ranks and par.run["parallel"] == (parallel if comm.size > 1 else "sequential")


def test_hdf5_job_tables_identical_for_p1_and_p(tmp_path_factory):
    from mpi4py import MPI

    from simhpc.experiment import loads
    from simhpc.experiment.runner import run_experiment
    from simhpc.results.compare import job_table_diff
    from simhpc.results.hdf5 import read_results, write_results
    from tests_support import load_test_module

    SMALL = load_test_module("simhpc/test_experiment_run.py").SMALL

    comm = MPI.COMM_WORLD
    exp = loads(SMALL, overrides=["workload.jobs=8"])
    par = run_experiment(exp, comm=comm, progress=False)
    if comm.rank != 0:
        return
    d = tmp_path_factory.mktemp("h5")
    write_results(par, d / "par.h5")
    write_results(run_experiment(exp, comm=None, progress=False), d / "seq.h5")
    a, b = read_results(d / "seq.h5"), read_results(d / "par.h5")
    assert job_table_diff(a, b) == []
    assert b.run["ranks"] == comm.size and a.run["ranks"] == 1


def test_a_cli_mistake_stops_every_rank_and_prints_one_line(capsys):
    from mpi4py import MPI

    from simhpc.cli import main

    comm = MPI.COMM_WORLD
    # Found on rank 0 only (the results folder), but every rank stops: none waits in the run.
    code = main(["run", "--quiet", "--out", "/no/such/dir/r.h5", "--set", "workload.jobs=2"])
    err = capsys.readouterr().err
    codes, errs = comm.gather(code, root=0), comm.gather(err, root=0)
    if comm.rank == 0:
        assert codes == [2] * comm.size
        assert errs[0].count("\n") == 1 and "/no/such/dir" in errs[0] and "does not exist" in errs[0]
        assert errs[1:] == [""] * (comm.size - 1)


def test_estimate_models_and_backfill_variants_identical_to_sequential():
    from mpi4py import MPI

    from simhpc.experiment import loads
    from simhpc.experiment.runner import run_experiment
    from tests_support import load_test_module

    SMALL = load_test_module("simhpc/test_experiment_run.py").SMALL

    comm = MPI.COMM_WORLD
    # The f-model draws from the scheduler entity's stream: the same on every rank count.
    exp = loads(SMALL, overrides=["workload.jobs=12", "scheduler.estimate=fmodel", "scheduler.backfill=easy-sjbf",
                                  "scheduler.ideal_baseline=false"])
    assert exp.scheduler.estimate == "fmodel"
    par = run_experiment(exp, comm=comm, progress=False, parallel="simulation")
    if comm.rank != 0:
        return
    seq = run_experiment(exp, comm=None, progress=False)
    assert np.isfinite(seq.jobs["estimate"]).any()
    for k, v in seq.jobs.items():
        assert np.array_equal(v, par.jobs[k], equal_nan=v.dtype.kind == "f"), k
