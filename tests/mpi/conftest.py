"""Tests in this folder run under mpirun with pytest-mpi (``--with-mpi``).

After each test the ranks meet asleep (:func:`pdes.parallel.quiet_barrier`): a test often
has rank 0 alone compute the sequential reference, and with more ranks than cores the
others, polling in the next test's first MPI call, would take its cores.
"""

import sys

import pytest


@pytest.fixture(autouse=True)
def _ranks_meet_asleep_after_each_test():
    yield
    if "mpi4py.MPI" in sys.modules:  # the test ran under MPI (pytest-mpi skips the others)
        from mpi4py import MPI

        from pdes.parallel import quiet_barrier

        if MPI.Is_initialized() and not MPI.Is_finalized():
            quiet_barrier(MPI.COMM_WORLD)
