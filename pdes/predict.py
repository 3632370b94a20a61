"""What a run would do in parallel, measured on one rank: the kernel's statistics mode.

A run with ``Simulator(predict_ranks=(2, 4, 8, 16))`` executes sequentially in the windows
that a parallel run has (``[T, T + lookahead)`` with ``T`` the global minimum next-event
time: the same windows for any number of ranks), and attributes every event to the rank
that would own its entity under each rank count's placement. Because results and windows
do not depend on the number of ranks, the figures are exactly those of the parallel run:

* ``events_per_window_per_rank``: the mean work a rank has between two exchanges;
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

from dataclasses import dataclass
from typing import Any, Sequence

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
    """Counts, during a sequential windowed run, each event against its owner's rank for
    every predicted rank count; :meth:`end_window` closes a window, :meth:`result` gives
    the :class:`RankPrediction` of each rank count."""

    def __init__(self, ps: Sequence[int], owner_ranks: Sequence[list[int]]):
        self.ps = tuple(ps)
        # One list per rank count: the rank of every entity id.
        self.owner = list(owner_ranks)
        self.counts = [[0] * p for p in self.ps]
        self.totals = [[0] * p for p in self.ps]
        self.critical = [0] * len(self.ps)
        self.remote = [0] * len(self.ps)
        self.windows = 0
        self.events = 0

    def count(self, e: Any) -> None:
        """Attribute the event ``e`` (about to run) to its entity's rank."""
        s = getattr(e.fn, "__self__", None)
        if isinstance(s, Entity):
            eid = s.eid
        elif isinstance(s, Process):
            eid = s.entity.eid
        else:
            return  # the kernel's own events (the end-of-run guard)
        self.events += 1
        sender = e.key >> KEY_SHIFT
        for k, ranks in enumerate(self.owner):
            r = ranks[eid]
            self.counts[k][r] += 1
            if 0 <= sender < len(ranks) and ranks[sender] != r:
                self.remote[k] += 1

    def end_window(self) -> None:
        self.windows += 1
        for k, c in enumerate(self.counts):
            self.critical[k] += max(c)
            t = self.totals[k]
            for r, n in enumerate(c):
                if n:
                    t[r] += n
                    c[r] = 0

    def result(self) -> dict[int, RankPrediction]:
        out = {}
        ev = self.events
        for k, p in enumerate(self.ps):
            out[p] = RankPrediction(
                ranks=p, windows=self.windows, events=ev,
                events_per_window_per_rank=ev / (self.windows * p) if self.windows else 0.0,
                remote_fraction=self.remote[k] / ev if ev else 0.0,
                busiest_rank_share=max(self.totals[k]) / ev if ev else 0.0,
                speedup_bound=ev / self.critical[k] if self.critical[k] else 1.0,
                events_per_rank=tuple(self.totals[k]),
            )
        return out


def prediction_table(pred: dict[int, RankPrediction]) -> str:
    """The predictions as a text table, one row per rank count."""
    head = f"{'ranks':>5}  {'windows':>9}  {'events/window/rank':>18}  {'remote':>7}  {'busiest rank':>12}  {'speedup bound':>13}"
    rows = [head, "-" * len(head)]
    for p, r in sorted(pred.items()):
        rows.append(f"{p:>5}  {r.windows:>9,}  {r.events_per_window_per_rank:>18.2f}  {r.remote_fraction:>7.1%}  "
                    f"{r.busiest_rank_share:>12.1%}  {r.speedup_bound:>13.2f}")
    return "\n".join(rows)
