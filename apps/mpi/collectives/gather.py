"""Gather and scatter: binomial trees (MPICH's only intra-communicator algorithms).

With n bytes per rank and p a power of two, both take sum_{j<lg p} T(2^j n) =
lg p * alpha + (p - 1) * n * beta for eager messages: the message to or from the child at
distance 2^j carries that child's whole subtree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import TAG_GATHER, TAG_SCATTER, recv, send

if TYPE_CHECKING:  # pragma: no cover
    from ..comm import Comm


def gather_binomial(comm: "Comm", nbytes: float, root: int, data: Any) -> list | None:
    p = comm.size
    rank = comm.rank
    rel = (rank - root) % p
    items = [data]  # this rank's subtree, in relative-rank order
    curr = nbytes
    mask = 1
    while mask < p:
        if rel & mask == 0:
            src = rel | mask
            if src < p:
                req = recv(comm, (src + root) % p, TAG_GATHER)
                curr += req.nbytes
                items.extend(req.data)
        else:
            send(comm, ((rel & ~mask) + root) % p, curr, TAG_GATHER, items)
            return None
        mask <<= 1
    out: list = [None] * p
    for i, x in enumerate(items):
        out[(i + root) % p] = x
    return out


def scatter_binomial(comm: "Comm", nbytes: float, root: int, items: list | None) -> Any:
    p = comm.size
    rank = comm.rank
    rel = (rank - root) % p
    if rel == 0:
        curr = nbytes * p
        items = [items[(i + root) % p] for i in range(p)] if items is not None else [None] * p
    else:
        curr = 0
        items = [None]
    mask = 1
    while mask < p:
        if rel & mask:
            req = recv(comm, (rank - mask) % p, TAG_SCATTER)
            curr = req.nbytes
            items = req.data
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < p:
            size = curr - nbytes * mask
            send(comm, (rank + mask) % p, size, TAG_SCATTER, items[mask:])
            curr -= size
            items = items[:mask]
        mask >>= 1
    return items[0]


GATHER_ALGORITHMS = {"binomial": gather_binomial}
SCATTER_ALGORITHMS = {"binomial": scatter_binomial}
