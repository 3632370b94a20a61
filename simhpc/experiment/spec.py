"""An experiment as data: keyword-only, validated dataclasses a Python user builds directly.

The TOML file format (:mod:`simhpc.experiment.toml_io`) builds exactly these objects, and
:meth:`Experiment.to_dict` turns them back into plain data (TOML text is stored in every
results file, so a run can be repeated from its results).

Units: quantities are SI floats inside; wherever a user types one, a string with a unit is
accepted and parsed here ("4GB/s", "700ns", "2h", "64KiB").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from models.network import NetworkConfig
from models.units import UnitError, parse_time

from pdes.validate import check_bool, check_choice, check_float, check_int, check_seed, check_text, is_number
from scheduler.errors import UserError

from ..traces import check_trace

__all__ = [
    "ConfigError",
    "DistSpec",
    "MachineSpec",
    "WorkloadSpec",
    "AppChoice",
    "ForegroundSpec",
    "SchedulerSpec",
    "MetricsSpec",
    "OutputSpec",
    "Experiment",
    "DISTRIBUTIONS",
]


class ConfigError(UserError):
    """An invalid experiment configuration: names the key (and the file) and the valid values."""


def _where(path: str) -> str:
    return path or "experiment"


def _time(path: str, v: Any, *, allow_inf: bool = False) -> float:
    if allow_inf and (v is None or v == "inf" or v == math.inf):
        return math.inf
    try:
        t = parse_time(v, what=path)
    except UnitError as exc:
        raise ConfigError(str(exc)) from None
    if not t >= 0 or not math.isfinite(t):
        raise ConfigError(f"{path}: must be a time >= 0, got {v!r}")
    return t


# Messages about a key read "<key>: <what is wrong>", like the file's other messages: the
# shared checks are given the name "<key>:" ("<key>: value" for choices).
def _int(path: str, v: Any, low: int = 0) -> int:
    return check_int(f"{path}:", v, lo=low, error=ConfigError)


def _num(path: str, v: Any, low: float | None = None) -> float:
    return check_float(f"{path}:", v, lo=low, error=ConfigError)


def _name(path: str, v: Any, valid: Mapping | tuple | list | None = None) -> str:
    if not isinstance(v, str) or not v:
        raise ConfigError(f"{path}: must be a non-empty string, got {v!r}")
    if valid is not None:
        check_choice(f"{path}: value", v, sorted(valid), error=ConfigError)
    return v


# -------------------------------------------------------------------------- distributions
# name -> (workload class name, parameters); parameters marked "time" accept unit strings when
# the distribution describes a duration.
DISTRIBUTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "constant": ("Constant", ("value",)),
    "uniform": ("Uniform", ("low", "high")),
    "loguniform": ("LogUniform", ("low", "high")),
    "exponential": ("Exponential", ("mean",)),
    "lognormal": ("LogNormal", ("median", "sigma")),
    "weibull": ("Weibull", ("shape", "scale")),
    "power_of_two": ("PowerOfTwo", ("low", "high")),
    "choice": ("Choice", ("values", "weights")),
}
_SHAPE_PARAMS = {"sigma", "shape", "weights"}


@dataclass(frozen=True, kw_only=True)
class DistSpec:
    """A distribution: ``dist`` (one of :data:`DISTRIBUTIONS`) and its parameters.

    For durations (``time=True``) the location parameters accept unit strings ("10min").
    """

    dist: str
    params: Mapping[str, Any] = field(default_factory=dict)
    time: bool = False
    path: str = ""

    def __post_init__(self) -> None:
        p = _where(self.path)
        _name(f"{p}.dist", self.dist, DISTRIBUTIONS)
        _, names = DISTRIBUTIONS[self.dist]
        given = dict(self.params)
        unknown = [k for k in given if k not in names]
        if unknown:
            raise ConfigError(f"{p}: unknown key(s) {', '.join(unknown)} for dist {self.dist!r}; valid: {', '.join(names)}")
        out: dict[str, Any] = {}
        for k in names:
            if k not in given:
                if k == "weights":
                    continue
                raise ConfigError(f"{p}: dist {self.dist!r} needs {k!r}; parameters: {', '.join(names)}")
            v = given[k]
            if k in ("values", "weights"):
                if not isinstance(v, (list, tuple)) or not v:
                    raise ConfigError(f"{p}.{k}: must be a non-empty list, got {v!r}")
                conv = (lambda x, kk=k: _time(f"{p}.{kk}", x)) if (self.time and k == "values") else (lambda x, kk=k: _num(f"{p}.{kk}", x))
                out[k] = tuple(conv(x) for x in v)
            elif self.dist == "power_of_two":
                out[k] = _int(f"{p}.{k}", v, 1)
            elif self.time and k not in _SHAPE_PARAMS:
                out[k] = _time(f"{p}.{k}", v)
            else:
                out[k] = _num(f"{p}.{k}", v)
        object.__setattr__(self, "params", out)
        self.build()  # the distribution's own checks (e.g. low <= high), naming the key now

    def build(self) -> Any:
        """The workload distribution object."""
        from scheduler import workload as w

        cls_name, _ = DISTRIBUTIONS[self.dist]
        try:
            return getattr(w, cls_name)(**self.params)
        except UserError as exc:
            raise ConfigError(f"{_where(self.path)}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return {"dist": self.dist, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in self.params.items()}}

    @classmethod
    def parse(cls, path: str, v: Any, *, time: bool) -> "DistSpec":
        if isinstance(v, DistSpec):
            return v
        if isinstance(v, str) or is_number(v):
            return cls(dist="constant", params={"value": v}, time=time, path=path)
        if not isinstance(v, Mapping) or "dist" not in v:
            raise ConfigError(f"{path}: give a distribution table, e.g. {{ dist = \"exponential\", mean = \"60s\" }}, got {v!r}")
        d = dict(v)
        return cls(dist=d.pop("dist"), params=d, time=time, path=path)


# -------------------------------------------------------------------------------- machine
@dataclass(frozen=True, kw_only=True)
class MachineSpec:
    """The machine: a preset by name, or a topology described inline.

    ``topology`` is ``{"family": "fattree" | "torus" | "dragonfly", ...}`` with the
    family's constructor parameters (a fat-tree may give ``radix``/``levels``/``pods``/
    ``taper`` for the radix-based shape). ``cores_per_node``, ``flops_per_node`` and
    ``mem_bw_per_node`` override the preset's (or are required without a preset).
    """

    preset: str | None = None
    name: str | None = None
    topology: Mapping[str, Any] | None = None
    routing: str | None = None
    cores_per_node: int | None = None
    flops_per_node: float | str | None = None
    mem_bw_per_node: float | str | None = None

    def __post_init__(self) -> None:
        if (self.preset is None) == (self.topology is None):
            raise ConfigError("machine: give either preset = \"NAME\" or a [machine.topology] table (not both)")
        if self.name is not None:
            check_text("machine.name:", self.name, error=ConfigError)
        if self.preset is not None:
            from models.presets import PRESETS

            _name("machine.preset", self.preset, PRESETS)
        if self.topology is not None:
            from models.topology import FAMILIES

            if not isinstance(self.topology, Mapping):
                raise ConfigError(f"machine.topology: must be a table, got {self.topology!r}")
            family = _name("machine.topology.family", self.topology.get("family"), FAMILIES)
            _check_topology_keys(family, FAMILIES[family], self.topology)
            for k in ("flops_per_node", "mem_bw_per_node"):
                if getattr(self, k) is None:
                    raise ConfigError(f"machine.{k}: required for an inline topology (e.g. \"500GF\", \"100GB/s\")")
        if self.cores_per_node is not None:
            _int("machine.cores_per_node", self.cores_per_node, 1)
        self.build()  # validate every parameter now, naming the key

    def build(self) -> Any:
        """The :class:`models.presets.Machine`."""
        from models.errors import TopologyError
        from models.presets import Machine, get_machine
        from models.topology import FAMILIES, FatTree

        try:
            if self.preset is not None:
                m = get_machine(self.preset)
                topo = m.topology
                cpn = self.cores_per_node or m.cores_per_node
                flops = self.flops_per_node if self.flops_per_node is not None else m.flops_per_node
                mem = self.mem_bw_per_node if self.mem_bw_per_node is not None else m.mem_bw_per_node
                name = self.name or m.name
                desc, cite = m.description, m.citation
            else:
                params = {k: _tuples(v) for k, v in self.topology.items() if k != "family"}
                fam = FAMILIES[self.topology["family"]]
                if fam is FatTree and "radix" in params and "down" not in params:
                    topo = FatTree.from_radix(**params)
                else:
                    topo = fam(**params)
                cpn = self.cores_per_node or 1
                flops, mem = self.flops_per_node, self.mem_bw_per_node
                name = self.name or f"custom-{self.topology['family']}"
                desc, cite = "inline topology", ""
            if self.routing is not None and self.routing != topo.routing:
                if self.routing not in topo.ROUTINGS:
                    raise ConfigError(f"machine.routing: unknown value {self.routing!r} for a {topo.name}; "
                                      f"valid: {', '.join(topo.ROUTINGS)}")
                topo = topo.replace(routing=self.routing)
            return Machine(name=name, topology=topo, cores_per_node=cpn, flops_per_node=flops,
                           mem_bw_per_node=mem, description=desc, citation=cite)
        except (TopologyError, TypeError) as exc:
            raise ConfigError(f"machine: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({
            "preset": self.preset, "name": self.name, "routing": self.routing, "cores_per_node": self.cores_per_node,
            "flops_per_node": self.flops_per_node, "mem_bw_per_node": self.mem_bw_per_node,
            "topology": _lists(dict(self.topology)) if self.topology is not None else None,
        })


def _check_topology_keys(family: str, cls: type, topology: Mapping[str, Any]) -> None:
    """Unknown and missing keys of an inline topology, named with the family's parameters."""
    import inspect

    params = [p for p in inspect.signature(cls.__init__).parameters.values()
              if p.name != "self" and p.kind is not p.VAR_KEYWORD]
    valid = ["family", *(p.name for p in params)]
    unknown = [k for k in topology if k not in valid]
    if unknown:
        raise ConfigError(f"machine.topology: unknown key(s) {', '.join(map(repr, unknown))} for a {family}; "
                          f"valid: {', '.join(valid)}")
    # A radix-shaped fat-tree derives its levels' port counts from the radix.
    shaped = family == "fattree" and "radix" in topology
    missing = [p.name for p in params if p.default is p.empty and p.name not in topology and not shaped]
    if missing:
        raise ConfigError(f"machine.topology: a {family} needs {', '.join(map(repr, missing))}; "
                          f"valid: {', '.join(valid)}")


def _tuples(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_tuples(x) for x in v)
    return v


def _lists(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_lists(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _lists(x) for k, x in v.items()}
    return v


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# ------------------------------------------------------------------------------- workload
WORKLOAD_KINDS = ("synthetic", "swf")
#: The keys of each workload kind (besides ``kind``).
SYNTHETIC_KEYS = ("jobs", "inter_arrival", "size", "run_time", "request_factor", "users", "resolution")
SWF_KEYS = ("trace", "limit", "size_scale", "time_scale", "skip_malformed")


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    """Where the jobs come from.

    ``kind = "synthetic"``: ``jobs`` jobs with i.i.d. ``inter_arrival`` gaps, ``size``
    (processes), ``run_time`` and ``request_factor`` (requested = run time x factor), drawn
    from the run seed. ``kind = "swf"``: the jobs of ``trace`` (an SWF file; a relative path
    is relative to the experiment file; ``"builtin:NAME"`` is a trace shipped with simhpc,
    see :mod:`simhpc.traces`), optionally the first ``limit``, with sizes
    multiplied by ``size_scale`` and times by ``time_scale`` (to fit a trace to another
    machine). Job sizes are processes; a job needs ceil(size / ranks per node) nodes.

    ``load_factor`` (either kind, default 1) divides every inter-arrival time of the
    background jobs (:func:`scheduler.load.scale_load`): a load sweep of one workload.

    The keys of one kind are refused with the other (``jobs`` does not cut a trace: use
    ``limit``); unset keys of this kind take their defaults (200 jobs, 16 users, the
    distributions below; scales 1, ``skip_malformed`` false), the other kind's stay None.
    """

    kind: str = "synthetic"
    jobs: int | None = None
    inter_arrival: Any = None
    size: Any = None
    run_time: Any = None
    request_factor: Any = None
    users: int | None = None
    resolution: Any = None
    trace: str | None = None
    limit: int | None = None
    size_scale: float | None = None
    time_scale: float | None = None
    skip_malformed: bool | None = None
    load_factor: float = 1.0

    def __post_init__(self) -> None:
        _name("workload.kind", self.kind, WORKLOAD_KINDS)
        from scheduler.load import check_load_factor

        try:
            object.__setattr__(self, "load_factor", check_load_factor(self.load_factor, "workload.load_factor"))
        except UserError as exc:
            raise ConfigError(str(exc)) from None
        mine, other = ((SYNTHETIC_KEYS, SWF_KEYS) if self.kind == "synthetic" else (SWF_KEYS, SYNTHETIC_KEYS))
        given = [k for k in other if getattr(self, k) is not None]
        if given:
            other_kind = "swf" if self.kind == "synthetic" else "synthetic"
            hint = " (to use part of a trace, give limit)" if "jobs" in given else ""
            raise ConfigError(f"workload.{given[0]}: only valid with kind = \"{other_kind}\"{hint}; "
                              f"valid for kind = \"{self.kind}\": kind, {', '.join(mine)}")
        if self.kind == "synthetic":
            self._synthetic()
        else:
            self._swf()

    def _synthetic(self) -> None:
        for k, v in (("jobs", 200), ("users", 16)):
            if getattr(self, k) is None:
                object.__setattr__(self, k, v)
        _int("workload.jobs", self.jobs, 1)
        _int("workload.users", self.users, 1)
        # Times are rounded to this grid (1 s: whole seconds, as in traces); millisecond-scale
        # workloads of communicating apps need a finer one.
        res = 1.0 if self.resolution is None else _time("workload.resolution", self.resolution)
        if not res > 0:
            raise ConfigError(f"workload.resolution: must be a time > 0, got {self.resolution!r}")
        object.__setattr__(self, "resolution", res)
        defaults = {
            "inter_arrival": ({"dist": "exponential", "mean": 600.0}, True),
            "size": ({"dist": "power_of_two", "low": 1, "high": 16}, False),
            "run_time": ({"dist": "lognormal", "median": 1800.0, "sigma": 1.0}, True),
            "request_factor": ({"dist": "uniform", "low": 1.0, "high": 3.0}, False),
        }
        from scheduler.workload import check_draws

        for k, (dflt, is_time) in defaults.items():
            v = getattr(self, k)
            d = DistSpec.parse(f"workload.{k}", dflt if v is None else v, time=is_time)
            # A distribution that can draw out of range is refused, never clipped at run time.
            check_draws(f"workload.{k}", k, d.build(), error=ConfigError)
            object.__setattr__(self, k, d)

    def _swf(self) -> None:
        if not isinstance(self.trace, str) or not self.trace:
            raise ConfigError("workload.trace: a swf workload needs trace = \"path/to/file.swf[.gz]\"")
        check_trace("workload.trace", self.trace, error=ConfigError)
        for k, v in (("size_scale", 1.0), ("time_scale", 1.0), ("skip_malformed", False)):
            if getattr(self, k) is None:
                object.__setattr__(self, k, v)
        if self.limit is not None:
            _int("workload.limit", self.limit, 1)
        _num("workload.size_scale", self.size_scale, 0.0)
        _num("workload.time_scale", self.time_scale, 0.0)
        if self.size_scale <= 0 or self.time_scale <= 0:
            raise ConfigError("workload.size_scale and workload.time_scale must be > 0")
        check_bool("workload.skip_malformed:", self.skip_malformed, error=ConfigError)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind}
        if self.kind == "synthetic":
            d.update(jobs=self.jobs, users=self.users, resolution=self.resolution)
            for k in ("inter_arrival", "size", "run_time", "request_factor"):
                d[k] = getattr(self, k).to_dict()
        else:
            d.update(_drop_none({"trace": self.trace, "limit": self.limit}))
            d.update(size_scale=self.size_scale, time_scale=self.time_scale, skip_malformed=self.skip_malformed)
        if self.load_factor != 1.0:
            d["load_factor"] = self.load_factor
        return d


# ----------------------------------------------------------------------------------- apps
def _flag(path: str, v: Any) -> None:
    if v is not None:
        check_bool(f"{path}:", v, error=ConfigError)


@dataclass(frozen=True, kw_only=True)
class AppChoice:
    """One entry of the app mix of background jobs: app name, its arguments, mix weight.

    ``request_time`` (optional) replaces the job's requested time for jobs given this app:
    a skeleton's runtime emerges from the simulation, so its wall-time limit is best set
    for the app rather than taken from the workload's run-time draw. ``comm_sensitive``
    (optional) marks the jobs given this app as communication-sensitive or not
    (``sched_args["comm_sensitive"]``, read by the partition allocators' CFCA and Hybrid
    policies); unset, those allocators draw it (their ``sensitive_fraction``).

    ``args`` are checked when the entry is made: names against the app's parameters, and
    each value by the app's own checks (``@app(checks=...)``), so a bad value is refused
    here rather than failing every job of the app. ``path`` is where the entry is written
    (``"apps.2"`` for the third ``[[apps]]`` table of a file; default ``apps[NAME]``), for
    the messages.
    """

    name: str
    weight: float = 1.0
    args: Mapping[str, Any] = field(default_factory=dict)
    request_time: float | str | None = None
    comm_sensitive: bool | None = None
    path: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        from apps.errors import AppConfigError
        from apps.registry import get_app

        where = self.path or "apps"
        _name(f"{where}.name", self.name)
        try:
            get_app(self.name)
        except AppConfigError as exc:  # the registry's error names the valid apps
            raise ConfigError(f"{where}.name: {exc}") from None
        where = self.path or f"apps[{self.name}]"
        _num(f"{where}.weight", self.weight, 0.0)
        if not isinstance(self.args, Mapping):
            raise ConfigError(f"{where}.args: must be a table, got {self.args!r}")
        if self.request_time is not None:
            object.__setattr__(self, "request_time", _time(f"{where}.request_time", self.request_time))
        _flag(f"{where}.comm_sensitive", self.comm_sensitive)
        if self.name != "timekeeper":  # a timekeeper job runs for its workload run time
            from apps.registry import bind_args

            try:
                bind_args(self.name, dict(self.args), key=f"{where}.args")
            except AppConfigError as exc:
                raise ConfigError(str(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"name": self.name, "weight": self.weight, "args": _lists(dict(self.args)) or None,
                           "request_time": self.request_time, "comm_sensitive": self.comm_sensitive})


@dataclass(frozen=True, kw_only=True)
class ForegroundSpec:
    """Foreground jobs (the jobs under study) inserted among the background jobs.

    ``count`` jobs of app ``app`` with ``ranks`` processes each, submitted at ``at``
    (times), or together with background job ``after_job``, or at random points of the
    background workload (the default, drawn from the seed). ``comm_sensitive`` and ``path``
    (``"foreground.0"``; default ``foreground``) as for :class:`AppChoice`; ``args`` are
    checked with the app's checks for ``ranks`` ranks.
    """

    app: str
    ranks: int
    args: Mapping[str, Any] = field(default_factory=dict)
    request_time: float | str = 3600.0
    count: int = 1
    at: tuple[float, ...] | None = None
    after_job: int | None = None
    comm_sensitive: bool | None = None
    path: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        from apps.errors import AppConfigError
        from apps.registry import bind_args, get_app

        where = self.path or "foreground"
        try:
            get_app(self.app)
        except AppConfigError as exc:  # the registry's error names the valid apps
            raise ConfigError(f"{where}.app: {exc}") from None
        _int(f"{where}.ranks", self.ranks, 1)
        _int(f"{where}.count", self.count, 1)
        if not isinstance(self.args, Mapping):
            raise ConfigError(f"{where}.args: must be a table, got {self.args!r}")
        try:
            bind_args(self.app, dict(self.args), size=self.ranks, key=f"{where}.args")
        except AppConfigError as exc:
            raise ConfigError(str(exc)) from None
        object.__setattr__(self, "request_time", _time(f"{where}.request_time", self.request_time))
        _flag(f"{where}.comm_sensitive", self.comm_sensitive)
        if self.at is not None:
            at = self.at if isinstance(self.at, (list, tuple)) else [self.at]
            object.__setattr__(self, "at", tuple(_time(f"{where}.at", t) for t in at))
            if len(self.at) not in (1, self.count):
                raise ConfigError(f"{where}.at: give one time or {self.count} (count), got {len(self.at)}")
        if self.after_job is not None:
            _int(f"{where}.after_job", self.after_job, 0)
            if self.at is not None:
                raise ConfigError(f"{where}: give at or after_job, not both")

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"app": self.app, "ranks": self.ranks, "args": _lists(dict(self.args)) or None,
                           "request_time": self.request_time, "count": self.count,
                           "at": list(self.at) if self.at is not None else None, "after_job": self.after_job,
                           "comm_sensitive": self.comm_sensitive})


# ------------------------------------------------------------------------------ scheduler
from apps.mapping import JOB_MAPPINGS as MAPPINGS  # noqa: E402 - next to its use


@dataclass(frozen=True, kw_only=True)
class SchedulerSpec:
    """The scheduler's three parts plus rank mapping and MPI options.

    ``ranks_per_node`` (default: the machine's cores per node) decides how many nodes a job
    of ``size`` processes needs; ``ideal_baseline`` runs every app job again alone on the
    ideal network on the same nodes after the main run (the ``ideal_run`` column), and
    ``alone_baseline`` alone on the experiment's own network model (``alone_run``: what its
    neighbours cost it). ``estimate`` names the runtime estimate model the scheduler plans
    with (:mod:`scheduler.estimates`: ``user``, the request, by default), with
    ``estimate_options``.
    """

    order: str = "fcfs"
    backfill: str = "easy"
    allocator: str = "firstfree"
    allocator_options: Mapping[str, Any] = field(default_factory=dict)
    order_options: Mapping[str, Any] = field(default_factory=dict)
    backfill_options: Mapping[str, Any] = field(default_factory=dict)
    estimate: str = "user"
    estimate_options: Mapping[str, Any] = field(default_factory=dict)
    kill_overrun: bool = True
    ranks_per_node: int | None = None
    mapping: str = "block"
    ideal_baseline: bool = True
    alone_baseline: bool = False
    eager_threshold: int | str = 65536
    algorithms: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from scheduler.allocators import ALLOCATORS
        from scheduler.backfill import BACKFILLS
        from scheduler.estimates import ESTIMATES
        from scheduler.ordering import ORDERINGS

        _name("scheduler.order", self.order, ORDERINGS)
        _name("scheduler.backfill", self.backfill, BACKFILLS)
        _name("scheduler.estimate", self.estimate, ESTIMATES)
        _name("scheduler.allocator", self.allocator, ALLOCATORS)
        _name("scheduler.mapping", self.mapping, MAPPINGS)
        for k in ("allocator_options", "order_options", "backfill_options", "estimate_options", "algorithms"):
            if not isinstance(getattr(self, k), Mapping):
                raise ConfigError(f"scheduler.{k}: must be a table, got {getattr(self, k)!r}")
        for k in ("kill_overrun", "ideal_baseline", "alone_baseline"):
            if not isinstance(getattr(self, k), bool):
                raise ConfigError(f"scheduler.{k}: must be true or false, got {getattr(self, k)!r}")
        from scheduler.estimates import make_estimate

        try:
            make_estimate(self.estimate, **dict(self.estimate_options))
        except UserError as exc:
            raise ConfigError(f"scheduler.estimate_options: {exc}") from None
        if self.ranks_per_node is not None:
            _int("scheduler.ranks_per_node", self.ranks_per_node, 1)
        from apps.node import MpiOptions, whole_bytes

        object.__setattr__(self, "eager_threshold",
                           whole_bytes("scheduler.eager_threshold", self.eager_threshold, error=ConfigError))

        try:
            MpiOptions(eager_threshold=self.eager_threshold, algorithms=dict(self.algorithms))
        except Exception as exc:  # noqa: BLE001 - names the collective and valid algorithms
            raise ConfigError(f"scheduler.algorithms: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        for k in ("allocator_options", "order_options", "backfill_options", "estimate_options", "algorithms"):
            d[k] = _lists(dict(d[k]))
            if not d[k]:
                del d[k]
        return _drop_none(d)


@dataclass(frozen=True, kw_only=True)
class MetricsSpec:
    """How the run is measured: ``tau`` (seconds, default 10) of bounded slowdown, and a
    warm-up / cool-down trim of the jobs the per-job figures cover (``skip_first``,
    ``skip_last``: jobs in submission order; ``window``: ``"START:END"`` submit times, END
    may be left open). Trimmed jobs are simulated all the same (see :mod:`scheduler.trim`)."""

    tau: float | str = 10.0
    skip_first: int = 0
    skip_last: int = 0
    window: Any = None

    def __post_init__(self) -> None:
        from scheduler.metrics import check_tau
        from scheduler.trim import Trim

        object.__setattr__(self, "tau", _time("metrics.tau", self.tau))
        try:
            object.__setattr__(self, "tau", check_tau(self.tau))
            trim = Trim(skip_first=self.skip_first, skip_last=self.skip_last, window=self.window)
        except UserError as exc:
            raise ConfigError(f"metrics: {exc}") from None
        object.__setattr__(self, "window", trim.window)

    @property
    def trim(self) -> Any:
        """The :class:`scheduler.trim.Trim` of these settings."""
        from scheduler.trim import Trim

        return Trim(skip_first=self.skip_first, skip_last=self.skip_last, window=self.window)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"tau": self.tau, "skip_first": self.skip_first, "skip_last": self.skip_last}
        if self.window is not None:
            a, b = self.window
            d["window"] = f"{a!r}:{'' if b == math.inf else repr(b)}"
        return d


@dataclass(frozen=True, kw_only=True)
class OutputSpec:
    """Where results go: an HDF5 file (``None``: not written)."""

    path: str | None = "results.h5"

    def __post_init__(self) -> None:
        if self.path is not None and (not isinstance(self.path, str) or not self.path):
            raise ConfigError(f"output.path: must be a file name, got {self.path!r}")

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"path": self.path})


# ----------------------------------------------------------------------------- experiment
@dataclass(frozen=True, kw_only=True)
class Experiment:
    """A whole experiment: machine + network + workload + apps + scheduler + seed + output."""

    name: str = "experiment"
    seed: int = 0
    end_time: float | str = math.inf
    machine: MachineSpec
    network: NetworkConfig = field(default_factory=NetworkConfig)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    apps: tuple[AppChoice, ...] = (AppChoice(name="timekeeper"),)
    foreground: tuple[ForegroundSpec, ...] = ()
    scheduler: SchedulerSpec = field(default_factory=SchedulerSpec)
    metrics: MetricsSpec = field(default_factory=MetricsSpec)
    output: OutputSpec = field(default_factory=OutputSpec)
    base_dir: str = field(default=".", compare=False)

    def __post_init__(self) -> None:
        # Stored in the results file and printed: one line of text, found before the run.
        check_text("name:", self.name, error=ConfigError)
        object.__setattr__(self, "seed", check_seed("seed:", self.seed, error=ConfigError))
        object.__setattr__(self, "end_time", _time("end_time", self.end_time, allow_inf=True))
        if self.end_time == 0:
            raise ConfigError("end_time: must be > 0")
        for k, cls in (("machine", MachineSpec), ("network", NetworkConfig), ("workload", WorkloadSpec),
                       ("scheduler", SchedulerSpec), ("metrics", MetricsSpec), ("output", OutputSpec)):
            if not isinstance(getattr(self, k), cls):
                raise ConfigError(f"{k}: must be a {cls.__name__}, got {type(getattr(self, k)).__name__}")
        object.__setattr__(self, "apps", tuple(self.apps))
        object.__setattr__(self, "foreground", tuple(self.foreground))
        if not self.apps:
            raise ConfigError("apps: give at least one app (e.g. [[apps]] name = \"timekeeper\")")
        if sum(a.weight for a in self.apps) <= 0:
            raise ConfigError("apps: the weights must have a positive sum")

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the TOML tables); :func:`~simhpc.experiment.toml_io.dumps` writes it."""
        net = self.network
        d: dict[str, Any] = {"name": self.name, "seed": self.seed}
        if math.isfinite(self.end_time):
            d["end_time"] = self.end_time
        d["machine"] = self.machine.to_dict()
        d["network"] = {
            "model": net.model, "chunk_size": net.chunk_size, "send_overhead": net.send_overhead,
            "recv_overhead": net.recv_overhead, "intra_node_latency": net.intra_node_latency,
        }
        if net.intra_node_bw is not None:
            d["network"]["intra_node_bw"] = net.intra_node_bw
        if net.flow_segment is not None:
            d["network"]["flow_segment"] = net.flow_segment
        if net.flow_quantum is not None:
            d["network"]["flow_quantum"] = net.flow_quantum
        if net.buffers != "infinite":
            d["network"]["buffers"] = net.buffers
            d["network"]["buffer_size"] = net.buffer_size
            if net.vcs is not None:
                d["network"]["vcs"] = net.vcs
        d["workload"] = self.workload.to_dict()
        d["apps"] = [a.to_dict() for a in self.apps]
        if self.foreground:
            d["foreground"] = [f.to_dict() for f in self.foreground]
        d["scheduler"] = self.scheduler.to_dict()
        if self.metrics != MetricsSpec():
            d["metrics"] = self.metrics.to_dict()
        d["output"] = self.output.to_dict()
        return d
