"""Small, realistic :class:`Results` for the results-file, ``show`` and ``plot`` tests.

:func:`fabricate` schedules a few dozen jobs FCFS (no backfill) on the nodes of
``tiny-fattree3`` (16 nodes, 20 routers), computes their placement figures from the real
topology and the system metrics with :func:`scheduler.metrics.system_metrics`, and invents
plausible per-link statistics, so every field of :class:`Results` holds data of the right
shape and type.
"""

from __future__ import annotations

import heapq
from functools import lru_cache

import numpy as np

from models.presets import get_machine
from scheduler.metrics import JobTable, system_metrics
from simhpc.results import Results, empty_job_columns

APPS = ("timekeeper", "allreduce", "stencil3d", "pairs")


@lru_cache(maxsize=None)
def machine(name: str = "tiny-fattree3"):
    return get_machine(name)


def experiment_toml(name: str, seed: int, order: str) -> str:
    return (
        f'name = "{name}"\nseed = {seed}\n\n[machine]\npreset = "tiny-fattree3"\n\n'
        f'[scheduler]\norder = "{order}"\nbackfill = "none"\nallocator = "firstfree"\n\n'
        '[network]\nmodel = "packet"\nchunk = "4KiB"\n\n'
        '[workload]\n# synthetic jobs; times in seconds (\u00b5s-level network figures)\njobs = 40\n'
    )


def fabricate(*, name: str = "fcfs-tiny", seed: int = 1, n_jobs: int = 40, links: bool = True,
              ideal: bool = True, order: str = "fcfs", machine_name: str = "tiny-fattree3") -> Results:
    m = machine(machine_name)
    topo = m.topology
    total = m.n_nodes
    rng = np.random.default_rng(seed)
    j = empty_job_columns(n_jobs)
    j["job_id"][:] = np.arange(1, n_jobs + 1)
    j["user"][:] = rng.integers(1, 6, n_jobs)
    j["group"][:] = rng.integers(1, 3, n_jobs)
    j["queue"][:] = np.where(rng.random(n_jobs) < 0.7, "batch", "debug").astype(object)
    j["app"][:] = np.array([APPS[k] for k in rng.integers(0, len(APPS), n_jobs)], dtype=object)
    j["foreground"][:] = False
    j["foreground"][n_jobs // 2] = True
    nodes = rng.choice([1, 2, 3, 4, 6, 8], n_jobs, p=[0.25, 0.25, 0.1, 0.2, 0.1, 0.1]).astype(np.int64)
    nodes[3] = total + 4  # too large: rejected
    j["job_size"][:] = nodes * m.cores_per_node
    j["submit"][:] = np.cumsum(rng.exponential(45.0, n_jobs)).round(3)
    j["trace_run"][:] = rng.uniform(30.0, 600.0, n_jobs).round(3)
    j["request"][:] = (j["trace_run"] * rng.uniform(1.1, 3.0, n_jobs)).round(0)
    app_job = j["app"] != "timekeeper"
    # Emergent runtimes: network jobs a little slower than their trace time; one killed.
    emergent = np.where(app_job, j["trace_run"] * rng.uniform(1.0, 1.4, n_jobs), j["trace_run"])
    kill = 7
    emergent[kill] = j["request"][kill]
    status = np.full(n_jobs, "completed", dtype=object)
    reason = np.full(n_jobs, "", dtype=object)
    status[kill], reason[kill] = "killed", "walltime"
    status[11], reason[11] = "failed", "allreduce: rank 3 raised ValueError"
    status[3] = "rejected"
    # FCFS without backfill on a free list: a job starts when it is at the head and fits.
    free = list(range(total))
    running: list[tuple[float, int]] = []
    alloc: list[list[int]] = [[] for _ in range(n_jobs)]
    t = 0.0
    for i in range(n_jobs):
        if status[i] == "rejected":
            continue
        t = max(t, float(j["submit"][i]))
        while len(free) < nodes[i] or (running and running[0][0] <= t):
            end, k = heapq.heappop(running)
            t = max(t, end)
            free.extend(alloc[k])
            free.sort()
        alloc[i] = free[: nodes[i]]
        del free[: nodes[i]]
        j["start"][i] = t
        j["end"][i] = t + emergent[i]
        heapq.heappush(running, (float(j["end"][i]), i))
    j["nodes"][:] = np.where(status == "rejected", 0, nodes)
    ran = ~np.isnan(j["end"])
    j["wait"][:] = j["start"] - j["submit"]
    j["response"][:] = j["end"] - j["submit"]
    j["run"][:] = j["end"] - j["start"]
    j["slowdown"][:] = j["response"] / j["run"]
    j["bounded_slowdown"][:] = np.maximum(j["response"] / np.maximum(j["run"], 10.0), 1.0)
    j["bounded_slowdown"][~ran] = np.nan
    j["status"][:] = status
    j["kill_reason"][:] = reason
    if ideal:
        j["ideal_run"][app_job & ran] = j["trace_run"][app_job & ran]
        # Alone on the same network: between the ideal run and the run among neighbours.
        j["alone_run"][app_job & ran] = 0.5 * (j["trace_run"] + j["run"])[app_job & ran]
    for i in np.flatnonzero(ran):
        a = np.array(alloc[i])
        hm = topo.hop_matrix(a)
        n = len(a)
        pairs = n * (n - 1) / 2
        j["aph"][i] = hm.sum() / 2 / pairs if n > 1 else 0.0
        j["mind"][i] = j["aph"][i]
        j["diameter"][i] = float(hm.max())
        j["span"][i] = float(a.max() - a.min() + 1)
        if app_job[i]:
            j["bytes_sent"][i] = float(rng.integers(1, 100)) * 1e6 * n
            j["hop_bytes"][i] = j["bytes_sent"][i] * max(j["aph"][i], 1.0)
            j["messages"][i] = int(rng.integers(100, 10_000))
        else:
            j["bytes_sent"][i] = 0.0
            j["hop_bytes"][i] = 0.0
            j["messages"][i] = 0
    ptr = np.zeros(n_jobs + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(a) for a in alloc])
    job_nodes = np.array([x for a in alloc for x in a], dtype=np.int64)

    table = JobTable(job_id=j["job_id"], user=j["user"], group=j["group"], job_size=j["job_size"], nodes=j["nodes"],
                     submit=j["submit"], start=j["start"], end=j["end"], request=j["request"],
                     trace_run=j["trace_run"], run=j["run"], wait=j["wait"], response=j["response"],
                     slowdown=j["slowdown"], bounded_slowdown=j["bounded_slowdown"],
                     status=j["status"].astype(str), kill_reason=j["kill_reason"].astype(str),
                     foreground=j["foreground"], reservation=np.full(n_jobs, np.nan))
    sm = system_metrics(table, total, interval=60.0)

    link_cols = None
    network: dict = {}
    if links:
        nl = topo.n_links
        duration = float(np.nanmax(j["end"]))
        # Busy fractions up to ~0.6, highest on the injection links of the first nodes.
        frac = rng.uniform(0.0, 0.4, nl) + np.where(topo.link_kind == 0, 0.2, 0.0)
        nbytes = (frac * duration * topo.link_bw).round(0)
        busy = nbytes / topo.link_bw
        link_cols = {
            "src": topo.link_src.copy(), "dst": topo.link_dst.copy(), "kind": topo.link_kind.copy(),
            "bandwidth": topo.link_bw.copy(), "latency": topo.link_lat.copy(), "bytes": nbytes, "busy": busy,
            "utilization": busy / duration, "max_queue": rng.uniform(0, 2e-5, nl),
        }
        network = {"model": "packet", "chunk_bytes": 4096, "duration": duration,
                   "max_queue_delay": float(link_cols["max_queue"].max()), "routing": topo.routing,
                   "messages": int(j["messages"][j["messages"] > 0].sum())}
    run = {"events": 123_456 + seed, "wall_s": 0.75, "ranks": 2, "windows": 321, "remote_events": 4_567,
           "events_per_rank": [60_000, 63_456 + seed], "lookahead": 1e-7, "sequential": False,
           "note": None, "per_kind": {"inject": 1.5, "names": ["a", "b"]}}
    return Results(
        name=name, experiment_toml=experiment_toml(name, seed, order), seed=seed,
        machine={"name": m.name, "nodes": total, "cores_per_node": m.cores_per_node, "family": topo.name,
                 "routers": topo.n_routers, "links": topo.n_links, "flops_per_node": float(m.flops_per_node)},
        jobs=j, job_nodes_ptr=ptr, job_nodes=job_nodes, system=sm.scalars(), series=sm.arrays(),
        links=link_cols, network=network, run=run,
    )
