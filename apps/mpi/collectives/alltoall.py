"""All-to-all and all-to-all-v: Bruck, scattered isend/irecv and pairwise exchange (MPICH).

With n bytes per pair and T(m) the time of one m-byte message:

* Bruck: ceil(lg p) steps; step j sends the blocks whose index has bit j set to rank + 2^j:
  sum_j T(c_j n) with c_j = #{i < p : i & 2^j};
* scattered: blocks of ``throttle`` (MPICH's ALLTOALL_THROTTLE, 32) peers at a time, all
  their receives then all their sends posted at once, then a wait for the block; the first
  peer of the first block is the rank itself (a copy through the node's memory);
* pairwise: p - 1 steps of one exchange each (partner rank XOR i for a power-of-two p,
  else send to rank + i and receive from rank - i): (p - 1) * T(n).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .base import TAG_ALLTOALL, TAG_ALLTOALLV, irecv, is_pof2, isend, sendrecv, waitall

if TYPE_CHECKING:  # pragma: no cover
    from ..comm import Comm

#: MPICH's MPIR_CVAR_ALLTOALL_THROTTLE default: peers per block of the scattered algorithm.
THROTTLE = 32


def _bits(p: int, b: int) -> int:
    """Number of i in [0, p) with bit b (a power of two) set."""
    return (p // (2 * b)) * b + max(0, p % (2 * b) - b)


def bruck(comm: "Comm", nbytes: float, items: list) -> list:
    p = comm.size
    rank = comm.rank
    has = any(x is not None for x in items)
    tmp = [items[(rank + i) % p] for i in range(p)] if has else None
    pof2 = 1
    while pof2 < p:
        dst = (rank + pof2) % p
        src = (rank - pof2) % p
        if has:
            idx = [i for i in range(p) if i & pof2]
            got = sendrecv(comm, dst, nbytes * len(idx), src, TAG_ALLTOALL, [tmp[i] for i in idx]).data
            for k, i in enumerate(idx):
                tmp[i] = got[k]
        else:
            sendrecv(comm, dst, nbytes * _bits(p, pof2), src, TAG_ALLTOALL)
        pof2 *= 2
    out: list = [None] * p
    if has:
        for i in range(p):
            out[(rank - i) % p] = tmp[i]
    return out


def _scattered(comm: "Comm", sizes: Sequence[float], items: list, recv_sizes: Sequence[float] | None, tag: int) -> list:
    p = comm.size
    rank = comm.rank
    out: list = [None] * p
    for ii in range(0, p, THROTTLE):
        ss = min(THROTTLE, p - ii)
        rreqs = []
        for i in range(ss):
            src = (rank + i + ii) % p
            if recv_sizes is None or recv_sizes[src] > 0:
                rreqs.append((src, irecv(comm, src, tag)))
        sreqs = []
        for i in range(ss):
            dst = (rank - i - ii) % p
            if recv_sizes is None or sizes[dst] > 0:
                sreqs.append(isend(comm, dst, sizes[dst], tag, items[dst]))
        waitall(comm, [r for _, r in rreqs] + sreqs)
        for src, r in rreqs:
            out[src] = r.data
    return out


def scattered(comm: "Comm", nbytes: float, items: list) -> list:
    return _scattered(comm, [nbytes] * comm.size, items, None, TAG_ALLTOALL)


def _pairwise(comm: "Comm", sizes: Sequence[float], items: list, recv_sizes: Sequence[float] | None, tag: int) -> list:
    p = comm.size
    rank = comm.rank
    out: list = [None] * p
    if recv_sizes is None or recv_sizes[rank] > 0:
        out[rank] = items[rank]
    pof2 = is_pof2(p)
    for i in range(1, p):
        if pof2:
            src = dst = rank ^ i
        else:
            src = (rank - i) % p
            dst = (rank + i) % p
        if recv_sizes is None:
            out[src] = sendrecv(comm, dst, sizes[dst], src, tag, items[dst]).data
            continue
        # alltoallv with known receive sizes: pairs of size zero exchange nothing.
        reqs = []
        rreq = irecv(comm, src, tag) if recv_sizes[src] > 0 else None
        if rreq is not None:
            reqs.append(rreq)
        if sizes[dst] > 0:
            reqs.append(isend(comm, dst, sizes[dst], tag, items[dst]))
        waitall(comm, reqs)
        if rreq is not None:
            out[src] = rreq.data
    return out


def pairwise(comm: "Comm", nbytes: float, items: list) -> list:
    return _pairwise(comm, [nbytes] * comm.size, items, None, TAG_ALLTOALL)


def scattered_v(comm: "Comm", sizes: Sequence[float], items: list, recv_sizes: Sequence[float] | None) -> list:
    return _scattered(comm, sizes, items, recv_sizes, TAG_ALLTOALLV)


def pairwise_v(comm: "Comm", sizes: Sequence[float], items: list, recv_sizes: Sequence[float] | None) -> list:
    return _pairwise(comm, sizes, items, recv_sizes, TAG_ALLTOALLV)


ALGORITHMS = {"bruck": bruck, "scattered": scattered, "pairwise": pairwise}
V_ALGORITHMS = {"scattered": scattered_v, "pairwise": pairwise_v}
