#!/usr/bin/env python3
"""Jigsaw (Smith and Lowenthal, HPDC'21): utilization of interference-free allocation on full fat-trees.

Synthetic overloads are scheduled FCFS + EASY on full 3-level fat-trees (k-ary 3-trees of
radix k: k^3/4 nodes; radix 16, 18, 22, 28 give the study's 1,024, 1,458, 2,662 and 5,488
nodes) with four allocators: firstfree (unconstrained: any free nodes, the baseline), t123
(the T1/T2/T3 rules of Pollard et al., Algorithm 1), t123 with the stricter whole-pods rule
(T2 and T3 jobs never share a pod) and jigsaw (link reservation: every multi-leaf job gets
dedicated switch links). U = sum(N_j t_j) / (N_system t_total) is the utilization of each
replay, over its stable period (the arrival window of the middle 80 % of the jobs; the end
of a finite run is one long job draining, the same under every allocator); each policy's U relative to firstfree is paired by workload seed and reported as
mean +- standard error (number of seeds).

Workload (the study's synthetic traces have mean job sizes of 16, 22 and 28 nodes; their
size law, run times and arrival rate are not stated here, so they are parameters): job
sizes 1..N/4 drawn with probability proportional to n^-a, a solved so that the mean is the
target (MEAN_SIZES); log-normal run times (median 30 min, sigma 1), requests 1-2x the run
time, Poisson arrivals at an offered load of LOAD = 1.2. The study's LLNL-like traces are
not reproduced (no such trace ships with simhpc). LaaS is represented by jigsaw's link
reservation (the two differ in how they pick links; no separate LaaS allocator exists).

Scales (--scale): full runs the four trees, the three mean sizes, 10,000 jobs and 5 seeds
(under mpirun the replays are dealt out over the ranks); reduced the 1,024- and 1,458-node
trees, mean sizes 16 and 28, 1,000 jobs and 3 seeds; tiny one radix-8 tree, 150 jobs, 2
seeds. --dry-run builds the trees and workloads and prints them.

After S. A. Smith and D. K. Lowenthal, "Jigsaw: a high-utilization, interference-free job
scheduler for fat-tree clusters", HPDC 2021 (see docs/studies.md).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

import harness as h

#: (label, allocator, options); the first is the baseline.
ALLOCATORS = (("firstfree", "firstfree", {}), ("t123", "t123", {}),
              ("t123-whole-pods", "t123", {"t3_rule": "whole-pods"}), ("jigsaw", "jigsaw", {}))
SCALES = {
    #          radices            mean sizes     jobs   seeds
    "full": ((16, 18, 22, 28), (16, 22, 28), 10000, 5),
    "reduced": ((16, 18), (16, 28), 1000, 3),
    "tiny": ((8,), (4,), 150, 2),
}
LOAD = 1.2
RUN_MEDIAN, RUN_SIGMA = 1800.0, 1.0


def topology(radix: int):
    from models.topology import FatTree

    return FatTree.from_radix(radix=radix, levels=3, link_bw="4GB/s", link_lat="100ns", inject_bw="4GB/s")


def size_law(n_max: int, mean: float):
    """Sizes 1..n_max with weights n^-a, a (bisected) so that the mean is ``mean``."""
    from scheduler.workload import Choice

    n = np.arange(1, n_max + 1, dtype=float)

    def mean_of(a: float) -> float:
        w = n ** -a
        return float((n * w).sum() / w.sum())

    lo, hi = 0.0, 4.0  # mean_of decreases in a: from (n_max+1)/2 down to about 1
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mean_of(mid) > mean else (lo, mid)
    a = 0.5 * (lo + hi)
    w = n ** -a
    return Choice(values=tuple(n.tolist()), weights=tuple((w / w.sum()).tolist())), a, mean_of(a)


def workload(n_nodes: int, mean: float, n_jobs: int, seed: int):
    from scheduler.workload import Exponential, LogNormal, SyntheticWorkload, Uniform

    size, _, got = size_law(max(1, n_nodes // 4), mean)
    mean_run = RUN_MEDIAN * math.exp(RUN_SIGMA ** 2 / 2)
    ia = got * mean_run / (LOAD * n_nodes)
    return SyntheticWorkload(n_jobs=n_jobs, inter_arrival=Exponential(mean=ia), size=size,
                             run_time=LogNormal(median=RUN_MEDIAN, sigma=RUN_SIGMA),
                             request_factor=Uniform(low=1.0, high=2.0), max_run_time=40000.0).generate(seed)


def run(item):
    from scheduler.lifecycle import simulate
    from scheduler.metrics import job_table, system_metrics

    scale, radix, mean, label, seed = item
    _, alloc, opts = next(a for a in ALLOCATORS if a[0] == label)
    topo = topology(radix)
    jobs = workload(topo.n_nodes, mean, SCALES[scale][2], seed)
    t = time.process_time()
    res = simulate(jobs, n_nodes=topo.n_nodes, topology=topo, allocator=alloc, allocator_options=opts,
                   ordering="fcfs", backfill="easy", seed=seed)
    m = system_metrics(job_table(res.jobs), topo.n_nodes)
    return {"utilization": h.stable_utilization(res.jobs, topo.n_nodes), "utilization_whole_run": m.utilization,
            "mean_wait": m.mean_wait, "bsld": m.mean_bounded_slowdown, "makespan": m.makespan,
            "rejected": len(res.rejected), "cpu_s": time.process_time() - t}


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, scales=True)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    c = h.comm()
    sc, (radii, means, n_jobs, n_seeds) = h.scaled(args, SCALES)
    seeds = list(range(args.seeds or n_seeds))
    out = h.out_dir(args, c)
    trees = ", ".join(f"radix {r} ({topology(r).n_nodes:,} nodes)" for r in radii)
    what = (f"{trees}; mean job sizes {', '.join(map(str, means))}; {n_jobs} jobs x {len(seeds)} seeds; "
            f"offered load {LOAD}; allocators {', '.join(a[0] for a in ALLOCATORS)}")
    h.say_setup(c, sc, what, "radix 16/18/22/28 = 1,024/1,458/2,662/5,488 nodes, mean sizes 16/22/28, "
          "10,000 jobs x 5 seeds")
    if args.dry_run:
        rows = []
        for r in radii:
            n = topology(r).n_nodes
            for mean in means:
                _, a, got = size_law(n // 4, mean)
                jobs = workload(n, mean, n_jobs, 0)
                rows.append([f"{n:,}", mean, f"{a:.3f}", f"{got:.2f}", f"{np.mean([j.nodes for j in jobs]):.2f}",
                             max(j.nodes for j in jobs), len(jobs)])
        h.say(c, "", "dry run: trees and workloads (seed 0)",
              h.table(rows, ["nodes", "mean size", "exponent a", "law mean", "drawn mean", "largest", "jobs"]))
        h.finish(c, {"script": "repro_jigsaw", "scale": sc, "dry_run": True}, t0)
        return 0
    items = [(sc, r, m, a[0], s) for r in radii for m in means for a in ALLOCATORS for s in seeds]
    res = dict(zip([it[1:] for it in items], h.deal(items, run, c, checkpoint=h.checkpoint(args, f"jigsaw-{sc}"))))
    rows, figures = [], {}
    for r in radii:
        n = topology(r).n_nodes
        for m in means:
            for label, _, _ in ALLOCATORS:
                xs = [res[(r, m, label, s)] for s in seeds]
                u = h.mean_se([x["utilization"] for x in xs])
                rel = h.mean_se([x["utilization"] / res[(r, m, ALLOCATORS[0][0], s)]["utilization"]
                                 for x, s in zip(xs, seeds)])
                wait = h.mean_se([x["mean_wait"] / 3600 for x in xs])
                rows.append([f"{n:,}", m, label, h.fmt_se(u, 4), h.fmt_se(rel, 3), h.fmt_se(wait, 2),
                             sum(x["rejected"] for x in xs), f"{sum(x['cpu_s'] for x in xs):.1f}"])
                figures.setdefault(str(n), {}).setdefault(str(m), {})[label] = {
                    "utilization": u, "vs_firstfree": rel, "mean_wait_h": wait}
    h.say(c, "", f"FCFS + EASY, offered load {LOAD}: utilization U, U relative to firstfree (paired by seed) and mean "
                 "wait; mean +- standard error (seeds)",
          h.table(rows, ["nodes", "mean size", "allocator", "U", "x firstfree", "mean wait (h)", "rejected",
                         "CPU (s)"]))
    rule = {k: v for k, v in ((f"{n}/{m}", (figures[n][m]["t123"]["utilization"]["mean"],
                                             figures[n][m]["t123-whole-pods"]["utilization"]["mean"]))
                              for n in figures for m in figures[n])}
    if h.rank(c) == 0:
        _plot(figures, out / f"jigsaw_{sc}.png")
        h.say(c, f"figure: {out / f'jigsaw_{sc}.png'}")
    h.finish(c, {"script": "repro_jigsaw", "scale": sc, "jobs": n_jobs, "seeds": len(seeds), "baseline": "firstfree",
                 "machines": figures,
                 "t3_rule_effect": {k: {"algorithm": a, "whole_pods": b} for k, (a, b) in rule.items()}}, t0)
    return 0


def _plot(figures, path):
    plt = h.plt()
    ms = sorted({m for n in figures for m in figures[n]}, key=float)
    fig, axes = plt.subplots(1, len(ms), figsize=(5 * len(ms), 4), sharey=True, squeeze=False)
    xs = sorted(figures, key=int)
    for ax, m in zip(axes[0], ms):
        for label, _, _ in ALLOCATORS:
            u = [figures[x][m][label]["utilization"] for x in xs]
            ax.errorbar([int(x) for x in xs], [v["mean"] for v in u], yerr=[v["se"] or 0.0 for v in u], fmt="-o",
                        capsize=3, label=label)
        ax.set_xlabel("nodes (full 3-level fat-tree)")
        ax.set_title(f"mean job size {m}", fontsize=10)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("utilization U (FCFS + EASY)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
