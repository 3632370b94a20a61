"""Assemble the :class:`~simhpc.results.Results` of an experiment run (rank 0).

:func:`job_columns` turns a finished job list into the job table of the results schema; it
is shared by ``simhpc run`` (:func:`build_results`) and ``simhpc replay``
(:mod:`simhpc.trace_replay`), so both write the same job records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from scheduler.job import Job, JobStatus
from scheduler.metrics import job_table, system_metrics
from ..results import Results, empty_job_columns
from ..results.model import REJECT_REASONS
from .spec import Experiment
from .toml_io import dumps


@dataclass
class JobColumns:
    """The job table of a results file: ``cols`` (see :data:`~simhpc.results.JOB_COLUMNS`),
    the allocations as CSR (``ptr``, ``nodes``), the row of every job id and the
    scheduler's :class:`~scheduler.metrics.JobTable` of the same jobs."""

    cols: dict[str, np.ndarray]
    ptr: np.ndarray
    nodes: np.ndarray
    row: dict[int, int]
    table: Any


def job_columns(jobs: list[Job], *, topology: Any = None, positions: Any = None, tau: float | None = None) -> JobColumns:
    """The job columns of finished ``jobs`` (rejected ones included, in that order).

    Scheduling columns come from the jobs; placement columns (APH, MIND, diameter, span)
    from ``topology`` (NaN without one); the network columns (``app_run``, ``ideal_run``,
    ``bytes_sent``, ``hop_bytes``, ``messages``) are left NaN / -1 for the caller to fill.
    """
    table = job_table(jobs) if tau is None else job_table(jobs, tau=tau)
    n = len(jobs)
    cols = empty_job_columns(n)
    for name in ("job_id", "user", "group", "job_size", "nodes", "submit", "start", "end", "wait", "response",
                 "run", "trace_run", "request", "slowdown", "bounded_slowdown", "foreground"):
        cols[name] = np.asarray(getattr(table, name)).astype(cols[name].dtype)
    cols["status"] = np.asarray(table.status, dtype=object)
    cols["kill_reason"] = np.asarray(table.kill_reason, dtype=object)
    cols["queue"] = np.array([j.queue_name for j in jobs], dtype=object)
    cols["app"] = np.array([j.app_name for j in jobs], dtype=object)
    cols["estimate"] = np.array([np.nan if j.estimate is None else j.estimate for j in jobs], dtype=np.float64)
    cols["partition"] = np.array([j.partition for j in jobs], dtype=np.int64)
    cols["preceding_job"] = np.array([j.preceding_job for j in jobs], dtype=np.int64)
    cols["think_time"] = np.array([j.think_time for j in jobs], dtype=np.float64)
    row = {j.job_id: i for i, j in enumerate(jobs)}
    if topology is not None:
        from scheduler.allocators.metrics import allocation_metrics

        # Placement metrics of every allocation.
        am = allocation_metrics(jobs, topology, positions=positions)
        for k, jid in enumerate(am["job_id"].tolist()):
            i = row[jid]
            cols["aph"][i] = am["aph"][k]
            cols["mind"][i] = am["mind"][k]
            cols["diameter"][i] = float(am["diameter"][k])
            cols["span"][i] = float(am["span"][k])
    # Allocations as CSR.
    ptr = np.zeros(n + 1, dtype=np.int64)
    parts = []
    for i, j in enumerate(jobs):
        nodes = np.asarray(j.assigned_nodes, dtype=np.int32) if j.assigned_nodes is not None else np.zeros(0, np.int32)
        parts.append(nodes)
        ptr[i + 1] = ptr[i] + len(nodes)
    job_nodes = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    return JobColumns(cols=cols, ptr=ptr, nodes=job_nodes, row=row, table=table)


def rejected_by_reason(cols: dict[str, np.ndarray], n_nodes: int,
                       dropped: Mapping[str, int] | None = None) -> dict[str, int]:
    """Every job that was not simulated, counted by reason (:data:`REJECT_REASONS`, zeros
    included): the rejected rows of the job table (larger than the machine, or never placed
    by its allocator) plus the jobs a trace filter ``dropped`` (reason -> count)."""
    out = {k: 0 for k in REJECT_REASONS}
    rej = cols["status"] == "rejected"
    large = int((rej & (cols["nodes"] > n_nodes)).sum())
    out["larger_than_machine"] += large
    out["allocator_cannot_place"] += int(rej.sum()) - large
    for k, v in (dropped or {}).items():
        if k not in out:
            raise ValueError(f"unknown reason {k!r} for a job not simulated; known: {', '.join(out)}")
        out[k] += int(v)
    return out


def build_results(*, exp: Experiment, machine: Any, jobs: list[Job], trace_rejected: list[Job], alloc: Any,
                  netstats: Any, stats: Any, runner: Any, ideal: dict[int, float], workload: dict[str, Any],
                  alone: dict[int, float] | None = None,
                  wall_s: float, rpn: int) -> Results:
    """Every job of the run (rejected ones included) with its metrics, plus system,
    network and run figures."""
    all_jobs = list(jobs) + [j for j in trace_rejected]
    for j in trace_rejected:
        j.status = JobStatus.REJECTED
    tau = exp.metrics.tau
    jc = job_columns(all_jobs, topology=machine.topology, positions=getattr(alloc, "pos", None), tau=tau)
    cols, row, table, ptr, job_nodes = jc.cols, jc.row, jc.table, jc.ptr, jc.nodes
    # Network traffic of app jobs (zero for jobs that sent nothing).
    for i, j in enumerate(all_jobs):
        if j.start_time is not None:
            cols["bytes_sent"][i] = netstats.job_bytes.get(j.job_id, 0.0)
            cols["hop_bytes"][i] = netstats.job_hop_bytes.get(j.job_id, 0.0)
            cols["messages"][i] = netstats.job_messages.get(j.job_id, 0)
    # The app's own runtime (its ranks' start to its last rank's end): what the ideal
    # baseline measures too, so that app_run / ideal_run is the network's effect alone.
    for jid, rec in runner.records.items():
        if jid in row and rec.end >= rec.start:
            cols["app_run"][row[jid]] = rec.end - rec.start
    for jid, t in ideal.items():
        cols["ideal_run"][row[jid]] = t
    for jid, t in (alone or {}).items():
        cols["alone_run"][row[jid]] = t
    trim = exp.metrics.trim
    # The measured jobs (the trim was checked before the run: it leaves some).
    measure = trim.mask(cols["submit"]) if trim.active else None
    sm = system_metrics(table, machine.n_nodes, rejected=int((cols["status"] == "rejected").sum()), tau=tau,
                        measure=measure)
    system = sm.scalars()
    system["rejected_by_reason"] = rejected_by_reason(cols, machine.n_nodes, workload.get("dropped"))
    # Jobs simulated with a value a documented rule changed (docs/scheduling.md), by rule.
    system["adjusted_by_rule"] = {k: int(v) for k, v in (workload.get("adjusted") or {}).items()}
    series = {k: np.asarray(v) for k, v in sm.arrays().items()}
    topo = machine.topology
    duration = float(netstats.duration) if netstats.duration else 0.0
    links = {
        "src": topo.link_src.astype(np.int32), "dst": topo.link_dst.astype(np.int32),
        "kind": topo.link_kind.astype(np.int8), "bandwidth": topo.link_bw.astype(np.float64),
        "latency": topo.link_lat.astype(np.float64), "bytes": np.asarray(netstats.link_bytes, dtype=np.float64),
        "busy": np.asarray(netstats.link_busy, dtype=np.float64),
        # NaN on the ideal model: its links carry bytes but are never occupied.
        "utilization": np.asarray(netstats.link_utilization, dtype=np.float64),
        "max_queue": np.asarray(netstats.link_max_queue, dtype=np.float64),
    }
    network = {
        "model": exp.network.model, "chunk_size": exp.network.chunk_size, "duration": duration,
        "max_queue_delay": float(netstats.max_queue_delay), "messages": int(netstats.messages),
        "chunks": int(netstats.chunks), "intra_node_messages": int(netstats.intra_node_messages),
    }
    run = {
        "events": int(stats.events), "wall_s": float(wall_s), "sim_wall_s": float(stats.wall_s), "ranks": int(stats.ranks),
        "windows": int(stats.windows), "remote_events": int(stats.remote_events),
        "events_per_rank": list(stats.events_per_rank), "end_time": float(stats.end_time),
        "ranks_per_node": int(rpn), "workload_jobs": int(workload.get("jobs", len(all_jobs))),
        "app_jobs": int(workload.get("app_jobs", 0)), "foreground_jobs": int(workload.get("foreground", 0)),
    }
    if stats.predicted:
        # The kernel's statistics mode: one list entry per predicted rank count.
        pred = [stats.predicted[p] for p in sorted(stats.predicted)]
        run.update({
            "predicted_ranks": [r.ranks for r in pred],
            "predicted_events_per_window_per_rank": [float(r.events_per_window_per_rank) for r in pred],
            "predicted_remote_fraction": [float(r.remote_fraction) for r in pred],
            "predicted_busiest_rank_share": [float(r.busiest_rank_share) for r in pred],
            "predicted_speedup_bound": [float(r.speedup_bound) for r in pred],
        })
    from apps.mapping import oversubscription

    oversub = oversubscription(rpn, machine.cores_per_node, what="scheduler.ranks_per_node", warn=False)
    if oversub:
        run["warnings"] = [oversub]
    mach = {
        "name": machine.name, "nodes": int(machine.n_nodes), "cores_per_node": int(machine.cores_per_node),
        "family": topo.name, "routers": int(topo.n_routers), "links": int(topo.n_links),
        "flops_per_node": float(machine.flops_per_node), "mem_bw_per_node": float(machine.mem_bw_per_node),
        "description": machine.description,
    }
    return Results(name=exp.name, experiment_toml=dumps(exp), seed=exp.seed, machine=mach, jobs=cols,
                   job_nodes_ptr=ptr, job_nodes=job_nodes, system=system, series=series, links=links,
                   network=network, run=run)


def predicted_from_run(run: dict[str, Any]) -> dict[int, Any]:
    """The kernel's parallel prediction stored in a results file's run statistics
    (``predicted_*``), as :class:`pdes.predict.RankPrediction` by rank count ({} if none)."""
    from pdes.predict import RankPrediction

    if "predicted_ranks" not in run:
        return {}
    return {
        int(p): RankPrediction(ranks=int(p), windows=int(run["windows"]), events=int(run["events"]),
                               events_per_window_per_rank=float(e), remote_fraction=float(r),
                               busiest_rank_share=float(b), speedup_bound=float(s))
        for p, e, r, b, s in zip(run["predicted_ranks"], run["predicted_events_per_window_per_rank"],
                                 run["predicted_remote_fraction"], run["predicted_busiest_rank_share"],
                                 run["predicted_speedup_bound"])
    }
