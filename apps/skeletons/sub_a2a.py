"""The sub-a2a skeleton: all-to-all inside sub-communicators of a 3D process grid."""

from __future__ import annotations

from typing import Any

from ..mpi.comm import dims_create
from ..registry import app
from ._args import algorithm_of, count, grid as _grid, grid_of, nbytes as _nbytes, seconds

_AXES = "xyz"


def _phases(along: Any, name: str = "along") -> list[tuple[bool, bool, bool]]:
    """``along``: groups of axes separated by commas ('x', 'xy', 'x,y,z'), or a list of them."""
    problem = ValueError(f"{name} must name axes x, y, z in groups separated by commas (e.g. 'x' or 'xy,z'), got {along!r}")
    if isinstance(along, str):
        groups = along.split(",")
    elif isinstance(along, (list, tuple)):
        groups = list(along)
    else:
        raise problem
    out = []
    for g in groups:
        g = str(g).strip().lower()
        if not g or any(ch not in _AXES for ch in g) or len(set(g)) != len(g):
            raise problem
        out.append(tuple(a in g for a in _AXES))
    return out


CHECKS = {"grid": grid_of(3), "along": _phases, "nbytes": _nbytes, "iters": count, "compute_s": seconds,
          "algorithm": algorithm_of("alltoall")}


def _check(size: int, *, grid: Any, **_: Any) -> None:
    _grid(grid, 3, size)  # the grid's cells against the job's size


def _dims(size: int, *, grid: Any, **_: Any) -> tuple[int, ...]:
    return _grid(grid, 3, size) or dims_create(size, 3)


@app("sub-a2a", checks=CHECKS, validate=_check, grid=_dims)
def sub_a2a(mpi: Any, *, grid: Any = None, along: Any = "x", nbytes: Any = 4096, iters: int = 10, compute_s: Any = 0.0,
            algorithm: str | None = None) -> None:
    """``iters`` times: compute, then for each group of axes in ``along`` an all-to-all of
    ``nbytes`` per pair inside the sub-communicator spanning those axes (one per slice of the
    others) of a 3D process grid (``grid``, default MPI_Dims_create's). ``along="x,y"`` does
    two all-to-alls per iteration (lines along x, then along y), as in a 3D FFT transpose."""
    dims = _grid(grid, 3, mpi.size) or dims_create(mpi.size, 3)
    phases = _phases(along)
    n = _nbytes(nbytes, "nbytes")
    c = seconds(compute_s, "compute_s")
    cart = mpi.cart_create(dims, periods=False)
    subs = [cart.cart_sub(keep) for keep in phases]
    for _ in range(iters):
        if c:
            mpi.compute(c)
        for sub in subs:
            sub.alltoall(n, algorithm=algorithm)
