"""Building blocks shared by the collective algorithms: point-to-point on the collective context,
reduction operators and the splitting of data into segments.

Collectives run on a communicator's *collective context* (its point-to-point context + 1),
so their messages never match an application's receives, even with ``ANY_TAG``. MPI requires
every rank to call the collectives of one communicator in the same order; together with
non-overtaking matching that lets every collective use one fixed tag, as MPICH does.

Data. Every collective works on sizes in bytes; data payloads are optional. When ranks pass
``data``, the collective also computes the real result (a reduction, a gathered list, ...),
which is how the tests check that each algorithm moves the right pieces to the right ranks.
Reductions assume commutative, associative operators (MPICH's algorithms for commutative
operations); numpy arrays are split into segments where an algorithm splits the buffer, and
any other value (a number, a tuple) is treated as indivisible and reduced whole in every
segment.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from pdes.validate import is_number

from ...errors import MpiError

if TYPE_CHECKING:  # pragma: no cover
    from ..comm import Comm
    from ..p2p import Request

TAG_BARRIER = 1
TAG_BCAST = 2
TAG_REDUCE = 3
TAG_ALLREDUCE = 4
TAG_GATHER = 5
TAG_SCATTER = 6
TAG_ALLGATHER = 7
TAG_ALLTOALL = 8
TAG_ALLTOALLV = 9
TAG_REDUCE_SCATTER = 10


# -- point-to-point on the collective context -------------------------------------------------
def send(comm: "Comm", dst: int, nbytes: float, tag: int, data: Any = None) -> None:
    """Blocking send to comm rank ``dst``."""
    ep = comm._ep
    ranks = comm._ranks
    req = ep.send(comm, comm._cctx, comm.rank, dst, dst if ranks is None else ranks[dst], nbytes, tag, data, False)
    if req is not None:
        ep.wait1(req)


def recv(comm: "Comm", src: int, tag: int) -> "Request":
    """Blocking receive from comm rank ``src``; returns the completed request."""
    ep = comm._ep
    req = ep.recv(comm, comm._cctx, src, tag)
    if not req.done:
        ep.wait1(req)
    return req


def sendrecv(comm: "Comm", dst: int, nbytes: float, src: int, tag: int, data: Any = None) -> "Request":
    """Send to ``dst`` and receive from ``src`` concurrently; returns the receive request."""
    ep = comm._ep
    ctx = comm._cctx
    ranks = comm._ranks
    sreq = ep.send(comm, ctx, comm.rank, dst, dst if ranks is None else ranks[dst], nbytes, tag, data, False)
    rreq = ep.recv(comm, ctx, src, tag)
    if sreq is None:
        if not rreq.done:
            ep.wait1(rreq)
    elif not (sreq.done and rreq.done):
        ep.wait_all([sreq, rreq])
    return rreq


def isend(comm: "Comm", dst: int, nbytes: float, tag: int, data: Any = None) -> "Request":
    ranks = comm._ranks
    return comm._ep.send(comm, comm._cctx, comm.rank, dst, dst if ranks is None else ranks[dst], nbytes, tag, data, True)


def irecv(comm: "Comm", src: int, tag: int) -> "Request":
    return comm._ep.recv(comm, comm._cctx, src, tag)


def waitall(comm: "Comm", reqs: list) -> None:
    comm._ep.wait_all(reqs)


# -- sizes -------------------------------------------------------------------------------------
def pof2_floor(p: int) -> int:
    """The largest power of two <= p."""
    return 1 << (p.bit_length() - 1)


def is_pof2(p: int) -> bool:
    return p & (p - 1) == 0


class Counts:
    """Segment sizes of a buffer of ``n`` bytes cut into ``k`` segments as MPICH does:
    ``n // k`` each, the last one taking the remainder. ``span(a, b)`` is O(1)."""

    __slots__ = ("base", "last", "k")

    def __init__(self, n: float, k: int):
        base = n // k
        self.base = base
        self.last = n - base * (k - 1)
        self.k = k

    def span(self, a: int, b: int) -> float:
        """Bytes of segments a..b-1."""
        if b <= a:
            return 0
        if b == self.k:
            return self.base * (b - a - 1) + self.last
        return self.base * (b - a)


# -- data --------------------------------------------------------------------------------------
def _max(a: Any, b: Any) -> Any:
    return np.maximum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else max(a, b)


def _min(a: Any, b: Any) -> Any:
    return np.minimum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else min(a, b)


#: Built-in reduction operators by name (MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, logical and bitwise).
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "sum": operator.add,
    "prod": operator.mul,
    "max": _max,
    "min": _min,
    "land": lambda a, b: np.logical_and(a, b) if isinstance(a, np.ndarray) else bool(a and b),
    "lor": lambda a, b: np.logical_or(a, b) if isinstance(a, np.ndarray) else bool(a or b),
    "band": operator.and_,
    "bor": operator.or_,
    "bxor": operator.xor,
}


def resolve_op(op: Any) -> tuple[Callable[[Any, Any], Any], bool]:
    """(function, is_builtin) of an operator given by name or as a callable ``f(a, b)``."""
    if isinstance(op, str):
        f = OPS.get(op)
        if f is None:
            raise MpiError(f"unknown reduction operator {op!r}; valid: {', '.join(OPS)} or a callable f(a, b)")
        return f, True
    if callable(op):
        return op, False
    raise MpiError(f"op must be an operator name ({', '.join(OPS)}) or a callable f(a, b), got {op!r}")


def combine(op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    """``op(a, b)``, where a missing value (None) is the identity."""
    if a is None:
        return b
    if b is None:
        return a
    return op(a, b)


def split(data: Any, k: int) -> list:
    """``k`` segments of ``data``: array pieces, or the indivisible value repeated."""
    if isinstance(data, np.ndarray):
        return np.array_split(data, k)
    return [data] * k


def join(segs: list) -> Any:
    """The inverse of :func:`split`."""
    if segs and isinstance(segs[0], np.ndarray):
        return np.concatenate(segs)
    return segs[0] if segs else None


def check_list(what: str, data: Any, p: int) -> list:
    """``data`` as a list of ``p`` items (None stands for p missing items)."""
    if data is None:
        return [None] * p
    try:
        items = list(data)
    except TypeError:
        raise MpiError(f"{what}: data must be a sequence of {p} items (one per rank), got {type(data).__name__}") from None
    if len(items) != p:
        raise MpiError(f"{what}: data must have one item per rank ({p}), got {len(items)}")
    return items


def check_nbytes(what: str, nbytes: Any) -> None:
    if isinstance(nbytes, str):
        raise MpiError(f"{what}: the size must be a number of bytes, got the string {nbytes!r} "
                       "(convert sizes with units once, e.g. models.units.parse_bytes)")
    if not (is_number(nbytes) and 0 <= nbytes < math.inf):
        raise MpiError(f"{what}: the size must be a finite number of bytes >= 0, got {nbytes!r}")
