"""Memo of ``select`` results by the content of the state it reads.

An allocator whose ``select`` is a pure function of the job size and of a few boolean masks
of the state (which nodes are free, which links or leaves are unclaimed) may answer a query
it has answered before from this memo. Backfilling asks the same question many times: every
candidate of a pass on an unchanged state, and every pass again from a copy of the running
state released step by step to the same shadow states. The key is the masks' exact bytes,
so a hit returns what the computation would (no hashing collisions can change a decision).

Each entry is one state: the results by job size plus, for the allocator, anything derived
from the state alone (``view``), which later queries of other sizes on the same state reuse.
A :class:`MemoState` keeps its entry until it changes (``mark_busy``/``mark_free``, or the
allocator's ``commit``/``release``/``block`` calling :meth:`MemoState.forget`), so repeated
queries on one state skip even building the key; its copies share the entry.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import PlacementState

__all__ = ["SelectMemo", "MemoEntry", "MemoState"]

_packbits = np.packbits


class MemoEntry:
    """One state's results (``by_size``: job size -> placement or None) and ``view``."""

    __slots__ = ("by_size", "view")

    def __init__(self) -> None:
        self.by_size: dict[int, Any] = {}
        self.view: Any = None


class SelectMemo:
    """States by the bytes of their masks, in two generations of at most ``limit`` each: when
    the newer fills up it becomes the older and the older is dropped, and an entry found in
    the older moves to the newer. So the states in use stay and memory stays bounded (the
    memo changes only the cost, never a result, so what it forgets does not matter)."""

    __slots__ = ("entries", "older", "limit")

    def __init__(self, limit: int = 2048):
        self.entries: dict[bytes, MemoEntry] = {}
        self.older: dict[bytes, MemoEntry] = {}
        self.limit = limit

    def clear(self) -> None:
        """Forget every state."""
        self.entries.clear()
        self.older.clear()

    def entry(self, *masks: np.ndarray) -> MemoEntry:
        """The entry of the state whose boolean ``masks`` are given (created if new). The
        masks of one allocator have fixed shapes, so their packed bytes, joined, name the
        state."""
        key = b"".join([_packbits(m).tobytes() for m in masks])
        e = self.entries.get(key)
        if e is None:
            e = self.older.pop(key, None)
            if e is None:
                e = MemoEntry()
            if len(self.entries) >= self.limit:
                self.older = self.entries
                self.entries = {}
            self.entries[key] = e
        return e


class MemoState(PlacementState):
    """A placement state that remembers its memo entry (``memo_entry``, None when unknown)
    until it changes. Its masks must change only through ``mark_busy``, ``mark_free`` and
    the allocator's ``commit``, ``release`` and ``block`` (which call :meth:`forget`)."""

    __slots__ = ("memo_entry",)

    def __init__(self, n_nodes: int):
        super().__init__(n_nodes)
        self.memo_entry: MemoEntry | None = None

    def copy(self) -> "MemoState":
        c = super().copy()
        c.memo_entry = self.memo_entry  # the same content, so the same answers
        return c  # type: ignore[return-value]

    def forget(self) -> None:
        """Drop the entry: the state has changed."""
        self.memo_entry = None

    def mark_busy(self, job_id: int, nodes: np.ndarray) -> None:
        self.memo_entry = None
        super().mark_busy(job_id, nodes)

    def mark_free(self, job_id: int, nodes: np.ndarray) -> None:
        self.memo_entry = None
        super().mark_free(job_id, nodes)
