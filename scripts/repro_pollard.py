#!/usr/bin/env python3
"""Pollard, Jain, Herbein and Bhatele: topology-aware (T1/T2/T3) vs topology-oblivious node allocation on fat-trees.

Network view: random multi-job workloads run on a 3-level fat-tree of radix-44 switches
(fattree44: 22 nodes per leaf, 22 pods of 22 leaf switches, 10,648 nodes). Each job has
512-4,096 nodes (5-40 % of the machine; sizes of the form 2^a 3^b, so that every process
grid is near-cubic) and runs one of four patterns: Stencil (halo exchange on a 4D grid),
Unstructured mesh (random neighbourhoods of bounded degree on a 3D grid), Pairs (random
pairs) and Sub-a2a (all-to-all along two dimensions of a 3D grid). Jobs are drawn until the
next one would not fit (by nodes, or under the TA rules); every job starts at time 0. The
same workload is placed by the topology-aware policy (t123: the T1/T2/T3 rules, Algorithm 1)
and by a topology-oblivious one (random nodes). A job's speedup is its runtime under
random over its runtime under t123; reported per pattern and over all jobs, as mean +-
standard error over the jobs of all workloads (and their number).

Cluster view: Cab (1,296 nodes, 4 pods of 18 leaf switches with 18 nodes each) replays the
CTC-SP2 log (job sizes scaled by 1,296 / 338, and 2x and 3x that to overload the machine,
as the study scaled job sizes) with FCFS + EASY under random, t123 and t123 with the
stricter whole-pods rule: utilization over the stable period, makespan, mean wait and APH
(average pairwise switch hops) by job size, as mean +- standard error over consecutive
segments of the log.

Where the study is silent (message sizes, iterations, the unstructured mesh's degree), the
values are the parameters PATTERNS and ITERS. The network model is a parameter (--network,
default packet: on these workloads of many concurrent messages the flow model's re-sharing
of bandwidth is costly. On the reduced scale's workload 0 under random placement the packet
model took 2.2 s of CPU,
the exact flow model 431 s (12,130 recomputations touching 28.6 million flows), and with a
rate quantum (NetworkConfig(flow_quantum=...), docs/network.md) 88 s at 100 ns and 10.4 s at
1 us; single runs on a loaded 2-core machine).

Scales (--scale): full is the setup above with 15 workloads and 5 log segments of 4,000 jobs
(use a cluster; under mpirun the (workload, allocator) runs are dealt out over the ranks);
reduced keeps the shape on a radix-16 tree (8 nodes per leaf, 16 pods of 8 leaves: 1,024
nodes; jobs of 5-40 % = 54-384 nodes), 15 workloads, and 3 segments of 1,000 jobs; tiny a
radix-8 tree (128 nodes), 2 workloads, 2 segments of 150 jobs. --dry-run builds the
machines and workloads and prints them.

After S. D. Pollard, N. Jain, S. Herbein, A. Bhatele, "Evaluation of an interference-free
node allocation policy on fat-tree clusters", SC18 (see docs/studies.md).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

import harness as h

PATTERNS = {
    "stencil4d": {"face_bytes": "64KiB"},
    "unstr-mesh": {"nbytes": "32KiB", "degree": 6},
    "pairs": {"nbytes": "256KiB"},
    "sub-a2a": {"nbytes": "16KiB", "along": "xy"},
}
ALLOCATORS = ("random", "t123")
#: (label, allocator, options) of the cluster view.
CLUSTER_ALLOCATORS = (("random", "random", {}), ("t123", "t123", {}),
                      ("t123-whole-pods", "t123", {"t3_rule": "whole-pods"}))
SIZE_FRACTION = (0.05, 0.40)
SCALES = {
    #          radix  iters  workloads  segments x jobs  overload factors
    "full": (44, 5, 15, (5, 4000), (1, 2, 3)),
    "reduced": (16, 3, 15, (3, 1000), (1, 2, 3)),
    "tiny": (8, 2, 2, (2, 150), (1, 2)),
}
BINS = [(1, 1, "1"), (2, 18, "2-18"), (19, 324, "19-324"), (325, 1296, "325+")]


def machine(scale: str):
    from models.presets import Machine, get_machine
    from models.topology import FatTree

    if scale == "full":
        return get_machine("fattree44")
    cab = get_machine("cab")
    radix = SCALES[scale][0]
    t = FatTree.from_radix(radix=radix, levels=3, link_bw="4GB/s", link_lat="100ns", inject_bw="4GB/s")
    return Machine(name=f"fattree{radix}", topology=t, cores_per_node=cab.cores_per_node,
                   flops_per_node=cab.flops_per_node, mem_bw_per_node=cab.mem_bw_per_node,
                   description=f"full-bisection 3-level fat-tree of radix-{radix} switches, Cab's links")


def job_sizes(n_nodes: int) -> list[int]:
    """The allowed job sizes: 2^a 3^b nodes within SIZE_FRACTION of the machine (the full
    machine: 512..4,096, as the study states)."""
    lo, hi = (512, 4096) if n_nodes == 10648 else (math.ceil(SIZE_FRACTION[0] * n_nodes), int(SIZE_FRACTION[1] * n_nodes))
    return h.factored(lo, hi)


def make_workload(scale: str, w: int):
    """Workload ``w``: [(pattern, nodes)], drawn until the next job would not fit (by nodes or
    under t123 on an empty machine, jobs placed in order)."""
    from scheduler.allocators import make_allocator
    from scheduler.job import Job
    from scheduler.workload import seeded_rng

    m = machine(scale)
    rng = seeded_rng(w, 0x9011)
    sizes = job_sizes(m.n_nodes)
    alloc = make_allocator("t123", n_nodes=m.n_nodes, topology=m.topology)
    st = alloc.new_state()
    jobs = []
    while True:
        n = int(sizes[int(rng.integers(len(sizes)))])
        p = list(PATTERNS)[int(rng.integers(len(PATTERNS)))]
        j = Job.build(job_id=len(jobs) + 1, job_size=n, nodes=n, submit_time=0.0, request_time=1.0, run_time=1.0)
        nodes = alloc.select(j, st) if n <= st.n_free else None
        if nodes is None:
            return jobs
        alloc.commit(j, nodes, st)
        jobs.append((p, n))


def network_run(item):
    """One (workload, allocator): every job's runtime."""
    from apps.mapping import job_rank_nodes
    from apps.node import LaunchSpec, MpiOptions
    from apps.platform import build_platform
    from models.network import NetworkConfig
    from scheduler.allocators import make_allocator
    from scheduler.job import Job

    scale, w, alloc_name, model = item
    m = machine(scale)
    iters = SCALES[scale][1]
    spec = make_workload(scale, w)
    alloc = make_allocator(alloc_name, n_nodes=m.n_nodes, topology=m.topology, seed=w)
    st = alloc.new_state()
    placed = []
    for i, (p, n) in enumerate(spec):
        j = Job.build(job_id=i + 1, job_size=n, nodes=n, submit_time=0.0, request_time=1.0, run_time=1.0)
        nodes = alloc.select(j, st)
        alloc.commit(j, nodes, st)
        placed.append(np.asarray(nodes))
    ends: dict[int, tuple] = {}
    plat = build_platform(m, NetworkConfig(model=model), seed=w, comm=None,
                          on_end=lambda rec: ends.__setitem__(rec.job, (rec.status, rec.start, rec.end)))
    options = MpiOptions()
    for i, ((p, n), nodes) in enumerate(zip(spec, placed)):
        args = {**PATTERNS[p], "iters": iters}
        rank_nodes = job_rank_nodes(p, args, n, [int(x) for x in nodes], 1, "block", m.topology)
        plat.manager.launch_at(0.0, LaunchSpec.build(job=i + 1, app=p, args=args, rank_nodes=rank_nodes,
                                                     report_to=plat.manager.eid, options=options))
    t = time.process_time()
    stats = plat.sim.run()
    runtimes = []
    for i in range(len(spec)):
        status, start, end = ends[i + 1]
        runtimes.append(end - start if status == "ok" else float("nan"))
    return {"patterns": [p for p, _ in spec], "sizes": [n for _, n in spec], "runtime": runtimes,
            "events": int(stats.events), "cpu_s": time.process_time() - t}


def cluster_jobs(scale: str, n_nodes: int, factor: int):
    """Log segments of CTC-SP2 with job sizes scaled to the machine times ``factor``."""
    from scheduler.swf import read_swf

    n_seg, per = SCALES[scale][3]
    tr = read_swf(h.traces_dir() / "CTC-SP2-1996-3.1-cln.swf.gz", limit=n_seg * per)
    f = n_nodes / tr.n_nodes * factor
    segs = []
    for s in range(n_seg):
        jobs = []
        for j in tr.jobs[s * per:(s + 1) * per]:
            j = j.fresh()
            j.nodes = j.job_size = min(n_nodes, max(1, math.ceil(j.nodes * f)))
            jobs.append(j)
        segs.append(jobs)
    return segs, f"CTC-SP2, {n_seg} segments of {per:,} jobs, sizes x {f:.2f} ({tr.n_nodes} -> {n_nodes} nodes)"


def cluster_run(item):
    from models.presets import get_machine
    from scheduler.allocators.metrics import allocation_metrics_by_size
    from scheduler.lifecycle import simulate
    from scheduler.metrics import job_table, system_metrics

    scale, factor, label, seg = item
    _, alloc, opts = next(a for a in CLUSTER_ALLOCATORS if a[0] == label)
    topo = get_machine("cab").topology
    jobs = cluster_jobs(scale, topo.n_nodes, factor)[0][seg]
    t = time.process_time()
    res = simulate(jobs, n_nodes=topo.n_nodes, topology=topo, allocator=alloc, allocator_options=opts,
                   ordering="fcfs", backfill="easy", seed=seg)
    m = system_metrics(job_table(res.jobs), topo.n_nodes)
    pl = allocation_metrics_by_size(res.jobs, topo, bins=BINS)
    return {"utilization": h.stable_utilization(res.jobs, topo.n_nodes), "makespan": m.makespan,
            "mean_wait": m.mean_wait, "aph": {b["nodes"]: b["mean_aph"] for b in pl["bins"]},
            "aph_all": pl["all"]["mean_aph"], "cpu_s": time.process_time() - t}


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, scales=True)
    ap.add_argument("--network", default="packet", choices=("flow", "packet"), help="network model (default packet)")
    ap.add_argument("--view", default="both", choices=("both", "network", "cluster"),
                    help="run both views (default) or one of them")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    c = h.comm()
    sc, (radix, iters, n_work, (n_seg, per), factors) = h.scaled(args, SCALES)
    n_work = args.seeds or n_work
    out = h.out_dir(args, c)
    m = machine(sc)
    topo = m.topology
    sizes = job_sizes(m.n_nodes)
    what = (f"{m.name} ({m.n_nodes:,} nodes: {topo.nodes_per_leaf} per leaf, {topo.leaves_per_pod} leaves per pod, "
            f"{topo.n_pods} pods), {n_work} workloads of jobs of {sizes[0]}-{sizes[-1]} nodes (2^a 3^b), {iters} "
            f"iterations, {args.network} network; cluster view: Cab, {n_seg} segments of {per:,} jobs, sizes x "
            f"{', '.join(map(str, factors))}")
    h.say_setup(c, sc, what, "fattree44, 10,648 nodes, 15 workloads of 512-4,096-node jobs")
    if args.dry_run:
        rows = []
        for w in range(n_work):
            spec = make_workload(sc, w)
            rows.append([w, len(spec), sum(n for _, n in spec), f"{sum(n for _, n in spec) / m.n_nodes:.1%}",
                         " ".join(f"{p}:{n}" for p, n in spec)])
        h.say(c, "", f"dry run: workloads (job sizes allowed: {sizes})",
              h.table(rows, ["workload", "jobs", "nodes", "of the machine", "jobs (pattern:nodes)"]))
        h.finish(c, {"script": "repro_pollard", "scale": sc, "dry_run": True, "nodes": m.n_nodes}, t0)
        return 0

    # ---- network view
    per_pattern: dict = {}
    not_ok = 0
    res: dict = {}
    if args.view != "cluster":
        items = [(sc, w, a, args.network) for w in range(n_work) for a in ALLOCATORS]
        res = dict(zip([(w, a) for _, w, a, _ in items], h.deal(items, network_run, c, checkpoint=h.checkpoint(args, f"pollard-network-{sc}"))))
        speed: dict[str, list[float]] = {p: [] for p in PATTERNS}
        for w in range(n_work):
            r, t = res[(w, "random")], res[(w, "t123")]
            for p, x, y in zip(r["patterns"], r["runtime"], t["runtime"]):
                if math.isfinite(x) and math.isfinite(y) and y > 0:
                    speed[p].append(x / y)
                else:
                    not_ok += 1
        per_pattern.update({p: h.mean_se(v) for p, v in speed.items()})
        per_pattern["all"] = h.mean_se([x for v in speed.values() for x in v])
        rows = [[p, h.fmt_se(s, 3), f"{min(speed[p]) if p in speed and speed[p] else float('nan'):.3f}",
                 f"{max(speed[p]) if p in speed and speed[p] else float('nan'):.3f}"] for p, s in per_pattern.items()]
        rows[-1][2:] = ["", ""]
        cpu = sum(x["cpu_s"] for x in res.values())
        h.say(c, "", f"network view: speedup of each job, runtime under random / under t123, over the jobs of {n_work} "
                     f"workloads (mean +- standard error (jobs)); {not_ok} job(s) not ok; simulation CPU {cpu:.1f} s",
              h.table(rows, ["pattern", "speedup", "min", "max"]))

    # ---- cluster view
    cluster: dict = {}
    cl: dict = {}
    if args.view != "network":
        citems = [(sc, f, a[0], s) for f in factors for a in CLUSTER_ALLOCATORS for s in range(n_seg)]
        cl = dict(zip([it[1:] for it in citems], h.deal(citems, cluster_run, c, checkpoint=h.checkpoint(args, f"pollard-cluster-{sc}"))))
        _, desc = cluster_jobs(sc, 1296, 1)
        rows = []
        for f in factors:
            for a, _, _ in CLUSTER_ALLOCATORS:
                xs = [cl[(f, a, s)] for s in range(n_seg)]
                u = h.mean_se([x["utilization"] for x in xs])
                mk = h.mean_se([x["makespan"] / 86400 for x in xs])
                wt = h.mean_se([x["mean_wait"] / 3600 for x in xs])
                aph = h.mean_se([x["aph_all"] for x in xs])
                by = {b: h.mean_se([x["aph"].get(b, float("nan")) for x in xs]) for _, _, b in BINS}
                cluster[f"x{f}/{a}"] = {"factor": f, "allocator": a, "utilization": u, "makespan_d": mk,
                                        "mean_wait_h": wt, "mean_aph": aph, "aph_by_size": by}
                rows.append([f"x{f}", a, h.fmt_se(u, 4), h.fmt_se(mk, 2), h.fmt_se(wt, 2), h.fmt_se(aph, 3),
                             *[h.fmt_se(by[b], 2) for _, _, b in BINS],
                             f"{sum(x['cpu_s'] for x in xs):.1f}"])
        h.say(c, "", f"cluster view: Cab (1,296 nodes), {desc} (and x2, x3: overload), FCFS + EASY; mean +- "
                     "standard error (segments); APH by job size (nodes)",
              h.table(rows, ["sizes", "allocator", "utilization", "makespan (d)", "mean wait (h)", "mean APH",
                             *[f"APH {b}" for _, _, b in BINS], "CPU (s)"]))
    if h.rank(c) == 0 and per_pattern and cluster:
        _plot(per_pattern, cluster, factors, out / f"pollard_{sc}.png", m.name)
        h.say(c, f"figure: {out / f'pollard_{sc}.png'}")
    h.finish(c, {
        "script": "repro_pollard", "scale": sc, "machine": m.name, "nodes": m.n_nodes, "baseline": "random",
        "workloads": n_work, "network": args.network, "speedup_t123_over_random": per_pattern,
        "jobs_not_ok": not_ok, "cluster": cluster,
        "cpu_s_runs": {"network": round(sum(x["cpu_s"] for x in res.values()), 1),
                       "cluster": round(sum(x["cpu_s"] for x in cl.values()), 1)},
    }, t0)
    return 0


def _plot(per_pattern, cluster, factors, path, name):
    plt = h.plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    pats = list(per_pattern)
    a1.bar(pats, [per_pattern[p]["mean"] or np.nan for p in pats], yerr=[per_pattern[p]["se"] or 0.0 for p in pats],
           color="tab:blue", capsize=3)
    a1.axhline(1.0, color="grey", ls="--", lw=0.8)
    a1.set_ylabel("job speedup, t123 over random (mean +- s.e.)")
    a1.set_title(f"network view ({name})", fontsize=10)
    for a, _, _ in CLUSTER_ALLOCATORS:
        u = [cluster[f"x{f}/{a}"]["utilization"] for f in factors]
        a2.errorbar(factors, [x["mean"] for x in u], yerr=[x["se"] or 0.0 for x in u], fmt="-o", capsize=3, label=a)
    a2.set_xlabel("job-size scale (x the scaled log)")
    a2.set_ylabel("utilization (stable period)")
    a2.set_title("cluster view (Cab, FCFS + EASY)", fontsize=10)
    a2.legend(fontsize=8)
    for a in (a1, a2):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
