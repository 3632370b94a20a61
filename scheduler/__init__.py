"""scheduler layer of simhpc: jobs, SWF traces, synthetic workloads, queue orderings,
backfilling, node allocators, the job lifecycle, scheduling metrics and the replay engine.

The main names are available from the package itself (imported on first use, so that the
command line starts fast): ``Job``, ``read_swf``, ``SyntheticWorkload``, ``make_ordering``,
``make_backfill``, ``make_estimate``, ``make_allocator``, ``SchedulerEntity``, ``simulate``, ``replay``, ...
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> submodule that defines it
_EXPORTS = {
    "UserError": "errors",
    "SwfError": "errors",
    "SchedulerError": "errors",
    "Job": "job",
    "JobStatus": "job",
    "nodes_for": "job",
    "SWF_FIELDS": "swf",
    "SwfTrace": "swf",
    "read_swf": "swf",
    "write_swf": "swf",
    "SyntheticWorkload": "workload",
    "AppSpec": "workload",
    "assign_apps": "workload",
    "insert_foreground": "workload",
    "OrderingPolicy": "ordering",
    "ORDERINGS": "ordering",
    "QueueSpec": "ordering",
    "make_ordering": "ordering",
    "BackfillPolicy": "backfill",
    "BACKFILLS": "backfill",
    "make_backfill": "backfill",
    "EstimateModel": "estimates",
    "ESTIMATES": "estimates",
    "make_estimate": "estimates",
    "AllocState": "allocators",
    "Allocator": "allocators",
    "ALLOCATORS": "allocators",
    "make_allocator": "allocators",
    "register_allocator": "allocators",
    "JobRunner": "lifecycle",
    "TimekeeperRunner": "lifecycle",
    "SchedulerEntity": "lifecycle",
    "ScheduleResult": "lifecycle",
    "simulate": "lifecycle",
    "JobTable": "metrics",
    "SystemMetrics": "metrics",
    "job_table": "metrics",
    "system_metrics": "metrics",
    "capacity_violations": "metrics",
    "Machine": "replay_engine",
    "ReplayResult": "replay_engine",
    "replay": "replay_engine",
}

__all__ = [*_EXPORTS]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'scheduler' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
