"""Jobs: what a workload asks for, and what the simulation did with it.

A :class:`Job` carries the request (size, submit time, requested walltime, the application
to run and its arguments, queue and scheduler hints, user and group) and, once simulated,
the outcome (start and end time, final status, kill reason, the nodes it ran on).

Node counts: a job asks for ``job_size`` processes; on a machine with ``cores_per_node``
cores it needs ``ceil(job_size / cores_per_node)`` nodes (:func:`nodes_for`). Replays of
SWF traces default to one process per node, so an SWF processor count is a node count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import UserError

__all__ = ["Job", "JobStatus", "nodes_for", "fresh_copies"]


class JobStatus:
    """The states a job goes through (plain strings, so tables and files stay readable)."""

    PENDING = "pending"      # not submitted yet
    QUEUED = "queued"        # submitted, waiting
    RUNNING = "running"
    COMPLETED = "completed"  # ended by itself
    KILLED = "killed"        # ended by the scheduler (see Job.kill_reason)
    FAILED = "failed"        # ended by its application with an error
    REJECTED = "rejected"    # never ran: it can never fit the machine

    ENDED = frozenset({COMPLETED, KILLED, FAILED})
    ALL = (PENDING, QUEUED, RUNNING, COMPLETED, KILLED, FAILED, REJECTED)


def nodes_for(job_size: int, cores_per_node: int) -> int:
    """Nodes needed by ``job_size`` processes at ``cores_per_node`` processes per node."""
    if cores_per_node < 1:
        raise UserError(f"cores_per_node must be >= 1, got {cores_per_node!r}")
    return -(-int(job_size) // int(cores_per_node))


@dataclass(slots=True, eq=False)
class Job:
    """One job of a workload.

    Request fields (given): ``job_id`` (unique in a workload), ``job_size`` (processes),
    ``nodes`` (node count; defaults to ``job_size``, i.e. one process per node),
    ``submit_time``, ``request_time`` (requested walltime, the scheduler's estimate) and
    ``run_time`` (how long the timekeeper app runs; applications that simulate their own
    work ignore it), all in seconds; ``app_name`` and ``app_args`` (the application and its
    keyword arguments), ``queue_name``, ``sched_args`` (hints for policies), ``user``,
    ``group`` and ``foreground`` (a job under study placed among background jobs);
    ``partition``, ``preceding_job`` and ``think_time`` are SWF fields 16-18 (partition
    number, the job this one waited for and the think time after it; -1 when unknown).

    Outcome fields (filled by the simulation): ``start_time``, ``end_time``, ``status``
    (see :class:`JobStatus`), ``kill_reason`` (e.g. ``"walltime"``), ``assigned_nodes``
    (sorted node ids), ``reservation_time`` (the first start time a reservation promised,
    when the backfill policy made one), ``estimate`` (the run time the scheduler planned
    with, set at submission by the run's estimate model, see :mod:`scheduler.estimates`)
    and ``seq`` (arrival rank, the FCFS tie-break).
    """

    job_id: int
    job_size: int
    submit_time: float
    request_time: float
    run_time: float
    nodes: int = 0
    app_name: str = "timekeeper"
    app_args: dict[str, Any] = field(default_factory=dict)
    queue_name: str = ""
    sched_args: dict[str, Any] = field(default_factory=dict)
    user: int = -1
    group: int = -1
    foreground: bool = False
    partition: int = -1
    preceding_job: int = -1
    think_time: float = -1.0
    # -- outcome -----------------------------------------------------------------------------
    start_time: float | None = None
    end_time: float | None = None
    status: str = JobStatus.PENDING
    kill_reason: str = ""
    assigned_nodes: np.ndarray | None = None
    reservation_time: float | None = None
    estimate: float | None = None
    seq: int = -1

    def __post_init__(self) -> None:
        self._validate()

    @classmethod
    def build(cls, *, job_id: int, job_size: int, submit_time: float, request_time: float, run_time: float,
              nodes: int = 0, app_name: str = "timekeeper", app_args: dict[str, Any] | None = None,
              queue_name: str = "", sched_args: dict[str, Any] | None = None, user: int = -1, group: int = -1,
              foreground: bool = False, partition: int = -1, preceding_job: int = -1,
              think_time: float = -1.0, validate: bool = True) -> "Job":
        """A job with its request fields given and its outcome fields reset: the one place a
        :class:`Job` is put together (:meth:`fresh`, the SWF reader and the synthetic
        workloads use it; the constructor runs the same checks, :meth:`_validate`).

        ``nodes`` of 0 means one process per node (``job_size``); ``app_args`` and
        ``sched_args`` default to new empty dicts and are otherwise kept as given (shared).
        ``validate=False`` skips the checks, for values the caller has already checked as
        a whole (a trace of 77k jobs filtered with numpy, or a copy of a valid job).
        """
        j = cls.__new__(cls)
        j.job_id = job_id
        j.job_size = job_size
        j.submit_time = submit_time
        j.request_time = request_time
        j.run_time = run_time
        j.nodes = nodes or job_size
        j.app_name = app_name
        j.app_args = {} if app_args is None else app_args
        j.queue_name = queue_name
        j.sched_args = {} if sched_args is None else sched_args
        j.user = user
        j.group = group
        j.foreground = foreground
        j.partition = partition
        j.preceding_job = preceding_job
        j.think_time = think_time
        j.start_time = None
        j.end_time = None
        j.status = JobStatus.PENDING
        j.kill_reason = ""
        j.assigned_nodes = None
        j.reservation_time = None
        j.estimate = None
        j.seq = -1
        if validate:
            j._validate()
        return j

    def _validate(self) -> None:
        """Check the request fields and bring them to plain int/float (raises UserError)."""
        jid = self.job_id
        if isinstance(jid, bool) or not isinstance(jid, (int, np.integer)):
            raise UserError(f"job_id must be an int, got {jid!r}")
        self.job_id = int(jid)
        if isinstance(self.job_size, bool) or not isinstance(self.job_size, (int, np.integer)) or self.job_size < 1:
            raise UserError(f"job {jid}: job_size must be an int >= 1 (processes), got {self.job_size!r}")
        self.job_size = int(self.job_size)
        if not self.nodes:
            self.nodes = self.job_size
        if isinstance(self.nodes, bool) or not isinstance(self.nodes, (int, np.integer)) or self.nodes < 1:
            raise UserError(f"job {jid}: nodes must be an int >= 1, got {self.nodes!r}")
        self.nodes = int(self.nodes)
        for name in ("submit_time", "request_time", "run_time"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not (0.0 <= v < math.inf):
                raise UserError(f"job {jid}: {name} must be a finite number of seconds >= 0, got {v!r}")
            setattr(self, name, float(v))
        if not isinstance(self.app_name, str) or not self.app_name:
            raise UserError(f"job {jid}: app_name must be a non-empty string, got {self.app_name!r}")

    # -- derived -----------------------------------------------------------------------------
    @property
    def wait_time(self) -> float | None:
        """Seconds from submission to start (None until it started)."""
        return None if self.start_time is None else self.start_time - self.submit_time

    @property
    def overruns(self) -> bool:
        """True when the trace run time exceeds the requested walltime."""
        return self.run_time > self.request_time

    def fresh(self) -> "Job":
        """A copy with the request fields only (outcome reset), ready for another run.

        ``app_args`` and ``sched_args`` are shared with the original (they are read, never
        written, by the simulation).
        """
        return Job.build(job_id=self.job_id, job_size=self.job_size, submit_time=self.submit_time,
                         request_time=self.request_time, run_time=self.run_time, nodes=self.nodes,
                         app_name=self.app_name, app_args=self.app_args, queue_name=self.queue_name,
                         sched_args=self.sched_args, user=self.user, group=self.group,
                         foreground=self.foreground, partition=self.partition,
                         preceding_job=self.preceding_job, think_time=self.think_time, validate=False)


def fresh_copies(jobs: "list[Job] | tuple[Job, ...]") -> list[Job]:
    """Fresh copies (see :meth:`Job.fresh`) of ``jobs``, in the same order."""
    return [j.fresh() for j in jobs]
