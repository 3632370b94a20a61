"""Running interference studies: a foreground job among background jobs, over seeds.

::

    from simhpc.studies import BackgroundApp, ForegroundJob, InterferenceStudy, run_study

    study = InterferenceStudy(
        machine="tiny-torus", ranks_per_node=1, allocator="random", k=(0, 1, 2, 4), seeds=3,
        foreground=ForegroundJob(app="even-odd", ranks=16, args={"iters": 5}),
        background=(BackgroundApp(app="pairs", ranks=(8, 16), args={"iters": 5}),),
    )
    res = run_study(study)          # StudyResults: one row per (k, seed)
    print(res.by_k())

Each run gives three simulations of the foreground on the same nodes: among the background
jobs (the packet model, or whatever ``study.network`` says), alone, and alone on the ideal
network. Link figures over the foreground's run come from snapshots of every rank's link
counters taken in the event right after its end (and, in trace mode, right before its
start), so traffic after the foreground has ended is not counted.

**Parallel runs.** With ``parallel="runs"`` (default) the (k, seed) runs are dealt out over
the MPI ranks, largest ``k`` first, each run a sequential simulation, and the rows gathered
on every rank; with ``parallel="simulation"`` every simulation is itself a parallel run over
all ranks. Each simulation is deterministic and independent of how it is run, so both give
the results of a sequential study (except the wall-clock column).
"""

from __future__ import annotations

import json
import math
import sys
import time as _time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from apps.run import plain_data
from pdes import Entity, Simulator
from scheduler.errors import UserError
from scheduler.job import Job

from .results import HOT_COLUMNS, RUN_COLUMNS, StudyResults, empty_columns
from .spec import InterferenceStudy, dumps_study

__all__ = ["run_study", "RunOutcome", "FG_JOB", "BG_STRIDE"]

#: Job id of the foreground in static runs (its ranks' random streams derive from it).
FG_JOB = 1
#: Background job ``i`` is job ``2 + i`` in its first round and ``2 + i + r * BG_STRIDE`` in round ``r``.
BG_STRIDE = 1 << 16

_STREAM_DRAW = 0xB6D0
_STREAM_ORDER = 0x07DE
_STREAM_INSERT = 0x1A5E


# ----------------------------------------------------------------------- link probes
class LinkProbe(Entity):
    """One per MPI rank: copies that rank's link counters when told (service ``snap``).

    Each rank only updates the links whose source vertex it owns, so the copies of all ranks
    add up (bytes, busy time) or combine by maximum (a port's ``next_free``) to the whole
    network's counters at the instant of the snapshot.
    """

    def __init__(self, net: Any):
        self.net = net
        self.snaps: list[tuple[str, float, list[float], list[float], list[float]]] = []

    def snap(self, tag: str) -> None:
        st = self.net.state
        self.snaps.append((tag, self.sim.now, list(st.bytes), list(st.busy), list(st.free)))


def _add_probes(sim: Simulator, net: Any) -> tuple[list[int], list[LinkProbe]]:
    """One probe per rank (added last: no other entity's id changes); their ids and the
    probe constructed on this rank."""
    local = sim.add_entities(LinkProbe, sim.size, net, name="study_probe", placement=np.arange(sim.size))
    return [sim.eid("study_probe", i) for i in range(sim.size)], local


@dataclass
class _Snapshot:
    time: float
    bytes: np.ndarray
    busy: np.ndarray  # busy time up to ``time`` (the port's backlog beyond it removed)


def _gather_snaps(sim: Simulator, probes: list[LinkProbe]) -> dict[str, _Snapshot]:
    mine = [s for p in probes for s in p.snaps]
    parts = sim.comm.allgather(mine) if sim.comm is not None and sim.size > 1 else [mine]
    out: dict[str, _Snapshot] = {}
    for tag in sorted({s[0] for part in parts for s in part}):
        rows = [s for part in parts for s in part if s[0] == tag]
        t = rows[0][1]
        b = np.sum([np.asarray(r[2]) for r in rows], axis=0)
        busy = np.sum([np.asarray(r[3]) for r in rows], axis=0)
        free = np.max([np.asarray(r[4]) for r in rows], axis=0)
        # Busy time is booked when a chunk is queued on a port; what lies beyond the snapshot
        # instant is the port's backlog, still to be sent.
        busy = np.maximum(busy - np.maximum(free - t, 0.0), 0.0)
        out[tag] = _Snapshot(time=t, bytes=b, busy=busy)
    return out


# ------------------------------------------------------------------------ outcomes
@dataclass
class RunOutcome:
    """The figures of one (k, seed) run (a row of the runs table plus its hot links)."""

    index: int
    row: dict[str, Any]
    fg_nodes: list[int] = field(default_factory=list)
    hot: list[dict[str, Any]] = field(default_factory=list)


def _blank_row(k: int, seed: int) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for name, (dt, _, _) in RUN_COLUMNS.items():
        row[name] = "" if dt == "str" else (math.nan if dt == "float64" else 0)
    row.update(k=k, seed=seed, status="ok")
    return row


# --------------------------------------------------------------------------- driver
def run_study(study: InterferenceStudy, *, comm: Any = "auto", progress: bool = False) -> StudyResults:
    """Run every (k, seed) of ``study``; the results on every rank (see the module docstring).

    ``comm``: ``"auto"`` (MPI's world communicator under mpirun), ``None`` (sequential) or an
    mpi4py communicator. ``progress``: print one line per finished run to stderr (rank 0).
    """
    from pdes.parallel import world_comm

    if not isinstance(study, InterferenceStudy):
        raise UserError(f"run_study needs an InterferenceStudy, got {type(study).__name__}")
    t0 = _time.perf_counter()
    if comm == "auto":
        comm = world_comm()
    size = comm.size if comm is not None else 1
    rank = comm.rank if comm is not None else 0
    if size > 1:
        from pdes.parallel import install_abort_hook

        install_abort_hook(comm)
    machine = study.build_machine()
    ctx = _Context(study, machine)
    runs = study.runs()
    if study.parallel == "runs" and size > 1:
        # Largest k first, dealt round-robin: the costly runs spread over the ranks.
        order = sorted(range(len(runs)), key=lambda i: (-runs[i][0], i))
        mine = [i for j, i in enumerate(order) if j % size == rank]
        sim_comm = None
    else:
        mine = list(range(len(runs)))
        sim_comm = comm if size > 1 else None
    outcomes: list[RunOutcome] = []
    for i in mine:
        k, seed = runs[i]
        w0 = _time.perf_counter()
        if study.mode == "static":
            out = _static_run(ctx, i, k, seed, sim_comm)
        else:
            out = _trace_run(ctx, i, seed, sim_comm)
        out.row["wall_s"] = _time.perf_counter() - w0
        outcomes.append(out)
        if progress and rank == 0:
            r = out.row
            print(f"  run k={r['k']} seed={seed}: {r['status']} slowdown={r['slowdown']:.4g} "
                  f"({r['wall_s']:.1f} s)", file=sys.stderr, flush=True)
    if study.parallel == "runs" and size > 1:
        from pdes.parallel import quiet_barrier

        quiet_barrier(comm)  # ranks done early sleep instead of polling on the others' cores
        outcomes = [o for part in comm.allgather(outcomes) for o in part]
    outcomes.sort(key=lambda o: o.index)
    return _assemble(study, machine, outcomes, wall_s=_time.perf_counter() - t0, ranks=size)


class _Context:
    """What every run of a study shares: the machine, its sizes, MPI options."""

    def __init__(self, study: InterferenceStudy, machine: Any):
        from apps.node import MpiOptions

        self.study = study
        self.machine = machine
        self.topo = machine.topology
        self.rpn = study.rpn(machine)
        self.options = MpiOptions(eager_threshold=study.eager_threshold, algorithms=dict(study.algorithms))
        self.ideal_net = replace(study.network, model="ideal")
        self._fg_request: float | None = None

    def fg_request(self) -> float:
        """Trace mode: the foreground's requested time (given, or 10x its runtime alone on
        the first nodes of the machine, at least 1 s)."""
        fg = self.study.foreground
        if fg.request_time is not None:
            return float(fg.request_time)
        if self._fg_request is None:
            r = self.run_alone(list(range(-(-fg.ranks // self.rpn))), seed=0, job_id=FG_JOB, ideal=False, comm=None)
            self._fg_request = max(1.0, 10.0 * r.runtime)
        return self._fg_request

    def run_alone(self, nodes: list[int], *, seed: int, job_id: int, ideal: bool, comm: Any,
                  allowed_links: Any = None) -> Any:
        from apps.run import run_app

        s = self.study
        fg = s.foreground
        mapping: Any = s.mapping
        if mapping == "topology":
            # The node of every rank, as in the run with background (the same function of
            # the same nodes), given to run_app as node indices.
            from apps.mapping import job_rank_nodes, rank_node_indices

            mapping = rank_node_indices(nodes, job_rank_nodes(fg.app, dict(fg.args), fg.ranks, nodes, self.rpn,
                                                              mapping, self.topo))
        return run_app(self.machine, fg.app, fg.ranks, placement=nodes, network=self.ideal_net if ideal else s.network,
                       ranks_per_node=self.rpn, mapping=mapping, seed=seed, comm=comm, end_time=s.end_time,
                       eager_threshold=s.eager_threshold, algorithms=dict(s.algorithms), hot_links=0,
                       app_args=dict(fg.args), job_id=job_id, allowed_links=allowed_links)


# ---------------------------------------------------------------------- static runs
def _draw_background(ctx: _Context, seed: int, k: int) -> list[tuple[str, dict[str, Any], int]]:
    """(app, args, ranks) of background jobs 0..k-1 of ``seed``; job i does not depend on k."""
    from scheduler.workload import seeded_rng

    s = ctx.study
    bg = [b for b in s.background if b.weight > 0]
    w = np.array([b.weight for b in bg], dtype=float)
    p = w / w.sum()
    n = ctx.machine.n_nodes
    out = []
    for i in range(k):
        rng = seeded_rng(seed, _STREAM_DRAW, i)
        b = bg[int(rng.choice(len(bg), p=p))] if len(bg) > 1 else bg[0]
        lo, hi = b.rank_range(n, ctx.rpn)
        if b.fraction is not None:
            f = b.fraction if isinstance(b.fraction, tuple) else (b.fraction, b.fraction)
            nodes = max(1, int(round(rng.uniform(f[0], f[1]) * n)))
            ranks = nodes * ctx.rpn
        else:
            ranks = int(rng.integers(lo, hi + 1))
        out.append((b.app, dict(b.args), ranks))
    return out


def _static_run(ctx: _Context, index: int, k: int, seed: int, comm: Any) -> RunOutcome:
    from apps.errors import AppConfigError, AppError
    from apps.registry import bind_args

    from scheduler.allocators import make_allocator
    from scheduler.workload import seeded_rng

    s = ctx.study
    m = ctx.machine
    row = _blank_row(k, seed)
    out = RunOutcome(index=index, row=row)
    fg = s.foreground
    bg = _draw_background(ctx, seed, k)
    jobs = [Job(job_id=FG_JOB, job_size=fg.ranks, nodes=-(-fg.ranks // ctx.rpn), submit_time=0.0, request_time=1.0,
                run_time=1.0, app_name=fg.app, app_args=dict(fg.args))]
    for i, (app, args, ranks) in enumerate(bg):
        try:
            bind_args(app, args, size=ranks)
        except AppConfigError as exc:
            raise UserError(f"background[{app}] with {ranks} ranks (seed {seed}, job {i}): {exc}") from None
        jobs.append(Job(job_id=2 + i, job_size=ranks, nodes=-(-ranks // ctx.rpn), submit_time=0.0, request_time=1.0,
                        run_time=1.0, app_name=app, app_args=args))
    row["fg_nodes"] = jobs[0].nodes
    row["bg_jobs"] = k
    row["bg_nodes"] = sum(j.nodes for j in jobs[1:])
    row["background"] = json.dumps([[j.job_id, j.app_name, j.job_size, j.nodes] for j in jobs[1:]])
    total = sum(j.nodes for j in jobs)
    if total > m.n_nodes:
        row.update(status="unplaced", reason=f"the jobs need {total} nodes; the machine has {m.n_nodes}")
        return out
    # Placement: an empty machine, jobs in a random order.
    alloc = make_allocator(s.allocator, n_nodes=m.n_nodes, topology=m.topology, seed=seed, **dict(s.allocator_options))
    state = alloc.new_state()
    # A link-reserving allocator (jigsaw) confines each job's traffic to its reserved links.
    reserved = getattr(state, "allowed_links", None)
    allowed: dict[int, np.ndarray] = {}
    order = seeded_rng(seed, _STREAM_ORDER, k).permutation(len(jobs)) if len(jobs) > 1 else np.zeros(1, dtype=int)
    for j in (jobs[int(x)] for x in order):
        nodes = alloc.select(j, state)
        if nodes is None:
            what = "the foreground" if j.job_id == FG_JOB else f"background job {j.job_id - 2} ({j.app_name})"
            row.update(status="unplaced", reason=f"allocator {s.allocator} found no place for {what} "
                                                 f"({j.nodes} nodes) after {int(np.flatnonzero(order == j.job_id - 1)[0])} other job(s)")
            return out
        alloc.commit(j, nodes, state)
        j.assigned_nodes = nodes
        if reserved is not None:
            allowed[j.job_id] = np.flatnonzero(reserved(j.job_id))
    fg_nodes = [int(x) for x in jobs[0].assigned_nodes]
    out.fg_nodes = fg_nodes
    _placement_figures(ctx, row, fg_nodes)
    main = _simulate_static(ctx, jobs, seed, comm, allowed)
    row["events"] = main["events"]
    row["bg_launches"] = main["launches"]
    rec = main["fg"]
    if rec is None or rec["status"] not in ("ok", "failed"):
        row.update(status="unfinished", reason=f"the foreground had not ended at end_time={s.end_time!r} s")
        return out
    if rec["status"] == "failed":
        row.update(status="failed", reason=f"rank {rec['failed_rank']}: {rec['error']}")
        return out
    if main["bg_failed"]:
        row["reason"] = "background job(s) failed: " + "; ".join(main["bg_failed"][:3])
    row.update(start=rec["start"], end=rec["end"], runtime=rec["end"] - rec["start"])
    row["bytes"] = main["fg_bytes"]
    row["hop_bytes"] = main["fg_hop_bytes"]
    row["messages"] = main["fg_messages"]
    try:
        fg_links = allowed.get(FG_JOB)
        alone = ctx.run_alone(fg_nodes, seed=seed, job_id=FG_JOB, ideal=False, comm=comm, allowed_links=fg_links)
        ideal = ctx.run_alone(fg_nodes, seed=seed, job_id=FG_JOB, ideal=True, comm=comm, allowed_links=fg_links)
    except AppError as exc:
        row.update(status="failed", reason=f"baseline run: {str(exc).splitlines()[0]}")
        return out
    _baseline_figures(ctx, row, out, alone, ideal, main["snaps"].get("end"), None)
    return out


class _StaticControl:
    """Launches the jobs of a static run, restarts background jobs that end while the
    foreground runs, and kills them and snapshots the links when it ends (rank 0)."""

    def __init__(self, ctx: _Context, jobs: list[Job], allowed: dict[int, np.ndarray] | None = None):
        self.ctx = ctx
        self.jobs = jobs
        self.allowed = allowed or {}
        self.mgr: Any = None
        self.probe_eids: list[int] = []
        self.specs: dict[int, Any] = {}
        self.current: dict[int, int] = {}  # background index -> running job id
        self.fg: dict[str, Any] | None = None
        self.launches = 0
        self.bg_failed: list[str] = []

    def spec(self, job: Job, job_id: int) -> Any:
        from apps.node import LaunchSpec

        from apps.mapping import job_rank_nodes

        rank_nodes = job_rank_nodes(job.app_name, job.app_args, job.job_size, [int(n) for n in job.assigned_nodes],
                                    self.ctx.rpn, self.ctx.study.mapping, self.ctx.topo)
        return LaunchSpec.build(job=job_id, app=job.app_name, args=job.app_args, rank_nodes=rank_nodes,
                                report_to=self.mgr.eid, options=self.ctx.options,
                                allowed_links=self.allowed.get(job.job_id))

    def launch_all(self) -> None:
        for i, j in enumerate(self.jobs):
            self.mgr.launch_at(0.0, self.spec(j, j.job_id))
            if i > 0:
                self.current[i - 1] = j.job_id
                self.launches += 1

    def on_end(self, rec: Any) -> None:
        if rec.job == FG_JOB:
            self.fg = {"status": rec.status, "start": rec.start, "end": rec.end, "error": rec.error,
                       "failed_rank": rec.failed_rank}
            for jid in sorted(self.current.values()):
                self.mgr.kill_job(jid)
            la = self.mgr.sim.lookahead
            for e in self.probe_eids:
                self.mgr.send(e, "snap", "end", la)
            return
        i = (rec.job - 2) % BG_STRIDE
        if self.current.get(i) != rec.job:
            return
        if rec.status == "failed":
            self.bg_failed.append(f"job {i} ({rec.app}) rank {rec.failed_rank}: {rec.error}")
            del self.current[i]
            return
        if rec.status == "ok" and self.fg is None:
            nid = rec.job + BG_STRIDE
            self.current[i] = nid
            self.launches += 1
            self.mgr.launch_at(0.0, self.spec(self.jobs[i + 1], nid))


def _simulate_static(ctx: _Context, jobs: list[Job], seed: int, comm: Any,
                     allowed: dict[int, np.ndarray] | None = None) -> dict[str, Any]:
    """The run with background: every job launched at time 0 on its nodes."""
    from apps.platform import build_platform

    ctl = _StaticControl(ctx, jobs, allowed)
    # The machine is built as in apps.run.run_app: with no background the run is event for
    # event the foreground's run alone.
    plat = build_platform(ctx.machine, ctx.study.network, seed=seed, end_time=ctx.study.end_time, comm=comm,
                          on_end=ctl.on_end)
    sim, net, mgr = plat.sim, plat.net, plat.manager
    ctl.mgr = mgr
    ctl.probe_eids, probes = _add_probes(sim, net)
    if mgr is not None:
        ctl.launch_all()
    st = sim.run()
    netstats = net.stats()
    snaps = _gather_snaps(sim, probes)
    shared = {"fg": ctl.fg, "launches": ctl.launches, "bg_failed": ctl.bg_failed} if mgr is not None else None
    if sim.comm is not None and sim.size > 1:
        shared = sim.comm.bcast(shared, root=sim.rank_of(plat.manager_eid))
    # The probes' snapshot events (one per rank) are left out: the count does not depend on P.
    return {**shared, "events": int(st.events) - sim.size * len(snaps), "snaps": snaps,
            "fg_bytes": float(netstats.job_bytes.get(FG_JOB, 0.0)),
            "fg_hop_bytes": float(netstats.job_hop_bytes.get(FG_JOB, 0.0)),
            "fg_messages": int(netstats.job_messages.get(FG_JOB, 0))}


# ----------------------------------------------------------------------- figures
def _placement_figures(ctx: _Context, row: dict[str, Any], fg_nodes: list[int]) -> None:
    from scheduler.allocators.metrics import placement_metrics

    row["aph"] = placement_metrics(ctx.topo, fg_nodes).aph


def _baseline_figures(ctx: _Context, row: dict[str, Any], out: RunOutcome, alone: Any, ideal: Any,
                      end: _Snapshot | None, start: _Snapshot | None) -> None:
    """Alone and ideal runtimes, slowdowns, and the links on the foreground's routes."""
    from models.topology.base import KIND_EJECT, KIND_INJECT, KIND_NAMES

    row["alone"] = alone.runtime
    row["ideal"] = ideal.runtime
    row["slowdown"] = row["runtime"] / alone.runtime if alone.runtime > 0 else math.nan
    row["ideal_slowdown"] = row["runtime"] / ideal.runtime if ideal.runtime > 0 else math.nan
    if end is None:
        return
    topo = ctx.topo
    kind = topo.link_kind
    fg_bytes = np.asarray(alone.net.link_bytes, dtype=float)
    on_route = (fg_bytes > 0) & (kind != KIND_INJECT) & (kind != KIND_EJECT)
    links = np.flatnonzero(on_route)
    if len(links) == 0:
        row.update(max_util=0.0, max_util_alone=0.0, other_bytes=0.0)
        return
    b = end.bytes - (start.bytes if start is not None else 0.0)
    busy = end.busy - (start.busy if start is not None else 0.0)
    window = end.time - (start.time if start is not None else 0.0)
    util = busy[links] / window if window > 0 else np.zeros(len(links))
    util_alone = np.asarray(alone.net.link_busy, dtype=float)[links] / alone.runtime if alone.runtime > 0 else 0.0 * util
    rank_by = util
    if ctx.study.network.model == "ideal":
        # No contention: links are never occupied, so utilization is not defined; the
        # hot links are the ones that carried the most bytes.
        util = np.full(len(links), math.nan)
        util_alone = util
        rank_by = b[links]
    other = np.maximum(b[links] - fg_bytes[links], 0.0)
    row["max_util"] = float(util.max())
    row["max_util_alone"] = float(np.max(util_alone))
    row["other_bytes"] = float(other.sum())
    order = np.lexsort((links, -rank_by))[: ctx.study.hot_links]
    for r, j in enumerate(order.tolist(), start=1):
        l = int(links[j])
        out.hot.append({"run": out.index, "rank": r, "link": l, "src": int(topo.link_src[l]),
                        "dst": int(topo.link_dst[l]), "kind": KIND_NAMES[int(kind[l])],
                        "utilization": float(util[j]), "utilization_alone": float(util_alone[j]),
                        "fg_bytes": float(fg_bytes[l]), "other_bytes": float(other[j])})


# ------------------------------------------------------------------------ trace runs
class _TraceObserver:
    """Watches the foreground job of a trace-mode experiment (see ``run_experiment``)."""

    def __init__(self) -> None:
        self.mgr: Any = None
        self.probe_eids: list[int] = []
        self.probes: list[LinkProbe] = []
        self.sim: Any = None
        self.fg_id: int | None = None
        # The foreground's run as its ranks saw it (rank 0): status, start and end.
        self.fg_run: tuple[str, float, float] | None = None

    def attach(self, sim: Simulator, net: Any, mgr: Any) -> None:
        self.sim = sim
        self.mgr = mgr
        self.probe_eids, self.probes = _add_probes(sim, net)

    def _snap(self, tag: str) -> None:
        la = self.sim.lookahead
        for e in self.probe_eids:
            self.mgr.send(e, "snap", tag, la)

    def job_started(self, job: Job, rank_nodes: Any) -> None:
        if job.foreground and self.fg_id is None:
            # Its ranks start one lookahead from now, after this snapshot (sent first).
            self.fg_id = job.job_id
            self._snap("start")

    def job_ended(self, rec: Any) -> None:
        if rec.job == self.fg_id:
            self.fg_run = (rec.status, float(rec.start), float(rec.end))
            self._snap("end")


def _trace_run(ctx: _Context, index: int, seed: int, comm: Any) -> RunOutcome:
    from apps.errors import AppError

    from ..experiment.runner import build_workload, run_experiment
    from scheduler.workload import seeded_rng
    from ..experiment.spec import (AppChoice, Experiment, ForegroundSpec, MachineSpec, OutputSpec,
                                   SchedulerSpec)
    from .spec import machine_dict

    s = ctx.study
    row = _blank_row(-1, seed)
    out = RunOutcome(index=index, row=row)
    fg = s.foreground
    apps = tuple(AppChoice(name=b.app, weight=b.weight, args=dict(b.args), request_time=b.request_time)
                 for b in s.background) or (AppChoice(name="timekeeper"),)
    exp = Experiment(
        name=s.name, seed=seed, end_time=s.end_time,
        machine=s.machine if isinstance(s.machine, MachineSpec) else MachineSpec(**machine_dict(s.machine)),
        network=s.network, workload=s.workload, apps=apps,
        scheduler=SchedulerSpec(order=s.order, backfill=s.backfill, allocator=s.allocator,
                                allocator_options=dict(s.allocator_options), ranks_per_node=ctx.rpn,
                                mapping=s.mapping, ideal_baseline=False, eager_threshold=s.eager_threshold,
                                algorithms=dict(s.algorithms)),
        output=OutputSpec(path=None), base_dir=s.base_dir,
    )
    # The insertion point: uniform between the first and the last background submission,
    # drawn here (not rounded to whole seconds, so time-compressed traces work too).
    bg, _, _ = build_workload(exp, ctx.rpn, ctx.machine.n_nodes)
    submits = [j.submit_time for j in bg]
    lo, hi = (min(submits), max(submits)) if submits else (0.0, 0.0)
    at = float(seeded_rng(seed, _STREAM_INSERT).uniform(lo, hi)) if hi > lo else lo
    exp = replace(exp, foreground=(ForegroundSpec(app=fg.app, ranks=fg.ranks, args=dict(fg.args),
                                                  request_time=ctx.fg_request(), at=(at,)),))
    obs = _TraceObserver()
    res = run_experiment(exp, comm=comm, progress=False, observer=obs)
    snaps = _gather_snaps(obs.sim, obs.probes)
    info = None
    if res is not None:
        info = _trace_figures(res, obs.fg_run)
        info["fg_links"] = getattr(obs, "allowed_links", {}).get(info["fg_id"])
    if comm is not None and comm.size > 1:
        info = comm.bcast(info, root=0)
    row.update(info["row"])
    row["events"] -= obs.sim.size * len(snaps)  # the probes' snapshot events
    out.fg_nodes = info["fg_nodes"]
    if row["status"] != "ok":
        return out
    _placement_figures(ctx, row, out.fg_nodes)
    try:
        alone = ctx.run_alone(out.fg_nodes, seed=seed, job_id=info["fg_id"], ideal=False, comm=comm,
                              allowed_links=info["fg_links"])
        ideal = ctx.run_alone(out.fg_nodes, seed=seed, job_id=info["fg_id"], ideal=True, comm=comm,
                              allowed_links=info["fg_links"])
    except AppError as exc:
        row.update(status="failed", reason=f"baseline run: {str(exc).splitlines()[0]}")
        return out
    _baseline_figures(ctx, row, out, alone, ideal, snaps.get("end"), snaps.get("start"))
    return out


def _trace_figures(res: Any, fg_run: tuple[str, float, float] | None = None) -> dict[str, Any]:
    """The foreground's row figures from an experiment's results (rank 0).

    ``fg_run`` is the foreground's run as its ranks saw it (status, first rank's start, last
    rank's end). Its start and end are used, not the scheduler's: those are one launch
    message earlier and one end report later, and the runtimes alone and ideal, to which
    the runtime is compared, are measured from the ranks too.
    """
    j = res.jobs
    fgi = np.flatnonzero(j["foreground"])
    i = int(fgi[0])
    status = str(j["status"][i])
    row: dict[str, Any] = {"events": int(res.run["events"])}
    nodes = [int(x) for x in res.job_nodes[res.job_nodes_ptr[i]:res.job_nodes_ptr[i + 1]]]
    row["fg_nodes"] = int(j["nodes"][i])
    if status != "completed":
        st = {"rejected": "rejected", "killed": "killed", "failed": "failed"}.get(status, "unfinished")
        row.update(status=st, reason=str(j["kill_reason"][i]) or f"the foreground's status is {status}")
        return {"row": row, "fg_nodes": nodes, "fg_id": int(j["job_id"][i])}
    start, end = float(j["start"][i]), float(j["end"][i])
    if fg_run is not None and fg_run[0] == "ok":
        start, end = fg_run[1], fg_run[2]
    row.update(status="ok", start=start, end=end, runtime=end - start, bytes=float(j["bytes_sent"][i]),
               hop_bytes=float(j["hop_bytes"][i]), messages=int(j["messages"][i]))
    other = (~j["foreground"]) & (j["app"] != "timekeeper") & np.isfinite(j["start"])
    overlap = other & (j["start"] < end) & (np.nan_to_num(j["end"], nan=np.inf) > start)
    idx = np.flatnonzero(overlap)
    row["bg_jobs"] = len(idx)
    row["bg_launches"] = len(idx)
    row["bg_nodes"] = int(j["nodes"][idx].sum())
    row["background"] = json.dumps([[int(j["job_id"][x]), str(j["app"][x]), int(j["job_size"][x]), int(j["nodes"][x])]
                                    for x in idx])
    return {"row": row, "fg_nodes": nodes, "fg_id": int(j["job_id"][i])}


# -------------------------------------------------------------------------- assembly
def _assemble(study: InterferenceStudy, machine: Any, outcomes: list[RunOutcome], *, wall_s: float,
              ranks: int) -> StudyResults:
    n = len(outcomes)
    runs = empty_columns(RUN_COLUMNS, n)
    for i, o in enumerate(outcomes):
        for name, v in o.row.items():
            runs[name][i] = v
    ptr = np.zeros(n + 1, dtype=np.int64)
    for i, o in enumerate(outcomes):
        ptr[i + 1] = ptr[i] + len(o.fg_nodes)
    ids = np.array([x for o in outcomes for x in o.fg_nodes], dtype=np.int64)
    hot_rows = [h for o in outcomes for h in o.hot]
    hot = empty_columns(HOT_COLUMNS, len(hot_rows))
    for r, h in enumerate(hot_rows):
        for name, v in h.items():
            hot[name][r] = v
    topo = machine.topology
    fg = study.foreground
    from simhpc import __version__

    return StudyResults(
        name=study.name, mode=study.mode, study_toml=dumps_study(study),
        machine={"name": machine.name, "nodes": int(machine.n_nodes), "family": topo.name,
                 "routers": int(topo.n_routers), "links": int(topo.n_links),
                 "cores_per_node": int(machine.cores_per_node), "routing": str(topo.routing)},
        foreground={"app": fg.app, "ranks": int(fg.ranks), "args": json.dumps(plain_data(fg.args), sort_keys=True),
                    "ranks_per_node": int(study.rpn(machine)), "allocator": study.allocator},
        runs=runs, fg_nodes_ptr=ptr, fg_node_ids=ids, hot=hot,
        info={"wall_s": float(wall_s), "ranks": int(ranks), "parallel": study.parallel, "simhpc": __version__,
              "network": study.network.model},
    )


