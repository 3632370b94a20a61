"""The timekeeper: a job that just runs for a given time (trace replay)."""

from __future__ import annotations

from ..registry import JobContext, app
from ._args import seconds


def _check(size: int, *, runtime: float | str) -> None:
    seconds(runtime, "runtime")


@app("timekeeper", per_rank=False, validate=_check)
def timekeeper(job: JobContext, *, runtime: float | str) -> float:
    """Occupy the job's nodes for ``runtime`` seconds ('2h' accepted); no messages.

    A job-level app: one timer on the node of rank 0, O(1) events per job whatever its size.
    """
    return seconds(runtime, "runtime")
