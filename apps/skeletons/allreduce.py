"""The allreduce skeleton."""

from __future__ import annotations

from typing import Any

from ..registry import app
from ._args import algorithm as _algorithm, count, nbytes as _nbytes, seconds


def _check(size: int, *, iters: int, nbytes: Any, compute_s: Any, algorithm: str | None) -> None:
    count(iters, "iters")
    _nbytes(nbytes, "nbytes")
    seconds(compute_s, "compute_s")
    _algorithm(algorithm, "allreduce")


@app("allreduce", validate=_check)
def allreduce_app(mpi: Any, *, iters: int = 10, nbytes: Any = 1024, compute_s: Any = 0.0, algorithm: str | None = None) -> None:
    """``iters`` times: compute ``compute_s`` seconds, then an allreduce of ``nbytes``.

    ``algorithm`` forces the allreduce algorithm (default: MPICH's choice by size).
    """
    n = _nbytes(nbytes, "nbytes")
    c = seconds(compute_s, "compute_s")
    for _ in range(iters):
        if c:
            mpi.compute(c)
        mpi.allreduce(n, algorithm=algorithm)
