"""The timekeeper: a job that just runs for a given time (trace replay)."""

from __future__ import annotations

from ..registry import JobContext, app
from ._args import seconds


@app("timekeeper", per_rank=False, checks={"runtime": seconds})
def timekeeper(job: JobContext, *, runtime: float | str) -> float:
    """Occupy the job's nodes for ``runtime`` seconds ('2h' accepted); no messages.

    A job-level app: one timer on the node of rank 0, O(1) events per job whatever its size.
    """
    return seconds(runtime, "runtime")
