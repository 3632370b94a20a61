"""The bulk all-to-all skeleton."""

from __future__ import annotations

from typing import Any

from ..registry import app
from ._args import algorithm as _algorithm, count, nbytes as _nbytes, seconds


def _check(size: int, *, iters: int, nbytes: Any, compute_s: Any, algorithm: str | None) -> None:
    count(iters, "iters")
    _nbytes(nbytes, "nbytes")
    seconds(compute_s, "compute_s")
    _algorithm(algorithm, "alltoall")


@app("alltoall", validate=_check)
def alltoall_app(mpi: Any, *, iters: int = 10, nbytes: Any = 4096, compute_s: Any = 0.0, algorithm: str | None = None) -> None:
    """``iters`` times: compute ``compute_s`` seconds, then an all-to-all of ``nbytes`` per pair."""
    n = _nbytes(nbytes, "nbytes")
    c = seconds(compute_s, "compute_s")
    for _ in range(iters):
        if c:
            mpi.compute(c)
        mpi.alltoall(n, algorithm=algorithm)
