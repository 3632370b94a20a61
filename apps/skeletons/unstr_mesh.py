"""The unstr-mesh skeleton: exchanges with random neighbourhoods of bounded degree.

Ranks sit on a 3D process grid. Two ranks within Chebyshev distance ``radius`` of each other
are neighbours with probability degree / (number of candidates, (2 radius + 1)^3 - 1), drawn
from a hash of the pair and the job's shared random key, so the graph is symmetric and every
rank finds its neighbours alone in O(candidates). Degrees are bounded by the candidate count
(26 for radius 1) and average ``degree`` inside the grid (less at its faces). The message
size of an edge is ``nbytes``, or drawn per edge in [nbytes, nbytes_max].
"""

from __future__ import annotations

from itertools import product
from typing import Any

from ..mpi.comm import dims_create
from ..registry import app
from ._args import count, grid as _grid, grid_of, nbytes as _nbytes, number, optional, seconds
from .pairs import _mix

_TAG = 77


def neighbours(rank: int, dims: tuple[int, ...], radius: int, degree: float, key: int,
               nbytes: Any, nbytes_max: Any) -> list[tuple[int, Any]]:
    """(neighbour rank, bytes) of ``rank`` in the mesh graph."""
    nx, ny, nz = dims
    x, rest = divmod(rank, ny * nz)
    y, z = divmod(rest, nz)
    cand = (2 * radius + 1) ** 3 - 1
    thresh = int(min(1.0, degree / cand) * float(1 << 64))
    out = []
    rng = range(-radius, radius + 1)
    for dx, dy, dz in product(rng, rng, rng):
        if dx == dy == dz == 0:
            continue
        a, b, c = x + dx, y + dy, z + dz
        if not (0 <= a < nx and 0 <= b < ny and 0 <= c < nz):
            continue
        other = (a * ny + b) * nz + c
        lo, hi = (rank, other) if rank < other else (other, rank)
        h = _mix(key ^ _mix(lo * 0x100000001B3 + hi))
        if h < thresh:
            size = nbytes if nbytes_max is None else nbytes + (_mix(h) % (int(nbytes_max) - int(nbytes) + 1))
            out.append((other, size))
    return out


CHECKS = {"grid": grid_of(3), "degree": number, "radius": lambda v, name: count(v, name, 1), "nbytes": _nbytes,
          "nbytes_max": optional(_nbytes), "iters": count, "compute_s": seconds}


def _check(size: int, *, grid: Any, nbytes: Any, nbytes_max: Any, **_: Any) -> None:
    # What depends on the size or on two arguments: each value alone is checked by CHECKS.
    _grid(grid, 3, size)
    if nbytes_max is not None and _nbytes(nbytes_max, "nbytes_max") < _nbytes(nbytes, "nbytes"):
        raise ValueError(f"nbytes_max ({nbytes_max!r}) must be >= nbytes ({nbytes!r})")


@app("unstr-mesh", checks=CHECKS, validate=_check)
def unstr_mesh(mpi: Any, *, grid: Any = None, degree: float = 6, radius: int = 1, nbytes: Any = 4096,
               nbytes_max: Any = None, iters: int = 10, compute_s: Any = 0.0) -> None:
    """``iters`` times: compute, then exchange with every neighbour of a random graph of
    average degree ``degree`` among ranks within ``radius`` on a 3D grid (see the module)."""
    dims = _grid(grid, 3, mpi.size) or dims_create(mpi.size, 3)
    lo = _nbytes(nbytes, "nbytes")
    hi = None if nbytes_max is None else _nbytes(nbytes_max, "nbytes_max")
    c = seconds(compute_s, "compute_s")
    key = mpi.job_rng("unstr-mesh").getrandbits(64)
    nbrs = neighbours(mpi.rank, dims, radius, degree, key, lo, hi)
    for _ in range(iters):
        if c:
            mpi.compute(c)
        reqs = [mpi.irecv(o, _TAG) for o, _ in nbrs]
        reqs += [mpi.isend(o, s, _TAG) for o, s in nbrs]
        mpi.waitall(reqs)
