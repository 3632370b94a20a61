"""Reduce: binomial tree and Rabenseifner's reduce-scatter + gather (MPICH).

* binomial: every rank receives from its children (relative ranks rank | 2^j) in increasing
  j, combining, then sends to its parent: H * T(n) with H = max popcount(r), r < p.
* reduce_scatter_gather: fold (odd ranks below 2 * rem send to rank - 1), a recursive-halving
  reduce-scatter as in Rabenseifner's allreduce, then a binomial gather of the reduced
  segments to the root: 2 * sum_{i=1..k} T(n / 2^i) for a power-of-two p and root 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .base import TAG_REDUCE, Counts, combine, join, pof2_floor, recv, send, sendrecv, split

if TYPE_CHECKING:  # pragma: no cover
    from ..comm import Comm


def binomial(comm: "Comm", nbytes: float, root: int, data: Any, op: Callable) -> Any:
    p = comm.size
    rank = comm.rank
    rel = (rank - root) % p
    mask = 1
    while mask < p:
        if rel & mask == 0:
            src = rel | mask
            if src < p:
                got = recv(comm, (src + root) % p, TAG_REDUCE).data
                data = combine(op, got, data)
        else:
            send(comm, ((rel & ~mask) + root) % p, nbytes, TAG_REDUCE, data)
            break
        mask <<= 1
    return data if rank == root else None


def reduce_scatter_gather(comm: "Comm", nbytes: float, root: int, data: Any, op: Callable) -> Any:
    p = comm.size
    rank = comm.rank
    pof2 = pof2_floor(p)
    rem = p - pof2
    if rank < 2 * rem:
        if rank % 2:
            send(comm, rank - 1, nbytes, TAG_REDUCE, data)
            newrank = -1
        else:
            got = recv(comm, rank + 1, TAG_REDUCE).data
            data = combine(op, got, data)
            newrank = rank // 2
    else:
        newrank = rank - rem
    cnts = Counts(nbytes, pof2)
    has = data is not None
    segs = split(data, pof2) if has else [None] * pof2
    send_idx = recv_idx = 0
    last_idx = pof2
    if newrank != -1:
        mask = 1
        while mask < pof2:
            newdst = newrank ^ mask
            dst = newdst * 2 if newdst < rem else newdst + rem
            half = pof2 // (mask * 2)
            if newrank < newdst:
                send_idx = recv_idx + half
                s0, s1, r0 = send_idx, last_idx, recv_idx
            else:
                recv_idx = send_idx + half
                s0, s1, r0 = send_idx, recv_idx, recv_idx
            got = sendrecv(comm, dst, cnts.span(s0, s1), dst, TAG_REDUCE, segs[s0:s1] if has else None).data
            if got is not None:
                for k, g in enumerate(got):
                    segs[r0 + k] = combine(op, g, segs[r0 + k])
            send_idx = recv_idx
            mask <<= 1
            if mask < pof2:
                last_idx = recv_idx + pof2 // mask
    # Gather the reduced segments to the root. An excluded (odd) root takes over newrank 0.
    if root < 2 * rem:
        if root % 2:
            if rank == root:
                got = recv(comm, 0, TAG_REDUCE).data
                if got is not None:
                    segs[0:1] = got
                newrank = 0
                send_idx = 0
                last_idx = 2
            elif newrank == 0:
                send(comm, root, cnts.span(0, 1), TAG_REDUCE, segs[0:1] if has else None)
                newrank = -1
            newroot = 0
        else:
            newroot = root // 2
    else:
        newroot = root - rem
    if newrank != -1:
        j = pof2.bit_length() - 2
        mask = pof2 >> 1
        while mask > 0:
            newdst = newrank ^ mask
            dst = newdst * 2 if newdst < rem else newdst + rem
            if newdst == 0 and root < 2 * rem and root % 2:
                dst = root
            half = pof2 // (mask * 2)
            if newrank < newdst:
                if mask != pof2 // 2:
                    last_idx = last_idx + half
                recv_idx = send_idx + half
                s0, s1, r0, r1 = send_idx, recv_idx, recv_idx, last_idx
            else:
                recv_idx = send_idx - half
                s0, s1, r0, r1 = send_idx, last_idx, recv_idx, send_idx
            if (newdst >> j) == (newroot >> j):
                send(comm, dst, cnts.span(s0, s1), TAG_REDUCE, segs[s0:s1] if has else None)
                break
            got = recv(comm, dst, TAG_REDUCE).data
            if got is not None:
                segs[r0:r1] = got
            if newrank > newdst:
                send_idx = recv_idx
            mask >>= 1
            j -= 1
    if rank != root:
        return None
    return join(segs) if segs[0] is not None else None


ALGORITHMS = {"binomial": binomial, "reduce_scatter_gather": reduce_scatter_gather}
