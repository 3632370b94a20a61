"""Assemble the :class:`~simhpc.results.Results` of an experiment run (rank 0)."""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.job import Job, JobStatus
from scheduler.metrics import job_table, system_metrics
from ..results import Results, empty_job_columns
from .spec import Experiment
from .toml_io import dumps


def build_results(*, exp: Experiment, machine: Any, jobs: list[Job], trace_rejected: list[Job], alloc: Any,
                  netstats: Any, stats: Any, runner: Any, ideal: dict[int, float], workload: dict[str, Any],
                  wall_s: float, rpn: int) -> Results:
    """Every job of the run (rejected ones included) with its metrics, plus system,
    network and run figures."""
    from scheduler.allocators.metrics import allocation_metrics

    all_jobs = list(jobs) + [j for j in trace_rejected]
    for j in trace_rejected:
        j.status = JobStatus.REJECTED
    table = job_table(all_jobs)
    n = len(all_jobs)
    cols = empty_job_columns(n)
    for name in ("job_id", "user", "group", "job_size", "nodes", "submit", "start", "end", "wait", "response",
                 "run", "trace_run", "request", "slowdown", "bounded_slowdown", "foreground"):
        cols[name] = np.asarray(getattr(table, name)).astype(cols[name].dtype)
    cols["status"] = np.asarray(table.status, dtype=object)
    cols["kill_reason"] = np.asarray(table.kill_reason, dtype=object)
    cols["queue"] = np.array([j.queue_name for j in all_jobs], dtype=object)
    cols["app"] = np.array([j.app_name for j in all_jobs], dtype=object)
    row = {j.job_id: i for i, j in enumerate(all_jobs)}
    # Placement metrics of every allocation.
    am = allocation_metrics(all_jobs, machine.topology, positions=getattr(alloc, "pos", None))
    for k, jid in enumerate(am["job_id"].tolist()):
        i = row[jid]
        cols["aph"][i] = am["aph"][k]
        cols["mind"][i] = am["mind"][k]
        cols["diameter"][i] = float(am["diameter"][k])
        cols["span"][i] = float(am["span"][k])
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
    # Allocations as CSR.
    ptr = np.zeros(n + 1, dtype=np.int64)
    parts = []
    for i, j in enumerate(all_jobs):
        nodes = np.asarray(j.assigned_nodes, dtype=np.int32) if j.assigned_nodes is not None else np.zeros(0, np.int32)
        parts.append(nodes)
        ptr[i + 1] = ptr[i] + len(nodes)
    job_nodes = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    sm = system_metrics(table, machine.n_nodes, rejected=int((cols["status"] == "rejected").sum()))
    system = sm.scalars()
    series = {k: np.asarray(v) for k, v in sm.arrays().items()}
    topo = machine.topology
    duration = float(netstats.duration) if netstats.duration else 0.0
    links = {
        "src": topo.link_src.astype(np.int32), "dst": topo.link_dst.astype(np.int32),
        "kind": topo.link_kind.astype(np.int8), "bandwidth": topo.link_bw.astype(np.float64),
        "latency": topo.link_lat.astype(np.float64), "bytes": np.asarray(netstats.link_bytes, dtype=np.float64),
        "busy": np.asarray(netstats.link_busy, dtype=np.float64),
        "utilization": (np.asarray(netstats.link_busy) / duration) if duration > 0 else np.zeros(topo.n_links),
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
        "ranks_per_node": int(rpn), "workload_jobs": int(workload.get("jobs", n)),
        "app_jobs": int(workload.get("app_jobs", 0)), "foreground_jobs": int(workload.get("foreground", 0)),
    }
    mach = {
        "name": machine.name, "nodes": int(machine.n_nodes), "cores_per_node": int(machine.cores_per_node),
        "family": topo.name, "routers": int(topo.n_routers), "links": int(topo.n_links),
        "flops_per_node": float(machine.flops_per_node), "mem_bw_per_node": float(machine.mem_bw_per_node),
        "description": machine.description,
    }
    return Results(name=exp.name, experiment_toml=dumps(exp), seed=exp.seed, machine=mach, jobs=cols,
                   job_nodes_ptr=ptr, job_nodes=job_nodes, system=system, series=series, links=links,
                   network=network, run=run)
