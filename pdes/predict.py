"""What a run would do in parallel, measured on one rank: the kernel's statistics mode.

A run with ``Simulator(predict_ranks=(2, 4, 8, 16))`` executes sequentially, records the
time of every event and the entity it ran on, and then replays, for each rank count, the
windows that a parallel run has under that count's placement: between two exchanges each
rank runs its events up to the global earliest pending event ``T`` plus the lookahead, or
up to the other ranks' earliest pending event when that is later (see
``Simulator._window_loop``). Which events run in which window is a function of the event
times and owners alone (an event one rank sends another in a window is counted in the
window it is due in, which is why the window ends where the parallel run's does), and the
events and their times do not depend on the number of ranks, so the figures are exactly
those of the parallel run:

* ``windows`` and ``events_per_window_per_rank``: the exchanges, and the mean work a rank
  has between two of them;
* ``remote_fraction``: the events that crossed ranks, over all events executed (events
  sent past the end time are never executed and not counted here, while the parallel run's
  ``RunStats.remote_events`` counts every event it sent across);
* ``events_per_rank`` and ``busiest_rank_share`` (the largest share of all events on one
  rank): the load balance;
* ``speedup_bound``: events / (sum over windows of the busiest rank's events in that
  window): the speedup over one rank if every event cost the same and the exchanges were
  free (the critical path of the windowed schedule). Real speedups are lower by the
  exchange cost per window, which ``events_per_window_per_rank`` lets a user weigh.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .entity import KEY_SHIFT, Entity
from .errors import ConfigError
from .process import Process


@dataclass(frozen=True)
class RankPrediction:
    """The parallel figures of one rank count (see the module)."""

    ranks: int
    windows: int
    events: int
    events_per_window_per_rank: float
    remote_fraction: float
    busiest_rank_share: float
    speedup_bound: float
    events_per_rank: tuple[int, ...] = ()


def check_predict_ranks(value: Any) -> tuple[int, ...]:
    """``predict_ranks`` validated: whole numbers >= 1, sorted and without repeats."""
    try:
        ps = tuple(value)
    except TypeError:
        raise ConfigError(f"predict_ranks must be a sequence of rank counts >= 1, got {value!r}") from None
    if not all(isinstance(p, int) and not isinstance(p, bool) and p >= 1 for p in ps):
        raise ConfigError(f"predict_ranks must be whole numbers >= 1, got {value!r}")
    return tuple(sorted(set(ps)))


class WindowProfile:
    """Records, during a sequential run, every event's time and entity (:meth:`count`);
    :meth:`result` replays each rank count's windows over them and gives the
    :class:`RankPrediction` of each count."""

    def __init__(self, ps: Sequence[int], owner_ranks: Sequence[list[int]], lookahead: float, end: float):
        self.ps = tuple(ps)
        # One list per rank count: the rank of every entity id.
        self.owner = list(owner_ranks)
        self.lookahead = lookahead
        self.end = end
        self.remote = [0] * len(self.ps)
        self.times = array("d")
        self.eids = array("q")

    def count(self, e: Any) -> None:
        """Record the event ``e`` (about to run) against its entity."""
        s = getattr(e.fn, "__self__", None)
        if isinstance(s, Entity):
            eid = s.eid
        elif isinstance(s, Process):
            eid = s.entity.eid
        else:
            return  # the kernel's own events (the end-of-run guard)
        self.times.append(e.t)
        self.eids.append(eid)
        sender = e.key >> KEY_SHIFT
        for k, ranks in enumerate(self.owner):
            if 0 <= sender < len(ranks) and ranks[sender] != ranks[eid]:
                self.remote[k] += 1

    def end_window(self) -> None:
        """Nothing to do: the windows of each rank count are replayed in :meth:`result`."""

    def result(self) -> dict[int, RankPrediction]:
        out = {}
        ev = len(self.times)
        times = np.frombuffer(self.times, dtype=np.float64) if ev else np.zeros(0)
        eids = np.frombuffer(self.eids, dtype=np.int64) if ev else np.zeros(0, dtype=np.int64)
        for k, p in enumerate(self.ps):
            rank_of = np.asarray(self.owner[k], dtype=np.int64)[eids]
            # Each rank's event times, in the order they ran (a stable sort keeps it).
            order = np.argsort(rank_of, kind="stable")
            bounds = np.searchsorted(rank_of[order], np.arange(p + 1))
            per_rank = [times[order[bounds[r]:bounds[r + 1]]].tolist() for r in range(p)]
            windows, critical = replay_windows(per_rank, self.lookahead, self.end)
            totals = [len(x) for x in per_rank]
            out[p] = RankPrediction(
                ranks=p, windows=windows, events=ev,
                events_per_window_per_rank=ev / (windows * p) if windows else 0.0,
                remote_fraction=self.remote[k] / ev if ev else 0.0,
                busiest_rank_share=max(totals) / ev if ev else 0.0,
                speedup_bound=ev / critical if critical else 1.0,
                events_per_rank=tuple(totals),
            )
        return out


def least_two(values: Sequence[float]) -> tuple[float, int, float]:
    """(the least value, its first index, the least of the others) of ``values``; (inf, -1,
    inf) when empty. The least of the values other than index ``i`` is then ``m2 if i ==
    i1 else m1``."""
    m1 = m2 = math.inf
    i1 = -1
    for i, t in enumerate(values):
        if t < m1:
            m1, m2, i1 = t, m1, i
        elif t < m2:
            m2 = t
    return m1, i1, m2


def replay_windows(per_rank: Sequence[Sequence[float]], lookahead: float, end: float) -> tuple[int, int]:
    """(windows, sum over windows of the busiest rank's events) of a parallel run whose
    ranks run the events at ``per_rank[r]`` (each in time order): at every exchange each
    rank runs up to ``T + lookahead`` (``T`` the least pending event time), or further, up
    to the least pending event time of the other ranks when that is later (at most
    ``end``), as ``Simulator._window_loop`` does."""
    p = len(per_rank)
    n = [len(x) for x in per_rank]
    ptr = [0] * p
    inf = math.inf
    windows = critical = 0
    while True:
        nxt = [per_rank[r][ptr[r]] if ptr[r] < n[r] else inf for r in range(p)]
        m1, i1, m2 = least_two(nxt)
        if m1 >= end or m1 == inf:
            return windows, critical
        windows += 1
        busiest = 0
        floor = m1 + lookahead
        for r in range(p):
            h = m2 if r == i1 else m1
            if h < floor:
                h = floor
            if h > end:
                h = end
            if nxt[r] < h:
                j = bisect_left(per_rank[r], h, ptr[r])
                if j - ptr[r] > busiest:
                    busiest = j - ptr[r]
                ptr[r] = j
        critical += busiest


def prediction_table(pred: dict[int, RankPrediction]) -> str:
    """The predictions as a text table, one row per rank count."""
    head = f"{'ranks':>5}  {'windows':>9}  {'events/window/rank':>18}  {'remote':>7}  {'busiest rank':>12}  {'speedup bound':>13}"
    rows = [head, "-" * len(head)]
    for p, r in sorted(pred.items()):
        rows.append(f"{p:>5}  {r.windows:>9,}  {r.events_per_window_per_rank:>18.2f}  {r.remote_fraction:>7.1%}  "
                    f"{r.busiest_rank_share:>12.1%}  {r.speedup_bound:>13.2f}")
    return "\n".join(rows)
