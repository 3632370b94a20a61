"""Reservation and backfill policies: which queued jobs start now. Registered by name.

A policy's :meth:`~BackfillPolicy.schedule` is called at each scheduling pass with the queue
in priority order (see :mod:`scheduler.ordering`) and starts jobs through
``sched.start_job(job, nodes)``.

============  ========================================================================
name          what starts
============  ========================================================================
none          jobs from the head of the queue while the head fits (strict order)
firstfit      any job that fits now, in priority order ("FCFS/BF")
easy          the head while it fits; then one reservation for the blocked head (the
              *shadow time*), and any later job that fits now and cannot delay it.
              Option ``depth`` (k, default 1): reservations for the first k jobs that
              cannot start, and any later job that fits now and delays none of them
easy-sjbf     EASY whose backfill candidates (the jobs after the head) are tried
              shortest estimate first (EASY-SJBF), not in queue order; ``depth`` too
conservative  a reservation for every queued job; a job starts when its reservation
              comes; no job can delay any reservation made before it
============  ========================================================================

EASY with other orders than FCFS
    The reservation goes to the job at the head of the queue *in the ordering's order*,
    recomputed at every pass. When the head changes (a job that sorts before it arrives:
    a short job under ``sjf``, or a dynamic order such as ``wfp`` overtakes it), the new
    head takes the reservation at the next pass and the former head's promise lapses: it
    is then one more backfill candidate and may start later than first promised
    (``Job.reservation_time`` keeps the first promise, so the lapse can be measured).

Reservation depth
    ``depth = k`` keeps k reservations, recomputed at every pass as EASY's one is: in queue
    order, a job starts when it fits now for its whole estimate without delaying the
    reservations made so far in the pass, else it gets the earliest slot that delays none
    of them, until k jobs hold one; the remaining jobs then backfill the same way (EASY =
    depth 1). With k at least the queue length every waiting job holds a reservation, as
    in ``conservative``, but the plan is made afresh at each pass rather than kept and
    compressed, so a reservation may move later when the order of the queue changes. Depth
    above 1 plans on a count profile with ``count_only`` allocators; with others each
    reservation is pinned to the nodes ``select`` chose, as conservative's are (see below).

Planning uses each job's estimate (``Job.estimate``, set at submission by the run's estimate
model, :mod:`scheduler.estimates`; by default the request) and expected ends, ``start +
estimate``; a job past its estimate (an estimate shorter than the run, or
``kill_overrun=False``) is expected to end at the next representable instant after now (see
:mod:`scheduler.lifecycle`).

Reservations go through the allocator
    To find when a job could start, the general path copies the allocation state, applies
    the expected releases in order of expected end (all releases of one instant together),
    and asks ``allocator.select`` after each: the first instant it fits is the reservation
    (EASY's shadow time). An EASY backfill candidate that fits now is accepted when it ends
    (by its requested time) no later than the shadow time, or when the head job still fits
    at the shadow time with the candidate's nodes still busy (checked on a copied state).
    So reservations stay correct for allocators with topology constraints.

    For ``count_only`` allocators (any ``n`` free nodes host an ``n``-node job) the fast
    classic arithmetic is used instead: the shadow time is when enough nodes are free, the
    *extra* nodes are those free then beyond what the head needs, and a candidate that
    would still run at the shadow time must fit in the extra nodes (which it then uses up).
    Both paths give the same schedules on count-only allocators (tested by forcing the
    general path with ``general=True``).

Conservative backfilling
    Each queued job holds a reservation (a start time) from the pass after its arrival on.
    New jobs get the earliest slot that delays no existing reservation. When a job ends
    earlier than expected the plan is *compressed*: in priority order, each job's
    reservation is taken out and re-made at the earliest slot, which can only be earlier
    (its old slot is still free), so no reservation is ever delayed (Mu'alem and Feitelson,
    IEEE TPDS 12(6), 2001). With a ``count_only`` allocator the plan is a profile of free
    node counts over time, kept between passes: an early end adds the nodes it freed until
    its expected end, and the compression searches each job only from the first segment
    with enough free nodes (a prefix maximum) up to its slot (:meth:`CountProfile.earlier`).
    With other allocators a reservation is pinned to the nodes
    ``select`` chose for it: a job fits a slot ``[t, t + request)`` when ``select`` finds
    nodes on the state at ``t`` with every reservation that starts inside the slot blocked
    (``allocator.block``); a count profile of the same plan rules out most slots first. Pinned plans are more cautious than count profiles (a node released during
    the slot cannot be promised to a reservation starting later in it), so on count-only
    allocators the two paths may differ; the fast path is the classic algorithm. While a
    job runs past its estimate the plan is invalid; it is rebuilt from scratch in priority
    order at each pass, and reservations may then move later.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right
from itertools import accumulate
from itertools import islice
from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, TypeVar

import numpy as np

from pdes.validate import check_int

from .errors import SchedulerError, UserError
from .job import Job, JobStatus

if TYPE_CHECKING:  # pragma: no cover
    from .allocators import AllocState
    from .lifecycle import SchedulerEntity
    from .mirror import QueueMirror

__all__ = [
    "BackfillPolicy",
    "NoBackfill",
    "FirstFit",
    "Easy",
    "EasySJBF",
    "Conservative",
    "CountProfile",
    "BACKFILLS",
    "register_backfill",
    "make_backfill",
]

_INF = math.inf
_first = itemgetter(0)
# Below this many jobs after the head a Python loop is cheaper than numpy's call overhead.
_VECTOR_MIN = 32
# After this many backfill candidates in a row fail, the queue columns are asked again.
_REQUERY = 24
# Backfill candidates turned from an array into a list at a time (most passes try a few).
_CHUNK = 32
_QUEUED = JobStatus.QUEUED


def _horizon(now: float) -> float:
    """The earliest instant an overrunning job is expected to end: just after ``now``."""
    return math.nextafter(now, _INF)


def _by_estimate(job: Job) -> tuple[float, int]:
    return (job.estimate, job.seq)


def _slot_end(start: float, request: float) -> float:
    """The end of a reservation; a zero-length job still holds its nodes at its instant."""
    return start + request if request > 0.0 else math.nextafter(start, _INF)


class BackfillPolicy(ABC):
    """Decides which queued jobs start at a scheduling pass.

    ``general=True`` forces the general (allocator-driven) path even for count-only
    allocators; it exists to test that both paths agree.

    ``scope`` says which queued jobs the policy needs to see, so that the scheduler can
    skip ordering the others when the queue is long (the policy must decide the same on
    the reduced list): ``"all"`` (it plans for every job: conservative), ``"fits"`` (the
    jobs that could fit the free nodes, plus the first job in priority order that could
    not, which may be the blocked head: EASY, first-fit), ``"prefix"`` (only the jobs
    before that first one, and it: strict order).

    ``columns``: True when the policy reads ``sched.queue_columns`` (EASY and its variants);
    for the others the scheduler does not keep them.
    """

    name: ClassVar[str] = ""
    scope: ClassVar[str] = "all"
    #: Whether the policy reads ``sched.queue_columns`` (the scheduler keeps them only then).
    columns: ClassVar[bool] = False

    def __init__(self, *, general: bool = False, **options: Any):
        if options:
            raise UserError(f"backfill {self.name!r} takes no option(s) {', '.join(sorted(options))}")
        self.force_general = bool(general)
        self.general = self.force_general

    def setup(self, sched: "SchedulerEntity") -> None:
        """Called once by the scheduler entity before the run."""
        self.general = self.force_general or not sched.allocator.count_only

    @abstractmethod
    def schedule(self, sched: "SchedulerEntity", queue: list[Job]) -> None:
        """Start jobs of ``queue`` (priority order) with ``sched.start_job(job, nodes)``."""

    def needs_pass(self, sched: "SchedulerEntity") -> bool:
        """Whether a pass is needed although no node is free (no job can start, but the
        policy has plans to make; ``sched.arrived`` counts the jobs queued since the last
        pass)."""
        return False

    def job_ended(self, sched: "SchedulerEntity", job: Job, expected_end: float) -> None:
        """Called when a running job ends (now); ``expected_end`` is what plans assumed."""

    def estimate_changed(self, sched: "SchedulerEntity", job: Job) -> None:
        """Called when the estimate of running ``job`` was raised (its expected end moved
        later: plans that counted its nodes free earlier are void)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(general={self.force_general})"


BACKFILLS: dict[str, type[BackfillPolicy]] = {}

B = TypeVar("B", bound=type[BackfillPolicy])


def register_backfill(cls: B) -> B:
    """Class decorator: add a backfill policy to :data:`BACKFILLS` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a non-empty class attribute 'name'")
    BACKFILLS[cls.name] = cls
    return cls


def make_backfill(name: str, **options: Any) -> BackfillPolicy:
    """Build the backfill policy registered as ``name``."""
    try:
        cls = BACKFILLS[name]
    except (KeyError, TypeError):
        raise UserError(f"unknown backfill policy {name!r}; valid: {', '.join(BACKFILLS)}") from None
    return cls(**options)


@register_backfill
class NoBackfill(BackfillPolicy):
    """Strict queue order: start head jobs while the head fits."""

    name = "none"
    scope = "prefix"

    def schedule(self, sched: "SchedulerEntity", queue: list[Job]) -> None:
        alloc = sched.allocator
        state = sched.state
        for job in queue:
            if job.nodes > state.n_free:
                return
            nodes = alloc.select(job, state)
            if nodes is None:
                return
            sched.start_job(job, nodes)


@register_backfill
class FirstFit(BackfillPolicy):
    """Any job that fits now, in priority order (FCFS/BF)."""

    name = "firstfit"
    scope = "fits"

    def schedule(self, sched: "SchedulerEntity", queue: list[Job]) -> None:
        alloc = sched.allocator
        state = sched.state
        for job in queue:
            free = state.n_free
            if free == 0:
                return
            if job.nodes > free:
                continue
            nodes = alloc.select(job, state)
            if nodes is not None:
                sched.start_job(job, nodes)


@register_backfill
class Easy(BackfillPolicy):
    """EASY backfilling: one reservation, for the blocked head job (``depth``: k of them)."""

    name = "easy"
    scope = "fits"
    columns = True
    #: Backfill candidates shortest estimate first (EASY-SJBF) instead of in queue order.
    sjbf: ClassVar[bool] = False

    def __init__(self, *, general: bool = False, depth: int = 1, **options: Any):
        super().__init__(general=general, **options)
        self.depth = check_int(f"backfill {self.name!r}: depth (the number of reservations)", depth, lo=1)
        # Depth above 1 plans on a count profile; it must see the first k blocked jobs.
        self._profile = self.depth > 1
        if self._profile:
            self.scope = "all"
        # The last pass, when it started no job (see schedule): (jobs started, jobs ended,
        # jobs submitted, head, shadow time, extra nodes) at its end; else None.
        self._quiet: tuple[int, int, int, Job, float, int] | None = None

    def setup(self, sched: "SchedulerEntity") -> None:
        super().setup(sched)
        self._quiet = None

    def estimate_changed(self, sched: "SchedulerEntity", job: Job) -> None:
        self._quiet = None  # an expected end moved: the shadow time may have

    def needs_pass(self, sched: "SchedulerEntity") -> bool:
        # A new job may have become the head (or one of the first k): give it its reservation.
        if not sched.arrived:
            return False
        if sched.ordering.dynamic:
            return True
        queue = sched.queue  # priority order
        if self.depth == 1:
            return bool(queue) and queue[0].reservation_time is None
        return any(j.reservation_time is None for j in queue[: self.depth])

    def schedule(self, sched: "SchedulerEntity", queue: list[Job]) -> None:
        if self._profile:
            self._schedule_profile(sched, queue)
            return
        quiet = self._quiet
        self._quiet = None
        if quiet is not None and self._after_quiet(sched, queue, quiet):
            return
        alloc = sched.allocator
        state = sched.state
        n = len(queue)
        i = 0
        while i < n:
            job = queue[i]
            if job.nodes > state.n_free:
                break
            nodes = alloc.select(job, state)
            if nodes is None:
                break
            sched.start_job(job, nodes)
            i += 1
        if i >= n:
            return
        head = queue[i]
        general = self.general
        started = sched.n_started
        shadow, extra, shadow_state = self.reserve(sched, head, general)
        lo = i + 1
        cols = sched.queue_columns(queue) if not general and n - lo > _VECTOR_MIN else None
        if cols is not None:
            self._backfill_columns(sched, queue, cols, lo, shadow, extra)
        else:
            cands = self._candidates(sched, queue, lo, shadow, extra)
            self.backfill_around(sched, head, cands, shadow, extra, shadow_state, general)
        self._remember(sched, queue, head, shadow, extra, i == 0 and sched.n_started == started)

    def _backfill_columns(self, sched: "SchedulerEntity", queue: list[Job], cols: "QueueMirror", lo: int,
                          shadow: float, extra: int) -> None:
        """:meth:`backfill_around` on the count path over the candidates the queue columns
        give (see :meth:`_candidates`), asking the columns again, with the free and extra
        nodes of the moment, after :data:`_REQUERY` candidates in a row failed: a long queue
        can hold thousands of candidates that the first starts leave too large, and walking
        them one by one cost more than the rest of the pass."""
        state = sched.state
        free = state.n_free
        if free == 0:
            return
        alloc = sched.allocator
        now = sched.sim.now
        sjbf = self.sjbf
        # The candidates come as an array, turned into a list _CHUNK at a time: a pass tries
        # about 5 of them on average, of 120.
        idx = self._index(cols, lo, free, shadow, now, extra)
        total = len(idx)
        rows = idx[:_CHUNK].tolist()
        got = m = len(rows)
        k = 0
        misses = 0
        while True:
            while k < m:
                r = rows[k]
                k += 1
                job = queue[r]
                size = job.nodes
                if size <= free and job.status is _QUEUED:
                    # Ends by the shadow time, or else takes only extra nodes.
                    short = now + job.estimate <= shadow
                    if short or size <= extra:
                        nodes = alloc.select(job, state)
                        if nodes is not None:
                            sched.start_job(job, nodes)
                            if not short:
                                extra -= size
                            free = state.n_free
                            if free == 0:
                                return
                            misses = 0
                            continue
                misses += 1
                if misses >= _REQUERY and (k < m or got < total):
                    # Starting jobs only lowers the free and extra nodes: the jobs the columns
                    # drop now would fail at their turn. In queue order the rest lies after r;
                    # shortest first, started and failed jobs sort anywhere (started ones are
                    # skipped above, failed ones fail the filter again).
                    if not sjbf:
                        idx = self._index(cols, r + 1, free, shadow, now, extra)
                        total = len(idx)
                        rows = idx[:_CHUNK].tolist()
                    else:
                        rows = [x for x in self._index(cols, lo, free, shadow, now, extra).tolist()
                                if queue[x].status is _QUEUED]
                        total = len(rows)
                    got = m = len(rows)
                    k = 0
                    misses = 0
            if got >= total:
                return
            rows = idx[got : got + _CHUNK].tolist()
            m = len(rows)
            got += m
            k = 0

    def _index(self, cols: "QueueMirror", lo: int, free: int, shadow: float, now: float, extra: int) -> np.ndarray:
        """The count path's candidate rows of ``cols`` from ``lo``, in the order to try them."""
        idx = cols.backfill_index(lo, free, shadow, now, extra)
        if self.sjbf and len(idx) > 1:
            idx = idx[np.lexsort((cols.seq[idx], cols.estimate[idx]))]
        return idx

    def _remember(self, sched: "SchedulerEntity", queue: list[Job], head: Job, shadow: float, extra: int,
                  quiet: bool) -> None:
        """Keep what the next pass needs to try only the jobs that arrive meanwhile, when
        this pass started no job (count path, the scheduler's own queue)."""
        if quiet and not self.general and queue is sched.queue:
            self._quiet = (sched.n_started, sched.n_ended, len(sched.jobs) - sched.unsubmitted, head, shadow, extra)

    def _after_quiet(self, sched: "SchedulerEntity", queue: list[Job],
                     quiet: tuple[int, int, int, Job, float, int]) -> bool:
        """A pass after one that started no job, when no job started or ended since and the
        head is the same: the free nodes, the expected ends, and so the shadow time and extra
        nodes are those of that pass, and every job it tried failed and would fail again
        (the clock only moved on). Only the jobs submitted since can start: try those alone.
        Returns False (do a full pass) when that does not hold."""
        started, ended, submitted, head, shadow, extra = quiet
        if sched.n_started != started or sched.n_ended != ended or queue is not sched.queue:
            return False
        if not queue or queue[0] is not head:
            return False
        ends = sched.ends
        if ends and ends[0][0] <= sched.sim.now:
            return False  # a job is past its estimate: the shadow time moves with the clock
        k = sched.arrived
        new = queue[len(queue) - k:] if k else []
        if k > len(queue) or any(j.seq < submitted for j in new):
            return False  # the new jobs are not all at the tail (a non-FCFS order): full pass
        sched.note_reservation(head, shadow)
        free = sched.state.n_free
        cands = [j for j in new if j.nodes <= free]
        if self.sjbf and len(cands) > 1:
            cands.sort(key=_by_estimate)
        start = sched.n_started
        self.backfill_around(sched, head, cands, shadow, extra, None, False)
        self._remember(sched, queue, head, shadow, extra, sched.n_started == start)
        return True

    def _candidates(self, sched: "SchedulerEntity", queue: list[Job], lo: int, shadow: float,
                    extra: int) -> Iterable[Job]:
        """The jobs of ``queue[lo:]`` that may start in this pass, in the order to try them.

        Starting jobs only lowers the free nodes and the extra nodes, so a job that fails the
        tests of :meth:`backfill_around` now fails them at its turn too: dropping such jobs
        first leaves the same starts. With the scheduler's queue columns (static orderings)
        that is one vectorised comparison over the queue, so a pass costs about as much as
        its candidates rather than the whole queue.
        """
        free = sched.state.n_free
        if free == 0:
            return []
        cols = sched.queue_columns(queue) if len(queue) - lo > _VECTOR_MIN else None
        if cols is None:
            cands = [j for j in islice(queue, lo, None) if j.nodes <= free]
            return sorted(cands, key=_by_estimate) if self.sjbf else cands
        if self.general:
            # (The general path decides by trial placements: only the size test applies.)
            rows = cols.backfill_rows(lo, free, _INF, 0.0, free)
        else:
            # The count path starts a job that ends by the shadow time or fits the extra nodes.
            rows = cols.backfill_rows(lo, free, shadow, sched.sim.now, extra)
        if self.sjbf and len(rows) > 1:
            idx = np.array(rows)
            rows = idx[np.lexsort((cols.seq[idx], cols.estimate[idx]))].tolist()
        # Lazily: a pass usually stops early, once the free nodes are used up.
        return map(queue.__getitem__, rows)

    @classmethod
    def reserve(cls, sched: "SchedulerEntity", head: Job, general: bool) -> tuple[float, int, "AllocState | None"]:
        """Record the blocked ``head``'s shadow time (its reservation) and return ``(shadow
        time, extra nodes, state at the shadow time)``: the extra nodes on the count path
        (else 0), the state on the general path (else None)."""
        if general:
            shadow, shadow_state = cls.shadow_general(sched, head)
            extra = 0
        else:
            shadow, extra = cls.shadow_count(sched, head)
            shadow_state = None
        sched.note_reservation(head, shadow)
        return shadow, extra, shadow_state

    @classmethod
    def reserve_and_backfill(cls, sched: "SchedulerEntity", head: Job, cands: Iterable[Job], general: bool,
                             backfill: bool = True) -> None:
        """EASY around the blocked ``head``: record its shadow time (its reservation), then
        start each of ``cands`` that fits now and either ends by the shadow time or leaves
        the head its nodes (the extra nodes on the count path; a trial placement on the
        general path). ``backfill=False``: only the reservation."""
        shadow, extra, shadow_state = cls.reserve(sched, head, general)
        if not backfill:
            return
        # Starting jobs only lowers the free count, so a job larger than it is now is skipped
        # at its turn anyway: dropping those first (one comprehension) leaves the same starts
        # and saves a Python iteration per job in a long queue.
        free0 = sched.state.n_free
        cls.backfill_around(sched, head, [j for j in cands if j.nodes <= free0], shadow, extra, shadow_state,
                            general)

    @staticmethod
    def backfill_around(sched: "SchedulerEntity", head: Job, cands: Iterable[Job], shadow: float, extra: int,
                        shadow_state: "AllocState | None", general: bool) -> None:
        """Start each of ``cands``, in order, that fits now and either ends by ``shadow`` or
        leaves ``head`` its nodes (``extra`` on the count path; a trial placement on
        ``shadow_state`` on the general path)."""
        alloc = sched.allocator
        state = sched.state
        now = sched.sim.now
        for job in cands:
            free = state.n_free
            if free == 0:
                return
            size = job.nodes
            if size > free:
                continue
            if now + job.estimate <= shadow:
                nodes = alloc.select(job, state)
                if nodes is not None:
                    sched.start_job(job, nodes)
            elif not general:
                if size <= extra:
                    nodes = alloc.select(job, state)
                    if nodes is not None:
                        sched.start_job(job, nodes)
                        extra -= size
            else:
                nodes = alloc.select(job, state)
                if nodes is None:
                    continue
                test = shadow_state.copy()
                alloc.commit(job, nodes, test)
                if alloc.select(head, test) is not None:
                    sched.start_job(job, nodes)
                    shadow_state = test

    def _schedule_profile(self, sched: "SchedulerEntity", queue: list[Job]) -> None:
        """``depth`` reservations on a count profile (see the module docstring)."""
        if self.general:
            self._schedule_pinned(sched, queue)
            return
        alloc = sched.allocator
        state = sched.state
        now = sched.sim.now
        prof = CountProfile(now, state.n_free, sched.ends, _horizon(now))
        left = self.depth
        n = len(queue)
        i = 0
        while i < n and left:
            job = queue[i]
            i += 1
            size = job.nodes
            est = job.estimate
            if size <= state.n_free and prof.fits(now, size, est):
                nodes = alloc.select(job, state)
                if nodes is not None:
                    sched.start_job(job, nodes)
                    prof.add(now, _slot_end(now, est), -size)
                    continue
            t = prof.find(size, est)
            if t is None:
                raise SchedulerError(f"job {job.job_id} ({size} nodes) fits no future state of the machine")
            prof.add(t, _slot_end(t, est), -size)
            sched.note_reservation(job, t)
            left -= 1
        for job in self._profile_candidates(sched, queue, i, prof):
            free = state.n_free
            if free == 0:
                return
            size = job.nodes
            if size > free:
                continue
            est = job.estimate
            if prof.fits(now, size, est):
                nodes = alloc.select(job, state)
                if nodes is not None:
                    sched.start_job(job, nodes)
                    prof.add(now, _slot_end(now, est), -size)

    def _profile_candidates(self, sched: "SchedulerEntity", queue: list[Job], lo: int,
                            prof: "CountProfile") -> Iterable[Job]:
        """The jobs of ``queue[lo:]`` that may backfill on the depth-k profile ``prof``, in
        the order to try them: those that fit the free nodes now and, for their whole
        estimate, the fewest free nodes the profile has from now (its prefix minimum; a
        necessary condition of :meth:`CountProfile.fits`). Starting jobs only lowers both,
        so the others would fail at their turn (see :meth:`_candidates`)."""
        free = sched.state.n_free
        if free == 0:
            return []
        cols = sched.queue_columns(queue) if len(queue) - lo > _VECTOR_MIN else None
        if cols is None:
            return sorted(queue[lo:], key=_by_estimate) if self.sjbf else islice(queue, lo, None)
        nodes = cols.nodes[lo:]
        est = cols.estimate[lo:]
        low = np.minimum.accumulate(np.asarray(prof.free, dtype=np.float64))
        # The segments a window [now, now + est) touches: 0 up to the last one starting before its end.
        last = np.searchsorted(np.asarray(prof.times), est + sched.sim.now, side="left") - 1
        np.maximum(last, 0, out=last)
        idx = np.flatnonzero((nodes <= free) & (low[last] >= nodes))
        if self.sjbf and len(idx) > 1:
            idx = idx[np.lexsort((cols.seq[lo:][idx], est[idx]))]
        return map(queue.__getitem__, (idx + lo).tolist())

    def _schedule_pinned(self, sched: "SchedulerEntity", queue: list[Job]) -> None:
        """``depth`` reservations pinned to the nodes the allocator chose for them (the
        general path; the count profile of the same plan only rules instants out)."""
        now = sched.sim.now
        soon = _horizon(now)  # "before soon": a start now
        prof = CountProfile(now, sched.state.n_free, sched.ends, soon)
        slots: list[tuple[Job, float, float, np.ndarray]] = []
        left = self.depth
        n = len(queue)
        i = 0
        while i < n and left:
            job = queue[i]
            i += 1
            found = find_pinned(sched, job, now, prof, slots)
            if found is None:
                raise SchedulerError(f"job {job.job_id} ({job.nodes} nodes) fits no future state of the machine")
            t, nodes = found
            end = _slot_end(t, job.estimate)
            prof.add(t, end, -job.nodes)
            if t <= now:
                sched.start_job(job, nodes)
                continue
            slots.append((job, t, end, nodes))
            sched.note_reservation(job, t)
            left -= 1
        cands = sorted(queue[i:], key=_by_estimate) if self.sjbf else islice(queue, i, None)
        state = sched.state
        for job in cands:
            free = state.n_free
            if free == 0:
                return
            if job.nodes > free:
                continue
            found = find_pinned(sched, job, now, prof, slots, before=soon)
            if found is not None:
                sched.start_job(job, found[1])
                prof.add(now, _slot_end(now, job.estimate), -job.nodes)

    @staticmethod
    def shadow_count(sched: "SchedulerEntity", head: Job) -> tuple[float, int]:
        """(shadow time, extra nodes) for ``head`` by counting expected releases.

        The first expected end by which enough nodes are free (a prefix sum over the running
        jobs' nodes in expected-end order), at the earliest just after now; then every job
        expected to end by that instant counts toward the extra nodes."""
        avail = sched.state.n_free
        need = head.nodes
        times = sched.end_times
        m = len(times)
        # cum[i]: the free nodes once the first i expected ends are in.
        cum = list(accumulate(sched.end_nodes, initial=avail))
        k = bisect_left(cum, need, 1)
        if k > m:
            raise SchedulerError(f"job {head.job_id} ({need} nodes) fits no future state of the machine")
        t = times[k - 1]
        horizon = _horizon(sched.sim.now)
        if t < horizon:
            t = horizon
        return t, cum[bisect_right(times, t, k - 1)] - need

    @staticmethod
    def shadow_general(sched: "SchedulerEntity", head: Job) -> tuple[float, "AllocState"]:
        """(shadow time, state at the shadow time) for ``head`` through the allocator."""
        alloc = sched.allocator
        st = sched.state.copy()
        horizon = _horizon(sched.sim.now)
        ends = sched.ends
        m = len(ends)
        k = 0
        while k < m:
            t = ends[k][0]
            if t < horizon:
                t = horizon
            while k < m:
                e = ends[k]
                if e[0] > t:
                    break
                j = e[2]
                alloc.release(j, j.assigned_nodes, st)
                k += 1
            if alloc.select(head, st) is not None:
                return t, st
        raise SchedulerError(f"job {head.job_id} ({head.nodes} nodes) fits no future state of the machine")


@register_backfill
class EasySJBF(Easy):
    """EASY with shortest-job-first backfilling: candidates shortest estimate first."""

    name = "easy-sjbf"
    sjbf = True


class CountProfile:
    """Free node counts over time: ``free[k]`` nodes on ``[times[k], times[k + 1])``.

    The last segment extends to infinity. Used by conservative backfilling on count-only
    allocators.
    """

    __slots__ = ("times", "free")

    def __init__(self, now: float, free_now: int, ends: list, horizon: float,
                 slots: "list[tuple[float, float, int]] | tuple" = ()):
        """The profile from ``now``: ``free_now`` nodes, plus the nodes of each running job
        (``ends`` rows ``(expected end, seq, job)``, clamped to ``horizon``) at its end, minus
        each reserved slot ``(start, end, nodes)``."""
        deltas = [(e[0] if e[0] >= horizon else horizon, e[2].nodes) for e in ends]
        for a, b, k in slots:
            deltas.append((a, -k))
            deltas.append((b, k))
        deltas.sort(key=_first)
        times = [now]
        free = [free_now]
        last = now
        for t, d in deltas:
            if t == last:
                free[-1] += d
            else:
                times.append(t)
                free.append(free[-1] + d)
                last = t
        self.times = times
        self.free = free

    def trim(self, now: float) -> None:
        """Drop the segments that ended at or before ``now``."""
        times = self.times
        k = bisect_right(times, now) - 1
        if k > 0:
            del times[:k]
            del self.free[:k]
        times[0] = now

    def _split(self, t: float) -> int:
        times = self.times
        k = bisect_left(times, t)
        if k < len(times) and times[k] == t:
            return k
        times.insert(k, t)
        self.free.insert(k, self.free[k - 1])
        return k

    def add(self, start: float, end: float, delta: int) -> None:
        """Add ``delta`` free nodes on ``[start, end)`` (negative to reserve).

        Breakpoints that no longer change the count are dropped (only the two ends can
        become such), so a profile updated in place stays as short as a rebuilt one.
        """
        if end <= start:
            self._split(start)
            return
        times = self.times
        free = self.free
        # self._split(start) and self._split(end), inlined (moves of conservative plans
        # call this twice each).
        a = bisect_left(times, start)
        if a == len(times) or times[a] != start:
            times.insert(a, start)
            free.insert(a, free[a - 1])
        b = bisect_left(times, end, a)
        if b == len(times) or times[b] != end:
            times.insert(b, end)
            free.insert(b, free[b - 1])
        for k in range(a, b):
            free[k] += delta
        if b < len(free) and free[b] == free[b - 1]:
            del times[b]
            del free[b]
        if a > 0 and free[a] == free[a - 1]:
            del times[a]
            del free[a]

    def find(self, nodes: int, duration: float, before: float = _INF,
             own: tuple[float, float, int] | None = None) -> float | None:
        """The earliest breakpoint ``t < before`` with ``nodes`` free on ``[t, t + duration)``.

        A job of zero duration still needs its nodes at ``t``. ``own = (start, end, k)``
        counts ``k`` more nodes free on ``[start, end)``: the job's own current slot, so
        that a job can be moved without first taking its slot out.
        """
        times = self.times
        free = self.free
        m = len(times)
        o_start, o_end, o_k = own if own is not None else (_INF, _INF, 0)
        k = 0
        while k < m:
            t = times[k]
            if t >= before:
                return None
            f = free[k]
            if o_start <= t < o_end:
                f += o_k
            if f < nodes:
                k += 1
                continue
            end = t + duration
            j = k + 1
            while j < m:
                tj = times[j]
                if tj >= end:
                    break
                f = free[j]
                if o_start <= tj < o_end:
                    f += o_k
                if f < nodes:
                    break
                j += 1
            else:
                return t
            if j < m and times[j] >= end:
                return t
            k = j + 1
        return None

    def earlier(self, nodes: int, duration: float, stop: int, k: int = 0, last: int | None = None) -> float | None:
        """The earliest breakpoint ``t`` before ``times[stop]`` from which ``nodes`` are free
        on ``[t, t + duration)`` or up to ``times[stop]``, whichever comes first.

        It is :meth:`find` with ``before = times[stop]`` and ``own`` the job's current slot
        starting there: the slot is as long as the job, so a window starting earlier ends
        inside it, where the job's own nodes are free (no count is negative). A run of
        segments with enough nodes that reaches the slot therefore fits from its start.
        ``k``: the first segment that may have enough nodes (the search starts there);
        ``last``: the end of the starts to try (default: :meth:`last_start`).
        """
        times = self.times
        free = self.free
        if last is None:
            last = self.last_start(nodes, duration, stop, k)
        while k < last:
            if free[k] < nodes:
                k += 1
                continue
            t = times[k]
            end = t + duration
            j = k + 1
            while j < stop:
                if times[j] >= end:
                    return t
                if free[j] < nodes:
                    break
                j += 1
            else:
                return t
            k = j + 1
        return None

    def last_start(self, nodes: int, duration: float, stop: int, k: int = 0) -> int:
        """For :meth:`earlier`: the end of the segments worth trying as starts.

        When no run reaches the slot (segment ``stop - 1`` lacks nodes), a window must end
        at a segment that lacks nodes, by ``times[stop - 1]``, so it starts by
        ``times[stop - 1] - duration``; a little more is tried so that the rounding of
        ``start + duration`` cannot leave a start out (``1e-15`` relative exceeds 2 ulps).
        """
        if self.free[stop - 1] >= nodes:
            return stop
        times = self.times
        edge = times[stop - 1]
        bound = edge - duration
        return bisect_right(times, bound + 1e-15 * (abs(edge) + abs(bound)), k, stop)

    def fits(self, t: float, nodes: int, duration: float, own: tuple[float, float, int] | None = None) -> bool:
        """Whether ``nodes`` are free on all of ``[t, t + duration)`` (``own`` as in find)."""
        times = self.times
        free = self.free
        o_start, o_end, o_k = own if own is not None else (_INF, _INF, 0)
        k = max(bisect_right(times, t) - 1, 0)
        end = t + duration
        m = len(times)
        while True:
            f = free[k] + (o_k if o_start <= times[k] < o_end else 0)
            if f < nodes:
                return False
            k += 1
            if k >= m or times[k] >= end:
                return True

    def __repr__(self) -> str:
        return f"CountProfile({list(zip(self.times, self.free))})"


@register_backfill
class Conservative(BackfillPolicy):
    """Conservative backfilling: every queued job holds a reservation (see module docstring)."""

    name = "conservative"
    scope = "all"

    def __init__(self, *, general: bool = False, **options: Any):
        super().__init__(general=general, **options)
        # Count path: job id -> reserved start. General path: job id -> (start, end, nodes).
        self._res: dict[int, Any] = {}
        self._profile: CountProfile | None = None
        self._compress = False
        self._stale = False  # the plan was made while a job overran its estimate
        # Nodes freed early since the last pass: (slot end, nodes), free from now to then.
        self._freed: list[tuple[float, int]] = []
        # Count path: job id -> the job, for every id in _res.
        self._job_of: dict[int, Job] = {}

    def setup(self, sched: "SchedulerEntity") -> None:
        super().setup(sched)
        self._res.clear()
        self._job_of.clear()
        self._profile = None
        self._compress = False
        self._stale = False
        self._freed.clear()

    @property
    def reservations(self) -> dict[int, Any]:
        """The current reservations by job id."""
        return self._res

    def needs_pass(self, sched: "SchedulerEntity") -> bool:
        return len(self._res) < len(sched.queue)

    def estimate_changed(self, sched: "SchedulerEntity", job: Job) -> None:
        # Reservations counted the job's nodes free at its old expected end: re-plan.
        self._stale = True

    def job_ended(self, sched: "SchedulerEntity", job: Job, expected_end: float) -> None:
        now = sched.sim.now
        if now > expected_end:
            # It overran: the plan counted its nodes free from its expected end.
            self._stale = True
        elif now < expected_end or job.start_time == now:
            # Early: compress. A zero-length job held a one-instant slot; compressing lets
            # the next reservation move onto that instant.
            self._compress = True
            self._freed.append((_slot_end(job.start_time, job.estimate), job.nodes))

    def schedule(self, sched: "SchedulerEntity", queue: list[Job]) -> None:
        now = sched.sim.now
        ends = sched.ends
        overrun = bool(ends) and ends[0][0] <= now
        # A plan made while a job overran assumed it would end at once, and a plan made
        # before a job overran assumed it would end in time: start afresh.
        replan = overrun or self._stale
        self._stale = overrun
        if self.general:
            self._plan_general(sched, queue, now, replan)
        else:
            self._plan_count(sched, queue, now, replan)
        self._start_due(sched, queue, now)
        if overrun:
            # Every event re-plans while a job overruns; waking at reservation times that
            # were derived from "just after now" would only step through instants.
            return
        # A reservation may come due at an instant where no job ends: wake up then.
        if not self.general:
            # Every reservation due now has started: the rest lie ahead.
            nxt = min(self._res.values(), default=_INF)
        else:
            nxt = _INF
            for r in self._res.values():
                t = r[0]
                if now < t < nxt:
                    nxt = t
        if nxt < _INF:
            sched.wake_at(nxt)

    # -- count path -----------------------------------------------------------------------
    def _plan_count(self, sched: "SchedulerEntity", queue: list[Job], now: float, replan: bool) -> None:
        res = self._res
        prof = self._profile
        freed = self._freed
        if self._compress and not replan and prof is not None:
            # Compress the plan in place: the profile gains the nodes freed early, which
            # gives the same counts as rebuilding it from the running jobs and reservations.
            prof.trim(now)
            for e, k in freed:
                prof.add(now, e, k)
            freed.clear()
            self._compress_count(sched, queue, prof, now)
            self._compress = False
        elif replan or prof is None or self._compress:
            freed.clear()
            if replan:
                res.clear()  # the plan assumed ends that did not happen: re-plan from scratch
                self._job_of.clear()
            slots = []
            for job in queue:
                s = res.get(job.job_id)
                if s is not None:
                    slots.append((s, _slot_end(s, job.estimate), job.nodes))
            prof = CountProfile(now, sched.state.n_free, sched.ends, _horizon(now), slots)
            if slots:
                self._compress_count(sched, queue, prof, now)
            self._compress = False
            # With an overrunning job the profile holds a clamped end that goes stale.
            self._profile = None if self._stale else prof
        else:
            prof.trim(now)
        missing = len(queue) - len(res)
        if missing <= 0:
            return  # every queued job holds a reservation (started ones left both)
        # The queued jobs without one, in priority order: found from the tail, where new
        # jobs of an arrival-ordered queue are, rather than by walking all of it.
        new = []
        for job in reversed(queue):
            if job.job_id not in res:
                new.append(job)
                if len(new) == missing:
                    break
        new.reverse()
        job_of = self._job_of
        for job in new:
            s = prof.find(job.nodes, job.estimate)
            if s is None:
                raise SchedulerError(f"job {job.job_id} ({job.nodes} nodes) fits no future state of the machine")
            prof.add(s, _slot_end(s, job.estimate), -job.nodes)
            res[job.job_id] = s
            job_of[job.job_id] = job
            sched.note_reservation(job, s)

    def _compress_count(self, sched: "SchedulerEntity", queue: list[Job], prof: CountProfile, now: float) -> None:
        """In priority order, move each reservation to its earliest slot (its own current
        slot counting as free), never later than it is."""
        res = self._res
        times = prof.times
        free = prof.free
        # most[k]: the most free nodes on any segment up to k, for k < valid. Built lazily,
        # only as far as a job needs it: a move changes the profile from its new start on,
        # so it keeps the prefix before that (rebuilding all of it after every move cost more
        # than the rest of the compression).
        most: list[int] = []
        valid = 0
        for job in queue:
            s = res.get(job.job_id)
            if s is None or s <= now:
                continue
            n = job.nodes
            stop = bisect_left(times, s)
            d = job.estimate
            if free[stop - 1] < n:
                # Inline CountProfile.last_start: most jobs stop here, many before any start.
                edge = times[stop - 1]
                bound = edge - d
                last = bisect_right(times, bound + 1e-15 * (abs(edge) + abs(bound)), 0, stop)
                if not last:
                    continue
            else:
                last = stop
            if valid < last and (not valid or most[valid - 1] < n):
                # The answer is not in the valid prefix: extend it as far as starts are tried.
                if valid:
                    most[valid - 1:] = accumulate(free[valid:last], max, initial=most[valid - 1])
                else:
                    most[:] = accumulate(free[:last], max)
                valid = last
            # The first segment with n free nodes; none before the last start: it cannot move.
            first = bisect_left(most, n, 0, last if last < valid else valid)
            if first >= last:
                continue
            # CountProfile.earlier, inlined (the hottest call of a conservative replay).
            t = None
            k = first
            while k < last:
                if free[k] < n:
                    k += 1
                    continue
                tk = times[k]
                end = tk + d
                j = k + 1
                while j < stop and times[j] < end and free[j] >= n:
                    j += 1
                if j >= stop or times[j] >= end:
                    t = tk
                    break
                k = j + 1
            if t is not None:
                prof.add(s, _slot_end(s, d), n)
                prof.add(t, _slot_end(t, d), -n)
                res[job.job_id] = t
                sched.note_reservation(job, t)
                # Segments before t are unchanged (the old slot starts after t).
                a = bisect_left(times, t)
                if a < valid:
                    valid = a
                    del most[a:]

    # -- general (pinned) path ------------------------------------------------------------
    def _plan_general(self, sched: "SchedulerEntity", queue: list[Job], now: float, replan: bool) -> None:
        res = self._res
        if replan:
            res.clear()
        # A count profile of the same plan: being placeable needs enough free nodes, so it
        # rules out most slots before the allocator is asked about copied states.
        slots = []
        for job in queue:
            r = res.get(job.job_id)
            if r is not None:
                slots.append((r[0], r[1], job.nodes))
        prof = CountProfile(now, sched.state.n_free, sched.ends, _horizon(now), slots)
        if self._compress and slots:
            times = prof.times
            free = prof.free
            for job in queue:
                r = res.get(job.job_id)
                if r is None or r[0] <= now:
                    continue
                s, e, _ = r
                if max(free[: bisect_left(times, s)], default=-1) < job.nodes:
                    continue
                own = (s, e, job.nodes)
                if prof.find(job.nodes, job.estimate, before=s, own=own) is None:
                    continue
                del res[job.job_id]
                found = self._find_general(sched, job, now, prof, before=s, own=own)
                if found is None:
                    res[job.job_id] = r
                    continue
                t, nodes = found
                res[job.job_id] = (t, _slot_end(t, job.estimate), nodes)
                prof.add(s, e, job.nodes)
                prof.add(t, _slot_end(t, job.estimate), -job.nodes)
                sched.note_reservation(job, t)
        self._compress = False
        for job in queue:
            if job.job_id in res:
                continue
            found = self._find_general(sched, job, now, prof)
            if found is None:
                raise SchedulerError(f"job {job.job_id} ({job.nodes} nodes) fits no future state of the machine")
            t, nodes = found
            res[job.job_id] = (t, _slot_end(t, job.estimate), nodes)
            prof.add(t, _slot_end(t, job.estimate), -job.nodes)
            sched.note_reservation(job, t)

    def _find_general(self, sched: "SchedulerEntity", job: Job, now: float, prof: CountProfile,
                      before: float = _INF, own: tuple[float, float, int] | None = None,
                      ) -> tuple[float, np.ndarray] | None:
        """Earliest ``(start, nodes)`` before ``before`` for ``job`` given pinned reservations
        (``job`` holds none of them; ``own`` is its former slot, still in ``prof``)."""
        jobs_by_id = {j.job_id: j for j in sched.queue}
        slots = [(jobs_by_id[jid], s, e, nodes) for jid, (s, e, nodes) in self._res.items()]
        return find_pinned(sched, job, now, prof, slots, before, own)

    # -- starting -------------------------------------------------------------------------
    def _start_due(self, sched: "SchedulerEntity", queue: list[Job], now: float) -> None:
        res = self._res
        alloc = sched.allocator
        if not self.general:
            if min(res.values(), default=_INF) > now:
                return  # nothing due: no need to walk the queue
            due = [jid for jid, r in res.items() if r <= now]
            if len(due) == 1:
                # One job due (the usual case): no order to keep, no walk of the queue.
                job = self._job_of.pop(due[0])
                nodes = alloc.select(job, sched.state)
                if nodes is None:
                    raise SchedulerError(f"job {job.job_id} was reserved at t={now!r} but does not fit")
                del res[job.job_id]
                sched.start_job(job, nodes)
                return
        for job in queue:
            r = res.get(job.job_id)
            if r is None:
                continue
            if self.general:
                if r[0] > now:
                    continue
                nodes = r[2]
            else:
                if r > now:
                    continue
                nodes = alloc.select(job, sched.state)
                if nodes is None:
                    raise SchedulerError(f"job {job.job_id} was reserved at t={now!r} but does not fit")
            del res[job.job_id]
            self._job_of.pop(job.job_id, None)
            sched.start_job(job, nodes)


def find_pinned(sched: "SchedulerEntity", job: Job, now: float, prof: CountProfile,
                slots: "list[tuple[Job, float, float, np.ndarray]]", before: float = _INF,
                own: tuple[float, float, int] | None = None) -> tuple[float, np.ndarray] | None:
    """Earliest ``(start, nodes)`` before ``before`` for ``job`` through the allocator, given
    the running jobs' expected ends and reservations pinned to nodes (``slots``: ``(job,
    start, end, nodes)``; ``job`` holds none of them; ``own`` is its former slot, still in the
    count profile ``prof`` of the same plan, which rules out most instants first)."""
    alloc = sched.allocator
    horizon = _horizon(now)
    # (time, kind, seq, job, nodes): kind 0 releases before kind 1 commits at one instant.
    events: list[tuple[float, int, int, Job, np.ndarray]] = []
    for t, _, j in sched.ends:
        events.append((t if t >= horizon else horizon, 0, j.seq, j, j.assigned_nodes))
    for rj, s, e, nodes in slots:
        events.append((s, 1, rj.seq, rj, nodes))
        events.append((e, 0, rj.seq, rj, nodes))
    events.sort(key=lambda ev: (ev[0], ev[1], ev[2]))
    commit_times = [ev[0] for ev in events if ev[1] == 1]
    commits = [(ev[3], ev[4]) for ev in events if ev[1] == 1]
    candidates = sorted({ev[0] for ev in events if ev[1] == 0 and ev[0] > now})
    candidates.insert(0, now)
    base = sched.state.copy()
    idx = 0
    m = len(events)
    for ts in candidates:
        if ts >= before:
            return None
        while idx < m and events[idx][0] <= ts:
            t, kind, _, ej, nodes = events[idx]
            if kind == 0:
                alloc.release(ej, nodes, base)
            else:
                alloc.commit(ej, nodes, base)
            idx += 1
        if not prof.fits(ts, job.nodes, job.estimate, own):
            continue
        # The job's nodes must stay placeable over its whole slot: block, on a copy of the
        # state at ts, what every reservation starting inside the slot will hold
        # (releases inside the slot cannot help a job that is already running).
        inside = commits[bisect_right(commit_times, ts): bisect_left(commit_times, _slot_end(ts, job.estimate))]
        if inside:
            win = base.copy()
            alloc.block(inside, win)
        else:
            win = base
        nodes = alloc.select(job, win)
        if nodes is not None:
            return ts, nodes
    return None
