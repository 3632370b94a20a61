"""Running an experiment: workload -> scheduler -> MPI apps on the network -> Results.

One simulator holds the machine's network (NIC and router entities, MPI nodes), a job
manager and the scheduler entity (added last, so that job ends at an instant are seen before
that instant's starts are decided). Timekeeper jobs cost O(1) events (a timer on the
scheduler); app jobs are launched on their nodes through the job manager and their runtime
emerges from the simulated traffic. The same experiment gives identical results
sequentially and under ``mpirun -n P``; the scheduler, manager and results live on rank 0.
"""

from __future__ import annotations

import os
import sys
import time as _time
from typing import Any

import numpy as np

from pdes import Entity, Simulator

from scheduler.errors import UserError
from scheduler.job import Job, JobStatus
from .progress import BAR_FORMAT, progress_postfix
from .spec import ConfigError, Experiment

__all__ = ["run_experiment", "build_workload", "AppJobRunner", "ExperimentError"]

TIMEKEEPER = "timekeeper"


class ExperimentError(UserError):
    """An experiment could not finish (e.g. jobs deadlocked); the message says which and why."""


# ------------------------------------------------------------------------------ workload
def build_workload(exp: Experiment, ranks_per_node: int, n_nodes: int) -> tuple[list[Job], list[Job], dict[str, Any]]:
    """The experiment's jobs (apps assigned, foreground inserted), the jobs rejected while
    reading a trace, and a report of the workload (counts, filter figures, ``dropped``: the
    trace jobs the filter took out, by reason, and ``adjusted``: the jobs a documented rule
    changed, by rule: ``run_time_raised``, ``size_capped``, ``run_time_capped`` for a synthetic
    workload (:meth:`~scheduler.workload.SyntheticWorkload.generate_counted`), ``size_raised``
    for a trace: a size that ``size_scale`` rounds to 0 becomes 1 process).

    A trace job is sized for the experiment's machine, never for the trace header's: one
    that fits the machine is simulated whatever the header says, and one that does not is
    rejected by the scheduler and counted (``larger_than_machine``)."""
    from scheduler.workload import SyntheticWorkload, insert_foreground, seeded_rng

    w = exp.workload
    report: dict[str, Any] = {"kind": w.kind}
    rejected: list[Job] = []
    if w.kind == "synthetic":
        gen = SyntheticWorkload(
            n_jobs=w.jobs, inter_arrival=w.inter_arrival.build(), size=w.size.build(),
            run_time=w.run_time.build(), request_factor=w.request_factor.build(), users=w.users,
            cores_per_node=ranks_per_node, resolution=w.resolution, min_run_time=w.resolution,
        )
        jobs, report["adjusted"] = gen.generate_counted(exp.seed)
    else:
        from scheduler.swf import read_swf

        from ..traces import resolve_trace

        path = str(resolve_trace(w.trace, exp.base_dir))
        if not os.path.exists(path):
            raise ConfigError(f"workload.trace: {path!r} does not exist")
        # The machine is the experiment's: the trace header's size (if any) plays no part.
        tr = read_swf(path, n_nodes=int(n_nodes), cores_per_node=1, skip_malformed=w.skip_malformed, limit=w.limit,
                      reject_too_large=False)
        jobs = []
        raised = 0
        for j in tr.jobs:
            j = j.fresh()
            if w.size_scale != 1.0:
                size = int(round(j.job_size * w.size_scale))
                if size < 1:
                    # A job runs on at least one process: the documented rule, counted.
                    size = 1
                    raised += 1
                j.job_size = size
            if w.time_scale != 1.0:
                j.submit_time *= w.time_scale
                j.run_time *= w.time_scale
                j.request_time *= w.time_scale
            j.nodes = -(-j.job_size // ranks_per_node)
            jobs.append(j)
        report["filter"] = tr.report.as_dict()
        report["dropped"] = tr.report.by_reason()
        report["adjusted"] = {"size_raised": raised}
    if w.load_factor != 1.0 and jobs:
        from scheduler.load import scale_load

        # The background jobs arrive faster (or slower); foreground times stay as given.
        jobs = scale_load(jobs, w.load_factor)
    # Apps for background jobs, drawn by weight from the run seed.
    specs = exp.apps
    weights = np.array([a.weight for a in specs], dtype=float)
    if len(specs) == 1:
        picks = np.zeros(len(jobs), dtype=np.int64)
    else:
        picks = seeded_rng(exp.seed, 0xA995).choice(len(specs), len(jobs), p=weights / weights.sum())
    for j, k in zip(jobs, picks.tolist()):
        a = specs[k]
        j.app_name = a.name
        j.app_args = dict(a.args)
        if a.request_time is not None:
            j.request_time = float(a.request_time)
        if a.comm_sensitive is not None:
            j.sched_args = {**j.sched_args, "comm_sensitive": a.comm_sensitive}  # a copy: fresh() shares it
    # Foreground jobs.
    for f in exp.foreground:
        fg = [Job(job_id=10**9 + i, job_size=f.ranks, nodes=-(-f.ranks // ranks_per_node), submit_time=0.0,
                  request_time=float(f.request_time), run_time=float(f.request_time), app_name=f.app,
                  app_args=dict(f.args), foreground=True,
                  sched_args={} if f.comm_sensitive is None else {"comm_sensitive": f.comm_sensitive})
              for i in range(f.count)]
        if f.at is not None:
            at = list(f.at) * (f.count if len(f.at) == 1 else 1)
            jobs = insert_foreground(jobs, fg, at=at, seed=exp.seed)
        elif f.after_job is not None:
            jobs = insert_foreground(jobs, fg, after_jobs=[f.after_job] * f.count, seed=exp.seed)
        else:
            jobs = insert_foreground(jobs, fg, seed=exp.seed)
    report["jobs"] = len(jobs)
    report["app_jobs"] = sum(1 for j in jobs if j.app_name != TIMEKEEPER)
    report["foreground"] = sum(1 for j in jobs if j.foreground)
    return jobs, rejected, report


# --------------------------------------------------------------------------------- runner
class AppJobRunner:
    """Launches jobs for the scheduler: timekeeper jobs as one timer, app jobs on the network.

    App jobs go through the :class:`apps.manager.JobManager` (launch to every node, one
    report per node); their end, failure (a rank raised: status ``failed``, the error as
    reason) or kill (at the requested wall time) is passed on to the scheduler.
    """

    enforces_walltime = False  # the scheduler sets a wall-time timer per job and calls kill()

    def __init__(self, *, ranks_per_node: int, mapping: str, options: Any, observer: Any = None,
                 topology: Any = None):
        self.ranks_per_node = ranks_per_node
        self.mapping = mapping
        self.topology = topology
        # Node of every rank of each launched app job (the ideal baseline reuses it).
        self.rank_nodes: dict[int, tuple[int, ...]] = {}
        self.options = options
        self.observer = observer
        self.manager: Any = None
        self._jobs: dict[int, tuple[Any, Job]] = {}
        self._kill_reason: dict[int, str] = {}
        self.records: dict[int, Any] = {}
        # Jobs whose allocator reserved links for them: job id -> allowed link ids.
        self.allowed_links: dict[int, np.ndarray] = {}

    def start(self, sched: Any, job: Job, nodes: np.ndarray) -> None:
        if job.app_name == TIMEKEEPER:
            sched.after(job.run_time, sched.end_timer, (job, JobStatus.COMPLETED, None))
            return
        from apps.errors import AppConfigError
        from apps.node import LaunchSpec
        from apps.registry import bind_args

        from apps.mapping import job_rank_nodes

        try:
            args = bind_args(job.app_name, job.app_args, size=job.job_size)
            rank_nodes = job_rank_nodes(job.app_name, args, job.job_size, nodes, self.ranks_per_node, self.mapping,
                                        self.topology)
        except AppConfigError as exc:
            # The job cannot run as configured: it fails at once, with the reason recorded.
            sched.after(0.0, sched.end_timer, (job, JobStatus.FAILED, {"reason": str(exc)}))
            return
        allowed = None
        reserved = getattr(sched.state, "allowed_links", None)
        if reserved is not None:
            # A link-reserving allocator: the job's traffic stays on its reserved links.
            allowed = self.allowed_links[job.job_id] = np.flatnonzero(reserved(job.job_id))
        spec = LaunchSpec.build(job=job.job_id, app=job.app_name, args=args, rank_nodes=rank_nodes,
                                report_to=self.manager.eid, options=self.options, allowed_links=allowed)
        self.rank_nodes[job.job_id] = tuple(rank_nodes)
        self._jobs[job.job_id] = (sched, job)
        self.manager.launch_at(0.0, spec)
        if self.observer is not None:
            self.observer.job_started(job, rank_nodes)

    def kill(self, sched: Any, job: Job, reason: str) -> None:
        if job.app_name == TIMEKEEPER or job.job_id not in self._jobs:
            sched.job_ended(job.job_id, JobStatus.KILLED, {"reason": reason})
            return
        self._kill_reason[job.job_id] = reason
        self.manager.kill_job(job.job_id)

    def on_end(self, rec: Any) -> None:
        """JobManager callback, in the event where an app job ended."""
        entry = self._jobs.pop(rec.job, None)
        if entry is None:
            return
        sched, job = entry
        self.records[rec.job] = rec
        if self.observer is not None:
            self.observer.job_ended(rec)
        if rec.status == "ok":
            sched.job_ended(rec.job, JobStatus.COMPLETED, None)
        elif rec.status == "failed":
            sched.job_ended(rec.job, JobStatus.FAILED, {"reason": f"rank {rec.failed_rank} failed: {rec.error}"})
        else:
            sched.job_ended(rec.job, JobStatus.KILLED, {"reason": self._kill_reason.pop(rec.job, "killed")})


class ProgressTicker(Entity):
    """Updates a progress bar every ``period`` seconds of simulated time (rank 0 only).

    Its ticks are ordinary events that depend on nothing but simulated time, so runs stay
    deterministic; it stops once the scheduler has nothing left to do. It counts its ticks,
    which the run statistics leave out (a run's event count does not depend on the bar).
    """

    def __init__(self, period: float, bar: Any, sched_eid: int, total: int):
        self.period = period
        self.bar = bar
        self.sched_eid = sched_eid
        self.total = total
        self.t0 = _time.perf_counter()
        self.done = 0
        self.ticks = 0
        self.drawn = 0.0
        self.after(period, self.tick)

    def tick(self, _: Any = None) -> None:
        self.ticks += 1
        sched = self.sim.local_entity(self.sched_eid)
        if sched is None:
            return
        ended = sched.n_ended + len(sched.rejected)
        if ended > self.done:
            self.bar.update(ended - self.done)
            self.done = ended
        wall = _time.perf_counter() - self.t0
        text = progress_postfix(now=_fmt_sim(self.sim.now), done=self.done, total=self.total, wall=wall,
                                events=self.sim.events_so_far())
        # Redrawn at most twice a second, also while no job ends (the last, long jobs).
        redraw = wall - self.drawn >= 0.5
        if redraw:
            self.drawn = wall
        self.bar.set_postfix_str(text, refresh=redraw)
        if not sched.finished:
            self.after(self.period, self.tick)


def _fmt_sim(t: float) -> str:
    from models.units import format_time

    return format_time(t).replace(" ", "")


def _progress_bar(total: int, enabled: bool | None) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    # Shown only for runs that take more than a couple of seconds.
    return tqdm(total=total, unit="job", delay=2.0, file=sys.stderr, dynamic_ncols=True, leave=False,
                bar_format=BAR_FORMAT)


# ---------------------------------------------------------------------------------- run
#: How an experiment uses MPI ranks (see :func:`run_experiment`).
EXPERIMENT_PARALLEL = ("auto", "simulation", "baselines")
#: ``parallel="auto"`` spreads the simulation over P ranks from this many nodes per rank on.
AUTO_NODES_PER_RANK = 1024


def parallel_mode(parallel: str, n_nodes: int, ranks: int) -> str:
    """``simulation`` or ``baselines`` for ``parallel`` on a machine of ``n_nodes`` and
    ``ranks`` MPI ranks; ``auto`` is ``simulation`` from :data:`AUTO_NODES_PER_RANK` nodes
    per rank on (a small machine's run has too few events per window to pay for the
    exchanges: see ``simhpc run --predict-ranks``)."""
    from pdes.validate import check_choice

    check_choice("parallel", parallel, EXPERIMENT_PARALLEL, error=ConfigError)
    if parallel == "auto":
        return "simulation" if n_nodes >= AUTO_NODES_PER_RANK * ranks else "baselines"
    return parallel


def run_experiment(exp: Experiment, *, comm: Any = "auto", progress: bool | None = None, observer: Any = None,
                   predict_ranks: tuple[int, ...] = (), parallel: str = "simulation",
                   otf2: str | os.PathLike | None = None) -> Any:
    """Run ``exp``; returns its :class:`~simhpc.results.Results` on rank 0 (None elsewhere).

    ``progress``: show a progress bar on rank 0 (default: when stderr is a terminal).
    ``observer``: optional object watching app jobs (interference studies use one to take
    link statistics over a foreground job's lifetime). ``observer.attach(sim, net,
    manager)`` is called on every rank once the scheduler has been added (entities it adds
    come last, so no other entity's id changes; ``manager`` is None off rank 0);
    ``observer.allowed_links`` is set to the dict of reserved links of app jobs (job id ->
    link ids, filled as jobs start under a link-reserving allocator).
    ``observer.job_started(job, rank_nodes)`` and ``observer.job_ended(record)`` are called on
    rank 0 in the events where an app job is launched and where it ends.
    ``predict_ranks``: run on one rank in the kernel's statistics mode (:mod:`pdes.predict`)
    and record each rank count's parallel figures in the results (``run["predicted_*"]``).
    ``parallel`` (under mpirun): ``"simulation"`` spreads the simulation over the ranks;
    ``"baselines"`` runs it whole on every rank (the same run, no exchanges) and deals only
    the baseline runs out; ``"auto"`` chooses (:func:`parallel_mode`). Results are the same.
    ``otf2``: a directory to write an OTF2 trace of the simulated run into (every MPI call of
    every rank of the app jobs, one system tree node per job; :mod:`apps.otf2trace.export`);
    the baseline runs are not traced.
    """
    from apps.mapping import oversubscription
    from apps.node import MpiOptions
    from apps.platform import build_platform

    from scheduler.allocators import make_allocator
    from scheduler.backfill import make_backfill
    from scheduler.estimates import make_estimate
    from scheduler.lifecycle import SchedulerEntity
    from scheduler.ordering import make_ordering

    t_start = _time.perf_counter()
    if otf2 is not None:
        from apps.otf2trace.export import check_output

        check_output(otf2)
    if comm == "auto":
        from pdes.parallel import world_comm

        comm = world_comm()
    machine = exp.machine.build()
    # The communicator the baseline runs are dealt over; the simulation's own is None when
    # every rank runs it whole.
    deal = comm if comm is not None and comm.size > 1 else None
    if deal is not None and parallel_mode(parallel, machine.n_nodes, deal.size) == "baselines":
        comm = None
        from pdes.parallel import install_abort_hook

        install_abort_hook(deal)
        if deal.rank != 0:
            progress = False
    topo = machine.topology
    sc = exp.scheduler
    rpn = sc.ranks_per_node or machine.cores_per_node
    # A valid run (ranks share the cores), but rarely what was meant: warned once here, and
    # recorded in the results' run statistics.
    oversubscription(rpn, machine.cores_per_node, what="scheduler.ranks_per_node")
    jobs, trace_rejected, wl_report = build_workload(exp, rpn, machine.n_nodes)
    if exp.metrics.trim.active:
        # A trim that leaves no job fails here, before the run, not after it.
        try:
            exp.metrics.trim.mask(np.array([j.submit_time for j in jobs + trace_rejected], dtype=float))
        except UserError as exc:
            raise ConfigError(f"metrics: {exc}") from None
    runner = AppJobRunner(ranks_per_node=rpn, mapping=sc.mapping,
                          options=MpiOptions(eager_threshold=sc.eager_threshold, algorithms=dict(sc.algorithms)),
                          observer=observer, topology=machine.topology)
    plat = build_platform(machine, exp.network, seed=exp.seed, end_time=exp.end_time, comm=comm,
                          on_end=runner.on_end, predict_ranks=predict_ranks, record=otf2 is not None)
    sim, net, mgr = plat.sim, plat.net, plat.manager
    if sim.size > 1:
        from pdes.parallel import install_abort_hook

        install_abort_hook(sim.comm)
    runner.manager = mgr
    try:
        alloc = make_allocator(sc.allocator, n_nodes=machine.n_nodes, topology=topo, seed=exp.seed, **dict(sc.allocator_options))
        pol = make_ordering(sc.order, n_nodes=machine.n_nodes, **dict(sc.order_options))
        bf = make_backfill(sc.backfill, **dict(sc.backfill_options))
        est = make_estimate(sc.estimate, **dict(sc.estimate_options))
    except UserError as exc:
        raise ConfigError(f"scheduler: {exc}") from None
    span = (max((j.submit_time for j in jobs), default=0.0) - min((j.submit_time for j in jobs), default=0.0))
    bar = _progress_bar(len(jobs), progress) if sim.rank == 0 else None
    # The ticker is added before the scheduler (entities added after it must not report ends).
    if bar is not None:
        ticker = sim.add_entity(ProgressTicker, max(span, 1.0) / 200.0, bar, sim.n_entities + 1, len(jobs),
                                name="progress", rank=0)
    else:
        sim.add_entity(_Idle, name="progress", rank=0)
    sched = sim.add_entity(SchedulerEntity, name="scheduler", rank=0, jobs=jobs, allocator=alloc, ordering=pol,
                           backfill=bf, runner=runner, kill_overrun=sc.kill_overrun, estimate=est)
    if observer is not None:
        observer.attach(sim, net, mgr)
        # Reserved links of app jobs (link-reserving allocators), filled as jobs start.
        observer.allowed_links = runner.allowed_links
    try:
        st = sim.run()
    finally:
        if bar is not None:
            bar.close()
    if bar is not None:
        st = _without_ticks(st, ticker.ticks)
    netstats = net.stats()
    unfinished = _unfinished(sim, sched, plat)
    if unfinished:
        raise ExperimentError(unfinished)
    if otf2 is not None:
        recorded = plat.recorded()
        if recorded is not None and (deal.rank if deal is not None else 0) == 0:
            from apps.otf2trace.export import write_otf2

            write_otf2(otf2, recorded, machine=machine.name)
    # The baselines: every completed app job again, alone on its nodes (the same runs on
    # every rank count, so the figures do not depend on it).
    jobs_done = sched.jobs if sim.rank == 0 else None
    links, placed = runner.allowed_links, runner.rank_nodes
    ideal = (_baseline_runs(exp, machine, rpn, jobs_done, deal, _ideal_config(exp), links, placed)
             if sc.ideal_baseline else {})
    alone = (_baseline_runs(exp, machine, rpn, jobs_done, deal, exp.network, links, placed)
             if sc.alone_baseline else {})
    if (deal.rank if deal is not None else sim.rank) != 0:
        return None
    assert sched is not None
    from .results_builder import build_results

    res = build_results(exp=exp, machine=machine, jobs=sched.jobs, trace_rejected=trace_rejected, alloc=alloc,
                        netstats=netstats, stats=st, runner=runner, ideal=ideal, alone=alone, workload=wl_report,
                        wall_s=_time.perf_counter() - t_start, rpn=rpn)
    # How MPI ranks were used: the simulation's own ranks are in run["ranks"].
    res.run["mpi_ranks"] = deal.size if deal is not None else 1
    res.run["parallel"] = "sequential" if deal is None else ("simulation" if sim.size > 1 else "baselines")
    return res


def _without_ticks(st: Any, ticks: int) -> Any:
    """Run statistics less the progress ticker's events (it runs on rank 0)."""
    from dataclasses import replace

    per_rank = list(st.events_per_rank)
    if per_rank:
        per_rank[0] -= ticks
    return replace(st, events=st.events - ticks, events_per_rank=per_rank)


class _Idle(Entity):
    """Stands in for the progress ticker when no bar is shown (same entity ids either way)."""


def _unfinished(sim: Simulator, sched: Any, plat: Any) -> str:
    """A report of jobs still queued or running when the run ended ('' when none, or when the
    run was cut at its end time). Each job that never ended lists its blocked ranks with the
    app line each waits at, as ``simhpc app`` reports a deadlock
    (:func:`apps.run.blocked_rank_lines`). Called on every rank (the job states are gathered).
    """
    from apps.run import blocked_rank_lines

    head, running = "", []
    # The run was cut at its end time: unfinished jobs are expected.
    if sched is not None and not sched.finished and sim.now < sim.end_time:
        running = [(jid, j.app_name, j.job_size) for jid, j in sorted(sched.running.items())]
        head = (f"the simulation ended at t={sim.now:g} s with {len(running)} job(s) running, "
                f"{len(sched.queue)} queued and {sched.unsubmitted} not yet submitted")
    if sim.comm is not None and sim.size > 1:
        head, running = sim.comm.bcast((head, running), root=0)
    if not head:
        return ""
    lines = [head]
    for jid, app, size in running[:10]:
        lines.append(f"  job {jid} ({app}, {size} ranks) never ended")
        lines.extend(blocked_rank_lines(plat.job_states(jid), indent="    "))
    if len(running) > 10:
        lines.append(f"  ... and {len(running) - 10} more job(s)")
    lines.append("(an app deadlocked; with kill_overrun = true such jobs are killed at their requested time)")
    return "\n".join(lines)


def _baseline_runs(exp: Experiment, machine: Any, rpn: int, jobs: list[Job] | None, comm: Any,
                   network: Any, allowed: dict[int, np.ndarray] | None = None,
                   rank_nodes: dict[int, tuple[int, ...]] | None = None) -> dict[int, float]:
    """Runtime of every completed app job alone on ``network``, on the same nodes with the
    same rank placement, seed and job id (so its ranks draw the same random numbers).

    ``jobs`` is the scheduler's job list on rank 0 (None elsewhere). Under mpirun (``comm``
    of more than one rank) the jobs are dealt out over the ranks (each run is a small
    sequential simulation) and gathered, so the figures do not depend on the number of ranks.
    """
    allowed = allowed or {}
    rank_nodes = rank_nodes or {}
    sc = exp.scheduler
    todo = None
    if jobs is not None:
        todo = [(j.job_id, j.app_name, dict(j.app_args), j.job_size, [int(n) for n in j.assigned_nodes],
                 allowed.get(j.job_id), _mapping_of(sc.mapping, j, rank_nodes),
                 # The run's likely cost, to deal the runs out evenly: ranks x time in the run.
                 j.job_size * (j.end_time - j.start_time))
                for j in jobs if j.app_name != TIMEKEEPER and j.status == JobStatus.COMPLETED]
    nranks, rank = (comm.size, comm.rank) if comm is not None else (1, 0)
    if nranks > 1:
        todo = comm.bcast(todo, root=0)
    import warnings

    from apps.errors import OversubscriptionWarning
    from apps.run import run_app

    mine: dict[int, float] = {}
    owner = _deal(todo or [], nranks)
    for i, (jid, app, args, size, nodes, links, mapping, _cost) in enumerate(todo or ()):
        if owner[i] != rank:
            continue
        with warnings.catch_warnings():
            # The experiment warned of oversubscribed nodes already; not again for each job.
            warnings.simplefilter("ignore", OversubscriptionWarning)
            r = run_app(machine, app, size, placement=nodes, network=network, ranks_per_node=rpn,
                        mapping=mapping, seed=exp.seed, comm=None, eager_threshold=sc.eager_threshold,
                        algorithms=dict(sc.algorithms), app_args=args, job_id=jid, hot_links=0, allowed_links=links)
        mine[jid] = r.runtime
    if nranks > 1:
        from pdes.parallel import quiet_barrier

        # Ranks done early sleep here rather than poll inside MPICH's gather, which would take
        # the cores of ranks still running their jobs when there are more ranks than cores.
        quiet_barrier(comm)
        parts = comm.gather(mine, root=0)
        if rank != 0:
            return {}
        mine = {k: v for p in parts for k, v in p.items()}
    return mine


def _deal(todo: list[tuple], nranks: int) -> list[int]:
    """The rank of every run of ``todo`` (its last field: an estimate of its cost): the
    costliest first, each to the least loaded rank (ties: the lower rank). Deterministic."""
    load = [0.0] * nranks
    owner = [0] * len(todo)
    for i in sorted(range(len(todo)), key=lambda i: (-todo[i][-1], i)):
        r = min(range(nranks), key=lambda r: (load[r], r))
        owner[i] = r
        load[r] += todo[i][-1]
    return owner


def _mapping_of(mapping: str, job: Job, rank_nodes: dict[int, tuple[int, ...]]) -> Any:
    """The mapping that repeats a job's ranks on the same nodes: the launcher's by name, or
    the node index of every rank (topology-aware mapping, decided once at launch)."""
    if mapping != "topology":
        return mapping
    from apps.mapping import rank_node_indices

    return rank_node_indices(job.assigned_nodes, rank_nodes[job.job_id])


def _ideal_config(exp: Experiment) -> Any:
    from dataclasses import replace

    return replace(exp.network, model="ideal")

