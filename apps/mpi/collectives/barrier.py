"""Barrier: the dissemination algorithm (Hensgen, Finkel and Manber), MPICH's default.

Round k (k = 0 .. ceil(lg p) - 1): send a zero-byte message to rank + 2^k and receive one
from rank - 2^k (mod p). Time on an uncontended network: ceil(lg p) * alpha.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import TAG_BARRIER, sendrecv

if TYPE_CHECKING:  # pragma: no cover
    from ..comm import Comm


def dissemination(comm: "Comm") -> None:
    p = comm.size
    rank = comm.rank
    mask = 1
    while mask < p:
        dst = rank + mask
        if dst >= p:
            dst -= p
        src = rank - mask
        if src < 0:
            src += p
        sendrecv(comm, dst, 0, src, TAG_BARRIER)
        mask <<= 1


ALGORITHMS = {"dissemination": dissemination}
