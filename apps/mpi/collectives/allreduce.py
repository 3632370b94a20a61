"""Allreduce: recursive doubling and Rabenseifner's reduce-scatter + allgather (MPICH).

Both fold a non-power-of-two communicator first: of the first 2 * rem ranks
(rem = p - pof2, pof2 the largest power of two <= p) each even rank sends its whole buffer to
the next odd rank and sits out; at the end the odd ranks send the result back. With T(m) the
time of one m-byte message and k = lg pof2:

* recursive doubling: k * T(n), plus 2 * T(n) for the fold when p is not a power of two;
* Rabenseifner: a recursive-halving reduce-scatter (exchange distance 1, 2, 4, ..., sending
  half of the remaining buffer) then a recursive-doubling allgather in reverse order:
  2 * sum_{i=1..k} T(n / 2^i), plus 2 * T(n) for the fold.

Segments follow MPICH: pof2 segments of n // pof2 bytes, the last taking the remainder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .base import TAG_ALLREDUCE, Counts, combine, join, pof2_floor, recv, send, sendrecv, split

if TYPE_CHECKING:  # pragma: no cover
    from ..comm import Comm


def _fold(comm: "Comm", nbytes: float, data: Any, op: Callable, pof2: int, tag: int) -> tuple[int, Any]:
    """Even ranks below 2*rem send to rank+1 and drop out (newrank -1)."""
    rank = comm.rank
    rem = comm.size - pof2
    if rank < 2 * rem:
        if rank % 2 == 0:
            send(comm, rank + 1, nbytes, tag, data)
            return -1, data
        got = recv(comm, rank - 1, tag).data
        return rank // 2, combine(op, got, data)
    return rank - rem, data


def _unfold(comm: "Comm", nbytes: float, data: Any, pof2: int, tag: int) -> Any:
    rank = comm.rank
    rem = comm.size - pof2
    if rank < 2 * rem:
        if rank % 2:
            send(comm, rank - 1, nbytes, tag, data)
        else:
            data = recv(comm, rank + 1, tag).data
    return data


def recursive_doubling(comm: "Comm", nbytes: float, data: Any, op: Callable) -> Any:
    p = comm.size
    pof2 = pof2_floor(p)
    rem = p - pof2
    newrank, data = _fold(comm, nbytes, data, op, pof2, TAG_ALLREDUCE)
    if newrank != -1:
        mask = 1
        while mask < pof2:
            newdst = newrank ^ mask
            dst = newdst * 2 + 1 if newdst < rem else newdst + rem
            got = sendrecv(comm, dst, nbytes, dst, TAG_ALLREDUCE, data).data
            data = combine(op, got, data)
            mask <<= 1
    return _unfold(comm, nbytes, data, pof2, TAG_ALLREDUCE)


def rabenseifner(comm: "Comm", nbytes: float, data: Any, op: Callable) -> Any:
    p = comm.size
    pof2 = pof2_floor(p)
    rem = p - pof2
    newrank, data = _fold(comm, nbytes, data, op, pof2, TAG_ALLREDUCE)
    if newrank != -1:
        cnts = Counts(nbytes, pof2)
        has = data is not None
        segs = split(data, pof2) if has else None
        # Reduce-scatter by recursive halving, distance 1 first.
        mask = 1
        send_idx = recv_idx = 0
        last_idx = pof2
        while mask < pof2:
            newdst = newrank ^ mask
            dst = newdst * 2 + 1 if newdst < rem else newdst + rem
            half = pof2 // (mask * 2)
            if newrank < newdst:
                send_idx = recv_idx + half
                s0, s1, r0 = send_idx, last_idx, recv_idx
            else:
                recv_idx = send_idx + half
                s0, s1, r0 = send_idx, recv_idx, recv_idx
            got = sendrecv(comm, dst, cnts.span(s0, s1), dst, TAG_ALLREDUCE, segs[s0:s1] if has else None).data
            if has:
                for k, g in enumerate(got):
                    segs[r0 + k] = combine(op, g, segs[r0 + k])
            send_idx = recv_idx
            mask <<= 1
            if mask < pof2:
                last_idx = recv_idx + pof2 // mask
        # Allgather by recursive doubling, in the reverse order.
        mask >>= 1
        while mask > 0:
            newdst = newrank ^ mask
            dst = newdst * 2 + 1 if newdst < rem else newdst + rem
            half = pof2 // (mask * 2)
            if newrank < newdst:
                if mask != pof2 // 2:
                    last_idx = last_idx + half
                recv_idx = send_idx + half
                s0, s1, r0, r1 = send_idx, recv_idx, recv_idx, last_idx
            else:
                recv_idx = send_idx - half
                s0, s1, r0, r1 = send_idx, last_idx, recv_idx, send_idx
            got = sendrecv(comm, dst, cnts.span(s0, s1), dst, TAG_ALLREDUCE, segs[s0:s1] if has else None).data
            if has:
                segs[r0:r1] = got
            if newrank > newdst:
                send_idx = recv_idx
            mask >>= 1
        if has:
            data = join(segs)
    return _unfold(comm, nbytes, data, pof2, TAG_ALLREDUCE)


ALGORITHMS = {"recursive_doubling": recursive_doubling, "rabenseifner": rabenseifner}
