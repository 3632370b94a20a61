"""Trace replay: an SWF trace (or a list of jobs) through a scheduler, with metrics.

This is the Python API behind ``simhpc replay``::

    from scheduler.replay_engine import replay
    r = replay("CTC-SP2-1996-3.1-cln.swf.gz", order="fcfs", backfill="easy")
    print(r.summary())          # the figures of ``simhpc replay --json``
    r.table.to_csv("jobs.csv")  # per-job metrics

The machine is given by ``nodes`` (and ``cores_per_node``), or by ``machine``, the name of a
preset of :mod:`models.presets` (its topology's node count and cores per node, and the
topology is handed to the allocator); by default the machine size comes from the trace
header. The allocator is chosen by name (``"firstfree"`` by default) from
:data:`scheduler.allocators.ALLOCATORS`.
"""

from __future__ import annotations

import math
import os
import time as _time
from dataclasses import dataclass, field
from typing import Any, Sequence

from pdes import RunStats
from pdes.validate import check_seed

from .allocators import ALLOCATORS
from .backfill import BACKFILLS
from .estimates import ESTIMATES, make_estimate
from .errors import SwfMachineSizeError, UserError
from .job import Job
from .lifecycle import JobRunner, ScheduleResult, simulate
from .load import check_load_factor, scale_load
from .metrics import TAU, JobTable, SystemMetrics, check_tau, job_table, system_metrics
from .ordering import ORDERINGS
from .swf import SwfReport, SwfTrace, read_swf
from .trim import Trim

__all__ = ["Machine", "ReplayResult", "replay", "resolve_machine"]


@dataclass(frozen=True)
class Machine:
    """The machine a replay runs on."""

    n_nodes: int
    cores_per_node: int = 1
    topology: Any = None
    name: str = ""


def _check_int(name: str, value: Any, flag: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"{name} must be a whole number >= 1, got {value!r}; give e.g. {flag}")
    return value


def resolve_machine(*, machine: str | None = None, nodes: int | None = None,
                    cores_per_node: int | None = None) -> Machine | None:
    """The machine from a preset name or a node count; None when the trace header decides.

    Raises :class:`UserError` for a bad size, for a preset combined with ``nodes``, or when
    presets are not available.
    """
    if nodes is not None:
        _check_int("the node count", nodes, "--nodes 128")
    if cores_per_node is not None:
        _check_int("cores per node", cores_per_node, "--cores-per-node 16")
    if machine is None:
        if nodes is None:
            return None
        return Machine(n_nodes=nodes, cores_per_node=cores_per_node or 1)
    if nodes is not None or cores_per_node is not None:
        raise UserError("give either a machine preset (--machine) or its size (--nodes/--cores-per-node), not both")
    from models.errors import TopologyError
    from models.presets import get_machine

    try:
        m = get_machine(machine)
    except TopologyError as exc:
        raise UserError(str(exc)) from None
    topo = getattr(m, "topology", None)
    n = getattr(topo, "n_nodes", None)
    cpn = getattr(m, "cores_per_node", 1)
    if not isinstance(n, int) or n < 1:
        raise UserError(f"machine preset {machine!r} has no usable node count (topology.n_nodes = {n!r})")
    return Machine(n_nodes=n, cores_per_node=int(cpn), topology=topo, name=machine)


@dataclass
class ReplayResult:
    """What a replay produced: the jobs, their metrics and the run's figures."""

    trace: str
    machine: Machine
    allocator: str
    order: str
    backfill: str
    kill_overrun: bool
    jobs: list[Job]
    rejected: list[Job]
    table: JobTable
    metrics: SystemMetrics
    stats: RunStats
    passes: int
    sim_wall_s: float
    wall_s: float
    swf_report: SwfReport | None = None
    schedule: ScheduleResult | None = field(default=None, repr=False)
    placement: dict[str, Any] | None = None
    tau: float = TAU
    load_factor: float = 1.0
    trim: Trim = field(default_factory=Trim)
    estimate: str = "user"
    estimate_options: dict[str, Any] = field(default_factory=dict)
    backfill_options: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The scalar figures, in the order ``simhpc replay --json`` prints them."""
        m = self.metrics
        out: dict[str, Any] = {
            "jobs": m.jobs,
            "rejected": len(self.rejected),
            "makespan": m.makespan,
            "mean_wait": _finite(m.mean_wait),
            "max_wait": _finite(m.max_wait),
            "mean_bounded_slowdown": _finite(m.mean_bounded_slowdown),
            "utilization": m.utilization,
            "wall_s": self.wall_s,
            "trace": self.trace,
            "nodes": self.machine.n_nodes,
            "cores_per_node": self.machine.cores_per_node,
            "machine": self.machine.name or None,
            "allocator": self.allocator,
            "order": self.order,
            "backfill": self.backfill,
            "backfill_options": self.backfill_options,
            "estimate": self.estimate,
            "estimate_options": self.estimate_options,
            "kill_overrun": self.kill_overrun,
            "killed": m.killed,
            "loss_of_capacity": m.loss_of_capacity,
            "mean_response": _finite(m.mean_response),
            "max_bounded_slowdown": _finite(m.max_bounded_slowdown),
            "sim_wall_s": self.sim_wall_s,
            "jobs_per_s": m.jobs / self.sim_wall_s if self.sim_wall_s > 0 else None,
            "events": self.stats.events,
            "passes": self.passes,
            "tau": self.tau,
            "load_factor": self.load_factor,
            "measured_jobs": m.measured_jobs,
        }
        if self.trim.active:
            out["trim"] = self.trim.as_dict()
            out["measure_start"] = m.measure_start
            out["measure_end"] = m.measure_end
        for k in ("wait_p50", "wait_p90", "wait_p99", "bounded_slowdown_p50", "bounded_slowdown_p90",
                  "bounded_slowdown_p99"):
            out[k] = _finite(getattr(m, k))
        out["classes"] = m.classes
        out["rejected_by_reason"] = {k: v for k, v in self.rejected_by_reason().items() if v}
        if self.swf_report is not None:
            out["filter"] = self.swf_report.as_dict()
        if self.placement is not None:
            out["placement"] = self.placement
        return out


    def rejected_by_reason(self) -> dict[str, int]:
        """Every trace job that was not simulated, by reason (zeros included): rejected
        ones (``larger_than_machine``, or ``allocator_cannot_place``: within the machine's
        node count but never placed by its allocator) and those the trace filter dropped
        (:data:`scheduler.swf.DROP_REASONS`)."""
        large = sum(1 for j in self.rejected if j.nodes > self.machine.n_nodes)
        out = {"larger_than_machine": large, "allocator_cannot_place": len(self.rejected) - large}
        if self.swf_report is not None:
            for k, v in self.swf_report.by_reason().items():
                if k != "larger_than_machine":
                    out[k] = v
        return out


def _finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def _check_name(kind: str, name: str, registry: dict, flag: str) -> None:
    if name not in registry:
        raise UserError(f"unknown {kind} {name!r} ({flag}); valid: {', '.join(registry)}")


def replay(
    trace: str | os.PathLike | SwfTrace | Sequence[Job],
    *,
    nodes: int | None = None,
    cores_per_node: int | None = None,
    machine: str | Machine | None = None,
    allocator: str = "firstfree",
    order: str = "fcfs",
    backfill: str = "easy",
    kill_overrun: bool = True,
    seed: int = 0,
    strict: bool = False,
    skip_malformed: bool = False,
    limit: int | None = None,
    runner: JobRunner | None = None,
    interval: float = 60.0,
    allocator_options: dict[str, Any] | None = None,
    order_options: dict[str, Any] | None = None,
    backfill_options: dict[str, Any] | None = None,
    tau: float = TAU,
    load_factor: float = 1.0,
    skip_first: int = 0,
    skip_last: int = 0,
    window: tuple[float, float] | str | None = None,
    estimate: str = "user",
    estimate_options: dict[str, Any] | None = None,
) -> ReplayResult:
    """Replay a workload through a scheduler and measure it.

    Args:
        trace: an SWF path (``.swf``/``.swf.gz``), an already read :class:`SwfTrace`, or a
            list of jobs (then ``nodes`` or ``machine`` is required, and the jobs' own node
            counts are used as they are).
        nodes, cores_per_node, machine: the machine (see :func:`resolve_machine`); by
            default the trace header's size with one process per node.
        allocator, order, backfill: names of the three scheduler parts.
        kill_overrun: kill jobs at their requested time (whatever the estimate model).
        estimate, estimate_options: the runtime estimate model the scheduler plans with
            (:mod:`scheduler.estimates`; ``"user"``, the request, by default).
        strict: a job larger than the machine is an error instead of being rejected and
            counted.
        skip_malformed: skip and count malformed SWF lines instead of raising.
        limit: replay only the first ``limit`` jobs of the trace.
        interval: sampling interval of the utilization and queue series (seconds).
        tau: the bounded-slowdown threshold (seconds, > 0).
        load_factor: divide the inter-arrival times by this (> 0; see :mod:`scheduler.load`).
        skip_first, skip_last, window: measure only part of the jobs (see
            :mod:`scheduler.trim`); every job is still simulated.
    """
    t_start = _time.perf_counter()
    seed = check_seed("seed", seed)
    tau = check_tau(tau, "tau (--tau)")
    load_factor = check_load_factor(load_factor, "load_factor (--load-factor)")
    trim = Trim(skip_first=skip_first, skip_last=skip_last, window=window)
    _check_name("ordering policy", order, ORDERINGS, "--order")
    _check_name("backfill policy", backfill, BACKFILLS, "--backfill")
    _check_name("allocator", allocator, ALLOCATORS, "--allocator")
    _check_name("estimate model", estimate, ESTIMATES, "--estimate")
    make_estimate(estimate, **(estimate_options or {}))  # bad options fail before the trace is read
    if isinstance(machine, Machine):
        mach: Machine | None = machine
        if nodes is not None or cores_per_node is not None:
            raise UserError("give either a Machine or nodes/cores_per_node, not both")
    else:
        mach = resolve_machine(machine=machine, nodes=nodes, cores_per_node=cores_per_node)
    report: SwfReport | None = None
    rejected: list[Job] = []
    if isinstance(trace, (str, os.PathLike)):
        try:
            tr = read_swf(trace, n_nodes=mach.n_nodes if mach else None,
                          cores_per_node=mach.cores_per_node if mach else 1,
                          skip_malformed=skip_malformed, limit=limit)
        except SwfMachineSizeError as exc:
            raise exc.naming("nodes=N or machine=PRESET") from None
        name = str(trace)
    elif isinstance(trace, SwfTrace):
        tr = trace
        name = trace.path
        if mach is not None and (mach.n_nodes != tr.n_nodes or mach.cores_per_node != tr.cores_per_node):
            raise UserError(
                f"the trace was read for a {tr.n_nodes}-node machine with {tr.cores_per_node} core(s) per node; "
                "read it again with the machine's size"
            )
    else:
        tr = None
        name = "<jobs>"
        if mach is None:
            raise UserError("replaying a list of jobs needs the machine size: nodes=N or machine=...")
    if tr is not None:
        if mach is None:
            mach = Machine(n_nodes=tr.n_nodes, cores_per_node=tr.cores_per_node)
        jobs: Sequence[Job] = tr.jobs if limit is None or not isinstance(trace, SwfTrace) else tr.jobs[:limit]
        rejected = [j.fresh() for j in tr.rejected]
        for j in rejected:
            j.status = "rejected"
        report = tr.report
        if strict and tr.rejected:
            j = tr.rejected[0]
            raise UserError(
                f"{name}: job {j.job_id} needs {j.nodes} nodes ({j.job_size} processes) but the machine has "
                f"{mach.n_nodes} ({len(tr.rejected)} such job(s)); give --nodes {max(x.nodes for x in tr.rejected)} "
                "or more, or drop --strict to reject and count them"
            )
    else:
        jobs = list(trace)  # type: ignore[arg-type]
        if limit is not None:
            jobs = jobs[:limit]
    copy = True
    if load_factor != 1.0 and jobs:
        t0 = min(j.submit_time for j in jobs)
        jobs = scale_load(jobs, load_factor, t0=t0)
        copy = False
        # Jobs the trace filter rejected keep their rows: on the same scaled clock.
        rejected = scale_load(rejected, load_factor, t0=t0)
        for j in rejected:
            j.status = "rejected"
    measure = None
    if trim.active:
        # Checked before the run: a trim that leaves nothing fails at once. The scheduler
        # keeps its workload in submission order (ties in given order), as the table rows.
        arrival = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_time, i))
        measure = trim.mask([jobs[i].submit_time for i in arrival])
    res = simulate(
        jobs,
        n_nodes=mach.n_nodes,
        allocator=allocator,
        ordering=order,
        backfill=backfill,
        runner=runner,
        kill_overrun=kill_overrun,
        seed=seed,
        topology=mach.topology,
        oversized="error" if strict else "reject",
        allocator_options=allocator_options,
        ordering_options=order_options,
        backfill_options=backfill_options,
        copy=copy,
        estimate=estimate,
        estimate_options=estimate_options,
    )
    all_rejected = rejected + res.rejected
    placement = None
    if mach.topology is not None:
        # APH / MIND / diameter / span of every allocation, by job-size bin.
        from .allocators.metrics import allocation_metrics_by_size

        placement = allocation_metrics_by_size(res.jobs, mach.topology)
    table = job_table(res.jobs, tau=tau)
    metrics = system_metrics(table, mach.n_nodes, interval=interval, rejected=len(all_rejected), tau=tau,
                             measure=measure)
    wall = _time.perf_counter() - t_start
    return ReplayResult(
        trace=name,
        machine=mach,
        allocator=res.allocator,
        order=res.ordering,
        backfill=res.backfill,
        kill_overrun=kill_overrun,
        jobs=res.jobs,
        rejected=all_rejected,
        table=table,
        metrics=metrics,
        stats=res.stats,
        passes=res.passes,
        sim_wall_s=res.wall_s,
        wall_s=wall,
        swf_report=report,
        schedule=res,
        placement=placement,
        tau=tau,
        load_factor=load_factor,
        trim=trim,
        estimate=res.estimate,
        estimate_options=dict(res.estimate_options or {}),
        backfill_options=dict(backfill_options or {}),
    )
