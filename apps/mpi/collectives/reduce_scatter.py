"""Reduce-scatter: recursive halving and pairwise exchange (MPICH, commutative operators).

``counts[i]`` bytes of the reduced buffer end on rank i. With equal counts n and T(m) the
time of one m-byte message:

* recursive halving (fold for a non-power-of-two p as in allreduce, then exchange distance
  pof2/2, pof2/4, ..., 1, sending the half of the remaining blocks the partner keeps):
  sum_{j<lg p} T(2^j n) for a power-of-two p;
* pairwise: p - 1 steps, send to rank + i the blocks of rank + i and receive from rank - i:
  (p - 1) * T(n).
"""

from __future__ import annotations

from itertools import accumulate
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .base import TAG_REDUCE_SCATTER, combine, pof2_floor, recv, send, sendrecv

if TYPE_CHECKING:  # pragma: no cover
    from ..comm import Comm


class _NewCounts:
    """Bytes of the blocks of the pof2 remaining ranks (ranks below rem carry two blocks)."""

    def __init__(self, counts: Sequence[float] | float, p: int, rem: int, pof2: int):
        self.uniform = not isinstance(counts, (list, tuple))
        self.rem = rem
        if self.uniform:
            self.c = counts
        else:
            nc = [counts[2 * i] + counts[2 * i + 1] if i < rem else counts[i + rem] for i in range(pof2)]
            self.prefix = [0, *accumulate(nc)]

    def span(self, a: int, b: int) -> float:
        if self.uniform:
            return self.c * (b - a) + self.c * max(0, min(b, self.rem) - a)
        return self.prefix[b] - self.prefix[a]


def _blocks_of(newrank: int, rem: int) -> tuple[int, ...]:
    """Original ranks whose blocks newrank holds."""
    return (2 * newrank, 2 * newrank + 1) if newrank < rem else (newrank + rem,)


def recursive_halving(comm: "Comm", counts: Sequence[float] | float, items: list, op: Callable) -> Any:
    p = comm.size
    rank = comm.rank
    pof2 = pof2_floor(p)
    rem = p - pof2
    uniform = not isinstance(counts, (list, tuple))
    total = counts * p if uniform else sum(counts)
    has = any(x is not None for x in items)
    tag = TAG_REDUCE_SCATTER
    if rank < 2 * rem:
        if rank % 2 == 0:
            send(comm, rank + 1, total, tag, items if has else None)
            newrank = -1
        else:
            got = recv(comm, rank - 1, tag).data
            if got is not None:
                items = [combine(op, g, x) for g, x in zip(got, items)]
            newrank = rank // 2
    else:
        newrank = rank - rem
    if newrank != -1:
        nc = _NewCounts(counts, p, rem, pof2)
        mask = pof2 >> 1
        send_idx = recv_idx = 0
        last_idx = pof2
        while mask > 0:
            newdst = newrank ^ mask
            dst = newdst * 2 + 1 if newdst < rem else newdst + rem
            if newrank < newdst:
                send_idx = recv_idx + mask
                s0, s1 = send_idx, last_idx  # keep [recv_idx, send_idx)
            else:
                recv_idx = send_idx + mask
                s0, s1 = send_idx, recv_idx  # keep [recv_idx, last_idx)
            payload = None
            if has:
                payload = [(o, items[o]) for b in range(s0, s1) for o in _blocks_of(b, rem)]
            got = sendrecv(comm, dst, nc.span(s0, s1), dst, tag, payload).data
            if got is not None:
                for o, g in got:
                    items[o] = combine(op, g, items[o])
            send_idx = recv_idx
            last_idx = recv_idx + mask
            mask >>= 1
    if rank < 2 * rem:
        if rank % 2:
            cnt = counts if uniform else counts[rank - 1]
            send(comm, rank - 1, cnt, tag, items[rank - 1] if has else None)
        else:
            return recv(comm, rank + 1, tag).data
    return items[rank]


def pairwise(comm: "Comm", counts: Sequence[float] | float, items: list, op: Callable) -> Any:
    p = comm.size
    rank = comm.rank
    uniform = not isinstance(counts, (list, tuple))
    acc = items[rank]
    for i in range(1, p):
        src = (rank - i) % p
        dst = (rank + i) % p
        got = sendrecv(comm, dst, counts if uniform else counts[dst], src, TAG_REDUCE_SCATTER, items[dst]).data
        acc = combine(op, got, acc)
    return acc


ALGORITHMS = {"recursive_halving": recursive_halving, "pairwise": pairwise}
