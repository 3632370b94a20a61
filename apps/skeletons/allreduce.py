"""The allreduce skeleton."""

from __future__ import annotations

from typing import Any

from ..registry import app
from ._args import algorithm_of, count, nbytes as _nbytes, seconds

CHECKS = {"iters": count, "nbytes": _nbytes, "compute_s": seconds, "algorithm": algorithm_of("allreduce")}


@app("allreduce", checks=CHECKS)
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
