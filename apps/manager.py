"""A job manager entity: launches jobs on nodes, collects their reports, kills failed jobs.

:func:`apps.platform.build_platform` adds it to every machine that runs jobs (one app
alone, a scheduled experiment, an interference study); its protocol is documented in
:mod:`apps.node`. The manager lives on one rank (rank 0 by default); its records are
complete there once the run has ended.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from pdes import Entity

from .node import LaunchSpec, NodeReport

__all__ = ["JobManager", "JobRecord"]


@dataclass
class JobRecord:
    """What the manager knows of one job.

    ``status``: "pending" (not launched yet), "running", "ok", "failed" (a rank raised) or
    "killed" (by :meth:`JobManager.kill_job`). ``start`` is when the ranks started (the
    launch's arrival), ``end`` when the last rank finished (or when the failure happened).
    """

    job: int
    app: str
    size: int
    nodes: tuple[int, ...]
    status: str = "pending"
    launch_time: float = math.nan
    start: float = math.nan
    end: float = math.nan
    error: str = ""
    failed_rank: int = -1
    fail_time: float = math.nan
    traceback: str = ""
    reports: int = 0
    expected: int = 0
    bytes_sent: float = 0.0
    messages: int = 0
    node_reports: list[NodeReport] = field(default_factory=list)

    @property
    def runtime(self) -> float:
        """Last rank end minus first rank start (NaN while unfinished)."""
        return self.end - self.start

    @property
    def finished(self) -> bool:
        return self.status in ("ok", "failed", "killed")


class JobManager(Entity):
    """Launches jobs and records their ends (entity type ``"job_manager"``).

    Args:
        node_offset: the entity id of node 0 (``Network.node_offset``); node n is
            ``node_offset + n``.
        on_end: optional callback ``f(record)`` called in the event where a job ends.
        keep_reports: keep every node's report in the record (costs memory for big jobs).
    """

    def __init__(self, node_offset: int, on_end: Callable[[JobRecord], Any] | None = None, keep_reports: bool = False):
        self.node_offset = node_offset
        self.on_end = on_end
        self.keep_reports = keep_reports
        self.records: dict[int, JobRecord] = {}
        self._targets: dict[int, tuple[int, ...]] = {}

    def launch_at(self, delay: float, spec: LaunchSpec) -> JobRecord:
        """Launch ``spec`` after ``delay`` seconds (call during set-up or inside an event)."""
        if spec.job in self.records:
            raise ValueError(f"job {spec.job} is already known to the manager")
        rec = JobRecord(job=spec.job, app=spec.app, size=spec.size, nodes=spec.nodes)
        self.records[spec.job] = rec
        self.after(delay, self._launch, spec)
        return rec

    def _launch(self, spec: LaunchSpec) -> None:
        rec = self.records[spec.job]
        if rec.status != "pending":
            return
        targets = spec.launch_nodes()
        self._targets[spec.job] = targets
        la = self.sim.lookahead
        off = self.node_offset
        for n in targets:
            self.send(off + n, "launch", spec, la)
        rec.status = "running"
        rec.launch_time = self.sim.now
        rec.start = self.sim.now + la
        rec.expected = len(targets)

    def report(self, rep: NodeReport) -> None:
        """Service: one node's end-of-job report."""
        rec = self.records[rep.job]
        rec.reports += 1
        rec.bytes_sent += rep.bytes_sent
        rec.messages += rep.messages
        if self.keep_reports:
            rec.node_reports.append(rep)
        if rec.finished:
            return
        if rep.status == "failed":
            rec.status = "failed"
            rec.error = rep.error
            rec.failed_rank = rep.failed_rank
            rec.fail_time = rep.fail_time
            rec.traceback = rep.traceback
            rec.end = rep.fail_time
            self._kill_nodes(rep.job)
            self._ended(rec)
            return
        if math.isnan(rec.end) or rep.end > rec.end:
            rec.end = rep.end
        if rep.start < rec.start:
            rec.start = rep.start
        if rec.reports == rec.expected:
            rec.status = "ok"
            self._ended(rec)

    def kill_job(self, job: int) -> None:
        """Kill a running job now (e.g. at its wall-time limit); call inside an event."""
        rec = self.records[job]
        if rec.finished:
            return
        if rec.status == "pending":
            rec.status = "killed"
            self._ended(rec)
            return
        rec.status = "killed"
        rec.end = self.sim.now
        self._kill_nodes(job)
        self._ended(rec)

    def _kill_nodes(self, job: int) -> None:
        la = self.sim.lookahead
        off = self.node_offset
        for n in self._targets.get(job, ()):
            self.send(off + n, "kill", job, la)

    def _ended(self, rec: JobRecord) -> None:
        if self.on_end is not None:
            self.on_end(rec)
