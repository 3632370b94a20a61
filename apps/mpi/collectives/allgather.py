"""Allgather: recursive doubling, Bruck and ring (MPICH).

With n bytes per rank and T(m) the time of one m-byte message:

* recursive doubling (p a power of two): sum_{j<lg p} T(2^j n);
* Bruck: sum_{j<floor(lg p)} T(2^j n), plus T((p - 2^floor(lg p)) n) when p is not a power
  of two (each step sends to rank - 2^j and receives from rank + 2^j);
* ring: (p - 1) * T(n).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import MpiError
from .base import TAG_ALLGATHER, is_pof2, sendrecv

if TYPE_CHECKING:  # pragma: no cover
    from ..comm import Comm


def recursive_doubling(comm: "Comm", nbytes: float, data: Any) -> list:
    p = comm.size
    if not is_pof2(p):
        raise MpiError(f"allgather algorithm 'recursive_doubling' needs a power-of-two communicator size, got {p}")
    rank = comm.rank
    items: list = [None] * p
    items[rank] = data
    curr = nbytes
    mask = 1
    while mask < p:
        dst = rank ^ mask
        mine = rank & ~(mask - 1)
        theirs = dst & ~(mask - 1)
        req = sendrecv(comm, dst, curr, dst, TAG_ALLGATHER, items[mine:mine + mask])
        curr += req.nbytes
        items[theirs:theirs + mask] = req.data
        mask <<= 1
    return items


def bruck(comm: "Comm", nbytes: float, data: Any) -> list:
    p = comm.size
    rank = comm.rank
    items = [data]  # items[i] is the block of rank (rank + i) % p
    pof2 = 1
    while pof2 <= p // 2:
        src = (rank + pof2) % p
        dst = (rank - pof2) % p
        req = sendrecv(comm, dst, nbytes * pof2, src, TAG_ALLGATHER, list(items))
        items.extend(req.data)
        pof2 *= 2
    rem = p - pof2
    if rem:
        src = (rank + pof2) % p
        dst = (rank - pof2) % p
        req = sendrecv(comm, dst, nbytes * rem, src, TAG_ALLGATHER, items[:rem])
        items.extend(req.data)
    out: list = [None] * p
    for i, x in enumerate(items):
        out[(rank + i) % p] = x
    return out


def ring(comm: "Comm", nbytes: float, data: Any) -> list:
    p = comm.size
    rank = comm.rank
    items: list = [None] * p
    items[rank] = data
    left = (rank - 1) % p
    right = (rank + 1) % p
    j = rank
    jnext = left
    for _ in range(1, p):
        items[jnext] = sendrecv(comm, right, nbytes, left, TAG_ALLGATHER, items[j]).data
        j = jnext
        jnext = (jnext - 1) % p
    return items


ALGORITHMS = {"recursive_doubling": recursive_doubling, "bruck": bruck, "ring": ring}
