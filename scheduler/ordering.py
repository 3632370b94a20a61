"""Queue ordering policies: which waiting job comes first. Registered by name.

A policy gives each queued job a sort key (:meth:`OrderingPolicy.key`, smallest first); ties
are broken by arrival order (FCFS), so every order is total and deterministic. A *static*
policy's key is fixed at submission, so the scheduler keeps the queue sorted by insertion;
a *dynamic* policy (``dynamic = True``: its keys change with time or usage) is re-sorted at
every scheduling pass that can start a job. A dynamic policy may compute all keys at once
from the queue's columns (:meth:`OrderingPolicy.keys`, numpy), which keeps passes over queues
of thousands of jobs cheap; :meth:`~OrderingPolicy.order` then uses it too (and the built-in
policies compute :meth:`~OrderingPolicy.key` through it), so every path gives the same keys.

========  ======================================================================  =======
name      order                                                                   dynamic
========  ======================================================================  =======
fcfs      submit time                                                             no
sjf       shortest estimate first (``estimate``)                                  no
ljf       longest estimate first                                                  no
saf       smallest area first: estimated node-hours (``nodes * estimate``)        no
laf       largest area first                                                      no
sbp       score-based priority: ``w_fs*F + w_age*A + w_size*S`` (highest first)  yes
mpp       multi-queue priority: queue priority (highest first), then FCFS         no
wfp       Mira's WFP: ``(wait / request_time)**3 * nodes`` (highest first)        yes
========  ======================================================================  =======

The length-based orders (sjf, ljf, saf, laf) use each job's *estimate*, set at submission by
the run's estimate model (:mod:`scheduler.estimates`): the request (``request_time``) by
default, so that ``saf``/``laf`` then order by requested node-hours; every tie goes to the
earlier submission.

**SBP** (a Slurm-multifactor-style score). ``F`` is the fair-share factor
``2 ** (-(U_u / U) / s_u)`` of the job's user, where ``U_u / U`` is the user's share of the
decayed usage (node-seconds charged when a job ends, decaying with half-life ``half_life``)
and ``s_u = 1 / users seen so far`` the user's (equal) share: a user who used nothing gets
1, a user who used exactly their share 0.5. ``A = min(wait / max_age, 1)`` rewards waiting and
``S = nodes / n_nodes`` favours large jobs. Options: ``weight_fairshare`` (10000),
``weight_age`` (1000), ``weight_size`` (1000), ``max_age`` (7 days), ``half_life`` (7 days).

**MPP** assigns each job at submission to a queue (:class:`QueueSpec`): the queue it names
(``Job.queue_name``) when that queue exists and accepts it, else the highest-priority queue
whose conditions (``min_nodes``, ``max_nodes``, ``max_request``) it meets; a job no queue
accepts is ordered after every queue. Option ``queues``: a list of ``QueueSpec`` or dicts;
the default is ``large`` (priority 2, at least 1/8 of the machine) and ``default``
(priority 1).

**WFP** is the utility function of Mira's Cobalt scheduler: jobs that waited long relative to
their requested time, and large jobs, come first (``request_time`` below 1 s counts as 1 s).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence, TypeVar

import numpy as np

from pdes.validate import check_float, check_int, is_int, is_number

from .errors import UserError
from .job import Job

__all__ = [
    "OrderingPolicy",
    "FCFS",
    "SJF",
    "LJF",
    "SAF",
    "LAF",
    "ScoreBasedPriority",
    "MultiQueuePriority",
    "QueueSpec",
    "WFP",
    "QueueColumns",
    "ORDERINGS",
    "register_ordering",
    "make_ordering",
]

DAY = 86400.0


class OrderingPolicy(ABC):
    """Orders the waiting jobs. Subclasses set ``name``, ``dynamic`` and define ``key``."""

    name: ClassVar[str] = ""
    dynamic: ClassVar[bool] = False

    def __init__(self, *, n_nodes: int, **options: Any):
        n_nodes = check_int(f"ordering {self.name!r}: n_nodes", n_nodes, lo=1)
        if options:
            raise UserError(f"ordering {self.name!r} takes no option(s) {', '.join(sorted(options))}")
        self.n_nodes = n_nodes

    @abstractmethod
    def key(self, job: Job, now: float) -> Any:
        """The sort key of ``job`` at time ``now``; smaller goes first, ties by arrival."""

    def job_submitted(self, job: Job, now: float) -> None:
        """Called when ``job`` enters the queue (before its key is first asked for)."""

    def job_started(self, job: Job, now: float) -> None:
        """Called when ``job`` starts."""

    def job_ended(self, job: Job, now: float) -> None:
        """Called when ``job`` ends (usage accounting)."""

    def keys(self, cols: "QueueColumns", now: float) -> np.ndarray | None:
        """Vectorised keys (float64, one per queued job, smaller first), or None when the
        policy only has :meth:`key`."""
        return None

    def order(self, jobs: Sequence[Job], now: float) -> list[Job]:
        """``jobs`` in priority order at time ``now`` (ties by ``seq``, arrival order)."""
        if type(self).keys is not OrderingPolicy.keys:
            cols = QueueColumns.of(jobs)
            idx = np.lexsort((cols.seq, self.keys(cols, now)))
            return [jobs[i] for i in idx.tolist()]
        key = self.key
        return sorted(jobs, key=lambda j: (key(j, now), j.seq))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class QueueColumns:
    """Columns of the waiting jobs in arrival order (numpy, grown by doubling).

    ``submit``, ``request``, ``nodes``, ``user`` and ``seq`` are views of the first ``n``
    rows; the scheduler keeps them in step with its queue.
    """

    __slots__ = ("n", "_submit", "_request", "_nodes", "_user", "_seq")

    def __init__(self, capacity: int = 64):
        self.n = 0
        self._submit = np.empty(capacity)
        self._request = np.empty(capacity)
        self._nodes = np.empty(capacity, dtype=np.int64)
        self._user = np.empty(capacity, dtype=np.int64)
        self._seq = np.empty(capacity, dtype=np.int64)

    def append(self, job: Job) -> None:
        n = self.n
        if n == len(self._seq):
            for name in QueueColumns.__slots__[1:]:
                a = getattr(self, name)
                b = np.empty(2 * len(a), dtype=a.dtype)
                b[:n] = a[:n]
                setattr(self, name, b)
        self._submit[n] = job.submit_time
        self._request[n] = job.request_time
        self._nodes[n] = job.nodes
        self._user[n] = job.user
        self._seq[n] = job.seq
        self.n = n + 1

    @classmethod
    def of(cls, jobs: Sequence[Job]) -> "QueueColumns":
        """Columns of ``jobs`` (in the given order)."""
        c = cls(max(len(jobs), 1))
        for j in jobs:
            c.append(j)
        return c

    def delete(self, positions: Sequence[int]) -> None:
        """Remove the rows at ``positions``."""
        n = self.n
        keep = np.ones(n, dtype=bool)
        keep[list(positions)] = False
        m = int(keep.sum())
        for name in QueueColumns.__slots__[1:]:
            a = getattr(self, name)
            a[:m] = a[:n][keep]
        self.n = m

    @property
    def submit(self) -> np.ndarray:
        return self._submit[: self.n]

    @property
    def request(self) -> np.ndarray:
        return self._request[: self.n]

    @property
    def nodes(self) -> np.ndarray:
        return self._nodes[: self.n]

    @property
    def user(self) -> np.ndarray:
        return self._user[: self.n]

    @property
    def seq(self) -> np.ndarray:
        return self._seq[: self.n]


ORDERINGS: dict[str, type[OrderingPolicy]] = {}

P = TypeVar("P", bound=type[OrderingPolicy])


def register_ordering(cls: P) -> P:
    """Class decorator: add an ordering policy to :data:`ORDERINGS` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a non-empty class attribute 'name'")
    ORDERINGS[cls.name] = cls
    return cls


def make_ordering(name: str, *, n_nodes: int, **options: Any) -> OrderingPolicy:
    """Build the ordering policy registered as ``name``."""
    try:
        cls = ORDERINGS[name]
    except (KeyError, TypeError):
        raise UserError(f"unknown ordering policy {name!r}; valid: {', '.join(ORDERINGS)}") from None
    return cls(n_nodes=n_nodes, **options)


def _positive(policy: str, name: str, value: Any, *, zero_ok: bool = False) -> float:
    return check_float(f"ordering {policy!r}: {name}", value, lo=0.0, lo_open=not zero_ok)


@register_ordering
class FCFS(OrderingPolicy):
    """First come, first served."""

    name = "fcfs"

    def key(self, job: Job, now: float) -> float:
        return job.submit_time


def _estimate(job: Job) -> float:
    """The job's estimate (its request before a scheduler set one)."""
    e = job.estimate
    return job.request_time if e is None else e


@register_ordering
class SJF(OrderingPolicy):
    """Shortest job first, by estimate (FCFS tie-break)."""

    name = "sjf"

    def key(self, job: Job, now: float) -> tuple[float, float]:
        return (_estimate(job), job.submit_time)


@register_ordering
class LJF(OrderingPolicy):
    """Longest job first, by estimate (FCFS tie-break)."""

    name = "ljf"

    def key(self, job: Job, now: float) -> tuple[float, float]:
        return (-_estimate(job), job.submit_time)


@register_ordering
class SAF(OrderingPolicy):
    """Smallest area first: estimated node-hours, ``nodes * estimate`` (FCFS tie-break)."""

    name = "saf"

    def key(self, job: Job, now: float) -> tuple[float, float]:
        return (job.nodes * _estimate(job), job.submit_time)


@register_ordering
class LAF(OrderingPolicy):
    """Largest area first: estimated node-hours (FCFS tie-break)."""

    name = "laf"

    def key(self, job: Job, now: float) -> tuple[float, float]:
        return (-job.nodes * _estimate(job), job.submit_time)


@register_ordering
class ScoreBasedPriority(OrderingPolicy):
    """Weighted fair-share, age and size score (see the module docstring)."""

    name = "sbp"
    dynamic = True

    def __init__(
        self,
        *,
        n_nodes: int,
        weight_fairshare: float = 10000.0,
        weight_age: float = 1000.0,
        weight_size: float = 1000.0,
        max_age: float = 7 * DAY,
        half_life: float = 7 * DAY,
    ):
        super().__init__(n_nodes=n_nodes)
        self.weight_fairshare = _positive(self.name, "weight_fairshare", weight_fairshare, zero_ok=True)
        self.weight_age = _positive(self.name, "weight_age", weight_age, zero_ok=True)
        self.weight_size = _positive(self.name, "weight_size", weight_size, zero_ok=True)
        self.max_age = _positive(self.name, "max_age", max_age)
        self.half_life = _positive(self.name, "half_life", half_life)
        # Decayed usage kept relative to a reference time: usage(t) = stored * 2**(-(t-ref)/h).
        # All users decay alike, so their shares need no per-event decay of every user.
        # Users get dense indices in order of first submission.
        self._dense: dict[int, int] = {}
        self._usage = np.zeros(16)
        self._total = 0.0
        self._ref = 0.0
        self._fs: np.ndarray | None = None  # F of every known user, until usage changes
        self._lookup: tuple[np.ndarray, np.ndarray] | None = None  # sorted ids -> dense

    def _index(self, user: int) -> int:
        d = self._dense.get(user)
        if d is None:
            d = self._dense[user] = len(self._dense)
            if d == len(self._usage):
                self._usage = np.concatenate([self._usage, np.zeros(len(self._usage))])
            self._fs = None
            self._lookup = None
        return d

    def job_submitted(self, job: Job, now: float) -> None:
        self._index(job.user)

    def job_ended(self, job: Job, now: float) -> None:
        if job.start_time is None:
            return
        amount = job.nodes * (now - job.start_time)
        if amount <= 0:
            return
        x = (now - self._ref) / self.half_life
        if x > 300.0:  # renormalise to keep the stored values finite over long traces
            f = 2.0 ** -x  # may underflow to 0: usage that old no longer counts
            self._usage *= f
            self._total *= f
            self._ref = now
            x = 0.0
        scale = 2.0 ** x
        self._usage[self._index(job.user)] += amount * scale
        self._total += amount * scale
        self._fs = None

    def _fairshares(self) -> np.ndarray:
        """F of every known user (dense order), computed once per usage change."""
        fs = self._fs
        if fs is None:
            n = len(self._dense)
            if self._total <= 0.0:
                fs = np.ones(n)
            else:
                fs = np.exp2(-(self._usage[:n] / self._total) * max(n, 1))
            self._fs = fs
        return fs

    def fairshare(self, user: int) -> float:
        """The fair-share factor F of ``user`` in [0, 1] (1: used nothing yet)."""
        d = self._dense.get(user)
        return 1.0 if d is None else float(self._fairshares()[d])

    def score(self, job: Job, now: float) -> float:
        return float(-self.keys(QueueColumns.of([job]), now)[0])

    def key(self, job: Job, now: float) -> float:
        return -self.score(job, now)

    def keys(self, cols: QueueColumns, now: float) -> np.ndarray:
        lookup = self._lookup
        if lookup is None:
            ids = np.fromiter(self._dense, dtype=np.int64, count=len(self._dense))
            order = np.argsort(ids)
            lookup = self._lookup = (ids[order], order)
        users = cols.user
        pos = np.searchsorted(lookup[0], users)
        pos = np.minimum(pos, max(len(lookup[0]) - 1, 0))
        known = lookup[0][pos] == users if len(lookup[0]) else np.zeros(len(users), bool)
        fs_all = self._fairshares()
        fs = np.where(known, fs_all[lookup[1][pos]] if len(fs_all) else 1.0, 1.0)
        age = np.minimum((now - cols.submit) / self.max_age, 1.0)
        score = (self.weight_fairshare * fs
                 + self.weight_age * age
                 + self.weight_size * cols.nodes / self.n_nodes)
        return -score


@dataclass(frozen=True, kw_only=True)
class QueueSpec:
    """A queue of the multi-queue priority policy and the jobs it accepts."""

    name: str
    priority: float
    min_nodes: int = 1
    max_nodes: int | None = None
    max_request: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise UserError(f"QueueSpec.name must be a non-empty string, got {self.name!r}")
        check_float(f"queue {self.name!r}: priority", self.priority)
        check_int(f"queue {self.name!r}: min_nodes", self.min_nodes, lo=1)
        if self.max_nodes is not None and not (is_int(self.max_nodes) and self.max_nodes >= self.min_nodes):
            raise UserError(f"queue {self.name!r}: max_nodes must be an integer >= min_nodes ({self.min_nodes}), got {self.max_nodes!r}")
        if self.max_request is not None and not (is_number(self.max_request) and self.max_request > 0):
            raise UserError(f"queue {self.name!r}: max_request must be a number of seconds > 0, got {self.max_request!r}")

    def accepts(self, job: Job) -> bool:
        if job.nodes < self.min_nodes:
            return False
        if self.max_nodes is not None and job.nodes > self.max_nodes:
            return False
        return self.max_request is None or job.request_time <= self.max_request


@register_ordering
class MultiQueuePriority(OrderingPolicy):
    """Queue priority first (highest first), FCFS within a queue."""

    name = "mpp"

    def __init__(self, *, n_nodes: int, queues: Sequence[QueueSpec | dict] | None = None):
        super().__init__(n_nodes=n_nodes)
        if queues is None:
            queues = [QueueSpec(name="large", priority=2, min_nodes=max(1, n_nodes // 8)),
                      QueueSpec(name="default", priority=1)]
        specs = []
        for q in queues:
            if isinstance(q, dict):
                try:
                    q = QueueSpec(**q)
                except TypeError as exc:
                    raise UserError(f"ordering 'mpp': bad queue {q!r}: {exc}") from None
            if not isinstance(q, QueueSpec):
                raise UserError(f"ordering 'mpp': a queue must be a QueueSpec or a dict, got {q!r}")
            specs.append(q)
        if not specs:
            raise UserError("ordering 'mpp': give at least one queue")
        names = [q.name for q in specs]
        if len(set(names)) != len(names):
            raise UserError(f"ordering 'mpp': queue names must be unique, got {names}")
        # Highest priority first; equal priorities keep the order given.
        self.queues = sorted(specs, key=lambda q: -q.priority)
        self._by_name = {q.name: q for q in specs}
        self._prio: dict[int, float] = {}
        self.assigned: dict[int, str] = {}

    def queue_of(self, job: Job) -> QueueSpec | None:
        """The queue that takes ``job`` (None when none accepts it)."""
        q = self._by_name.get(job.queue_name)
        if q is not None and q.accepts(job):
            return q
        for q in self.queues:
            if q.accepts(job):
                return q
        return None

    def job_submitted(self, job: Job, now: float) -> None:
        q = self.queue_of(job)
        self._prio[job.job_id] = q.priority if q is not None else -math.inf
        self.assigned[job.job_id] = q.name if q is not None else ""

    def job_started(self, job: Job, now: float) -> None:
        self._prio.pop(job.job_id, None)

    def key(self, job: Job, now: float) -> tuple[float, float]:
        prio = self._prio.get(job.job_id)
        if prio is None:
            q = self.queue_of(job)
            prio = q.priority if q is not None else -math.inf
        return (-prio, job.submit_time)


@register_ordering
class WFP(OrderingPolicy):
    """Mira's WFP utility: ``(wait / request)**3 * nodes``, highest first."""

    name = "wfp"
    dynamic = True

    def key(self, job: Job, now: float) -> float:
        return float(self.keys(QueueColumns.of([job]), now)[0])

    def keys(self, cols: QueueColumns, now: float) -> np.ndarray:
        x = (now - cols.submit) / np.maximum(cols.request, 1.0)
        return -(x * x * x) * cols.nodes
