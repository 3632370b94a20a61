"""The in-memory results of an experiment: what ``simhpc run`` writes and ``show``/``plot`` read.

:class:`Results` is the one object passed between the experiment runner, the HDF5 writer and
reader (:mod:`simhpc.results.hdf5`) and the plots (:mod:`simhpc.plots`). Every field
is plain data: numpy arrays, strings, numbers and dicts of those.

Job columns are listed in :data:`JOB_COLUMNS` with their dtype, unit and meaning; the HDF5
schema (``docs/results.md``) is generated from the same table, so the two cannot drift.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Version of the results schema (bump on any incompatible change of the layout).
SCHEMA_VERSION = 2
SCHEMA_NAME = "simhpc-results"

# name -> (numpy dtype, unit, description). Times are seconds of simulated time; NaN where a
# job did not run (rejected) or where a figure does not apply (e.g. no network for a
# timekeeper job).
JOB_COLUMNS: dict[str, tuple[str, str, str]] = {
    "job_id": ("int64", "", "job id (from the trace or the generator)"),
    "user": ("int64", "", "user id (-1 unknown)"),
    "group": ("int64", "", "group id (-1 unknown)"),
    "queue": ("str", "", "queue name"),
    "app": ("str", "", "application skeleton (app_name); 'timekeeper' runs for its trace time"),
    "foreground": ("bool", "", "a foreground job of an interference study"),
    "job_size": ("int64", "processes", "MPI ranks (processes) requested"),
    "nodes": ("int64", "nodes", "nodes allocated"),
    "submit": ("float64", "s", "submission time"),
    "start": ("float64", "s", "start time"),
    "end": ("float64", "s", "end time"),
    "wait": ("float64", "s", "start - submit"),
    "response": ("float64", "s", "end - submit"),
    "run": ("float64", "s", "emergent runtime: end - start"),
    "trace_run": ("float64", "s", "run time from the trace or generator (the timekeeper's runtime)"),
    "request": ("float64", "s", "requested wall time"),
    "estimate": ("float64", "s", "the run time the scheduler planned with (the run's estimate model; NaN: never "
                 "submitted)"),
    "partition": ("int64", "", "SWF field 16: partition number (-1 unknown)"),
    "preceding_job": ("int64", "", "SWF field 17: the job this one depends on (-1 none)"),
    "think_time": ("float64", "s", "SWF field 18: think time after the preceding job (-1 none)"),
    "slowdown": ("float64", "", "response / run (NaN for zero run time)"),
    "bounded_slowdown": ("float64", "", "max(response / max(run, tau), 1); tau is /system/tau (10 s by default)"),
    "app_run": ("float64", "s", "the app's own runtime: from its ranks' start to its last rank's end (run less "
                "the launch and end-report messages; NaN for timekeeper jobs and jobs that did not run)"),
    "ideal_run": ("float64", "s", "app_run of the same job alone on the ideal network on the same nodes, same "
                  "rank placement (NaN: not computed); the network slowdown is app_run / ideal_run"),
    "alone_run": ("float64", "s", "app_run of the same job alone on the same network model on the same nodes, same "
                  "rank placement (NaN: not computed); the interference slowdown is app_run / alone_run"),
    "status": ("str", "", "completed | killed | failed | rejected; running | queued | pending when the run "
                          "stopped at its end_time (see Job statuses)"),
    "kill_reason": ("str", "", "why a job was killed or failed ('' otherwise)"),
    "aph": ("float64", "hops", "average pairwise inter-switch hops of the allocation"),
    "mind": ("float64", "hops", "mean inter-node distance of the allocation"),
    "diameter": ("float64", "hops", "largest hop distance within the allocation"),
    "span": ("float64", "nodes", "ordinal span of the allocation (max - min position + 1)"),
    "bytes_sent": ("float64", "B", "bytes the job's ranks sent over the network"),
    "hop_bytes": ("float64", "B*hops", "sum over messages of bytes x inter-switch hops"),
    "messages": ("int64", "", "network messages sent"),
}

#: Why a job of the workload was not simulated: reason -> meaning. ``system`` holds the
#: counts as ``rejected_by_reason`` (stored as the attributes of ``/system/rejected_by_reason``).
#: The first two concern job rows of status ``rejected``; the others, jobs a trace filter
#: took out before the run (they have no job row).
REJECT_REASONS: dict[str, str] = {
    "larger_than_machine": "larger than the machine (more nodes than it has)",
    "allocator_cannot_place": "fits the machine's node count but never its allocator's shapes",
    "cancelled": "cancelled in the trace before it started (status 5)",
    "no_run_time": "no run time in the trace (run time -1)",
    "no_submit_time": "no submit time in the trace",
    "no_processors": "no processor count in the trace",
    "malformed": "malformed trace line (skipped)",
}

#: System time series (name -> (unit, description)).
SERIES: dict[str, tuple[str, str]] = {
    "sample_times": ("s", "sampling instants (every `interval` seconds)"),
    "utilization_samples": ("", "fraction of nodes busy at each sample"),
    "busy_samples": ("nodes", "busy nodes at each sample"),
    "queue_samples": ("jobs", "queued jobs at each sample"),
    "busy_times": ("s", "instants where the busy-node count changes"),
    "busy_nodes": ("nodes", "busy nodes from each of those instants on"),
    "queue_times": ("s", "instants where the queue length changes"),
    "queue_lengths": ("jobs", "queue length from each of those instants on"),
}

#: Per-link arrays (name -> (unit, description)); indexed by the topology's link id.
LINK_COLUMNS: dict[str, tuple[str, str]] = {
    "src": ("vertex", "source vertex (nodes 0..n-1, then routers)"),
    "dst": ("vertex", "destination vertex"),
    "kind": ("", "0 inject, 1 eject, 2 local, 3 up, 4 down, 5 global"),
    "bandwidth": ("B/s", "link bandwidth"),
    "latency": ("s", "link latency"),
    "bytes": ("B", "bytes carried"),
    "busy": ("s", "time spent transmitting (ideal model: bytes / bandwidth, the offered load)"),
    "utilization": ("", "busy / duration of the network activity, in [0, 1] (NaN on the ideal model: no contention)"),
    "max_queue": ("s", "largest queueing delay of a chunk at this output port"),
}


@dataclass
class Results:
    """Everything an experiment produced (see the module docstring).

    Attributes:
        name: experiment name.
        experiment_toml: the experiment as TOML text (it rebuilds the same experiment).
        seed: the run seed.
        machine: machine summary (``name``, ``nodes``, ``cores_per_node``, ``family``, ...).
        jobs: job columns, each a numpy array (see :data:`JOB_COLUMNS`).
        job_nodes_ptr, job_nodes: the nodes of every job as CSR (job ``i`` ran on
            ``job_nodes[job_nodes_ptr[i]:job_nodes_ptr[i+1]]``; empty if it never ran).
        system: scalar system metrics (makespan, utilization, loss of capacity, waits...).
        series: system time series (see :data:`SERIES`).
        links: per-link arrays (see :data:`LINK_COLUMNS`), or None without a network.
        network: network model figures (model, chunk size, duration, max queueing delay...).
        run: run statistics (events, wall seconds, ranks, windows, remote events...).
    """

    name: str
    experiment_toml: str
    seed: int
    machine: dict[str, Any]
    jobs: dict[str, np.ndarray]
    job_nodes_ptr: np.ndarray
    job_nodes: np.ndarray
    system: dict[str, Any]
    series: dict[str, np.ndarray]
    links: dict[str, np.ndarray] | None = None
    network: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [c for c in JOB_COLUMNS if c not in self.jobs]
        if missing:
            raise ValueError(f"Results.jobs lacks column(s) {', '.join(missing)}")
        n = {len(v) for v in self.jobs.values()}
        if len(n) > 1:
            raise ValueError(f"Results.jobs columns differ in length: {sorted(n)}")
        if len(self.job_nodes_ptr) != self.n_jobs + 1:
            raise ValueError("Results.job_nodes_ptr must have one entry more than there are jobs")

    @property
    def n_jobs(self) -> int:
        return len(self.jobs["job_id"])

    def nodes_of(self, i: int) -> np.ndarray:
        """The nodes job row ``i`` ran on."""
        return self.job_nodes[self.job_nodes_ptr[i] : self.job_nodes_ptr[i + 1]]

    def ran(self) -> np.ndarray:
        """Mask of the job rows that started and ended."""
        return ~np.isnan(self.jobs["end"])

    def summary(self) -> dict[str, Any]:
        """The headline figures, JSON-ready (what ``simhpc run --json`` and ``show --json`` print)."""
        j = self.jobs
        ran = self.ran()
        apps = j["app"][ran]
        out: dict[str, Any] = {
            "name": self.name,
            "seed": self.seed,
            "machine": self.machine.get("name"),
            "nodes": self.machine.get("nodes"),
            "jobs": int(self.n_jobs),
            "jobs_run": int(ran.sum()),
            "rejected": int((j["status"] == "rejected").sum()),
            "killed": int((j["status"] == "killed").sum()),
            "failed": int((j["status"] == "failed").sum()),
            "app_jobs": int((apps != "timekeeper").sum()),
        }
        for k in ("makespan", "utilization", "loss_of_capacity", "mean_wait", "max_wait",
                  "mean_bounded_slowdown", "mean_response", "wait_p50", "wait_p90", "wait_p99",
                  "bounded_slowdown_p50", "bounded_slowdown_p90", "bounded_slowdown_p99", "tau"):
            if k in self.system:
                out[k] = _json_float(self.system[k])
        if "measured_jobs" in self.system and self.system["measured_jobs"] != int(ran.sum()):
            out["measured_jobs"] = int(self.system["measured_jobs"])
        reasons = self.system.get("rejected_by_reason")
        if isinstance(reasons, dict):
            # Only the reasons that occurred (files before this count have none).
            out["rejected_by_reason"] = {k: int(v) for k, v in reasons.items() if v}
        adjusted = self.system.get("adjusted_by_rule")
        if isinstance(adjusted, dict) and any(adjusted.values()):
            out["adjusted_by_rule"] = {k: int(v) for k, v in adjusted.items() if v}
        out.update(self.slowdowns())
        for k in ("events", "wall_s", "ranks", "windows"):
            if k in self.run:
                out[k] = self.run[k]
        if len(self.run.get("warnings", ())):
            out["warnings"] = [str(w) for w in self.run["warnings"]]
        if self.network:
            out["network_model"] = self.network.get("model")
            if "max_queue_delay" in self.network:
                out["max_queue_delay"] = _json_float(self.network["max_queue_delay"])
        return out

    def slowdowns(self) -> dict[str, Any]:
        """How much longer app jobs ran than their baselines on the same nodes, JSON-ready.

        ``interference``: ``app_run / alone_run`` (the same network model, nothing else
        running: what the neighbours cost); ``network``: ``app_run / ideal_run`` (the
        contention-free network: the neighbours plus the job's own congestion). For each,
        over the completed app jobs that have the baseline: ``mean_<kind>_slowdown``,
        ``max_<kind>_slowdown``, ``<kind>_jobs`` (how many), and the same mean over the
        foreground jobs, ``foreground_<kind>_slowdown``. Missing baselines give no keys.
        """
        j = self.jobs
        ran = self.ran()
        own = j["app_run"][ran]
        run = np.where(np.isfinite(own), own, j["run"][ran])  # version-1 files: no app_run
        fg = j["foreground"][ran].astype(bool)
        out: dict[str, Any] = {}
        for kind, col in (("network", "ideal_run"), ("interference", "alone_run")):
            base = j[col][ran]
            ok = np.isfinite(base) & (base > 0) & np.isfinite(run)
            if not ok.any():
                continue
            ratio = run[ok] / base[ok]
            out[f"mean_{kind}_slowdown"] = _json_float(float(np.mean(ratio)))
            out[f"max_{kind}_slowdown"] = _json_float(float(np.max(ratio)))
            out[f"{kind}_jobs"] = int(ok.sum())
            f = fg[ok]
            if f.any():
                out[f"foreground_{kind}_slowdown"] = _json_float(float(np.mean(ratio[f])))
        return out


def _json_float(x: Any) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def empty_job_columns(n: int) -> dict[str, np.ndarray]:
    """Job columns of length ``n`` filled with NaN / -1 / '' / False (for builders)."""
    out: dict[str, np.ndarray] = {}
    for name, (dtype, _, _) in JOB_COLUMNS.items():
        if dtype == "str":
            out[name] = np.full(n, "", dtype=object)
        elif dtype == "bool":
            out[name] = np.zeros(n, dtype=bool)
        elif dtype == "int64":
            out[name] = np.full(n, -1, dtype=np.int64)
        else:
            out[name] = np.full(n, np.nan, dtype=np.float64)
    return out
