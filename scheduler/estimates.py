"""Runtime estimates: the run time the scheduler plans with. Registered by name.

Reservations, backfilling and the orderings by length plan with each job's *estimate*
(:attr:`Job.estimate <scheduler.job.Job.estimate>`), which the run's estimate model sets when
the job is submitted. Kills are separate: with ``kill_overrun=True`` a job is killed at its
*request* (``request_time``, the trace's requested time) whatever the model. When kills are
on, every model's estimate is capped at the request, since the scheduler knows the job cannot
outlive it.

=======  ================================================================================
name     estimate
=======  ================================================================================
user     the request (the trace's requested time); the default, and what sites see
exact    the actual run time: the trace run time (the time the job will hold its nodes)
fmodel   the f-model of Mu'alem and Feitelson (IEEE TPDS 12(6), 2001): uniform on
         ``[r, (f + 1) r]`` for a run time ``r`` and a badness factor ``f >= 0``
         (``f = 0`` is ``exact``); ``uniform=False`` gives exactly ``(f + 1) r``
recent   learnt from the user's own recent jobs (Tsafrir, Etsion and Feitelson, IEEE TPDS
         18(6), 2007): the mean actual run time of the last ``history`` (2) jobs of the
         same user that ended before this one was submitted, capped at the request; the
         request when the user has no such job. A job still running when its estimate
         runs out gets its request as estimate (the paper's correction), at that instant
=======  ================================================================================

The f-model's draws come from the scheduler entity's random stream, one per job in
submission order, so a run is reproducible from its seed. An estimate that is too short
(``recent`` before its correction, or any model with ``kill_overrun=False``) is handled as a
job past its estimate: it is expected to end at any moment (see :mod:`scheduler.lifecycle`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pdes.validate import check_float, check_int

from .errors import UserError
from .job import Job

if TYPE_CHECKING:  # pragma: no cover
    from .lifecycle import SchedulerEntity

__all__ = ["EstimateModel", "UserEstimate", "ExactEstimate", "FModel", "RecentUserEstimate",
           "ESTIMATES", "register_estimate", "make_estimate"]


class EstimateModel(ABC):
    """Sets each job's estimate at submission. Subclasses set ``name`` and ``estimate``.

    ``corrects``: the model may raise the estimate of a running job that reaches it
    (:meth:`correct`); the scheduler then sets a timer at each such job's estimate.
    """

    name: ClassVar[str] = ""
    corrects: ClassVar[bool] = False

    def __init__(self, **options: Any):
        if options:
            raise UserError(f"estimate model {self.name!r} takes no option(s) {', '.join(sorted(options))}")
        self.cap = True

    def setup(self, sched: "SchedulerEntity") -> None:
        """Called once by the scheduler entity before the run (``sched.jobs`` in
        submission order, ``sched.kill_overrun`` known)."""
        self.cap = sched.kill_overrun

    @abstractmethod
    def estimate(self, job: Job, now: float) -> float:
        """The estimate (seconds >= 0) of ``job``, submitted at ``now``."""

    def job_ended(self, job: Job, now: float) -> None:
        """Called when ``job`` ends (its ``start_time`` and ``end_time`` are set)."""

    def correct(self, job: Job, now: float) -> float:
        """A new estimate for ``job``, still running at its estimate ``now`` (no change by default)."""
        return job.estimate if job.estimate is not None else job.request_time

    def options(self) -> dict[str, Any]:
        """The model's options, as recorded in results files."""
        return {}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"{type(self).__name__}({opts})"


ESTIMATES: dict[str, type[EstimateModel]] = {}

E = TypeVar("E", bound=type[EstimateModel])


def register_estimate(cls: E) -> E:
    """Class decorator: add an estimate model to :data:`ESTIMATES` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a non-empty class attribute 'name'")
    ESTIMATES[cls.name] = cls
    return cls


def make_estimate(name: "str | EstimateModel", **options: Any) -> EstimateModel:
    """Build the estimate model registered as ``name`` (an :class:`EstimateModel` object is
    returned as it is, and then takes no options)."""
    if isinstance(name, EstimateModel):
        if options:
            raise UserError("give estimate options only with an estimate model's name")
        return name
    try:
        cls = ESTIMATES[name]
    except (KeyError, TypeError):
        raise UserError(f"unknown estimate model {name!r}; valid: {', '.join(ESTIMATES)}") from None
    import inspect

    valid = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "options")]
    bad = sorted(set(options) - set(valid))
    if bad:
        raise UserError(f"estimate model {name!r} takes no option(s) {', '.join(bad)}; "
                        f"valid: {', '.join(valid) if valid else 'none'}")
    return cls(**options)


@register_estimate
class UserEstimate(EstimateModel):
    """The request (the trace's requested time)."""

    name = "user"

    def estimate(self, job: Job, now: float) -> float:
        return job.request_time


@register_estimate
class ExactEstimate(EstimateModel):
    """The actual run time (capped at the request when kills are on)."""

    name = "exact"

    def estimate(self, job: Job, now: float) -> float:
        r = job.run_time
        req = job.request_time
        return req if self.cap and r > req else r


@register_estimate
class FModel(EstimateModel):
    """Mu'alem and Feitelson's f-model: uniform on ``[r, (f + 1) r]`` (see the module docstring)."""

    name = "fmodel"

    def __init__(self, *, f: float = 1.0, uniform: bool = True):
        super().__init__()
        self.f = check_float("estimate model 'fmodel': f (the badness factor)", f, lo=0.0)
        if not isinstance(uniform, bool):
            raise UserError(f"estimate model 'fmodel': uniform must be true or false, got {uniform!r}")
        self.uniform = uniform
        self._draw: dict[int, float] = {}

    def setup(self, sched: "SchedulerEntity") -> None:
        super().setup(sched)
        jobs = sched.jobs
        if self.uniform:
            u = sched.np_rng.random(len(jobs)).tolist()
        else:
            u = [1.0] * len(jobs)
        self._draw = {j.seq: x for j, x in zip(jobs, u)}

    def estimate(self, job: Job, now: float) -> float:
        r = job.run_time
        e = r * (1.0 + self.f * self._draw.get(job.seq, 1.0))
        req = job.request_time
        return req if self.cap and e > req else e

    def options(self) -> dict[str, Any]:
        return {"f": self.f, "uniform": self.uniform}


@register_estimate
class RecentUserEstimate(EstimateModel):
    """Tsafrir, Etsion and Feitelson's prediction from the user's recent jobs (see the
    module docstring)."""

    name = "recent"
    corrects = True

    def __init__(self, *, history: int = 2):
        super().__init__()
        self.history = check_int("estimate model 'recent': history (the jobs averaged)", history, lo=1)
        self._recent: dict[int, deque] = {}

    def setup(self, sched: "SchedulerEntity") -> None:
        super().setup(sched)
        self._recent = {}

    def estimate(self, job: Job, now: float) -> float:
        runs = self._recent.get(job.user)
        req = job.request_time
        if not runs:
            return req
        e = sum(runs) / len(runs)
        return req if e > req else e

    def job_ended(self, job: Job, now: float) -> None:
        runs = self._recent.get(job.user)
        if runs is None:
            runs = self._recent[job.user] = deque(maxlen=self.history)
        runs.append(now - job.start_time)

    def correct(self, job: Job, now: float) -> float:
        return job.request_time

    def options(self) -> dict[str, Any]:
        return {"history": self.history}
