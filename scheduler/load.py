"""Load scaling of a workload: the same jobs arriving faster or slower.

``scale_load(jobs, 1.2)`` divides every inter-arrival time by 1.2 (20 % more offered load
over a correspondingly shorter span): job ``i`` is submitted at ``t0 + (s_i - t0) / f``, ``t0``
being the first submission. Sizes, run times and requests are untouched, so a sweep over
``f`` is a load sweep of one workload (the usual way to vary load in trace-driven studies,
e.g. Feitelson's "Workload Modeling for Computer Systems Performance Evaluation", 2015).
"""

from __future__ import annotations

from typing import Any, Sequence

from pdes.validate import check_float

from .job import Job

__all__ = ["check_load_factor", "scale_load"]


def check_load_factor(factor: Any, flag: str = "load_factor") -> float:
    """A load factor: a finite number > 0 (raises UserError naming ``flag``)."""
    return check_float(f"{flag} (divides the inter-arrival times)", factor, lo=0.0, lo_open=True)


def scale_load(jobs: Sequence[Job], factor: float, *, t0: float | None = None) -> list[Job]:
    """Fresh copies of ``jobs`` with inter-arrival times divided by ``factor`` (see the module
    docstring); ``factor == 1`` gives plain fresh copies. ``t0`` (default: the first
    submission of ``jobs``) is the instant that stays put."""
    factor = check_load_factor(factor)
    out = [j.fresh() for j in jobs]
    if factor == 1.0 or not out:
        return out
    if t0 is None:
        t0 = min(j.submit_time for j in out)
    for j in out:
        j.submit_time = t0 + (j.submit_time - t0) / factor
    return out
