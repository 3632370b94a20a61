"""The bulk all-to-all skeleton."""

from __future__ import annotations

from typing import Any

from ..registry import app
from ._args import algorithm_of, count, nbytes as _nbytes, seconds

CHECKS = {"iters": count, "nbytes": _nbytes, "compute_s": seconds, "algorithm": algorithm_of("alltoall")}


@app("alltoall", checks=CHECKS)
def alltoall_app(mpi: Any, *, iters: int = 10, nbytes: Any = 4096, compute_s: Any = 0.0, algorithm: str | None = None) -> None:
    """``iters`` times: compute ``compute_s`` seconds, then an all-to-all of ``nbytes`` per pair."""
    n = _nbytes(nbytes, "nbytes")
    c = seconds(compute_s, "compute_s")
    for _ in range(iters):
        if c:
            mpi.compute(c)
        mpi.alltoall(n, algorithm=algorithm)
