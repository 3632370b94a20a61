"""Interference studies under mpirun: dealing runs over ranks and running each simulation in
parallel both give the sequential study's rows, on every rank."""

from __future__ import annotations

import dataclasses

import pytest

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("parallel", ["runs", "simulation"])
def test_static_study_identical_to_sequential(parallel):
    from mpi4py import MPI

    from simhpc.studies import run_study
    from tests_support import load_test_module

    seq = load_test_module("simhpc/test_studies.py")  # the sequential tests' cases
    _same, _study = seq._same, seq._study

    comm = MPI.COMM_WORLD
    st = dataclasses.replace(_study(), parallel=parallel)
    par = run_study(st, comm=comm)
    assert par.info["ranks"] == comm.size
    _every_rank_same_as_sequential(comm, st, par, _same)


def _every_rank_same_as_sequential(comm, st, par, same):
    """Every rank's result equals the sequential one, which rank 0 alone computes (the
    others wait asleep, see conftest.py)."""
    from simhpc.studies import run_study

    pars = comm.gather(par, root=0)
    if comm.rank == 0:
        seq = run_study(st, comm=None)
        for p in pars:
            same(seq, p)


@pytest.mark.parametrize("parallel", ["runs", "simulation"])
def test_trace_study_identical_to_sequential(parallel):
    from mpi4py import MPI

    from simhpc.studies import loads_study, run_study
    from tests_support import load_test_module

    seq = load_test_module("simhpc/test_studies.py")
    TRACE_TOML, _same = seq.TRACE_TOML, seq._same

    st = loads_study(TRACE_TOML, overrides=[f'study.parallel="{parallel}"'])
    _every_rank_same_as_sequential(MPI.COMM_WORLD, st, run_study(st, comm=MPI.COMM_WORLD), _same)


@pytest.mark.parametrize("flag,path,why", [("--out", "/no/such/dir/s.h5", "does not exist"),
                                           ("--plot", "/proc/version", "is not a folder")])
def test_a_study_output_mistake_stops_every_rank(capsys, flag, path, why):
    """Found on rank 0 only, but every rank stops at once: none waits for rank 0 in the runs."""
    from pathlib import Path

    from mpi4py import MPI

    from simhpc.cli import main

    comm = MPI.COMM_WORLD
    study = Path(__file__).resolve().parents[2] / "examples" / "studies" / "interference.toml"
    code = main(["study", str(study), flag, path])
    err = capsys.readouterr().err
    codes, errs = comm.gather(code, root=0), comm.gather(err, root=0)
    if comm.rank == 0:
        assert codes == [2] * comm.size
        assert errs[0].count("\n") == 1 and path in errs[0] and why in errs[0], errs[0]
