"""One episode of the scheduling environment: its settings, its jobs and its simulator.

Nothing here needs Gymnasium: :class:`GymConfig` holds an environment's settings (validated
when made), :func:`window_jobs` cuts an episode's jobs out of a trace and
:func:`build_episode` assembles the simulation that runs them, with any backfill policy
(the environment passes a :class:`scheduler.external.ExternalPolicy`; benchmarks pass a plain
one to time the same simulation without decisions).

Two runtime modes:

``trace``
    Jobs run for their trace run time (one timer each), as in the published RL schedulers.
``simulated``
    Each job of more than one node runs an MPI skeleton on the machine's network (``flow``
    or ``packet``), one rank per node: ``iters`` iterations of ``compute_s`` of computation
    and one communication step of ``nbytes`` per rank, sized so that alone, at full link
    bandwidth, computation is ``1 - comm_fraction`` and communication ``comm_fraction`` of
    the job's trace run time times ``time_scale``. Its runtime then emerges from where it
    was placed and what runs beside it. One-node jobs send nothing over the network and run
    as timekeepers. Times are scaled by ``time_scale`` (simulated seconds per trace second);
    observations and rewards read them back in trace seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pdes.errors import UserError

__all__ = ["GymConfig", "GymConfigError", "Episode", "build_episode", "window_jobs", "gym_machine",
           "RUNTIMES", "REWARDS", "GYM_APPS"]

#: The runtime modes.
RUNTIMES = ("trace", "simulated")
#: The named rewards (a callable is accepted too).
REWARDS = ("bsld", "utilization")
#: Skeletons a simulated job may run (each takes iters, nbytes and compute_s).
GYM_APPS = ("allreduce", "pairs", "ring", "even-odd", "alltoall")


class GymConfigError(UserError):
    """A bad setting of the scheduling environment; the message names it and its valid values."""


def gym_machine() -> Any:
    """The default machine of simulated runs: 256 nodes on a two-level fat-tree of 24-port
    switches, 2:1 tapered (16 leaves of 16 nodes with 8 uplinks each), 12.5 GB/s links, so
    where a job lands decides whether its traffic crosses the spines."""
    from models.presets import Machine
    from models.topology import FatTree

    return Machine(name="gym-fattree-256",
                   topology=FatTree(radix=24, levels=2, pods=16, taper=2.0, link_bw="12.5GB/s", link_lat="100ns"),
                   cores_per_node=16, flops_per_node="500GF", mem_bw_per_node="100GB/s",
                   description="256-node 2:1 tapered fat-tree, the scheduling environment's default")


def _choice(key: str, value: Any, valid: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in valid:
        raise GymConfigError(f"{key} must be one of {', '.join(valid)}; got {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class GymConfig:
    """Settings of a scheduling environment (see ``docs/gym.md``).

    Attributes:
        trace: ``builtin:NAME`` or a path to an SWF trace.
        jobs: jobs per episode: a window of consecutive trace jobs (submit times shifted to
            start at 0), drawn at each reset from the environment's random generator.
        slots: how many waiting jobs (in submit order) an action can pick (K).
        runtime: ``"trace"`` or ``"simulated"``.
        backfill: ``"none"`` or ``"easy"``: what may start beside a reserved job.
        allocators: allocator names; an action picks a job and one of them (A choices).
        reward: ``"bsld"`` (minus the bounded slowdown of each job as it ends, over the number
            of jobs: an episode's return is minus its mean bounded slowdown), ``"utilization"``
            (the episode's utilization, at its end) or a callable ``f(RewardContext) -> float``.
        nodes: machine size (trace mode, without ``machine``): default the trace header's.
        machine: a preset name or a :class:`~models.presets.Machine`; default in simulated
            mode :func:`gym_machine`, in trace mode none (a machine of ``nodes`` nodes).
        network: ``"flow"`` or ``"packet"`` (simulated mode).
        chunk_size: the packet model's chunk size (bytes or a string such as ``"1MiB"``).
        apps: the skeletons simulated jobs draw from (uniformly); see :data:`GYM_APPS`.
        iters: iterations of each simulated job.
        comm_fraction: the share of a simulated job's trace run time spent communicating
            when alone at full link bandwidth (0 to 1, exclusive of 1).
        time_scale: simulated seconds per trace second (simulated mode).
        groups: node groups whose free nodes and link load the observation shows
            (simulated mode; the topology's partition into that many parts).
        decide_single: ask for a decision also when one job waits.
        bsld_bound: the bounded slowdown's lower bound on run times (trace seconds).
        time_norm: trace seconds at which the log-scaled time features reach 1.
    """

    trace: str = "builtin:lublin_256.swf"
    jobs: int = 128
    slots: int = 16
    runtime: str = "trace"
    backfill: str = "none"
    allocators: tuple[str, ...] = ("firstfree",)
    reward: Any = "bsld"
    nodes: int | None = None
    machine: Any = None
    network: str = "flow"
    chunk_size: Any = "1MiB"
    apps: tuple[str, ...] = ("allreduce", "pairs")
    iters: int = 4
    comm_fraction: float = 0.3
    time_scale: float = 1e-5
    groups: int = 8
    decide_single: bool = False
    bsld_bound: float = 10.0
    time_norm: float = 3 * 86400.0

    def __post_init__(self) -> None:
        from pdes.validate import check_float, check_int

        def _int(key: str, v: Any, lo: int) -> None:
            check_int(key, v, lo=lo, error=GymConfigError)

        _int("jobs", self.jobs, 1)
        _int("slots", self.slots, 1)
        _int("iters", self.iters, 1)
        _int("groups", self.groups, 1)
        if self.nodes is not None:
            _int("nodes", self.nodes, 1)
        _choice("runtime", self.runtime, RUNTIMES)
        _choice("backfill", self.backfill, ("none", "easy"))
        _choice("network", self.network, ("flow", "packet"))
        if not callable(self.reward):
            _choice("reward", self.reward, REWARDS)
        allocs = tuple(self.allocators) if not isinstance(self.allocators, str) else (self.allocators,)
        if not allocs:
            raise GymConfigError("allocators must name at least one allocator")
        from scheduler.allocators import ALLOCATORS

        for a in allocs:
            _choice("allocators", a, tuple(ALLOCATORS))
        object.__setattr__(self, "allocators", allocs)
        apps = tuple(self.apps) if not isinstance(self.apps, str) else (self.apps,)
        if not apps:
            raise GymConfigError(f"apps must name at least one of {', '.join(GYM_APPS)}")
        for a in apps:
            _choice("apps", a, GYM_APPS)
        object.__setattr__(self, "apps", apps)
        check_float("comm_fraction", self.comm_fraction, lo=0.0, hi=1.0, hi_open=True, error=GymConfigError)
        check_float("time_scale", self.time_scale, lo=0.0, lo_open=True, error=GymConfigError)
        check_float("bsld_bound", self.bsld_bound, lo=0.0, lo_open=True, error=GymConfigError)
        check_float("time_norm", self.time_norm, lo=1.0, error=GymConfigError)

    @property
    def scale(self) -> float:
        """Simulated seconds per trace second (1 in trace mode)."""
        return self.time_scale if self.runtime == "simulated" else 1.0


def resolve_machine(cfg: GymConfig) -> Any:
    """The machine of simulated runs, or the given one in trace mode (None without)."""
    m = cfg.machine
    if m is None:
        return gym_machine() if cfg.runtime == "simulated" else None
    from models.presets import Machine, get_machine

    if isinstance(m, Machine):
        return m
    if isinstance(m, str):
        return get_machine(m)
    raise GymConfigError(f"machine must be a preset name or a Machine, got {m!r}")


def load_trace(cfg: GymConfig, n_nodes: int | None) -> tuple[list[Any], int]:
    """The trace's jobs (file order, one process per node) and the machine size."""
    from scheduler.swf import read_swf

    from ..traces import resolve_trace

    path = str(resolve_trace(cfg.trace, None))
    tr = read_swf(path, n_nodes=n_nodes, cores_per_node=1)
    if not tr.jobs:
        raise GymConfigError(f"trace {cfg.trace!r} has no job that fits the {tr.n_nodes}-node machine")
    return tr.jobs, tr.n_nodes


def window_jobs(trace_jobs: list[Any], start: int, cfg: GymConfig, rng: np.random.Generator,
                link_bw: float = 12.5e9) -> list[Any]:
    """Fresh copies of ``cfg.jobs`` trace jobs from ``start``, submit times shifted to begin
    at 0, times scaled, and (simulated mode) each multi-node job given a skeleton from
    ``cfg.apps`` drawn with ``rng``, its message size computed for links of ``link_bw``."""
    chosen = trace_jobs[start:start + cfg.jobs]
    t0 = chosen[0].submit_time
    scale = cfg.scale
    out = []
    simulated = cfg.runtime == "simulated"
    picks = rng.integers(0, len(cfg.apps), len(chosen)) if simulated else None
    for i, j in enumerate(chosen):
        j = j.fresh()
        j.submit_time = (j.submit_time - t0) * scale
        j.run_time *= scale
        j.request_time *= scale
        if simulated and j.nodes > 1:
            t = j.run_time
            iters = cfg.iters
            # Alone at full link bandwidth, communication takes comm_fraction of the run.
            j.app_name = cfg.apps[int(picks[i])]
            j.app_args = {"iters": iters, "compute_s": (1.0 - cfg.comm_fraction) * t / iters,
                          "nbytes": max(int(cfg.comm_fraction * t / iters * link_bw), 1)}
        out.append(j)
    return out


@dataclass
class Episode:
    """A built episode: the simulator (not run yet), the scheduler entity, the policy, and
    in simulated mode the platform (network, manager) and the job runner."""

    sim: Any
    sched: Any
    policy: Any
    n_nodes: int
    platform: Any = None
    runner: Any = None
    ended: list[Any] = field(default_factory=list)


def build_episode(cfg: GymConfig, jobs: list[Any], *, n_nodes: int, machine: Any, seed: int,
                  policy: Any, allocator: Any = None) -> Episode:
    """The simulation of ``jobs`` under ``policy`` (a backfill policy object).

    ``allocator`` defaults to ``cfg.allocators`` (an
    :class:`~scheduler.external.AllocatorChoice` when there are several). The ordering is
    FCFS; every job end is appended to :attr:`Episode.ended` as it happens.
    """
    from pdes import Simulator
    from scheduler.allocators import make_allocator
    from scheduler.external import AllocatorChoice
    from scheduler.lifecycle import SchedulerEntity
    from scheduler.ordering import FCFS

    ended: list[Any] = []

    class _Fcfs(FCFS):
        def job_ended(self, job: Any, now: float) -> None:
            ended.append(job)

    topo = machine.topology if machine is not None else None
    if allocator is None:
        allocs = [make_allocator(a, n_nodes=n_nodes, topology=topo, seed=seed) for a in cfg.allocators]
        allocator = allocs[0] if len(allocs) == 1 else AllocatorChoice(allocs)
    order = _Fcfs(n_nodes=n_nodes)
    if cfg.runtime == "trace":
        sim = Simulator(seed=seed, comm=None)
        sched = sim.add_entity(SchedulerEntity, name="scheduler", rank=0, jobs=jobs, allocator=allocator,
                               ordering=order, backfill=policy)
        return Episode(sim=sim, sched=sched, policy=policy, n_nodes=n_nodes, ended=ended)
    from apps.node import MpiOptions
    from apps.platform import build_platform
    from models.network import NetworkConfig

    from ..experiment.runner import AppJobRunner

    runner = AppJobRunner(ranks_per_node=1, mapping="block", options=MpiOptions(), topology=topo)
    net_cfg = NetworkConfig(model=cfg.network, chunk_size=cfg.chunk_size) if cfg.network == "packet" \
        else NetworkConfig(model=cfg.network)
    plat = build_platform(machine, net_cfg, seed=seed, comm=None, on_end=runner.on_end)
    runner.manager = plat.manager
    # Jobs of simulated runs outlive their trace estimates by their communication: they are
    # never killed (the scheduler plans with their estimates and sees them overrun).
    sched = plat.sim.add_entity(SchedulerEntity, name="scheduler", rank=0, jobs=jobs, allocator=allocator,
                                ordering=order, backfill=policy, runner=runner, kill_overrun=False)
    return Episode(sim=plat.sim, sched=sched, policy=policy, n_nodes=n_nodes, platform=plat, runner=runner,
                   ended=ended)


def bounded_slowdown(job: Any, scale: float, bound: float) -> float:
    """``max(response / max(trace run time, bound), 1)`` in trace seconds: a job slowed by
    its network neighbours counts as waiting for the extra time."""
    ref = max(job.run_time / scale, bound)
    return max((job.end_time - job.submit_time) / scale / ref, 1.0)
