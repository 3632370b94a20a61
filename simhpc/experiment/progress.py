"""What the progress bar of ``simhpc run`` shows: pure functions of the run's counters.

The estimate of the wall time left comes from the jobs that have ended: the run's average
wall time per ended job so far, times the jobs still to end. It needs no estimate of the
simulated end time, so it stays defined after the last submission, while the last jobs
run, and when every job has ended; before the first job ends it is the explicit label
``ETA: after the first job ends``, never a blank or ``?``.
"""

from __future__ import annotations

import math

__all__ = ["BAR_FORMAT", "eta_text", "progress_postfix"]

#: tqdm's bar without its own estimate (a smoothed rate, unknown when no job ended lately):
#: ours is in the postfix.
BAR_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"

#: The label shown before any job has ended.
NO_ETA = "ETA: after the first job ends"


def _clock(seconds: float) -> str:
    s = int(math.ceil(max(seconds, 0.0)))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def eta_text(*, done: int, total: int, wall: float) -> str:
    """``ETA h:mm:ss`` of the wall time left, from ``done`` of ``total`` jobs ended in
    ``wall`` seconds (``ETA 00:00`` once every job has ended; :data:`NO_ETA` before)."""
    if done >= total:
        return "ETA 00:00"
    if done <= 0 or not (wall > 0 and math.isfinite(wall)):
        return NO_ETA
    return f"ETA {_clock(wall * (total - done) / done)}"


def progress_postfix(*, now: str, done: int, total: int, wall: float, events: int) -> str:
    """The text after the bar: simulated time ``now`` (already formatted), events per wall
    second and the estimate of :func:`eta_text`."""
    rate = events / wall if wall > 0 else 0.0
    return f"t={now} events/s={rate:,.0f} {eta_text(done=done, total=total, wall=wall)}"
