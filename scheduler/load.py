"""Load scaling of a workload: the same jobs arriving faster or slower.

``scale_load(jobs, 1.2)`` divides every inter-arrival time by 1.2 (20 % more offered load
over a correspondingly shorter span): job ``i`` is submitted at ``t0 + (s_i - t0) / f``, ``t0``
being the first submission. Sizes, run times and requests are untouched, so a sweep over
``f`` is a load sweep of one workload (the usual way to vary load in trace-driven studies,
e.g. Feitelson's "Workload Modeling for Computer Systems Performance Evaluation", 2015).
"""

from __future__ import annotations

from typing import Any, Sequence

from pdes.validate import check_float, check_int

from .errors import UserError
from .job import Job

__all__ = ["check_load_factor", "scale_load", "tile_workload"]


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


def tile_workload(jobs: Sequence[Job], n_jobs: int) -> list[Job]:
    """Fresh copies of ``jobs`` repeated end to end until there are ``n_jobs`` (a workload of
    another size with the same mix, e.g. a stand-in for a longer log).

    Repetition ``r`` (from 0) is submitted ``r * (span + gap)`` later, ``span`` being the time
    from the first to the last submission and ``gap`` the mean inter-arrival time, so the
    seam between two repetitions looks like any other arrival; job ids are shifted by ``r``
    times (the largest id + 1), and so are the preceding-job ids (SWF field 17) that are set.
    The last repetition is cut at ``n_jobs``. Jobs are taken in submission order.
    """
    n_jobs = check_int("n_jobs (the size of the tiled workload)", n_jobs, lo=1)
    if not jobs:
        raise UserError("tile_workload: the workload is empty; there is nothing to repeat")
    base = sorted(jobs, key=lambda j: j.submit_time)
    first, last = base[0].submit_time, base[-1].submit_time
    span = last - first
    period = span + span / (len(base) - 1) if len(base) > 1 else 1.0
    if period <= 0:
        period = 1.0  # every job at one instant: one second apart
    stride = max(j.job_id for j in base) + 1
    out: list[Job] = []
    r = 0
    while len(out) < n_jobs:
        shift = r * period
        for j in base[: n_jobs - len(out)]:
            c = j.fresh()
            if r:
                c.submit_time = j.submit_time + shift
                c.job_id = j.job_id + r * stride
                if c.preceding_job >= 0:
                    c.preceding_job = j.preceding_job + r * stride
            out.append(c)
        r += 1
    return out
