"""Halo-exchange skeletons on periodic process grids: stencil2d, stencil3d, stencil4d."""

from __future__ import annotations

from typing import Any, Sequence

from ..mpi.comm import dims_create
from ..registry import app
from ._args import count, flag, grid as _grid, grid_of, nbytes as _nbytes, seconds


def _faces(face_bytes: Any, ndims: int, name: str = "face_bytes") -> list:
    if isinstance(face_bytes, (list, tuple)):
        if len(face_bytes) != ndims:
            raise ValueError(f"{name} needs one size per dimension ({ndims}), got {len(face_bytes)}")
        return [_nbytes(x, name) for x in face_bytes]
    return [_nbytes(face_bytes, name)] * ndims


def _checks(ndims: int) -> dict:
    return {"grid": grid_of(ndims), "face_bytes": lambda v, name: _faces(v, ndims, name), "iters": count,
            "compute_s": seconds, "periodic": flag}


def _checker(ndims: int):
    def check(size: int, *, grid: Any, **_: Any) -> None:
        _grid(grid, ndims, size)  # the grid's cells against the job's size

    return check


def _dims(ndims: int):
    def dims(size: int, *, grid: Any, **_: Any) -> tuple[int, ...]:
        return _grid(grid, ndims, size) or dims_create(size, ndims)

    return dims


def stencil(mpi: Any, ndims: int, grid: Sequence[int] | str | None, face_bytes: Any, iters: int, compute_s: Any,
            periodic: bool) -> None:
    """The halo exchange of ``ndims`` dimensions (the body of the stencil skeletons)."""
    dims = _grid(grid, ndims, mpi.size) or dims_create(mpi.size, ndims)
    faces = _faces(face_bytes, ndims)
    c = seconds(compute_s, "compute_s")
    cart = mpi.cart_create(dims, periods=bool(periodic))
    for _ in range(iters):
        if c:
            cart.compute(c)
        cart.halo_exchange(faces)


@app("stencil2d", checks=_checks(2), validate=_checker(2), grid=_dims(2))
def stencil2d(mpi: Any, *, grid: Any = None, face_bytes: Any = 8192, iters: int = 10, compute_s: Any = 0.0,
              periodic: bool = True) -> None:
    """``iters`` times: compute, then exchange ``face_bytes`` (one size, or one per dimension)
    with the 4 neighbours of a 2D process grid (``grid``, default MPI_Dims_create's)."""
    stencil(mpi, 2, grid, face_bytes, iters, compute_s, periodic)


@app("stencil3d", checks=_checks(3), validate=_checker(3), grid=_dims(3))
def stencil3d(mpi: Any, *, grid: Any = None, face_bytes: Any = 8192, iters: int = 10, compute_s: Any = 0.0,
              periodic: bool = True) -> None:
    """``iters`` times: compute, then exchange ``face_bytes`` with the 6 neighbours of a 3D
    process grid."""
    stencil(mpi, 3, grid, face_bytes, iters, compute_s, periodic)


@app("stencil4d", checks=_checks(4), validate=_checker(4), grid=_dims(4))
def stencil4d(mpi: Any, *, grid: Any = None, face_bytes: Any = 8192, iters: int = 10, compute_s: Any = 0.0,
              periodic: bool = True) -> None:
    """``iters`` times: compute, then exchange ``face_bytes`` with the 8 neighbours of a 4D
    process grid."""
    stencil(mpi, 4, grid, face_bytes, iters, compute_s, periodic)
