"""Node allocation: which nodes a job gets. The interface every allocator implements.

An allocator is the third, independent part of the scheduler (after the ordering policy and
the reservation/backfill policy). The scheduler and every backfill policy talk to it only
through this interface, so topology-aware allocators (random, contiguous, fat-tree isolating
with link reservations, torus partitions) plug in without touching them.

State
    :class:`AllocState` is the mutable occupancy of the machine: a boolean ``free`` mask,
    an ``owner`` array (job id or -1) and the ``n_free`` counter. It must be cheap to
    :meth:`~AllocState.copy`, because reservations and backfilling work on copies: to find
    when a job could start they copy the current state, apply the expected releases in order
    of expected end time, and ask :meth:`Allocator.select` after each. An allocator that
    needs more state (link reservations, partition occupancy) subclasses ``AllocState``,
    extends ``copy`` and keeps ``free``/``owner``/``n_free`` up to date (metrics and
    invariant checks read them).

Allocator
    ``select(job, state)`` is **pure**: it returns the sorted node ids (an int64 array of
    exactly ``job.nodes`` entries) the job would get in ``state``, or ``None`` when it cannot
    be placed now; it never changes ``state``. ``commit(job, nodes, state)`` marks them
    allocated and ``release(job, nodes, state)`` frees them; both may update any extra
    state. A backfill check may commit a job on a copied state and then ``select`` another
    one on that copy, so commit and select must agree on what "placed" means.

    ``block(placements, state)`` marks what each ``(job, nodes)`` of ``placements`` would
    hold as unavailable in ``state``, whether or not it is free there (a union, unlike
    ``commit``): conservative backfilling checks a slot ``[t, t + request)`` by selecting on
    the state at ``t`` with every reservation that starts inside the slot blocked. The
    default marks the nodes busy; an allocator with more state also blocks the rest (e.g.
    the links the jobs would reserve).

    An allocator that decides more than the nodes (reserved links, a partition) returns a
    :class:`~scheduler.allocators.base.Placement`: the same sorted int64 node ids as an
    ndarray subclass, carrying the decision in ``info``. Callers pass the object ``select``
    returned, unchanged, to ``commit`` and keep it as ``job.assigned_nodes`` (which
    ``release`` receives), so the decision travels with the nodes, also when a reservation
    chosen on one state is committed on another.

    ``count_only`` is True when only the number of free nodes matters (any ``n`` free nodes
    can host an ``n``-node job, so ``select`` fails exactly when ``job.nodes > n_free``).
    Backfill policies then use fast count arithmetic (shadow time and extra nodes) instead
    of trying ``select`` on copied states; both give the same schedules (tested).
    Topology-aware allocators set it False; an allocator whose options change it (first
    fit without its fallback) sets it on the instance.

    Constructors are keyword-only: ``Allocator(n_nodes=..., topology=None, seed=0,
    **options)``; unknown options raise :class:`~scheduler.errors.UserError`. Random choices
    must come from a generator seeded from ``seed`` (the run seed), never global state.

"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Sequence

import numpy as np

from ..errors import SchedulerError, UserError
from ..job import Job

__all__ = ["AllocState", "Allocator"]

_count_nonzero = np.count_nonzero


class AllocState:
    """Occupancy of ``n_nodes`` nodes: ``free`` mask, ``owner`` job ids (-1 free), ``n_free``."""

    __slots__ = ("free", "owner", "n_free")

    def __init__(self, n_nodes: int):
        self.free = np.ones(n_nodes, dtype=bool)
        self.owner = np.full(n_nodes, -1, dtype=np.int64)
        self.n_free = int(n_nodes)

    @property
    def n_nodes(self) -> int:
        return len(self.free)

    def copy(self) -> "AllocState":
        """An independent copy (subclasses with more state extend this)."""
        c = self.__class__.__new__(self.__class__)
        c.free = self.free.copy()
        c.owner = self.owner.copy()
        c.n_free = self.n_free
        return c

    def mark_busy(self, job_id: int, nodes: np.ndarray) -> None:
        """Mark ``nodes`` allocated to ``job_id``; raises if any is not free (a scheduler bug)."""
        free = self.free
        # (count_nonzero: a fraction of the cost of .all() on the few nodes of most jobs)
        if _count_nonzero(free[nodes]) != len(nodes):
            busy = nodes[~free[nodes]]
            raise SchedulerError(
                f"job {job_id} was given node(s) {busy[:8].tolist()} that are already allocated "
                f"(to job(s) {sorted(set(self.owner[busy].tolist()))[:8]})"
            )
        free[nodes] = False
        self.owner[nodes] = job_id
        self.n_free -= len(nodes)

    def mark_free(self, job_id: int, nodes: np.ndarray) -> None:
        """Free ``nodes`` held by ``job_id``; raises if it does not hold them all."""
        held = self.owner[nodes]
        # Counted in Python for the few nodes of most jobs: far cheaper than numpy's compare.
        if (held.tolist().count(job_id) if len(held) <= 64 else _count_nonzero(held == job_id)) != len(nodes):
            raise SchedulerError(f"job {job_id} released node(s) it does not hold")
        self.free[nodes] = True
        self.owner[nodes] = -1
        self.n_free += len(nodes)

    def __repr__(self) -> str:
        return f"<AllocState {self.n_free}/{len(self.free)} free>"


class Allocator(ABC):
    """Chooses nodes for jobs; see the module docstring for the contract."""

    name: ClassVar[str] = ""
    count_only: ClassVar[bool] = False

    def __init__(self, *, n_nodes: int, topology: Any = None, seed: int = 0, **options: Any):
        if isinstance(n_nodes, bool) or not isinstance(n_nodes, (int, np.integer)) or n_nodes < 1:
            raise UserError(f"allocator {self.name!r}: n_nodes must be an int >= 1, got {n_nodes!r}")
        if options:
            raise UserError(
                f"allocator {self.name!r} takes no option(s) {', '.join(sorted(options))}"
            )
        self.n_nodes = int(n_nodes)
        self.topology = topology
        self.seed = int(seed)

    def new_state(self) -> AllocState:
        """The state of an empty machine."""
        return AllocState(self.n_nodes)

    @abstractmethod
    def select(self, job: Job, state: AllocState) -> np.ndarray | None:
        """The nodes ``job`` would get in ``state`` (sorted int64, ``job.nodes`` long), or None."""

    def commit(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        """Mark ``nodes`` allocated to ``job`` in ``state``."""
        state.mark_busy(job.job_id, nodes)

    def release(self, job: Job, nodes: np.ndarray, state: AllocState) -> None:
        """Free the ``nodes`` of ``job`` in ``state``."""
        state.mark_free(job.job_id, nodes)

    def block(self, placements: "Sequence[tuple[Job, np.ndarray]]", state: AllocState) -> None:
        """Mark the nodes of every ``(job, nodes)`` unavailable in ``state`` (a union)."""
        if not placements:
            return
        nodes = np.concatenate([n for _, n in placements])
        ids = np.repeat(np.array([j.job_id for j, _ in placements], dtype=np.int64),
                        [len(n) for _, n in placements])
        newly = state.free[nodes]
        state.owner[nodes[newly]] = ids[newly]
        state.free[nodes] = False
        state.n_free = int(np.count_nonzero(state.free))

    def fits_empty(self, job: Job) -> bool:
        """Whether ``job`` could ever be placed (on the empty machine)."""
        if self.count_only:
            return job.nodes <= self.n_nodes
        return self.select(job, self.new_state()) is not None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_nodes={self.n_nodes})"
