"""A numpy mirror of the waiting jobs' sizes, estimates and sequence numbers.

The scheduler keeps it row for row in step with its queue (priority order, static orderings
only), updating it as jobs enter and leave. A backfill pass can then pick the few jobs that
could start from a queue of thousands with one vectorised comparison, instead of a Python
loop over every job at every pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .job import Job

__all__ = ["QueueMirror"]


class QueueMirror:
    """Rows ``nodes``, ``estimate`` and ``seq`` (float64; exact for integers below 2**53) of
    the first ``n`` columns of one buffer, grown by doubling."""

    __slots__ = ("n", "_buf")

    def __init__(self, capacity: int = 64):
        self.n = 0
        self._buf = np.empty((3, max(int(capacity), 1)))

    @classmethod
    def of(cls, jobs: "Sequence[Job]") -> "QueueMirror":
        """The columns of ``jobs``, in the given order."""
        m = cls(2 * len(jobs))
        n = len(jobs)
        buf = m._buf
        buf[0, :n] = [j.nodes for j in jobs]
        buf[1, :n] = [j.estimate for j in jobs]
        buf[2, :n] = [j.seq for j in jobs]
        m.n = n
        return m

    def insert(self, i: int, nodes: int, estimate: float, seq: int) -> None:
        """Insert a job at position ``i`` (0 <= i <= n)."""
        n = self.n
        buf = self._buf
        if n == buf.shape[1]:
            grown = np.empty((3, 2 * n))
            grown[:, :n] = buf
            self._buf = buf = grown
        if i < n:
            buf[:, i + 1 : n + 1] = buf[:, i:n]  # numpy copies overlapping slices correctly
        buf[0, i] = nodes
        buf[1, i] = estimate
        buf[2, i] = seq
        self.n = n + 1

    def delete(self, i: int) -> None:
        """Remove the row at position ``i``."""
        n = self.n
        buf = self._buf
        if i < n - 1:
            buf[:, i : n - 1] = buf[:, i + 1 : n]
        self.n = n - 1

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the rows where ``mask`` (n booleans) is true, in order."""
        n = self.n
        m = int(np.count_nonzero(mask))
        self._buf[:, :m] = self._buf[:, :n][:, mask]
        self.n = m

    def backfill_rows(self, lo: int, free: int, end_by: float, now: float, extra: int) -> list[int]:
        """Positions ``>= lo`` of the jobs that fit ``free`` nodes and either end by
        ``end_by`` (``now + estimate <= end_by``) or fit ``extra`` nodes: EASY's backfill
        candidates, in queue order."""
        buf = self._buf
        n = self.n
        nodes = buf[0, lo:n]
        if extra >= free:
            ok = nodes <= free
        else:
            ok = nodes <= extra
            ok |= (nodes <= free) & (buf[1, lo:n] + now <= end_by)
        idx = ok.nonzero()[0]
        if lo:
            idx += lo
        return idx.tolist()

    @property
    def nodes(self) -> np.ndarray:
        return self._buf[0, : self.n]

    @property
    def estimate(self) -> np.ndarray:
        return self._buf[1, : self.n]

    @property
    def seq(self) -> np.ndarray:
        return self._buf[2, : self.n]

    def __len__(self) -> int:
        return self.n
