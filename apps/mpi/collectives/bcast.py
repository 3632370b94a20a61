"""Broadcast: binomial tree, scatter + recursive-doubling allgather, scatter + ring allgather.

These are MPICH's three intra-communicator broadcasts (``MPIR_Bcast_intra_binomial``,
``..._scatter_recursive_doubling_allgather``, ``..._scatter_ring_allgather``). With
T(m) the time of one m-byte message and s = ceil(n / p):

* binomial: the tree height H = max popcount(r), r < p, so H * T(n) for eager sends;
* scatter + doubling (p a power of two): 2 * sum_{j<lg p} T(2^j s);
* scatter + ring: sum_{j<lg p} T(2^j s) + (p - 1) * T(s) (p a power of two; the scatter is
  a binomial scatter of s-byte chunks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import MpiError
from .base import TAG_BCAST, is_pof2, recv, send, sendrecv

if TYPE_CHECKING:  # pragma: no cover
    from ..comm import Comm


def binomial(comm: "Comm", nbytes: float, root: int, data: Any) -> Any:
    p = comm.size
    rank = comm.rank
    rel = rank - root
    if rel < 0:
        rel += p
    mask = 1
    while mask < p:
        if rel & mask:
            src = rank - mask
            if src < 0:
                src += p
            data = recv(comm, src, TAG_BCAST).data
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < p:
            dst = rank + mask
            if dst >= p:
                dst -= p
            send(comm, dst, nbytes, TAG_BCAST, data)
        mask >>= 1
    return data


def _scatter(comm: "Comm", nbytes: float, root: int, data: Any, chunk: float) -> tuple[float, Any]:
    """MPICH's scatter_for_bcast: chunk j (``chunk`` bytes, the last one shorter) goes to the
    rank of relative rank j. Returns (bytes now held, data)."""
    p = comm.size
    rank = comm.rank
    rel = (rank - root) % p
    curr = nbytes if rel == 0 else 0
    mask = 1
    while mask < p:
        if rel & mask:
            src = (rank - mask) % p
            if nbytes - rel * chunk > 0:
                req = recv(comm, src, TAG_BCAST)
                curr = req.nbytes
                if req.data is not None:
                    data = req.data
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < p:
            size = curr - chunk * mask
            if size > 0:
                send(comm, (rank + mask) % p, size, TAG_BCAST, data)
                curr -= size
        mask >>= 1
    return curr, data


def _chunk(nbytes: float, p: int) -> float:
    c = -(-nbytes // p)
    return c


def scatter_doubling_allgather(comm: "Comm", nbytes: float, root: int, data: Any) -> Any:
    p = comm.size
    if not is_pof2(p):
        raise MpiError(f"bcast algorithm 'scatter_doubling_allgather' needs a power-of-two communicator size, got {p}")
    rank = comm.rank
    chunk = _chunk(nbytes, p)
    curr, data = _scatter(comm, nbytes, root, data, chunk)
    rel = (rank - root) % p
    mask = 1
    i = 0
    while mask < p:
        rdst = rel ^ mask
        dst = (rdst + root) % p
        req = sendrecv(comm, dst, curr, dst, TAG_BCAST, data)
        curr += req.nbytes
        if req.data is not None:
            data = req.data
        mask <<= 1
        i += 1
    return data


def scatter_ring_allgather(comm: "Comm", nbytes: float, root: int, data: Any) -> Any:
    p = comm.size
    rank = comm.rank
    chunk = _chunk(nbytes, p)
    _, data = _scatter(comm, nbytes, root, data, chunk)
    rel = (rank - root) % p
    left = (rank - 1) % p
    right = (rank + 1) % p
    j = rel
    jnext = (rel - 1) % p
    for _ in range(1, p):
        right_count = min(max(nbytes - j * chunk, 0), chunk)
        req = sendrecv(comm, right, right_count, left, TAG_BCAST, data)
        if req.data is not None:
            data = req.data
        j = jnext
        jnext = (jnext - 1) % p
    return data


ALGORITHMS = {
    "binomial": binomial,
    "scatter_doubling_allgather": scatter_doubling_allgather,
    "scatter_ring_allgather": scatter_ring_allgather,
}
