"""Fixed-partner exchange skeletons: even-odd and ring."""

from __future__ import annotations

from typing import Any

from ..registry import app
from ._args import count, nbytes as _nbytes, seconds


CHECKS = {"iters": count, "nbytes": _nbytes, "compute_s": seconds}


@app("even-odd", checks=CHECKS)
def even_odd(mpi: Any, *, iters: int = 10, nbytes: Any = 65536, compute_s: Any = 0.0) -> None:
    """``iters`` times: compute, then rank 2i and rank 2i+1 exchange ``nbytes`` (sendrecv).

    With an odd number of ranks the last rank only computes.
    """
    n = _nbytes(nbytes, "nbytes")
    c = seconds(compute_s, "compute_s")
    partner = mpi.rank ^ 1
    for _ in range(iters):
        if c:
            mpi.compute(c)
        if partner < mpi.size:
            mpi.sendrecv(partner, n)


@app("ring", checks=CHECKS)
def ring(mpi: Any, *, iters: int = 10, nbytes: Any = 65536, compute_s: Any = 0.0) -> None:
    """``iters`` times: compute, then send ``nbytes`` to rank + 1 and receive from rank - 1."""
    n = _nbytes(nbytes, "nbytes")
    c = seconds(compute_s, "compute_s")
    right = (mpi.rank + 1) % mpi.size
    left = (mpi.rank - 1) % mpi.size
    for _ in range(iters):
        if c:
            mpi.compute(c)
        mpi.sendrecv(right, n, source=left)
