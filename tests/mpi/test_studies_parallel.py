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

    st = dataclasses.replace(_study(), parallel=parallel)
    par = run_study(st, comm=MPI.COMM_WORLD)
    seq = run_study(st, comm=None)
    _same(seq, par)
    assert par.info["ranks"] == MPI.COMM_WORLD.size


@pytest.mark.parametrize("parallel", ["runs", "simulation"])
def test_trace_study_identical_to_sequential(parallel):
    from mpi4py import MPI

    from simhpc.studies import loads_study, run_study
    from tests_support import load_test_module

    seq = load_test_module("simhpc/test_studies.py")
    TRACE_TOML, _same = seq.TRACE_TOML, seq._same

    st = loads_study(TRACE_TOML, overrides=[f'study.parallel="{parallel}"'])
    _same(run_study(st, comm=None), run_study(st, comm=MPI.COMM_WORLD))
