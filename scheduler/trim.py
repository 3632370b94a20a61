"""Steady-state measurement: which jobs of a run are measured (warm-up / cool-down trim).

A run's first jobs meet an empty machine and its last ones a draining queue; steady-state
figures leave them out of the measurement while still simulating them (they occupy the
machine all the same). :class:`Trim` names the measured jobs:

* ``skip_first`` / ``skip_last``: leave out the first / last so many jobs in submission order
  (every job of the workload counts, rejected ones included);
* ``window = (start, end)``: keep only the jobs submitted in ``[start, end)`` (simulated
  seconds, after any load scaling; ``end`` may be ``inf``).

Both may be combined (a job must pass both). :func:`scheduler.metrics.system_metrics` takes the
mask (``measure=``) and says which figures it restricts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pdes.validate import check_float, check_int
from models.units import parse_time

from .errors import UserError

__all__ = ["Trim", "parse_window"]


def parse_window(text: Any, flag: str = "--window") -> tuple[float, float]:
    """``"START:END"`` (times with units, e.g. ``"2d:30d"``; an empty END is open) or a pair
    of numbers -> ``(start, end)`` in seconds."""
    if isinstance(text, str):
        a, sep, b = text.partition(":")
        if not sep or not a.strip():
            raise UserError(f"{flag} {text!r}: write START:END (submit times, e.g. {flag} 2d:30d or {flag} 86400:)")
        start = parse_time(a, what=f"{flag} start")
        end = parse_time(b, what=f"{flag} end") if b.strip() else math.inf
        return start, end
    if isinstance(text, (tuple, list)) and len(text) == 2:
        return (check_float(f"{flag} start", text[0]), check_float(f"{flag} end", text[1], finite=False))
    raise UserError(f"{flag} must be START:END or a pair (start, end) of seconds, got {text!r}")


@dataclass(frozen=True, kw_only=True)
class Trim:
    """Which jobs are measured (see the module docstring)."""

    skip_first: int = 0
    skip_last: int = 0
    window: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "skip_first", check_int("skip_first (--skip-first)", self.skip_first, lo=0))
        object.__setattr__(self, "skip_last", check_int("skip_last (--skip-last)", self.skip_last, lo=0))
        if self.window is not None:
            a, b = parse_window(self.window, "window (--window)")
            if not (a >= 0 and b > a):
                raise UserError(f"window (--window) must have 0 <= start < end, got start {a!r}, end {b!r}")
            object.__setattr__(self, "window", (a, b))

    @property
    def active(self) -> bool:
        """Whether any job is left out."""
        return bool(self.skip_first or self.skip_last or self.window is not None)

    def describe(self) -> str:
        """The trim as command-line options ('' when inactive)."""
        parts = []
        if self.skip_first:
            parts.append(f"--skip-first {self.skip_first}")
        if self.skip_last:
            parts.append(f"--skip-last {self.skip_last}")
        if self.window is not None:
            a, b = self.window
            parts.append(f"--window {a:g}:{'' if math.isinf(b) else format(b, 'g')}")
        return " ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """The trim as plain data for a results file (window bounds; end ``inf`` when open)."""
        a, b = self.window if self.window is not None else (0.0, math.inf)
        return {"skip_first": self.skip_first, "skip_last": self.skip_last,
                "window_start": a, "window_end": b}

    def mask(self, submit: np.ndarray) -> np.ndarray:
        """The measured jobs among jobs with these submit times (any order).

        Raises :class:`UserError` when the trim leaves no job.
        """
        submit = np.asarray(submit, dtype=float)
        n = len(submit)
        order = np.argsort(submit, kind="stable")
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        keep = (pos >= self.skip_first) & (pos < n - self.skip_last)
        if self.window is not None:
            a, b = self.window
            keep &= (submit >= a) & (submit < b)
        if not keep.any():
            extra = ""
            if n and self.window is not None:
                extra = f" (submit times run from {float(submit.min()):g} to {float(submit.max()):g} s)"
            raise UserError(f"the trim {self.describe()} leaves no job of the {n} to measure{extra}; "
                            "skip fewer jobs or widen the window")
        return keep
