#!/usr/bin/env python3
"""Pollard et al. style: topology-oblivious vs. interference-free node allocation on fat-trees.

Network view: a foreground job running one of four communication patterns (stencil3d,
unstr-mesh, pairs, sub-a2a) shares a 3-level fat-tree with background jobs of 5-40 % of
the machine drawn from the same four patterns; every job is placed by the
topology-oblivious allocator (random) or by the interference-free T1/T2/T3 policy (t123),
on the same seeds. Per pattern: the foreground's runtime under both, the speedup
random/t123 (paired by seed) and the slowdown against its runtime alone on the same nodes
(exactly 1 under t123: no switch port carries two jobs' traffic).

Cluster view: a Cab-like machine (1,296 nodes) replays the CTC-SP2 trace with job sizes
scaled by 1,296/338 (the log ships with simhpc; without it, a synthetic workload, said so) with
FCFS + EASY under both allocators: utilization, makespan, mean wait and APH by job size.

Scales: --full uses the radix-44 tree (fattree44, 10,648 nodes; foreground 10 % of it,
three background jobs) and the whole trace; run it on a cluster (mpirun -n 64 ...: the
(allocator, pattern, seed) runs are dealt out over the ranks). The default reduced scale
uses a radix-16 3-level tree (1,024 nodes), three iterations, two seeds and the first 5,000
jobs of the trace; --tiny a radix-8 tree and 300 jobs.

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
    "stencil3d": {"face_bytes": "64KiB"},
    "unstr-mesh": {"nbytes": "32KiB", "degree": 6},
    "pairs": {"nbytes": "256KiB"},
    "sub-a2a": {"nbytes": "16KiB", "along": "x"},
}
ALLOCATORS = ("random", "t123")
SCALES = {
    #          radix  iters seeds k  trace jobs
    "full": (44, 5, 3, 3, None),
    "reduced": (16, 3, 2, 3, 5000),
    "tiny": (8, 2, 1, 2, 300),
}
FG_FRACTION = 0.10
BG_FRACTION = (0.05, 0.40)


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


def network_run(item):
    """One (allocator, pattern, seed): the foreground's figures."""
    from simhpc.studies import BackgroundApp, ForegroundJob, InterferenceStudy, run_study

    scale, alloc, pattern, seed = item
    m = machine(scale)
    _, iters, _, k, _ = SCALES[scale]
    bg = tuple(BackgroundApp(app=a, fraction=BG_FRACTION, args={**v, "iters": iters}) for a, v in PATTERNS.items())
    ranks = max(2, int(round(FG_FRACTION * m.n_nodes)))
    st = InterferenceStudy(name="pollard", machine=m, ranks_per_node=1, allocator=alloc, k=(k,), seeds=(seed,),
                           foreground=ForegroundJob(app=pattern, ranks=ranks, args={**PATTERNS[pattern], "iters": iters}),
                           background=bg, hot_links=0)
    r = run_study(st, comm=None).runs
    return {k2: (r[k2][0].item() if hasattr(r[k2][0], "item") else r[k2][0])
            for k2 in ("status", "reason", "runtime", "alone", "ideal", "slowdown", "aph", "bg_nodes", "events")}


def cluster_jobs(scale: str, n_nodes: int):
    """The Cab-like workload: CTC-SP2 scaled to the machine, or a synthetic one."""
    from scheduler.swf import read_swf
    from scheduler.workload import Exponential, LogNormal, PowerOfTwo, SyntheticWorkload, Uniform

    limit = SCALES[scale][4]
    d = h.traces_dir()
    path = d / "CTC-SP2-1996-3.1-cln.swf.gz" if d is not None else None
    if path is not None and path.exists():
        tr = read_swf(path, limit=limit)
        f = n_nodes / tr.n_nodes
        jobs = []
        for j in tr.jobs:
            j = j.fresh()
            j.nodes = j.job_size = min(n_nodes, max(1, math.ceil(j.nodes * f)))
            jobs.append(j)
        return jobs, (f"CTC-SP2 ({len(jobs)} jobs{'' if limit is None else f', the first {limit}'}), sizes x "
                      f"{f:.2f} ({tr.n_nodes} -> {n_nodes} nodes)")
    n = limit or 20000
    jobs = SyntheticWorkload(n_jobs=n, inter_arrival=Exponential(mean=90.0), size=PowerOfTwo(low=1, high=512),
                             run_time=LogNormal(median=1800.0, sigma=1.2), request_factor=Uniform(low=1.0, high=3.0),
                             max_run_time=86400.0).generate(11)
    return jobs, f"synthetic ({n} jobs; the CTC-SP2 trace was not found)"


def cluster_run(item):
    from scheduler.replay_engine import replay

    scale, alloc = item
    jobs, _ = cluster_jobs(scale, 1296)
    t = time.perf_counter()
    r = replay(jobs, machine="cab", allocator=alloc, order="fcfs", backfill="easy", seed=1)
    s = r.summary()
    return {"allocator": alloc, "utilization": s["utilization"], "makespan": s["makespan"], "mean_wait": s["mean_wait"],
            "mean_bounded_slowdown": s["mean_bounded_slowdown"], "placement": r.placement,
            "wall_s": time.perf_counter() - t}


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, scales=True)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    c = h.comm()
    sc, (radix, iters, n_seeds, k, limit) = h.scaled(args, SCALES)
    out = h.out_dir(args, c)
    m = machine(sc)
    seeds = args.seeds or n_seeds
    fg_ranks = max(2, int(round(FG_FRACTION * m.n_nodes)))
    what = (f"{m.name} ({m.n_nodes} nodes), foreground {fg_ranks} ranks ({FG_FRACTION:.0%}), {k} background jobs of "
            f"{BG_FRACTION[0]:.0%}-{BG_FRACTION[1]:.0%}, {iters} iterations, {seeds} seed(s); cluster view: Cab, "
            f"{'whole trace' if limit is None else f'{limit} jobs'}")
    h.say(c, f"full: {what}" if sc == "full" else
          f"{sc}: {what} (published: radix-44 tree, 10,648 nodes; Cab with the production workload)")

    # ---- network view
    items = [(sc, a, p, s) for p in PATTERNS for a in ALLOCATORS for s in range(seeds)]
    res = dict(zip([(a, p, s) for _, a, p, s in items], h.deal(items, network_run, c)))
    rows, per_pattern = [], {}
    for p in PATTERNS:
        pairs = [(res[("random", p, s)], res[("t123", p, s)]) for s in range(seeds)]
        ok = [(x, y) for x, y in pairs if x["status"] == "ok" and y["status"] == "ok"]
        unplaced = sum(1 for x, y in pairs for z in (x, y) if z["status"] != "ok")
        if not ok:
            rows.append([p, "-", "-", "-", "-", "-", "-", f"0/{seeds}"])
            per_pattern[p] = {"speedup": None, "pairs": 0, "not_ok": unplaced}
            continue
        rr = np.array([x["runtime"] for x, _ in ok])
        rt = np.array([y["runtime"] for _, y in ok])
        speed = rr / rt
        sl_r = np.array([x["slowdown"] for x, _ in ok])
        sl_t = np.array([y["slowdown"] for _, y in ok])
        alone = np.array([x["alone"] / y["alone"] for x, y in ok])
        rows.append([p, f"{np.median(rr) * 1e6:.1f}", f"{np.median(rt) * 1e6:.1f}", f"{np.mean(speed):.3f}",
                     f"{np.median(sl_r):.3f}", f"{np.median(sl_t):.3f}", f"{np.median(alone):.3f}",
                     f"{len(ok)}/{seeds}"])
        per_pattern[p] = {"speedup": h.r4(np.mean(speed)), "runtime_random_us": h.r4(np.median(rr) * 1e6),
                          "runtime_t123_us": h.r4(np.median(rt) * 1e6), "slowdown_random": h.r4(np.median(sl_r)),
                          "slowdown_t123": h.r4(np.median(sl_t)), "alone_ratio": h.r4(np.median(alone)),
                          "pairs": len(ok), "not_ok": unplaced}
    h.say(c, "", "network view: foreground runtime (us, median over seeds), random vs t123 placement of all jobs",
          h.table(rows, ["pattern", "random", "t123", "speedup (mean)", "slowdown random", "slowdown t123",
                         "alone random/t123", "seeds ok"]))
    bad = [f"  {a} {p} seed {s}: {r['status']}: {r['reason']}" for (a, p, s), r in res.items() if r["status"] != "ok"]
    if bad:
        h.say(c, "runs not ok (left out of the speedups):", *bad)

    # ---- cluster view
    jobs, desc = cluster_jobs(sc, 1296)
    cl = h.deal([(sc, a) for a in ALLOCATORS], cluster_run, c)
    rows = [[x["allocator"], f"{x['utilization']:.4f}", f"{x['makespan'] / 86400:.2f}", f"{x['mean_wait'] / 3600:.3f}",
             f"{x['mean_bounded_slowdown']:.2f}", f"{x['placement']['all']['mean_aph']:.3f}", f"{x['wall_s']:.1f}"]
            for x in cl]
    h.say(c, "", f"cluster view: Cab (1,296 nodes), {desc}, FCFS + EASY",
          h.table(rows, ["allocator", "utilization", "makespan (d)", "mean wait (h)", "mean bsld", "mean APH",
                         "replay (s)"]))
    bins = [b["nodes"] for b in cl[0]["placement"]["bins"]]
    aph = {x["allocator"]: {b["nodes"]: b["mean_aph"] for b in x["placement"]["bins"]} for x in cl}
    jobs_in = {b["nodes"]: b["jobs"] for b in cl[0]["placement"]["bins"]}
    rows = [[b, jobs_in[b], f"{aph['random'].get(b, float('nan')):.3f}", f"{aph['t123'].get(b, float('nan')):.3f}"]
            for b in bins]
    h.say(c, "", "APH (average pairwise switch hops) by job size (nodes)", h.table(rows, ["nodes", "jobs", "random", "t123"]))
    if h.rank(c) == 0:
        _plot(per_pattern, cl, out / f"pollard_{sc}.png", m.name)
        h.say(c, f"figure: {out / f'pollard_{sc}.png'}")
    util = {x["allocator"]: x["utilization"] for x in cl}
    h.finish(c, {
        "script": "repro_pollard", "scale": sc, "machine": m.name, "nodes": m.n_nodes, "baseline": "random",
        "speedup_t123_over_random": {p: v["speedup"] for p, v in per_pattern.items()}, "patterns": per_pattern,
        "cluster": {"workload": desc, **{x["allocator"]: {"utilization": h.r4(x["utilization"]),
                                                          "makespan_s": x["makespan"],
                                                          "mean_wait_s": h.r4(x["mean_wait"]),
                                                          "mean_aph": h.r4(x["placement"]["all"]["mean_aph"])}
                                         for x in cl},
                    "utilization_t123_over_random": h.r4(util["t123"] / util["random"])},
        "aph_by_size": aph,
    }, t0)
    return 0


def _plot(per_pattern, cl, path, name):
    plt = h.plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    pats = list(per_pattern)
    sp = [per_pattern[p]["speedup"] or np.nan for p in pats]
    a1.bar(pats, sp, color="tab:blue")
    a1.axhline(1.0, color="grey", ls="--", lw=0.8)
    a1.set_ylabel("speedup of the foreground, t123 over random")
    a1.set_title(f"network view ({name})", fontsize=10)
    for x in cl:
        b = x["placement"]["bins"]
        a2.plot(range(len(b)), [y["mean_aph"] for y in b], "-o", label=x["allocator"])
        a2.set_xticks(range(len(b)), [y["nodes"] for y in b], rotation=45, fontsize=7)
    a2.set_xlabel("job size (nodes)")
    a2.set_ylabel("mean APH (switch hops)")
    a2.set_title("cluster view (Cab, EASY)", fontsize=10)
    a2.legend()
    for a in (a1, a2):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
