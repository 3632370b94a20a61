"""Scheduling decided outside the scheduler: a policy that asks a chooser at each decision.

:class:`ExternalPolicy` is a backfill policy whose choices come from a callable, for learning
schedulers (``simhpc.gym`` drives it from a Gymnasium environment) and for hand-written
policies in Python. At a scheduling pass, while nodes are free and jobs wait, it shows the
chooser the first ``window`` waiting jobs in queue order and the chooser returns ``(slot,
allocator)``: the job at ``slot`` of the window and the index of the allocator that places
it (:class:`AllocatorChoice`; 0 with a single allocator).

* A chosen job that fits the free nodes starts now; the next decision follows at once.
* A chosen job that does not fit is *reserved*: no decision is asked until it has started
  (it starts at the first pass where it fits, on the allocator chosen for it). Meanwhile,
  with ``backfill="easy"``, later jobs start in queue order when they cannot delay it
  (EASY's rule: they end by its shadow time by their requested time, or fit in the nodes it
  leaves free then); with ``backfill="none"`` nothing else starts.
* With one waiting job and ``decide_single=False`` (the default) no decision is asked: the
  job is chosen, on allocator 0.

So a chooser that always answers ``(0, 0)`` under FCFS ordering schedules exactly as
``ordering="fcfs"`` with ``backfill="none"`` or ``"easy"`` (tested).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .allocators import AllocState, Allocator
from .backfill import BackfillPolicy, Easy
from .errors import SchedulerError, UserError
from .job import Job, JobStatus

if TYPE_CHECKING:  # pragma: no cover
    from .lifecycle import SchedulerEntity

__all__ = ["AllocatorChoice", "ExternalPolicy", "Chooser", "EXTERNAL_BACKFILLS"]

#: ``chooser(sched, window) -> (slot, allocator index)``; ``window`` is the first waiting jobs.
Chooser = Callable[["SchedulerEntity", list[Job]], tuple[int, int]]

#: What may start beside a reserved job.
EXTERNAL_BACKFILLS = ("none", "easy")

_QUEUED = JobStatus.QUEUED


class AllocatorChoice(Allocator):
    """Several allocators over one machine state; :attr:`current` says which one selects.

    Every allocator must keep the plain :class:`AllocState` (free mask, owners, count), so
    that the nodes one of them chose are committed and released alike by all; the first is
    the default (backfilled jobs and reservations plan with it).
    """

    name = "choice"

    def __init__(self, allocators: Sequence[Allocator]):
        allocs = list(allocators)
        if not allocs:
            raise UserError("AllocatorChoice needs at least one allocator")
        n = allocs[0].n_nodes
        for a in allocs:
            if not isinstance(a, Allocator):
                raise UserError(f"AllocatorChoice: {a!r} is not an Allocator")
            if a.n_nodes != n:
                raise UserError(f"AllocatorChoice: allocator {a.name!r} has {a.n_nodes} nodes, the first has {n}")
            if len(allocs) > 1 and type(a.new_state()) is not AllocState:
                raise UserError(f"allocator {a.name!r} keeps its own state ({type(a.new_state()).__name__}) and "
                                "cannot share a machine with other allocators; choose among allocators with the "
                                "plain state (firstfree, random, dualend, fifo0, vpart, firstfit, bestfit, "
                                "largestfit, closestfit, treefit)")
        super().__init__(n_nodes=n, topology=allocs[0].topology, seed=allocs[0].seed)
        self.allocators = allocs
        self.names = tuple(a.name for a in allocs)
        self.count_only = all(a.count_only for a in allocs)  # type: ignore[misc]
        self.current = 0

    def new_state(self) -> AllocState:
        return self.allocators[0].new_state()

    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        return self.allocators[self.current].select(job, state)

    def commit(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        self.allocators[0].commit(job, nodes, state)

    def release(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        self.allocators[0].release(job, nodes, state)

    def block(self, placements: Any, state: AllocState) -> None:
        self.allocators[0].block(placements, state)

    def fits_empty(self, job: Job) -> bool:
        return self.allocators[0].fits_empty(job)


class ExternalPolicy(BackfillPolicy):
    """Starts the jobs a chooser picks (see the module docstring).

    Args:
        chooser: ``chooser(sched, window) -> (slot, allocator)``; it may block (pause the
            simulation) and must return a slot of ``window`` and a valid allocator index.
        window: how many waiting jobs the chooser sees (K >= 1).
        backfill: ``"none"`` or ``"easy"``: what may start beside a reserved job.
        decide_single: ask the chooser also when a single job waits.
    """

    name = "external"
    scope = "all"

    def __init__(self, *, chooser: Chooser, window: int = 16, backfill: str = "none", decide_single: bool = False):
        super().__init__()
        if not callable(chooser):
            raise UserError(f"chooser must be callable, got {chooser!r}")
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
            raise UserError(f"window must be an int >= 1, got {window!r}")
        if backfill not in EXTERNAL_BACKFILLS:
            raise UserError(f"backfill must be one of {', '.join(EXTERNAL_BACKFILLS)}, got {backfill!r}")
        self.chooser = chooser
        self.window = int(window)
        self.backfill = backfill
        self.decide_single = bool(decide_single)
        self.reserved: Job | None = None
        self.reserved_alloc = 0
        self.decisions = 0
        #: How many jobs wait (not only the window's) when the chooser is called.
        self.waiting = 0

    @staticmethod
    def _n_allocators(sched: "SchedulerEntity") -> int:
        alloc = sched.allocator
        return len(alloc.allocators) if isinstance(alloc, AllocatorChoice) else 1

    def _place(self, sched: "SchedulerEntity", job: Job, which: int) -> np.ndarray | None:
        state = sched.state
        if job.nodes > state.n_free:
            return None
        alloc = sched.allocator
        if isinstance(alloc, AllocatorChoice):
            alloc.current = which
            try:
                return alloc.select(job, state)
            finally:
                alloc.current = 0
        return alloc.select(job, state)

    def schedule(self, sched: "SchedulerEntity", queue: list[Job]) -> None:
        state = sched.state
        waiting = [j for j in queue if j.status is _QUEUED]
        r = self.reserved
        if r is not None:
            nodes = self._place(sched, r, self.reserved_alloc)
            if nodes is None:
                self._backfill(sched, r, waiting)
                return
            self.reserved = None
            sched.start_job(r, nodes)
            waiting.remove(r)
        k = self.window
        while waiting and state.n_free > 0:
            window = waiting[:k]
            if len(window) == 1 and not self.decide_single:
                slot, which = 0, 0
            else:
                self.decisions += 1
                self.waiting = len(waiting)
                slot, which = self.chooser(sched, window)
                if not (0 <= slot < len(window) and 0 <= which < self._n_allocators(sched)):
                    raise SchedulerError(f"the chooser answered (slot {slot!r}, allocator {which!r}); valid: slots "
                                         f"0..{len(window) - 1}, allocators 0..{self._n_allocators(sched) - 1}")
            job = window[slot]
            nodes = self._place(sched, job, which)
            if nodes is None:
                self.reserved = job
                self.reserved_alloc = which
                self._backfill(sched, job, waiting)
                return
            sched.start_job(job, nodes)
            del waiting[slot]

    def _backfill(self, sched: "SchedulerEntity", head: Job, waiting: list[Job]) -> None:
        """EASY's rule around the reserved ``head`` (which also records its shadow time)."""
        state = sched.state
        if state.n_free == 0:
            return
        if self.backfill == "none" and head.reservation_time is not None:
            return
        Easy.reserve_and_backfill(sched, head, [j for j in waiting if j is not head], self.general,
                                  backfill=self.backfill != "none")
