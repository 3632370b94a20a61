"""Simulated MPI: point-to-point with MPI matching semantics, collectives built from
point-to-point messages with MPICH's algorithms, communicators and Cartesian grids.

See :mod:`apps.mpi.p2p` (matching, protocols), :mod:`apps.mpi.collectives` (algorithms and
their selection) and :mod:`apps.mpi.comm` (the API an app uses).
"""

from .comm import HALO_TAG, CartComm, Comm, dims_create
from .p2p import ANY_SOURCE, ANY_TAG, PROC_NULL, Request, Status

__all__ = ["ANY_SOURCE", "ANY_TAG", "PROC_NULL", "HALO_TAG", "CartComm", "Comm", "Request", "Status", "dims_create"]
