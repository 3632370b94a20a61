"""The job lifecycle on the PDES kernel: the scheduler entity and the job runners.

:class:`SchedulerEntity` (entity type ``"scheduler"``, one instance on rank 0) holds the
queue, the machine's allocation state and the three pluggable parts: an ordering policy
(:mod:`scheduler.ordering`), a reservation/backfill policy (:mod:`scheduler.backfill`) and an
allocator (:mod:`scheduler.allocators`). A submission or a job end wakes it: a timer of its own
at the current instant runs a *scheduling pass* (one timer however many wake-ups precede it;
a plain event rather than a process, which would cost a greenlet switch per pass).

Events
    * Submissions are timer events of the scheduler, scheduled lazily: only the next distinct
      submit time is ever in the event heap, so a 77k-job trace costs no memory in the heap.
      All jobs submitted at the same instant enter the queue in one event.
    * A job is launched through a :class:`JobRunner`; the runner reports its end by calling
      :meth:`SchedulerEntity.job_ended` (a local call inside an event at the end time) or by
      sending the ``job_end`` service. The default :class:`TimekeeperRunner` costs exactly one
      event per job (a timer at ``start + run_time``, or at ``start + request_time`` when the
      job would overrun and overruns are killed).

A job end at time t frees its nodes before any start at t is decided
    The pass is not run inside the event that wakes the scheduler: waking pushes the
    pass's timer at the current time ``t`` with the scheduler's next event key.
    Events are ordered by ``(time, key)`` and an entity's keys grow with every event it
    creates, so every scheduler event at ``t`` that was created before the wake-up
    (submission and end timers are always created earlier, at the previous submission or at
    the job's start) runs first; an entity's key range sits above those of every entity
    added before it, so events at ``t`` of entities added before the scheduler also run
    first. The pass therefore sees every end and submission of the instant, provided the
    scheduler is added *after* the entities that report job ends (``simulate`` adds it last;
    model builders must do the same). A violation is detected, not ignored: an end that
    arrives at ``t`` after a pass already ran at ``t`` raises :class:`SchedulerError`
    (except for a job that also started at ``t``, whose end can only follow that pass, and
    which simply triggers another pass at ``t``).

Estimates and overruns
    Reservations and backfilling plan with *expected* ends, ``start + estimate``,
    recomputed at every pass. A job's estimate is set at submission by the run's estimate
    model (:mod:`scheduler.estimates`; by default the request, ``request_time``); a model
    that corrects estimates (``recent``) gets a timer at each running job's estimate and
    may raise it then, and the backfill policy is told (``estimate_changed``). With ``kill_overrun=True`` (the default) a job still running
    at its requested time is killed then (status ``"killed"``, ``kill_reason="walltime"``),
    so no job outlives its expected end. With ``kill_overrun=False`` a job past its estimate
    is expected to end "at any moment": its expected end becomes the next representable
    time after now (``math.nextafter(now, inf)``). The head job's reservation then counts its
    nodes as the earliest possible release, backfilling may use only nodes beyond what the
    head needs, and the reservation moves later at each pass for as long as the job runs.
"""

from __future__ import annotations

import gc
import math
import time as _time
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Sequence

import numpy as np

from pdes import Entity, RunStats, Simulator

from .allocators import Allocator, make_allocator
from .errors import SchedulerError, UserError
from .estimates import EstimateModel, UserEstimate, make_estimate
from .job import Job, JobStatus, fresh_copies
from .mirror import QueueMirror
from .ordering import OrderingPolicy, QueueColumns, make_ordering

if TYPE_CHECKING:  # pragma: no cover
    from .backfill import BackfillPolicy

__all__ = ["JobRunner", "TimekeeperRunner", "SchedulerEntity", "ScheduleResult", "simulate"]

_RUNNING = JobStatus.RUNNING
_QUEUED = JobStatus.QUEUED
#: The queue length from which its numpy columns are kept (static orderings), and the one
#: below which they are dropped again (between the two, they stay as they are).
MIRROR_ON = 64
MIRROR_OFF = 32


def _seq_of(job: Job) -> int:
    return job.seq


class JobRunner(Protocol):
    """Launches jobs and reports their ends to the scheduler.

    ``start`` must eventually make the scheduler see the job's end: a call of
    ``sched.job_ended(job_id, status, info)`` inside a later event (a timer or a service
    of the scheduler or of an entity added before it), or a ``job_end`` service event with
    data ``(job_id, status, info)``. It must not call ``job_ended`` from inside ``start``
    (that runs within a scheduling pass). ``kill`` ends a running job now (it calls
    ``sched.job_ended(job.job_id, "killed", {"reason": reason})``); the runner must then
    not report that job's end again.

    ``enforces_walltime``: True when the runner itself ends jobs at their requested time
    when ``sched.kill_overrun`` is set; otherwise the scheduler sets a walltime timer per
    job and calls ``kill(sched, job, "walltime")`` when it fires.
    """

    enforces_walltime: bool

    def start(self, sched: "SchedulerEntity", job: Job, nodes: np.ndarray) -> None: ...

    def kill(self, sched: "SchedulerEntity", job: Job, reason: str) -> None: ...


class TimekeeperRunner:
    """Jobs that just occupy their nodes for their trace run time: one event per job."""

    enforces_walltime = True

    def start(self, sched: "SchedulerEntity", job: Job, nodes: np.ndarray) -> None:
        if sched.kill_overrun and job.run_time > job.request_time:
            sched.after(job.request_time, sched.end_timer, (job, JobStatus.KILLED, _WALLTIME))
        else:
            sched.after(job.run_time, sched.end_timer, (job, JobStatus.COMPLETED, None))

    def kill(self, sched: "SchedulerEntity", job: Job, reason: str) -> None:
        # The pending end timer finds the job no longer running and is ignored.
        sched.job_ended(job.job_id, JobStatus.KILLED, {"reason": reason})


_WALLTIME = {"reason": "walltime"}


def _hook(part: Any, base: type, name: str) -> Any:
    """``part``'s method ``name``, or None when it is ``base``'s (a no-op): a call saved per
    job and hook."""
    method = getattr(part, name)
    return None if getattr(method, "__func__", None) is getattr(base, name) else method


def _backfill_base() -> type:
    from .backfill import BackfillPolicy

    return BackfillPolicy


class SchedulerEntity(Entity):
    """The batch scheduler of one machine (see the module docstring).

    Args:
        jobs: the workload; the entity runs these objects (pass fresh copies to keep the
            originals untouched). Job ids must be unique.
        allocator: an :class:`~scheduler.allocators.Allocator` (it gives the machine size).
        ordering: an :class:`~scheduler.ordering.OrderingPolicy`.
        backfill: a :class:`~scheduler.backfill.BackfillPolicy`.
        runner: the :class:`JobRunner` (default :class:`TimekeeperRunner`).
        kill_overrun: kill jobs still running at their requested time.
        record_reservations: keep every reservation made, as ``(time, job_id, start)``
            rows in :attr:`reservation_log` (for tests and studies; costs memory). It does
            not change any decision.
        estimate: the :class:`~scheduler.estimates.EstimateModel` that sets each job's
            estimate at submission (default: the request, ``"user"``).

    Jobs that can never fit the machine are rejected when submitted (status
    ``"rejected"``, listed in :attr:`rejected`).
    """

    def __init__(
        self,
        *,
        jobs: Sequence[Job],
        allocator: Allocator,
        ordering: OrderingPolicy,
        backfill: "BackfillPolicy",
        runner: JobRunner | None = None,
        kill_overrun: bool = True,
        record_reservations: bool = False,
        estimate: EstimateModel | None = None,
    ):
        order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_time, i))
        self.jobs: list[Job] = [jobs[i] for i in order]
        seen: set[int] = set()
        for seq, job in enumerate(self.jobs):
            if job.job_id in seen:
                raise UserError(f"job id {job.job_id} appears more than once in the workload; job ids must be unique")
            seen.add(job.job_id)
            if job.status != JobStatus.PENDING:
                raise UserError(f"job {job.job_id} was already simulated (status {job.status!r}); pass fresh copies (Job.fresh())")
            job.seq = seq
        self.allocator = allocator
        self.n_nodes = allocator.n_nodes
        self.state = allocator.new_state()
        self.ordering = ordering
        self.backfill = backfill
        self.runner: JobRunner = runner if runner is not None else TimekeeperRunner()
        self.kill_overrun = bool(kill_overrun)
        self.reservation_log: list[tuple[float, int, float]] | None = [] if record_reservations else None
        self.rejected: list[Job] = []
        self.passes = 0
        self.n_started = 0
        self.n_ended = 0
        # The queue: arrival order for dynamic policies, priority order (with keys) for static.
        self._static = not ordering.dynamic
        self._queue: list[Job] = []
        self._qkeys: list[tuple[Any, int]] = []
        self._key_of: dict[int, tuple[Any, int]] = {}  # seq -> queue key (static policies)
        # Sizes and estimates of the queue, row for row (static policies), kept while the
        # queue is long: see queue_columns.
        self._mirror: QueueMirror | None = None
        self._mirrored = self._static and bool(getattr(backfill, "columns", False))
        self._started_now: list[Job] = []
        # Columns of the queue for policies with vectorised keys (dynamic ones).
        self._cols: QueueColumns | None = None
        if not self._static and type(ordering).keys is not OrderingPolicy.keys:
            self._cols = QueueColumns()
        # Running jobs: id -> job, and (expected end, seq, job) sorted by expected end, with
        # its expected ends and node counts as plain lists, row for row (end_times, end_nodes:
        # EASY's shadow time is a prefix sum over them).
        self._running: dict[int, Job] = {}
        self.ends: list[tuple[float, int, Job]] = []
        self.end_times: list[float] = []
        self.end_nodes: list[int] = []
        self._next = 0
        self._dirty = False
        self._in_pass = False
        self._last_pass = -math.inf
        self._walltime_timers = self.kill_overrun and not getattr(self.runner, "enforces_walltime", False)
        self.arrived = 0  # jobs queued since the last pass
        self._alarms: set[float] = set()
        self.estimator: EstimateModel = estimate if estimate is not None else UserEstimate()
        self.estimator.setup(self)
        # The parts' per-job hooks, None where a part keeps the base class's no-op.
        self._on_submitted = _hook(ordering, OrderingPolicy, "job_submitted")
        self._on_started = _hook(ordering, OrderingPolicy, "job_started")
        self._on_ended = _hook(ordering, OrderingPolicy, "job_ended")
        self._est_ended = _hook(self.estimator, EstimateModel, "job_ended")
        self._bf_ended = _hook(backfill, _backfill_base(), "job_ended")
        self._estimate = self.estimator.estimate
        self._corrects = self.estimator.corrects
        backfill.setup(self)
        self._pending = False
        if self.jobs:
            self.after(self.jobs[0].submit_time - self.sim.now, self._submit)

    # -- views used by backfill policies --------------------------------------------------
    @property
    def queue(self) -> list[Job]:
        """The waiting jobs (priority order for static policies, arrival order otherwise)."""
        return self._queue

    def queue_columns(self, queue: list[Job]) -> QueueMirror | None:
        """Read-only numpy columns (``nodes``, ``estimate``, ``seq``) of ``queue``, row for
        row, when ``queue`` is the scheduler's own queue (static orderings), the backfill
        policy reads them (its ``columns`` attribute) and the queue is long (they are kept
        from :data:`MIRROR_ON` jobs until the queue falls below :data:`MIRROR_OFF`; a short
        queue is cheaper to walk); else None. Valid until the pass ends (jobs started in it
        are still rows)."""
        return self._mirror if queue is self._queue else None

    @property
    def running(self) -> dict[int, Job]:
        """The running jobs by id."""
        return self._running

    # -- progress, read by drivers (progress bars, end-of-run checks) ----------------------
    @property
    def unsubmitted(self) -> int:
        """How many jobs of the workload have not been submitted yet."""
        return len(self.jobs) - self._next

    @property
    def finished(self) -> bool:
        """Whether every job was submitted and has ended (or was rejected)."""
        return not (self._next < len(self.jobs) or self._queue or self._running)

    def note_reservation(self, job: Job, start: float) -> None:
        """Record that ``job`` was promised ``start`` (the first promise is kept on the job)."""
        if job.reservation_time is None:
            job.reservation_time = start
        log = self.reservation_log
        if log is not None:
            log.append((self.sim.now, job.job_id, start))

    # -- submissions ----------------------------------------------------------------------
    def _submit(self, _data: Any = None) -> None:
        jobs = self.jobs
        i = self._next
        n = len(jobs)
        now = self.sim.now
        while i < n and jobs[i].submit_time <= now:
            self._enqueue(jobs[i], now)
            i += 1
        self._next = i
        if i < n:
            self.after(max(jobs[i].submit_time - now, 0.0), self._submit)
        self._wake()

    def _enqueue(self, job: Job, now: float) -> None:
        if not self.allocator.fits_empty(job):
            job.status = JobStatus.REJECTED
            self.rejected.append(job)
            return
        job.status = _QUEUED
        job.estimate = self._estimate(job, now)
        self.arrived += 1
        if self._on_submitted is not None:
            self._on_submitted(job, now)
        if self._static:
            k = (self.ordering.key(job, now), job.seq)
            i = bisect_right(self._qkeys, k)
            self._qkeys.insert(i, k)
            self._queue.insert(i, job)
            self._key_of[job.seq] = k
            mirror = self._mirror
            if mirror is not None:
                mirror.insert(i, job.nodes, job.estimate, job.seq)
            elif self._mirrored and len(self._queue) >= MIRROR_ON:
                self._mirror = QueueMirror.of(self._queue)
        else:
            self._queue.append(job)  # arrival order: sorted by seq
            if self._cols is not None:
                self._cols.append(job)

    # -- the scheduling loop --------------------------------------------------------------
    def wake_at(self, t: float) -> None:
        """Make sure a scheduling pass happens at time ``t`` (> now), e.g. when a
        reservation comes due at an instant where no job ends."""
        if t in self._alarms:
            return
        self._alarms.add(t)
        self.after(t - self.sim.now, self._alarm, t)

    def _alarm(self, t: float) -> None:
        self._alarms.discard(t)
        self._wake()

    def _wake(self) -> None:
        self._dirty = True
        if not self._pending:
            self._pending = True
            self.after(0.0, self._passes)

    def _passes(self, _data: Any = None) -> None:
        # A wake-up during a pass (a runner's start that reports at once) asks for another.
        while self._dirty:
            self._dirty = False
            self._pass()
        self._pending = False

    def _pass(self) -> None:
        now = self.sim.now
        self._last_pass = now
        queue = self._queue
        if not queue:
            return
        if self.state.n_free == 0 and not self.backfill.needs_pass(self):
            self.arrived = 0
            return  # nothing can start: every job needs at least one node
        self.passes += 1
        if self._static:
            ordered = queue
        elif self._cols is not None:
            ordered = self._order_vectorised(queue, now)
        else:
            ordered = self.ordering.order(queue, now)
        self._in_pass = True
        try:
            self.backfill.schedule(self, ordered)
        finally:
            self._in_pass = False
        self.arrived = 0
        started = self._started_now
        if started:
            self._started_now = []
            self._dequeue(started)

    def _order_vectorised(self, queue: list[Job], now: float) -> list[Job]:
        cols = self._cols
        keys = self.ordering.keys(cols, now)
        seq = cols.seq
        scope = self.backfill.scope
        big = cols.nodes > self.state.n_free if scope != "all" else None
        if big is None or not big.any():
            idx = np.lexsort((seq, keys))
        else:
            # Only the first job (in priority order) too large for the free nodes, and the
            # jobs that could fit (before it, for a strict-order policy), can matter now.
            kmin = np.where(big, keys, np.inf).min()
            ties = np.flatnonzero(big & (keys == kmin))
            first = int(ties[np.argmin(seq[ties])])
            sel = ~big
            if scope == "prefix":
                sel &= (keys < kmin) | ((keys == kmin) & (seq < seq[first]))
            sel[first] = True
            idx = np.flatnonzero(sel)
            idx = idx[np.lexsort((seq[idx], keys[idx]))]
        return [queue[i] for i in idx.tolist()]

    def _dequeue(self, started: list[Job]) -> None:
        """Remove jobs that just started from the queue (it may hold tens of thousands)."""
        queue = self._queue
        static = self._static
        key_of = self._key_of
        if len(started) * 16 >= len(queue):
            if static:
                keep = [i for i, j in enumerate(queue) if j.status is _QUEUED]
                self._queue = [queue[i] for i in keep]
                mirror = self._mirror
                if mirror is not None:
                    if len(keep) < MIRROR_OFF:
                        self._mirror = None
                    else:
                        mask = np.zeros(len(queue), dtype=bool)
                        mask[keep] = True
                        mirror.keep(mask)
                qk = self._qkeys
                self._qkeys = [qk[i] for i in keep]
                for j in started:
                    del key_of[j.seq]
            else:
                if self._cols is not None:
                    self._cols.delete([i for i, j in enumerate(queue) if j.status is not _QUEUED])
                self._queue = [j for j in queue if j.status is _QUEUED]
            return
        if static:
            keys = self._qkeys
            mirror = self._mirror
            for j in started:
                i = bisect_left(keys, key_of.pop(j.seq))
                del keys[i]
                del queue[i]
                if mirror is not None:
                    mirror.delete(i)
            if mirror is not None and len(queue) < MIRROR_OFF:
                self._mirror = None
        else:
            positions = [bisect_left(queue, j.seq, key=_seq_of) for j in started]
            if self._cols is not None:
                self._cols.delete(positions)
            for i in sorted(positions, reverse=True):
                del queue[i]

    # -- launching and ending -------------------------------------------------------------
    def start_job(self, job: Job, nodes: np.ndarray) -> None:
        """Start ``job`` now on ``nodes`` (called by backfill policies during a pass)."""
        if job.status is not _QUEUED:
            raise SchedulerError(f"job {job.job_id} cannot start: its status is {job.status!r}")
        if len(nodes) != job.nodes:
            raise SchedulerError(f"job {job.job_id} needs {job.nodes} nodes but was given {len(nodes)}")
        now = self.sim.now
        self.allocator.commit(job, nodes, self.state)
        job.start_time = now
        job.status = _RUNNING
        job.assigned_nodes = nodes
        self._running[job.job_id] = job
        self._add_end(now + job.estimate, job)
        self.n_started += 1
        self._started_now.append(job)
        if self._on_started is not None:
            self._on_started(job, now)
        self.runner.start(self, job, nodes)
        if self._walltime_timers:
            self.after(job.request_time, self._walltime, job)
        if self._corrects and job.estimate < job.request_time:
            # Created after the runner's end timer, so an end at the estimate comes first.
            self.after(job.estimate, self._estimate_due, job)

    def _add_end(self, t: float, job: Job) -> None:
        # bisect_right(ends, row) by the float column (no tuple comparisons): rows of one
        # instant are in seq order.
        ends = self.ends
        times = self.end_times
        seq = job.seq
        i = bisect_right(times, t)
        while i and times[i - 1] == t and ends[i - 1][1] > seq:
            i -= 1
        ends.insert(i, (t, seq, job))
        times.insert(i, t)
        self.end_nodes.insert(i, job.nodes)

    def _end_index(self, t: float, job: Job) -> int:
        """The row of running ``job`` (expected end ``t``) in :attr:`ends`; raises if absent."""
        ends = self.ends
        times = self.end_times
        seq = job.seq
        i = bisect_left(times, t)
        m = len(times)
        while i < m and times[i] == t and ends[i][1] < seq:
            i += 1
        if i >= m or ends[i][2] is not job:
            raise SchedulerError(f"job {job.job_id} is missing from the expected-end list")
        return i

    def _drop_end(self, i: int) -> None:
        del self.ends[i]
        del self.end_times[i]
        del self.end_nodes[i]

    def _estimate_due(self, job: Job) -> None:
        """A running job reached its estimate: the model may raise it (``recent``)."""
        if job.status is not _RUNNING or self._running.get(job.job_id) is not job:
            return
        old = job.estimate
        new = self.estimator.correct(job, self.sim.now)
        if not new > old:
            return
        self._drop_end(self._end_index(job.start_time + old, job))
        job.estimate = new
        self._add_end(job.start_time + new, job)
        self.backfill.estimate_changed(self, job)
        self._wake()

    def _walltime(self, job: Job) -> None:
        if job.status is _RUNNING and self._running.get(job.job_id) is job:
            self.runner.kill(self, job, "walltime")

    def job_end(self, data: tuple[int, str, dict | None]) -> None:
        """Service: ``data = (job_id, status, info)``; see :meth:`job_ended`."""
        job_id, status, info = data
        self.job_ended(job_id, status, info)

    def end_timer(self, data: tuple[Job, str, dict | None]) -> None:
        """Timer callback for runners: ``data = (job, status, info)``; ignored when the job
        is no longer running (it was killed before its timer fired)."""
        job, status, info = data
        if job.status is _RUNNING:
            self.job_ended(job.job_id, status, info)

    def job_ended(self, job_id: int, status: str = JobStatus.COMPLETED, info: dict | None = None) -> None:
        """Record the end of a running job now: free its nodes and wake the scheduler.

        ``status`` is ``"completed"``, ``"killed"`` or ``"failed"``; ``info`` may carry
        ``"reason"`` (the kill reason).
        """
        job = self._running.pop(job_id, None)
        if job is None:
            raise SchedulerError(f"job_ended({job_id}): job {job_id} is not running")
        if self._in_pass:
            self._running[job_id] = job
            raise SchedulerError(
                f"job {job_id} ended inside a scheduling pass; a runner must report ends from a later event"
            )
        if status not in JobStatus.ENDED:
            self._running[job_id] = job
            raise SchedulerError(f"job {job_id} ended with status {status!r}; valid: {', '.join(sorted(JobStatus.ENDED))}")
        now = self.sim.now
        if self._last_pass == now and job.start_time < now:
            raise SchedulerError(
                f"the end of job {job_id} at t={now!r} arrived after a scheduling pass at the same "
                "instant; add the scheduler entity after the entities that report job ends, so ends "
                "at an instant are seen before starts at that instant are decided"
            )
        job.end_time = now
        job.status = status
        if info:
            job.kill_reason = str(info.get("reason", ""))
        self.allocator.release(job, job.assigned_nodes, self.state)
        expected = job.start_time + job.estimate
        self._drop_end(self._end_index(expected, job))
        self.n_ended += 1
        if self._on_ended is not None:
            self._on_ended(job, now)
        if self._est_ended is not None:
            self._est_ended(job, now)
        if self._bf_ended is not None:
            self._bf_ended(self, job, expected)
        self._wake()

    def kill(self, job_id: int, reason: str) -> None:
        """Kill a running job now through its runner (from an event, not during a pass)."""
        job = self._running.get(job_id)
        if job is None:
            raise SchedulerError(f"kill({job_id}): job {job_id} is not running")
        self.runner.kill(self, job, reason)


@dataclass
class ScheduleResult:
    """The outcome of :func:`simulate`.

    ``jobs``: every job submitted, in submission order, outcome fields filled (rejected
    ones included, with status ``"rejected"``); ``rejected``: those that never fit.
    """

    jobs: list[Job]
    rejected: list[Job]
    n_nodes: int
    allocator: str
    ordering: str
    backfill: str
    stats: RunStats
    passes: int
    wall_s: float
    reservation_log: list[tuple[float, int, float]] | None = None
    estimate: str = "user"
    estimate_options: dict[str, Any] | None = None

    @property
    def ran(self) -> list[Job]:
        """The jobs that ran (started and ended)."""
        return [j for j in self.jobs if j.end_time is not None]


def simulate(
    jobs: Sequence[Job],
    *,
    n_nodes: int | None = None,
    allocator: str | Allocator = "firstfree",
    ordering: str | OrderingPolicy = "fcfs",
    backfill: "str | BackfillPolicy" = "easy",
    runner: JobRunner | None = None,
    kill_overrun: bool = True,
    seed: int = 0,
    topology: Any = None,
    oversized: str = "error",
    record_reservations: bool = False,
    copy: bool = True,
    allocator_options: dict[str, Any] | None = None,
    ordering_options: dict[str, Any] | None = None,
    backfill_options: dict[str, Any] | None = None,
    estimate: "str | EstimateModel" = "user",
    estimate_options: dict[str, Any] | None = None,
) -> ScheduleResult:
    """Run ``jobs`` through a scheduler on a machine of ``n_nodes`` nodes; sequential.

    The parts are given by name (with ``*_options``) or as built objects (ordering and
    backfill objects keep run state, such as usage or reservations: use one per run).
    ``oversized``
    says what to do with a job that can never fit the machine: ``"error"`` raises
    :class:`UserError` naming it, ``"reject"`` marks it rejected and goes on. With
    ``copy=True`` the simulation runs on fresh copies of ``jobs`` (returned in the result)
    and the given objects are left untouched. ``estimate`` names the estimate model
    (:mod:`scheduler.estimates`, options in ``estimate_options``) or is one (one per run).
    Python's cyclic garbage collector is paused during the run (see the comment below).
    """
    from .backfill import BackfillPolicy, make_backfill

    if oversized not in ("error", "reject"):
        raise UserError(f"oversized must be 'error' or 'reject', got {oversized!r}")
    if isinstance(allocator, Allocator):
        alloc = allocator
        if n_nodes is not None and n_nodes != alloc.n_nodes:
            raise UserError(f"n_nodes={n_nodes} differs from the allocator's machine ({alloc.n_nodes} nodes)")
    else:
        if n_nodes is None:
            raise UserError("give the machine size: n_nodes=N (or an allocator object)")
        alloc = make_allocator(allocator, n_nodes=n_nodes, topology=topology, seed=seed, **(allocator_options or {}))
    pol = ordering if isinstance(ordering, OrderingPolicy) else make_ordering(ordering, n_nodes=alloc.n_nodes, **(ordering_options or {}))
    bf = backfill if isinstance(backfill, BackfillPolicy) else make_backfill(backfill, **(backfill_options or {}))
    est = make_estimate(estimate, **(estimate_options or {}))
    # The cyclic garbage collector stays off while the jobs are copied and run: they are tens
    # of thousands of long-lived objects and the run allocates millions of short-lived event
    # tuples, so its passes over them cost about 5 % of a replay while finding almost no
    # cycles; whatever the run leaves is collected once it is back on.
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        return _simulate(jobs, alloc, pol, bf, est, runner=runner, kill_overrun=kill_overrun, seed=seed,
                         oversized=oversized, record_reservations=record_reservations, copy=copy)
    finally:
        if gc_was_on:
            gc.enable()


def _simulate(jobs: Sequence[Job], alloc: Allocator, pol: OrderingPolicy, bf: "BackfillPolicy",
              est: EstimateModel, *, runner: JobRunner | None, kill_overrun: bool, seed: int, oversized: str,
              record_reservations: bool, copy: bool) -> ScheduleResult:
    work = fresh_copies(jobs) if copy else list(jobs)
    if oversized == "error":
        for j in work:
            if not alloc.fits_empty(j):
                raise UserError(
                    f"job {j.job_id} needs {j.nodes} nodes ({j.job_size} processes) but cannot fit the "
                    f"{alloc.n_nodes}-node machine; use a larger machine or drop such jobs (oversized='reject')"
                )
    sim = Simulator(seed=seed, comm=None)
    t0 = _time.perf_counter()
    sched = sim.add_entity(
        SchedulerEntity,
        name="scheduler",
        rank=0,
        jobs=work,
        allocator=alloc,
        ordering=pol,
        backfill=bf,
        runner=runner,
        kill_overrun=kill_overrun,
        record_reservations=record_reservations,
        estimate=est,
    )
    stats = sim.run()
    wall = _time.perf_counter() - t0
    assert sched is not None
    if not sched.finished:
        raise SchedulerError(
            f"the simulation ended with {len(sched.queue)} job(s) waiting and {len(sched.running)} running"
        )
    return ScheduleResult(
        jobs=sched.jobs,
        rejected=sched.rejected,
        n_nodes=alloc.n_nodes,
        allocator=alloc.name,
        ordering=pol.name,
        backfill=bf.name,
        stats=stats,
        passes=sched.passes,
        wall_s=wall,
        reservation_log=sched.reservation_log,
        estimate=est.name,
        estimate_options=est.options(),
    )
