"""Interference studies as data: keyword-only, validated dataclasses and their TOML form.

An :class:`InterferenceStudy` places a foreground job (the job under study) among ``k``
background jobs, repeats that over seeds, and compares the foreground's runtime with its
runtime alone (same nodes, no background) and on the ideal network. A TOML file builds the
same objects::

    [study]
    name = "tiny"
    mode = "static"            # or "trace"
    k = [0, 1, 2, 4]           # numbers of background jobs (static mode)
    seeds = 3                  # a count (seeds 0, 1, 2) or a list
    allocator = "random"
    ranks_per_node = 1

    [machine]
    preset = "tiny-torus"

    [foreground]
    app = "even-odd"
    ranks = 16
    args = { iters = 5, nbytes = "64KiB" }

    [[background]]
    app = "pairs"
    ranks = [8, 16]            # a count, a [low, high] range, or fraction = [0.05, 0.4]
    args = { iters = 5 }

``[machine]``, ``[network]`` and ``[workload]`` take the keys of an experiment file
(:mod:`simhpc.experiment`). Quantities with units are strings parsed at the boundary.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from models.network import NetworkConfig, NetworkConfigError
from models.units import UnitError, parse_time

from pdes.validate import check_choice, check_float, check_int, check_seed, check_text, is_int
from scheduler.errors import UserError
from ..experiment.spec import ConfigError, MachineSpec, WorkloadSpec

__all__ = [
    "BackgroundApp",
    "ForegroundJob",
    "InterferenceStudy",
    "MODES",
    "PARALLEL",
    "StudyConfigError",
    "load_study",
    "loads_study",
    "dumps_study",
    "study_from_dict",
]

MODES = ("static", "trace")
#: How a study uses MPI ranks: deal (k, seed) runs out over them, or run each simulation in parallel.
PARALLEL = ("runs", "simulation")
from apps.mapping import JOB_MAPPINGS as MAPPINGS  # noqa: E402 - next to its use

TOP_KEYS = ("study", "machine", "network", "foreground", "background", "workload")
STUDY_KEYS = ("name", "mode", "k", "seeds", "allocator", "allocator_options", "ranks_per_node", "mapping",
              "hot_links", "end_time", "parallel", "eager_threshold", "algorithms", "order", "backfill")
NETWORK_KEYS = ("model", "chunk_size", "flow_segment", "flow_quantum", "send_overhead", "recv_overhead", "intra_node_bw",
                "intra_node_latency", "buffers", "buffer_size", "vcs")
#: Largest number of background jobs in one run (job ids are packed below 2**16 per round).
MAX_K = 4096


class StudyConfigError(ConfigError):
    """An invalid interference-study configuration (names the key and the valid values)."""


# Messages about a key read "<key>: <what is wrong>", like the file's other messages: the
# shared checks are given the name "<key>:" ("<key>: value" for choices).
def _int(path: str, v: Any, low: int = 0) -> int:
    return check_int(f"{path}:", v, lo=low, error=StudyConfigError)


def _num(path: str, v: Any, low: float | None = None, high: float | None = None) -> float:
    return check_float(f"{path}:", v, lo=low, hi=high, error=StudyConfigError)


def _choice(path: str, v: Any, valid: Sequence[str] | Mapping[str, Any]) -> str:
    return check_choice(f"{path}: value", v, sorted(valid), error=StudyConfigError)


def _mapping(path: str, v: Any) -> dict[str, Any]:
    if not isinstance(v, Mapping):
        raise StudyConfigError(f"{path}: must be a table, got {v!r}")
    return dict(v)


def _check_app(path: str, app: Any, args: Mapping[str, Any], size: int | None) -> None:
    from apps.registry import bind_args, get_app

    if not isinstance(app, str) or not app:
        raise StudyConfigError(f"{path}.app: must be an app name, got {app!r}")
    try:
        info = get_app(app)
        if info.per_rank:
            bind_args(app, dict(args), size=size)
    except Exception as exc:  # noqa: BLE001 - the registry's errors name the apps and parameters
        raise StudyConfigError(f"{path}: {exc}") from None


# ----------------------------------------------------------------------------- jobs
@dataclass(frozen=True, kw_only=True)
class ForegroundJob:
    """The job under study: app name, ranks and the app's arguments.

    ``request_time`` (trace mode only) is its requested wall time; by default ten times its
    runtime alone on the first nodes of the machine (at least one second).
    """

    app: str
    ranks: int
    args: Mapping[str, Any] = field(default_factory=dict)
    request_time: float | str | None = None

    def __post_init__(self) -> None:
        _int("foreground.ranks", self.ranks, 1)
        object.__setattr__(self, "args", _mapping("foreground.args", self.args))
        _check_app("foreground", self.app, self.args, self.ranks)
        from apps.registry import get_app

        if not get_app(self.app).per_rank:
            raise StudyConfigError(f"foreground.app: {self.app!r} is a job-level app (no traffic); "
                                   "give an app whose ranks communicate")
        if self.request_time is not None:
            object.__setattr__(self, "request_time", _time("foreground.request_time", self.request_time, positive=True))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"app": self.app, "ranks": self.ranks}
        if self.args:
            d["args"] = _lists(self.args)
        if self.request_time is not None:
            d["request_time"] = self.request_time
        return d


@dataclass(frozen=True, kw_only=True)
class BackgroundApp:
    """One entry of the background mix, drawn with probability proportional to ``weight``.

    Static mode: the job's size is ``ranks`` (a count, or ``(low, high)`` drawn uniformly,
    both included) or ``fraction`` of the machine's nodes (a number, or ``(low, high)`` drawn
    uniformly) times ranks per node. Trace mode: sizes come from the workload; ``ranks`` and
    ``fraction`` must be left out, and ``request_time`` (optional) replaces the requested
    time of jobs given this app.
    """

    app: str
    ranks: int | tuple[int, int] | None = None
    fraction: float | tuple[float, float] | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    weight: float = 1.0
    request_time: float | str | None = None

    def __post_init__(self) -> None:
        p = f"background[{self.app}]"
        object.__setattr__(self, "args", _mapping(f"{p}.args", self.args))
        if self.ranks is not None and self.fraction is not None:
            raise StudyConfigError(f"{p}: give ranks or fraction, not both")
        if self.ranks is not None:
            r = self.ranks
            if isinstance(r, (list, tuple)):
                if len(r) != 2:
                    raise StudyConfigError(f"{p}.ranks: give a count or [low, high], got {r!r}")
                lo, hi = _int(f"{p}.ranks", r[0], 1), _int(f"{p}.ranks", r[1], 1)
                if hi < lo:
                    raise StudyConfigError(f"{p}.ranks: high ({hi}) must be >= low ({lo})")
                object.__setattr__(self, "ranks", (lo, hi))
            else:
                _int(f"{p}.ranks", r, 1)
        if self.fraction is not None:
            f = self.fraction
            if isinstance(f, (list, tuple)):
                if len(f) != 2:
                    raise StudyConfigError(f"{p}.fraction: give a number or [low, high], got {f!r}")
                lo_f, hi_f = _num(f"{p}.fraction", f[0], 0.0, 1.0), _num(f"{p}.fraction", f[1], 0.0, 1.0)
                if hi_f < lo_f or lo_f <= 0:
                    raise StudyConfigError(f"{p}.fraction: need 0 < low <= high <= 1, got {f!r}")
                object.__setattr__(self, "fraction", (lo_f, hi_f))
            else:
                fv = _num(f"{p}.fraction", f, 0.0, 1.0)
                if fv <= 0:
                    raise StudyConfigError(f"{p}.fraction: must be > 0, got {f!r}")
                object.__setattr__(self, "fraction", fv)
        _num(f"{p}.weight", self.weight, 0.0)
        low = self.ranks[0] if isinstance(self.ranks, tuple) else self.ranks
        _check_app(p, self.app, self.args, low)
        if self.request_time is not None:
            object.__setattr__(self, "request_time", _time(f"{p}.request_time", self.request_time, positive=True))

    @property
    def sized(self) -> bool:
        return self.ranks is not None or self.fraction is not None

    def rank_range(self, n_nodes: int, rpn: int) -> tuple[int, int]:
        """The smallest and largest number of ranks a job of this entry can get."""
        if self.ranks is not None:
            return (self.ranks if isinstance(self.ranks, tuple) else (self.ranks, self.ranks))
        f = self.fraction if isinstance(self.fraction, tuple) else (self.fraction, self.fraction)
        lo = max(1, int(round(f[0] * n_nodes)))
        hi = max(lo, int(round(f[1] * n_nodes)))
        return lo * rpn, hi * rpn

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"app": self.app}
        if self.ranks is not None:
            d["ranks"] = list(self.ranks) if isinstance(self.ranks, tuple) else self.ranks
        if self.fraction is not None:
            d["fraction"] = list(self.fraction) if isinstance(self.fraction, tuple) else self.fraction
        if self.args:
            d["args"] = _lists(self.args)
        d["weight"] = self.weight
        if self.request_time is not None:
            d["request_time"] = self.request_time
        return d


def _time(path: str, v: Any, *, positive: bool = False, allow_inf: bool = False) -> float:
    if allow_inf and (v is None or v == "inf" or v == math.inf):
        return math.inf
    try:
        t = parse_time(v, what=path)
    except UnitError as exc:
        raise StudyConfigError(str(exc)) from None
    if not math.isfinite(t) or t < 0 or (positive and t == 0):
        raise StudyConfigError(f"{path}: must be a time {'>' if positive else '>='} 0, got {v!r}")
    return t


def _lists(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_lists(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _lists(x) for k, x in v.items()}
    return v


# ---------------------------------------------------------------------------- study
@dataclass(frozen=True, kw_only=True)
class InterferenceStudy:
    """A foreground job among background jobs, repeated over seeds.

    Attributes:
        name: a label for tables, files and plots.
        mode: ``"static"``: for every ``k`` in ``k`` and every seed, the foreground and ``k``
            background jobs (apps and sizes drawn from ``background``) are placed on an empty
            machine by ``allocator`` in a random order and started together; a background
            job that ends is started again on its nodes, and all are killed when the
            foreground ends, so it always runs among exactly ``k`` of them. ``"trace"``: for
            every seed, the foreground is inserted at a random point of ``workload`` (the
            background; apps from ``background``) and the whole workload is scheduled
            (``order``, ``backfill``, ``allocator``); the background jobs it meets are what
            overlaps its run.
        machine: a preset name, a :class:`~simhpc.experiment.MachineSpec` or a
            :class:`~models.presets.Machine`.
        network: the network model of the runs with background (``packet`` for
            interference); the ideal baseline uses the same settings with ``model="ideal"``.
        foreground: the job under study.
        background: the mix of background apps.
        k: numbers of background jobs (static mode; default ``(0, 1, 2, 4)``).
        seeds: a count ``n`` (seeds ``0..n-1``) or a list of seeds. A seed fixes the draws of
            the background jobs (job ``i`` of seed ``s`` is the same for every ``k``), the
            placement order, the allocator's choices and the ranks' random streams.
        allocator, allocator_options: the node allocator (``scheduler.allocators``).
        ranks_per_node: ranks per node (default: the machine's cores per node).
        mapping: rank-to-node mapping, ``"block"``, ``"round_robin"`` or ``"topology"``
            (Cartesian apps' process grids embedded along the topology).
        hot_links: how many of the busiest links on the foreground's routes to report.
        end_time: simulated-time limit of each run (default: none).
        parallel: under ``mpirun``, ``"runs"`` deals the (k, seed) runs out over the ranks
            (each run a sequential simulation), ``"simulation"`` runs every simulation in
            parallel over all ranks. Both give results identical to a sequential run.
        eager_threshold, algorithms: MPI options of every job.
        workload, order, backfill: the background workload and the scheduler's ordering and
            backfill policies (trace mode).
    """

    name: str = "interference"
    mode: str = "static"
    machine: Any
    network: NetworkConfig = field(default_factory=NetworkConfig)
    foreground: ForegroundJob
    background: tuple[BackgroundApp, ...] = ()
    k: tuple[int, ...] | None = None
    seeds: int | tuple[int, ...] = 3
    allocator: str = "random"
    allocator_options: Mapping[str, Any] = field(default_factory=dict)
    ranks_per_node: int | None = None
    mapping: str = "block"
    hot_links: int = 5
    end_time: float | str = math.inf
    parallel: str = "runs"
    eager_threshold: int | str = 65536
    algorithms: Mapping[str, str] = field(default_factory=dict)
    workload: WorkloadSpec | None = None
    order: str = "fcfs"
    backfill: str = "easy"
    base_dir: str = field(default=".", compare=False)

    def __post_init__(self) -> None:
        from models.presets import Machine

        from scheduler.allocators import ALLOCATORS, make_allocator
        from scheduler.backfill import BACKFILLS
        from scheduler.ordering import ORDERINGS

        check_text("study.name:", self.name, error=StudyConfigError)
        _choice("study.mode", self.mode, MODES)
        m = self.machine
        if isinstance(m, str):
            m = MachineSpec(preset=m)
        elif isinstance(m, Mapping):
            m = MachineSpec(**m)
        if not isinstance(m, (MachineSpec, Machine)):
            raise StudyConfigError(f"machine: give a preset name, a MachineSpec or a Machine, got {type(m).__name__}")
        object.__setattr__(self, "machine", m)
        if not isinstance(self.network, NetworkConfig):
            raise StudyConfigError(f"network: must be a NetworkConfig, got {type(self.network).__name__}")
        if not isinstance(self.foreground, ForegroundJob):
            raise StudyConfigError(f"foreground: must be a ForegroundJob, got {type(self.foreground).__name__}")
        bg = tuple(self.background)
        for b in bg:
            if not isinstance(b, BackgroundApp):
                raise StudyConfigError(f"background: entries must be BackgroundApp, got {type(b).__name__}")
        object.__setattr__(self, "background", bg)
        if bg and sum(b.weight for b in bg) <= 0:
            raise StudyConfigError("background: the weights must have a positive sum")
        # seeds
        s = self.seeds
        if is_int(s):
            seeds = tuple(range(_int("study.seeds", s, 1)))
        elif isinstance(s, (list, tuple)) and s:
            seeds = tuple(check_seed("study.seeds:", x, error=StudyConfigError) for x in s)
            if len(set(seeds)) != len(seeds):
                raise StudyConfigError(f"study.seeds: the seeds must be distinct, got {list(s)!r}")
        else:
            raise StudyConfigError(f"study.seeds: give a count >= 1 or a non-empty list of seeds, got {s!r}")
        object.__setattr__(self, "seeds", seeds)
        _choice("study.allocator", self.allocator, ALLOCATORS)
        object.__setattr__(self, "allocator_options", _mapping("study.allocator_options", self.allocator_options))
        if self.ranks_per_node is not None:
            _int("study.ranks_per_node", self.ranks_per_node, 1)
        _choice("study.mapping", self.mapping, MAPPINGS)
        _int("study.hot_links", self.hot_links, 0)
        object.__setattr__(self, "end_time", _time("study.end_time", self.end_time, positive=True, allow_inf=True))
        _choice("study.parallel", self.parallel, PARALLEL)
        from apps.node import MpiOptions, whole_bytes

        eager = whole_bytes("study.eager_threshold", self.eager_threshold, error=StudyConfigError)
        object.__setattr__(self, "eager_threshold", eager)
        object.__setattr__(self, "algorithms", _mapping("study.algorithms", self.algorithms))

        try:
            MpiOptions(eager_threshold=eager, algorithms=dict(self.algorithms))
        except Exception as exc:  # noqa: BLE001 - names the collective and its algorithms
            raise StudyConfigError(f"study.algorithms: {exc}") from None
        _choice("study.order", self.order, ORDERINGS)
        _choice("study.backfill", self.backfill, BACKFILLS)

        machine = self.build_machine()
        n = machine.n_nodes
        rpn = self.rpn(machine)
        fg_nodes = -(-self.foreground.ranks // rpn)
        if fg_nodes > n:
            raise StudyConfigError(f"foreground.ranks: {self.foreground.ranks} ranks at {rpn} per node need {fg_nodes} "
                                   f"nodes; machine {machine.name} has {n}")
        try:
            make_allocator(self.allocator, n_nodes=n, topology=machine.topology, seed=0, **self.allocator_options)
        except UserError as exc:
            raise StudyConfigError(f"study.allocator = {self.allocator!r}: {exc}") from None

        if self.mode == "static":
            if self.workload is not None:
                raise StudyConfigError("workload: only used with study.mode = \"trace\" (static studies draw "
                                       "their background jobs from [[background]])")
            ks = (0, 1, 2, 4) if self.k is None else self.k
            if is_int(ks):
                ks = (ks,)
            if not isinstance(ks, (list, tuple)) or not ks:
                raise StudyConfigError(f"study.k: give a list of numbers of background jobs, e.g. [0, 1, 2, 4], got {ks!r}")
            ks = tuple(_int("study.k", x, 0) for x in ks)
            if len(set(ks)) != len(ks):
                raise StudyConfigError(f"study.k: the values must be distinct, got {list(ks)!r}")
            if max(ks) > MAX_K:
                raise StudyConfigError(f"study.k: at most {MAX_K} background jobs, got {max(ks)}")
            object.__setattr__(self, "k", ks)
            if self.foreground.request_time is not None:
                raise StudyConfigError("foreground.request_time: only used in trace mode")
            if max(ks) > 0:
                if not bg:
                    raise StudyConfigError("background: k > 0 needs at least one [[background]] app")
                for b in bg:
                    if not b.sized:
                        raise StudyConfigError(f"background[{b.app}]: give its size, ranks = N, ranks = [low, high] "
                                               "or fraction = [low, high] (static mode)")
                    if b.request_time is not None:
                        raise StudyConfigError(f"background[{b.app}].request_time: only used in trace mode")
                    lo, _ = b.rank_range(n, rpn)
                    _check_app(f"background[{b.app}]", b.app, b.args, lo)
                smallest = min(-(-b.rank_range(n, rpn)[0] // rpn) for b in bg if b.weight > 0)
                need = fg_nodes + max(ks) * smallest
                if need > n:
                    raise StudyConfigError(
                        f"study.k: {max(ks)} background jobs of at least {smallest} node(s) plus the foreground's "
                        f"{fg_nodes} need {need} nodes; machine {machine.name} has {n}")
        else:
            if self.k is not None:
                raise StudyConfigError("study.k: only used in static mode; in trace mode the background jobs are "
                                       "those that overlap the foreground in the schedule")
            if not isinstance(self.workload, WorkloadSpec):
                raise StudyConfigError("workload: trace mode needs a [workload] table (kind = \"synthetic\" or \"swf\")")
            for b in bg:
                if b.sized:
                    raise StudyConfigError(f"background[{b.app}]: ranks and fraction are not used in trace mode "
                                           "(sizes come from the workload)")

    # -------------------------------------------------------------------------- helpers
    def build_machine(self) -> Any:
        """The :class:`~models.presets.Machine`."""
        from models.presets import Machine

        if isinstance(self.machine, Machine):
            return self.machine
        return self.machine.build()

    def rpn(self, machine: Any = None) -> int:
        """Ranks per node."""
        if self.ranks_per_node is not None:
            return self.ranks_per_node
        return (machine or self.build_machine()).cores_per_node

    def runs(self) -> list[tuple[int, int]]:
        """The ``(k, seed)`` pairs of the study, in order (``k`` is -1 in trace mode)."""
        ks = self.k if self.mode == "static" else (-1,)
        return [(k, s) for k in ks for s in self.seeds]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the TOML tables); :func:`dumps_study` writes it."""
        st: dict[str, Any] = {"name": self.name, "mode": self.mode}
        if self.mode == "static":
            st["k"] = list(self.k)
        st["seeds"] = list(self.seeds)
        st["allocator"] = self.allocator
        if self.allocator_options:
            st["allocator_options"] = _lists(self.allocator_options)
        if self.ranks_per_node is not None:
            st["ranks_per_node"] = self.ranks_per_node
        st.update(mapping=self.mapping, hot_links=self.hot_links)
        if math.isfinite(self.end_time):
            st["end_time"] = self.end_time
        st.update(parallel=self.parallel, eager_threshold=self.eager_threshold)
        if self.algorithms:
            st["algorithms"] = dict(self.algorithms)
        if self.mode == "trace":
            st.update(order=self.order, backfill=self.backfill)
        net = self.network
        network = {"model": net.model, "chunk_size": net.chunk_size, "send_overhead": net.send_overhead,
                   "recv_overhead": net.recv_overhead, "intra_node_latency": net.intra_node_latency}
        if net.intra_node_bw is not None:
            network["intra_node_bw"] = net.intra_node_bw
        if net.flow_segment is not None:
            network["flow_segment"] = net.flow_segment
        if net.flow_quantum is not None:
            network["flow_quantum"] = net.flow_quantum
        if net.buffers != "infinite":
            network.update(buffers=net.buffers, buffer_size=net.buffer_size)
            if net.vcs is not None:
                network["vcs"] = net.vcs
        d: dict[str, Any] = {"study": st, "machine": machine_dict(self.machine), "network": network,
                             "foreground": self.foreground.to_dict()}
        if self.background:
            d["background"] = [b.to_dict() for b in self.background]
        if self.workload is not None:
            d["workload"] = self.workload.to_dict()
        return d


def machine_dict(m: Any) -> dict[str, Any]:
    """A MachineSpec's data; a Machine object is written as an inline topology."""
    if isinstance(m, MachineSpec):
        return m.to_dict()
    topo = m.topology
    params = {k: v for k, v in topo.constructor_params.items() if k != "cache_size" and v is not None}
    return {"name": m.name, "cores_per_node": m.cores_per_node, "flops_per_node": float(m.flops_per_node),
            "mem_bw_per_node": float(m.mem_bw_per_node), "topology": _lists({"family": topo.name, **params})}


# ---------------------------------------------------------------------------- TOML
def _check_keys(path: str, d: Any, valid: Sequence[str]) -> dict[str, Any]:
    if not isinstance(d, Mapping):
        raise StudyConfigError(f"{path}: must be a table, got {d!r}")
    unknown = [k for k in d if k not in valid]
    if unknown:
        raise StudyConfigError(f"{path or 'top level'}: unknown key(s) {', '.join(map(repr, unknown))}; "
                               f"valid: {', '.join(valid)}")
    return dict(d)


def _fields(cls: type) -> tuple[str, ...]:
    import dataclasses

    return tuple(f.name for f in dataclasses.fields(cls) if f.init and f.name != "base_dir")


def study_from_dict(data: Mapping[str, Any], *, base_dir: str = ".") -> InterferenceStudy:
    """Build an :class:`InterferenceStudy` from plain data (the TOML tables)."""
    d = _check_keys("", data, TOP_KEYS)
    for req, hint in (("machine", "[machine] preset = \"NAME\" (see `simhpc machine --list`)"),
                      ("foreground", "[foreground] app = \"even-odd\", ranks = 16")):
        if req not in d:
            raise StudyConfigError(f"{req}: missing; give {hint}")
    kw: dict[str, Any] = {"base_dir": base_dir}
    kw.update(_check_keys("study", d.get("study", {}), STUDY_KEYS))
    try:
        kw["machine"] = MachineSpec(**_check_keys("machine", d["machine"], _fields(MachineSpec)))
        if "workload" in d:
            kw["workload"] = WorkloadSpec(**_check_keys("workload", d["workload"], _fields(WorkloadSpec)))
    except ConfigError as exc:
        raise StudyConfigError(str(exc)) from None
    if "network" in d:
        try:
            kw["network"] = NetworkConfig(**_check_keys("network", d["network"], NETWORK_KEYS))
        except NetworkConfigError as exc:
            raise StudyConfigError(f"network: {exc}") from None
    kw["foreground"] = ForegroundJob(**_check_keys("foreground", d["foreground"], _fields(ForegroundJob)))
    if "background" in d:
        items = d["background"]
        if not isinstance(items, list):
            raise StudyConfigError(f"background: must be an array of tables ([[background]]), got {items!r}")
        kw["background"] = tuple(BackgroundApp(**_check_keys(f"background[{i}]", it, _fields(BackgroundApp)))
                                 for i, it in enumerate(items))
    if isinstance(kw.get("k"), list):
        kw["k"] = tuple(kw["k"])
    if isinstance(kw.get("seeds"), list):
        kw["seeds"] = tuple(kw["seeds"])
    return InterferenceStudy(**kw)


def loads_study(text: str, *, source: str = "<string>", overrides: Sequence[str] = (),
                base_dir: str = ".") -> InterferenceStudy:
    """Parse study TOML text (``overrides``: ``key.sub=value`` strings, as ``--set``)."""
    from ..experiment.toml_io import apply_overrides

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StudyConfigError(f"{source}: not valid TOML: {exc}") from None
    try:
        data = apply_overrides(data, overrides, top_keys=TOP_KEYS)
        return study_from_dict(data, base_dir=base_dir)
    except ConfigError as exc:
        raise StudyConfigError(f"{source}: {exc}") from None


def load_study(path: str | os.PathLike, overrides: Sequence[str] = ()) -> InterferenceStudy:
    """Read a study file (a relative trace path inside it is relative to the file)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise StudyConfigError(f"study file {path!r} does not exist") from None
    except IsADirectoryError:
        raise StudyConfigError(f"study file {path!r} is a directory") from None
    except UnicodeDecodeError:
        raise StudyConfigError(f"study file {path!r} is not UTF-8 text (is it a TOML file?)") from None
    return loads_study(text, source=path, overrides=overrides, base_dir=os.path.dirname(os.path.abspath(path)))


def dumps_study(study: InterferenceStudy) -> str:
    """TOML text that :func:`loads_study` turns back into an equal study."""
    from ..experiment.toml_io import _table_lines

    d = study.to_dict()
    lines: list[str] = []
    for k in ("study", "machine", "network", "foreground", "workload"):
        if k in d:
            if lines:
                lines.append("")
            lines += [f"[{k}]", *_table_lines(d[k])]
    for item in d.get("background", ()):
        lines += ["", "[[background]]", *_table_lines(item)]
    return "\n".join(lines) + "\n"
