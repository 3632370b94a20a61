"""Contiguity allocators over a node ordering (Albing, Stoltzfus et al. on the Cray XE6).

All work on ``fp``, the increasing positions of the free nodes in the ordering. A *window*
is ``n`` consecutive entries ``fp[i:i+n]``; its *span* is ``fp[i+n-1] - fp[i] + 1``, its
*skipped* count ``span - n`` (busy nodes inside it) and its *largest gap* the largest
``fp[j+1] - fp[j]`` inside it (1 for a contiguous run).

=================  ===========================================================================
name               nodes chosen
=================  ===========================================================================
firstfit           the first window with at most ``gap`` skipped nodes; if none, divide and
                   conquer: the job is halved and each half placed the same way (recursively,
                   down to single nodes) unless ``fallback=False``
bestfit            the first ``n`` nodes of the smallest free run that holds the job; else the
                   largest runs first
largestfit         the first ``n`` nodes of the largest free run (with ``gap``: runs joined
                   across at most ``gap`` busy nodes); else whole runs, largest first, the
                   last one partly
closestfit         the window minimising the largest gap (ties: smallest span, then first);
                   this is the set of ``n`` free nodes with the smallest largest ordinal gap
closestfit-mind    among candidate windows, the one of smallest MIND (exact mean pairwise
                   hops on the topology); slow, for comparison
=================  ===========================================================================

Runs and windows are found with vectorized numpy passes (O(free nodes) each; the sliding
maximum of closest fit is van Herk / Gil-Werman). ``closestfit-mind`` evaluates the MIND
of up to ``max_windows`` candidates (the best by closest fit's own criterion when there are
more), each in O(n) with the topology's closed form: O(max_windows * n) per select.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..job import Job
from .base import check_bool_option, check_int_option
from .interface import AllocState
from .oblivious import OrderedAllocator
from .registry import register_allocator

__all__ = [
    "FirstFitAllocator",
    "BestFitAllocator",
    "LargestFitAllocator",
    "ClosestFitAllocator",
    "ClosestFitMindAllocator",
    "free_runs",
    "sliding_max",
    "closest_windows",
]


def free_runs(fp: np.ndarray, gap: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(start index into ``fp``, length) of each run of consecutive positions; with ``gap``,
    positions at most ``gap`` busy nodes apart belong to one run (its length counts free nodes)."""
    if len(fp) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    brk = np.flatnonzero(np.diff(fp) > gap + 1) + 1
    starts = np.concatenate(([0], brk))
    ends = np.concatenate((brk, [len(fp)]))
    return starts, ends - starts


def sliding_max(a: np.ndarray, w: int) -> np.ndarray:
    """``out[i] = max(a[i:i+w])`` for ``i`` in ``0..len(a)-w`` (van Herk / Gil-Werman)."""
    n = len(a)
    if w <= 1:
        return a.copy()
    m = -(-n // w) * w
    pad = np.full(m, a.min() if n else 0, dtype=a.dtype)
    pad[:n] = a
    blocks = pad.reshape(-1, w)
    pre = np.maximum.accumulate(blocks, axis=1).reshape(-1)
    suf = np.maximum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1].reshape(-1)
    i = np.arange(n - w + 1)
    return np.maximum(suf[i], pre[i + w - 1])


def closest_windows(fp: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(largest gap, span) of every window of ``n`` entries of ``fp``."""
    span = fp[n - 1:] - fp[: len(fp) - n + 1] + 1
    if n == 1:
        return np.ones(len(fp), dtype=np.int64), span
    return sliding_max(np.diff(fp), n - 1), span


def _runs_largest_first(fp: np.ndarray, n: int, gap: int = 0) -> np.ndarray:
    """Indices into ``fp``: whole runs (joined across at most ``gap`` busy nodes) in
    decreasing length (ties: first), the last partly."""
    starts, lens = free_runs(fp, gap)
    order = np.lexsort((starts, -lens))
    lens_o = lens[order]
    cum = np.cumsum(lens_o)
    m = int(np.searchsorted(cum, n)) + 1  # runs used
    take = lens_o[:m].copy()
    take[-1] -= int(cum[m - 1]) - n
    st = starts[order[:m]]
    idx = np.repeat(st - np.concatenate(([0], np.cumsum(take)[:-1])), take) + np.arange(n)
    return idx


@register_allocator
class FirstFitAllocator(OrderedAllocator):
    """First fit with a gap tolerance and a divide-and-conquer fallback (module docstring).

    Options: ``gap`` (busy nodes tolerated inside the window, default 0: contiguous) and
    ``fallback`` (default True; without it a job with no window does not fit, and the
    allocator is no longer ``count_only``). The fallback places the job's pieces level by
    level: at each level the pieces of one size are placed first-fit, left to right on
    disjoint windows, and the pieces that found none are halved for the next level.
    """

    name = "firstfit"
    count_only = True
    OPTIONS = OrderedAllocator.OPTIONS + ("gap", "fallback")

    def __init__(self, *, gap: int = 0, fallback: bool = True, **kw: Any):
        super().__init__(**kw)
        self.gap = check_int_option(self.name, "gap", gap, 0, self.n_nodes)
        self.fallback = check_bool_option(self.name, "fallback", fallback)
        self.count_only = self.fallback

    def _valid_starts(self, fp: np.ndarray, s: int) -> np.ndarray:
        if s > len(fp):
            return np.zeros(0, dtype=np.int64)
        skipped = fp[s - 1:] - fp[: len(fp) - s + 1] - (s - 1)
        return np.flatnonzero(skipped <= self.gap)

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        fp = self.free_positions(state)
        v = self._valid_starts(fp, k)
        if len(v):
            i = int(v[0])
            return self.nodes_at(fp[i:i + k])
        if not self.fallback:
            return None
        return self.nodes_at(self._divide(fp, k))

    def _divide(self, fp: np.ndarray, k: int) -> np.ndarray:
        chosen: list[np.ndarray] = []
        pending: dict[int, int] = {}  # piece size -> count
        for s in (-(-k // 2), k // 2):
            if s:
                pending[s] = pending.get(s, 0) + 1
        avail = fp
        while pending:
            nxt: dict[int, int] = {}
            for s in sorted(pending, reverse=True):
                cnt = pending[s]
                if s == 1:
                    # Every free node is a window of one: the first ones, at once.
                    chosen.append(avail[:cnt])
                    avail = avail[cnt:]
                    continue
                v = self._valid_starts(avail, s)
                used = np.zeros(len(avail), dtype=bool)
                placed = 0
                cur = 0
                while placed < cnt and len(v):
                    j = int(np.searchsorted(v, cur))
                    if j >= len(v):
                        break
                    i = int(v[j])
                    used[i:i + s] = True
                    placed += 1
                    cur = i + s
                if placed:
                    chosen.append(avail[used])
                    avail = avail[~used]
                left = cnt - placed
                if left:
                    for h in (-(-s // 2), s // 2):
                        nxt[h] = nxt.get(h, 0) + left
            pending = nxt
        return np.concatenate(chosen)


@register_allocator
class BestFitAllocator(OrderedAllocator):
    """Best fit: the first ``n`` nodes of the smallest free run holding the job (ties:
    first); when no run holds it, whole runs largest first (fewest pieces)."""

    name = "bestfit"
    count_only = True

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        fp = self.free_positions(state)
        starts, lens = free_runs(fp)
        ok = np.flatnonzero(lens >= k)
        if len(ok):
            r = ok[np.argmin(lens[ok])]
            i = int(starts[r])
            return self.nodes_at(fp[i:i + k])
        return self.nodes_at(fp[_runs_largest_first(fp, k)])


@register_allocator
class LargestFitAllocator(OrderedAllocator):
    """Largest fit: the first ``n`` nodes of the largest free run (ties: first); when no run
    holds the job, whole runs largest first, the last one partly.

    Option ``gap`` (default 0): free nodes at most ``gap`` busy nodes apart count as one run
    (its size is its free nodes), as first fit's ``gap`` tolerates busy nodes in a window.
    """

    name = "largestfit"
    count_only = True
    OPTIONS = OrderedAllocator.OPTIONS + ("gap",)

    def __init__(self, *, gap: int = 0, **kw: Any):
        super().__init__(**kw)
        self.gap = check_int_option(self.name, "gap", gap, 0, self.n_nodes)

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        fp = self.free_positions(state)
        return self.nodes_at(fp[_runs_largest_first(fp, k, self.gap)])


@register_allocator
class ClosestFitAllocator(OrderedAllocator):
    """Closest fit: the ``n`` free nodes with the smallest largest ordinal gap between
    consecutive chosen nodes (ties: the smallest span, then the first). The optimum is
    always a window of consecutive free nodes, so only windows are searched."""

    name = "closestfit"
    count_only = True

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        fp = self.free_positions(state)
        g, span = closest_windows(fp, k)
        best = g.min()
        cand = np.flatnonzero(g == best)
        i = int(cand[np.argmin(span[cand])])
        return self.nodes_at(fp[i:i + k])


@register_allocator
class ClosestFitMindAllocator(OrderedAllocator):
    """Closest fit by MIND: of the candidate windows, the one whose nodes have the smallest
    mean pairwise hop distance on the topology (ties: closest fit's order).

    Exact over the candidates, slow by design: candidates are all windows when there are at
    most ``max_windows`` (default 64), else the ``max_windows`` best by (largest gap, span,
    position). Needs a topology.
    """

    name = "closestfit-mind"
    count_only = True
    OPTIONS = OrderedAllocator.OPTIONS + ("max_windows",)
    FAMILIES = ("fattree", "torus", "dragonfly")

    def __init__(self, *, max_windows: int = 64, **kw: Any):
        super().__init__(**kw)
        self.max_windows = check_int_option(self.name, "max_windows", max_windows, 1)

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        k = job.nodes
        if k > state.n_free:
            return None
        fp = self.free_positions(state)
        if k == 1:
            return self.nodes_at(fp[:1])
        g, span = closest_windows(fp, k)
        W = len(g)
        if W > self.max_windows:
            cand = np.lexsort((np.arange(W), span, g))[: self.max_windows]
        else:
            cand = np.lexsort((np.arange(W), span, g))
        topo = self.topology
        best_i, best_s = -1, None
        for i in cand.tolist():
            s = topo.pair_hop_sum(self.order[fp[i:i + k]])
            if best_s is None or s < best_s:
                best_i, best_s = i, s
        return self.nodes_at(fp[best_i:best_i + k])
