"""Synthetic workloads, assignment of applications to jobs, and foreground jobs.

* :class:`SyntheticWorkload` draws ``n_jobs`` jobs from an inter-arrival, a size and a
  run-time distribution (plus a requested-time factor and a user population), seeded:
  the same spec and seed give the same jobs on every machine.
* :func:`assign_apps` gives jobs an application: one fixed app, or a weighted random mix
  of :class:`AppSpec` (seeded).
* :func:`insert_foreground` places foreground jobs (the jobs under study) among background
  jobs at chosen times, at the submit times of chosen background jobs, or at random points
  of the background trace.

Distributions are small validated value objects with ``sample(rng, n)``:
:class:`Constant`, :class:`Uniform`, :class:`LogUniform`, :class:`Exponential`,
:class:`LogNormal`, :class:`Weibull`, :class:`PowerOfTwo` and :class:`Choice`. Each says the
lowest value it can draw (``lowest()``), so a workload refuses a distribution that can draw
values out of range (:data:`DRAW_RANGES`, :func:`check_draws`) instead of changing draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, Union

import numpy as np

from pdes.validate import check_float, check_int, is_int

from .errors import UserError
from .job import Job, JobStatus

__all__ = [
    "Distribution",
    "Constant",
    "Uniform",
    "LogUniform",
    "Exponential",
    "LogNormal",
    "Weibull",
    "PowerOfTwo",
    "Choice",
    "SyntheticWorkload",
    "AppSpec",
    "assign_apps",
    "insert_foreground",
    "seeded_rng",
    "DRAW_RANGES",
    "check_draws",
]


def seeded_rng(seed: int, *stream: int) -> np.random.Generator:
    """A numpy generator seeded from the run seed and a stream tag (never global state)."""
    if not is_int(seed):
        raise UserError(f"seed must be an integer, got {seed!r}")
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed) & (2**63 - 1), *stream])))


def _num(owner: str, name: str, v: Any, *, low: float | None = None, low_open: bool = False) -> float:
    return check_float(f"{owner}: {name}", v, lo=low, lo_open=low_open)


class Distribution:
    """Base of the distributions: ``sample(rng, n)`` returns ``n`` float64 draws."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def lowest(self) -> tuple[float, bool]:  # pragma: no cover - abstract
        """The infimum of the draws and whether a draw can equal it."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class Constant(Distribution):
    value: float

    def __post_init__(self) -> None:
        _num("Constant", "value", self.value)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, float(self.value))

    def lowest(self) -> tuple[float, bool]:
        return float(self.value), True


@dataclass(frozen=True, kw_only=True)
class Uniform(Distribution):
    low: float
    high: float

    def __post_init__(self) -> None:
        _num("Uniform", "low", self.low)
        _num("Uniform", "high", self.high, low=self.low)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, n)

    def lowest(self) -> tuple[float, bool]:
        return float(self.low), True


@dataclass(frozen=True, kw_only=True)
class LogUniform(Distribution):
    low: float
    high: float

    def __post_init__(self) -> None:
        _num("LogUniform", "low", self.low, low=0.0, low_open=True)
        _num("LogUniform", "high", self.high, low=self.low)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.exp(rng.uniform(math.log(self.low), math.log(self.high), n))

    def lowest(self) -> tuple[float, bool]:
        return float(self.low), True


@dataclass(frozen=True, kw_only=True)
class Exponential(Distribution):
    mean: float

    def __post_init__(self) -> None:
        _num("Exponential", "mean", self.mean, low=0.0, low_open=True)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(self.mean, n)

    def lowest(self) -> tuple[float, bool]:
        return 0.0, False


@dataclass(frozen=True, kw_only=True)
class LogNormal(Distribution):
    median: float
    sigma: float

    def __post_init__(self) -> None:
        _num("LogNormal", "median", self.median, low=0.0, low_open=True)
        _num("LogNormal", "sigma", self.sigma, low=0.0)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.lognormal(math.log(self.median), self.sigma, n)

    def lowest(self) -> tuple[float, bool]:
        # sigma 0 draws the median itself; otherwise any value > 0.
        return (float(self.median), True) if self.sigma == 0 else (0.0, False)


@dataclass(frozen=True, kw_only=True)
class Weibull(Distribution):
    shape: float
    scale: float

    def __post_init__(self) -> None:
        _num("Weibull", "shape", self.shape, low=0.0, low_open=True)
        _num("Weibull", "scale", self.scale, low=0.0, low_open=True)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.scale * rng.weibull(self.shape, n)

    def lowest(self) -> tuple[float, bool]:
        return 0.0, False


@dataclass(frozen=True, kw_only=True)
class PowerOfTwo(Distribution):
    """``2**k`` with ``k`` uniform over the integers from ``log2(low)`` to ``log2(high)``."""

    low: int
    high: int

    def __post_init__(self) -> None:
        for name in ("low", "high"):
            v = getattr(self, name)
            if not is_int(v) or v < 1 or v & (v - 1):
                raise UserError(f"PowerOfTwo: {name} must be a power of two >= 1, got {v!r}")
        if self.high < self.low:
            raise UserError(f"PowerOfTwo: high must be >= low ({self.low}), got {self.high!r}")

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        a = self.low.bit_length() - 1
        b = self.high.bit_length() - 1
        return np.ldexp(1.0, rng.integers(a, b + 1, n))

    def lowest(self) -> tuple[float, bool]:
        return float(self.low), True


@dataclass(frozen=True, kw_only=True)
class Choice(Distribution):
    """One of ``values`` with probabilities proportional to ``weights`` (uniform by default)."""

    values: tuple[float, ...]
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(_num("Choice", "values", v) for v in self.values))
        if not self.values:
            raise UserError("Choice: give at least one value")
        if self.weights is not None:
            w = tuple(_num("Choice", "weights", x, low=0.0) for x in self.weights)
            if len(w) != len(self.values) or sum(w) <= 0:
                raise UserError(f"Choice: weights must be {len(self.values)} numbers >= 0 with a positive sum, got {self.weights!r}")
            object.__setattr__(self, "weights", w)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        p = None
        if self.weights is not None:
            w = np.asarray(self.weights)
            p = w / w.sum()
        return np.asarray(self.values)[rng.choice(len(self.values), n, p=p)]

    def lowest(self) -> tuple[float, bool]:
        # Every value counts, a zero-weight one too: the list says what may be drawn.
        return min(self.values), True


def _dist(owner: str, name: str, d: Any) -> None:
    if not isinstance(d, Distribution):
        raise UserError(f"{owner}: {name} must be a distribution (Exponential, LogNormal, ...), got {d!r}")
    check_draws(f"{owner}: {name}", name, d)


#: What each distribution of a synthetic workload may draw: role -> (bound, whether the bound
#: itself may be drawn, what the values are). A distribution that can draw below its bound is
#: refused (:func:`check_draws`), never clipped.
DRAW_RANGES: dict[str, tuple[float, bool, str]] = {
    "inter_arrival": (0.0, True, "gaps between submissions are seconds >= 0"),
    "size": (1.0, True, "job sizes are processes >= 1 (draws are rounded to the nearest integer): use "
                        "power_of_two, choice, or constant, uniform, loguniform with values >= 1 "
                        "(exponential, lognormal and weibull draw values near 0)"),
    "run_time": (0.0, False, "run times are seconds > 0"),
    "request_factor": (0.0, False, "request factors (requested time / run time) are > 0; a factor below 1 "
                                   "asks for less than the job runs, which kills it at its requested time"),
}


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def check_draws(name: str, role: str, dist: Distribution, *, error: type[Exception] = UserError) -> None:
    """Raise ``error`` (naming ``name``) when ``dist`` can draw a value out of the range of
    ``role``, a key of :data:`DRAW_RANGES`."""
    bound, closed, what = DRAW_RANGES[role]
    lo, attained = dist.lowest()
    if lo > bound or (lo == bound and (closed or not attained)):
        return
    drawn = _fmt(lo) if attained else f"values near {_fmt(lo)}"
    raise error(f"{name}: {type(dist).__name__} can draw {drawn}, out of range: {what}")


@dataclass(frozen=True, kw_only=True)
class SyntheticWorkload:
    """A seeded synthetic workload.

    Jobs arrive with i.i.d. ``inter_arrival`` gaps from ``start_time``; each asks for
    ``size`` processes (rounded to the nearest integer), runs ``run_time`` seconds and
    requests ``run_time * request_factor`` seconds rounded up (at least its run time when
    ``request_factor >= 1``). Users are drawn uniformly from ``users`` ids, each user's
    group is ``user % groups``. Times are rounded to ``resolution`` seconds (1 s by default)
    so schedules compare exactly.

    The distributions must not be able to draw out of range (:data:`DRAW_RANGES`: gaps
    >= 0, sizes >= 1, run times and factors > 0); a distribution that can is refused here.
    Draws in range can still be changed by three rules, each counted by
    :meth:`generate_counted`: a run time that rounds to less than ``min_run_time`` is
    raised to it (``run_time_raised``); a size above ``max_size`` and a run time above
    ``max_run_time`` (both optional caps, None by default) are lowered to the cap
    (``size_capped``, ``run_time_capped``).
    """

    n_jobs: int
    inter_arrival: Distribution = Exponential(mean=600.0)
    size: Distribution = PowerOfTwo(low=1, high=64)
    run_time: Distribution = LogNormal(median=1800.0, sigma=1.2)
    request_factor: Distribution = Constant(value=1.0)
    max_size: int | None = None
    min_run_time: float = 1.0
    max_run_time: float | None = None
    users: int = 16
    groups: int = 4
    start_time: float = 0.0
    cores_per_node: int = 1
    resolution: float = 1.0
    app_name: str = "timekeeper"

    def __post_init__(self) -> None:
        name = "SyntheticWorkload"
        check_int(f"{name}: n_jobs", self.n_jobs, lo=0)
        for d in ("inter_arrival", "size", "run_time", "request_factor"):
            _dist(name, d, getattr(self, d))
        if self.max_size is not None:
            check_int(f"{name}: max_size", self.max_size, lo=1)
        _num(name, "min_run_time", self.min_run_time, low=0.0)
        if self.max_run_time is not None:
            _num(name, "max_run_time", self.max_run_time, low=self.min_run_time)
        for k in ("users", "groups", "cores_per_node"):
            check_int(f"{name}: {k}", getattr(self, k), lo=1)
        _num(name, "start_time", self.start_time, low=0.0)
        _num(name, "resolution", self.resolution, low=0.0, low_open=True)

    def generate(self, seed: int = 0) -> list[Job]:
        """The jobs (ids 1..n_jobs, in submission order)."""
        return self.generate_counted(seed)[0]

    def generate_counted(self, seed: int = 0) -> tuple[list[Job], dict[str, int]]:
        """The jobs, and how many draws each documented rule changed (see the class
        docstring): ``run_time_raised``, ``size_capped``, ``run_time_capped``."""
        n = self.n_jobs
        rng = seeded_rng(seed, 0x5EED)
        res = self.resolution
        # The distributions were checked to draw in range (DRAW_RANGES): nothing is clipped.
        gaps = self.inter_arrival.sample(rng, n)
        submit = self.start_time + np.cumsum(gaps)
        submit = np.round(submit / res) * res
        size = np.rint(self.size.sample(rng, n))
        counts = {"run_time_raised": 0, "size_capped": 0, "run_time_capped": 0}
        if self.max_size is not None:
            counts["size_capped"] = int((size > self.max_size).sum())
            size = np.minimum(size, self.max_size)
        run = np.round(self.run_time.sample(rng, n) / res) * res
        counts["run_time_raised"] = int((run < self.min_run_time).sum())
        run = np.maximum(run, self.min_run_time)
        if self.max_run_time is not None:
            counts["run_time_capped"] = int((run > self.max_run_time).sum())
            run = np.minimum(run, self.max_run_time)
        # A factor > 0 and a run > 0 give a request of at least one resolution step (a run of 0
        # is possible only with min_run_time = 0, and asks for 0 s).
        request = np.ceil(run * self.request_factor.sample(rng, n) / res) * res
        users = rng.integers(0, self.users, n)
        cpn = self.cores_per_node
        jobs = []
        for i in range(n):
            s = int(size[i])
            jobs.append(Job.build(
                job_id=i + 1,
                job_size=s,
                nodes=-(-s // cpn),
                submit_time=float(submit[i]),
                request_time=float(request[i]),
                run_time=float(run[i]),
                app_name=self.app_name,
                user=int(users[i]),
                group=int(users[i]) % self.groups,
            ))
        return jobs, counts


@dataclass(frozen=True, kw_only=True)
class AppSpec:
    """An application for jobs: registered app name, its keyword arguments, mix weight."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise UserError(f"AppSpec: name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.args, Mapping):
            raise UserError(f"AppSpec {self.name!r}: args must be a mapping, got {self.args!r}")
        _num(f"AppSpec {self.name!r}", "weight", self.weight, low=0.0)


AppMix = Union[str, AppSpec, Sequence[AppSpec]]


def assign_apps(jobs: Sequence[Job], apps: AppMix, *, seed: int = 0, foreground: bool | None = False) -> list[Job]:
    """Fresh copies of ``jobs`` with applications assigned.

    ``apps`` is an app name or one :class:`AppSpec` (every job gets it) or a list of
    ``AppSpec`` drawn at random with probabilities proportional to their weights (seeded).
    ``foreground`` selects the jobs that get an app: ``False`` (default) only background
    jobs, ``True`` only foreground jobs, ``None`` all; the others keep theirs.
    """
    if isinstance(apps, str):
        specs = [AppSpec(name=apps)]
    elif isinstance(apps, AppSpec):
        specs = [apps]
    else:
        specs = list(apps)
        if not specs or not all(isinstance(a, AppSpec) for a in specs):
            raise UserError(f"apps must be an app name, an AppSpec or a non-empty list of AppSpec, got {apps!r}")
    weights = np.array([a.weight for a in specs], dtype=float)
    if weights.sum() <= 0:
        raise UserError("the app weights must have a positive sum")
    out = [j.fresh() for j in jobs]
    chosen = [j for j in out if foreground is None or j.foreground == foreground]
    if len(specs) == 1:
        picks = np.zeros(len(chosen), dtype=np.int64)
    else:
        picks = seeded_rng(seed, 0xA995).choice(len(specs), len(chosen), p=weights / weights.sum())
    for j, k in zip(chosen, picks.tolist()):
        a = specs[k]
        j.app_name = a.name
        j.app_args = dict(a.args)
    return out


def insert_foreground(
    background: Sequence[Job],
    foreground: Sequence[Job],
    *,
    at: Sequence[float] | None = None,
    after_jobs: Sequence[int] | None = None,
    seed: int = 0,
    renumber: bool = True,
) -> list[Job]:
    """Background and foreground jobs in one workload (fresh copies, sorted by submit time).

    Each foreground job (marked ``foreground=True``) gets a new submit time: ``at[i]``,
    or the submit time of background job ``after_jobs[i]`` (it arrives after every
    background job submitted at that instant), or, when neither is given, a time drawn uniformly between the
    first and last background submission (seeded). Foreground job ids that clash with
    background ids are renumbered above the largest id (``renumber=False`` raises instead).
    """
    if at is not None and after_jobs is not None:
        raise UserError("give either at= (times) or after_jobs= (background job ids), not both")
    bg = [j.fresh() for j in background]
    fg = [j.fresh() for j in foreground]
    if at is not None:
        if len(at) != len(fg):
            raise UserError(f"at= gives {len(at)} time(s) for {len(fg)} foreground job(s)")
        times = [_num("insert_foreground", "at", t, low=0.0) for t in at]
    elif after_jobs is not None:
        if len(after_jobs) != len(fg):
            raise UserError(f"after_jobs= gives {len(after_jobs)} id(s) for {len(fg)} foreground job(s)")
        by_id = {j.job_id: j for j in bg}
        times = []
        for jid in after_jobs:
            if jid not in by_id:
                raise UserError(f"after_jobs: background job {jid!r} does not exist")
            times.append(by_id[jid].submit_time)
    else:
        if not bg:
            raise UserError("random foreground points need background jobs; give at= times instead")
        lo = min(j.submit_time for j in bg)
        hi = max(j.submit_time for j in bg)
        times = np.round(seeded_rng(seed, 0xF09E).uniform(lo, hi, len(fg))).tolist()
    used = {j.job_id for j in bg}
    next_id = max(used, default=0) + 1
    for j, t in zip(fg, times):
        j.submit_time = float(t)
        j.foreground = True
        j.status = JobStatus.PENDING
        if j.job_id in used:
            if not renumber:
                raise UserError(f"foreground job id {j.job_id} is also a background job id; renumber it")
            j.job_id = next_id
            next_id += 1
        used.add(j.job_id)
        next_id = max(next_id, j.job_id + 1)
    # Stable sort: at equal submit times background jobs come first, so after_jobs holds.
    return sorted(bg + fg, key=lambda j: j.submit_time)
