"""A numpy mirror of the waiting jobs' sizes, estimates and sequence numbers.

The scheduler keeps it row for row in step with its queue (priority order, static orderings
only), updating it as jobs enter and leave. A backfill pass can then pick the few jobs that
could start from a queue of thousands with one vectorised comparison, instead of a Python
loop over every job at every pass.
"""

from __future__ import annotations

from math import inf as _INF, nextafter
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .job import Job

__all__ = ["QueueMirror"]


class QueueMirror:
    """Rows ``nodes``, ``estimate`` and ``seq`` (float64; exact for integers below 2**53) of
    columns ``lo`` to ``lo + n`` of one buffer, grown by doubling. A row is inserted or
    removed by moving the shorter side of the queue, so the jobs that leave the head of a
    first-come-first-served queue cost no copy of the queue behind them."""

    __slots__ = ("n", "lo", "_buf")

    def __init__(self, capacity: int = 64):
        self.n = 0
        self.lo = 0
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
        lo = self.lo
        buf = self._buf
        if lo and 2 * i < n:
            # Nearer the head, with room before it: move the head rows one column left.
            lo -= 1
            if i:
                buf[:, lo : lo + i] = buf[:, lo + 1 : lo + 1 + i]
            self.lo = lo
        else:
            cap = buf.shape[1]
            if lo + n == cap:
                # No room at the tail: move the rows to the front, in a doubled buffer
                # unless a quarter of it lies free before them.
                grown = buf if 4 * lo > cap else np.empty((3, 2 * cap))
                grown[:, :n] = buf[:, lo : lo + n]
                self._buf = buf = grown
                self.lo = lo = 0
            if i < n:
                buf[:, lo + i + 1 : lo + n + 1] = buf[:, lo + i : lo + n]  # overlapping: numpy copies right
        k = lo + i
        buf[0, k] = nodes
        buf[1, k] = estimate
        buf[2, k] = seq
        self.n = n + 1

    def delete(self, i: int) -> None:
        """Remove the row at position ``i``."""
        n = self.n
        lo = self.lo
        buf = self._buf
        if 2 * i < n:
            if i:
                buf[:, lo + 1 : lo + i + 1] = buf[:, lo : lo + i]
            self.lo = lo + 1
        elif i < n - 1:
            buf[:, lo + i : lo + n - 1] = buf[:, lo + i + 1 : lo + n]
        self.n = n - 1

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the rows where ``mask`` (n booleans) is true, in order."""
        lo = self.lo
        m = int(np.count_nonzero(mask))
        self._buf[:, :m] = self._buf[:, lo : lo + self.n][:, mask]
        self.lo = 0
        self.n = m

    def backfill_rows(self, lo: int, free: int, end_by: float, now: float, extra: int) -> list[int]:
        """Positions ``>= lo`` of the jobs that fit ``free`` nodes and either end by
        ``end_by`` (``now + estimate <= end_by``) or fit ``extra`` nodes: EASY's backfill
        candidates, in queue order."""
        return self.backfill_index(lo, free, end_by, now, extra).tolist()

    def backfill_index(self, lo: int, free: int, end_by: float, now: float, extra: int) -> np.ndarray:
        """:meth:`backfill_rows` as an array (a pass usually tries only the first few, and
        turning hundreds of positions into a list cost more than finding them)."""
        buf = self._buf
        a = self.lo + lo
        b = self.lo + self.n
        nodes = buf[0, a:b]
        if extra >= free:
            ok = nodes <= free
        else:
            # The latest estimate that ends by end_by: e, when now + e <= end_by holds for e
            # and not for the next float up, as floats add (rounding is monotone, so then an
            # estimate ends by end_by exactly when it is <= e). Usually so: one comparison on
            # the column instead of an addition and a comparison.
            e = end_by - now
            if e + now <= end_by < nextafter(e, _INF) + now:
                ends = buf[1, a:b] <= e
            else:
                ends = buf[1, a:b] + now <= end_by
            # Each row's node limit: free if it ends by end_by, else extra (< free).
            ok = nodes <= np.where(ends, float(free), float(extra))
        idx = ok.nonzero()[0]
        if lo:
            idx += lo
        return idx

    @property
    def nodes(self) -> np.ndarray:
        return self._buf[0, self.lo : self.lo + self.n]

    @property
    def estimate(self) -> np.ndarray:
        return self._buf[1, self.lo : self.lo + self.n]

    @property
    def seq(self) -> np.ndarray:
        return self._buf[2, self.lo : self.lo + self.n]

    def __len__(self) -> int:
        return self.n
