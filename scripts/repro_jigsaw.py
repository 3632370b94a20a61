#!/usr/bin/env python3
"""Jigsaw style: utilization of interference-free allocation on full fat-trees.

Synthetic overloads (power-of-two jobs of 1 node to a quarter of the machine, log-normal
run times, requests 1-2x the run time, offered load 1.2) are scheduled FCFS + EASY on full
3-level fat-trees (k-ary 3-trees: radix 16 -> 1,024 nodes ... radix 28 -> 5,488 nodes)
with three allocators: firstfree (the unconstrained baseline: any free nodes), t123 (the
T1/T2/T3 isolation rules of Pollard et al.) and jigsaw (link reservation: every job gets
dedicated switch links, in the style of Jigsaw and LaaS). Utilization, mean wait and
bounded slowdown, and each policy's utilization relative to the baseline.

Scales: --full runs radix 16, 20, 24 and 28 with 10,000 jobs each (under mpirun the
(machine, allocator) replays are dealt out over the ranks); the default reduced scale runs
radix 16, 20 and 24 (1,024 to 3,456 nodes) with 3,000 jobs; --tiny radix 8 with 200 jobs.

After S. A. Smith and D. K. Lowenthal, "Jigsaw: a high-utilization, interference-free job
scheduler for fat-tree clusters", HPDC 2021 (see docs/studies.md).
"""

from __future__ import annotations

import math
import sys
import time

import harness as h

ALLOCATORS = ("firstfree", "t123", "jigsaw")
SCALES = {"full": ((16, 20, 24, 28), 10000), "reduced": ((16, 20, 24), 3000), "tiny": ((8,), 200)}
LOAD = 1.2


def topology(radix: int):
    from models.topology import FatTree

    return FatTree.from_radix(radix=radix, levels=3, link_bw="4GB/s", link_lat="100ns", inject_bw="4GB/s")


def workload(n_nodes: int, n_jobs: int):
    from scheduler.workload import Exponential, LogNormal, PowerOfTwo, SyntheticWorkload, Uniform

    high = 1 << int(math.log2(max(1, n_nodes // 4)))
    mean_size = (2 * high - 1) / (math.log2(high) + 1)
    mean_run = 1800.0 * math.exp(0.5)
    ia = mean_size * mean_run / (LOAD * n_nodes)
    return SyntheticWorkload(n_jobs=n_jobs, inter_arrival=Exponential(mean=ia), size=PowerOfTwo(low=1, high=high),
                             run_time=LogNormal(median=1800.0, sigma=1.0), request_factor=Uniform(low=1.0, high=2.0),
                             max_run_time=40000.0).generate(7)


def run(item):
    from scheduler.lifecycle import simulate
    from scheduler.metrics import job_table, system_metrics

    scale, radix, alloc = item
    topo = topology(radix)
    jobs = workload(topo.n_nodes, SCALES[scale][1])
    t = time.perf_counter()
    res = simulate(jobs, n_nodes=topo.n_nodes, topology=topo, allocator=alloc, ordering="fcfs", backfill="easy", seed=7)
    m = system_metrics(job_table(res.jobs), topo.n_nodes)
    return {"utilization": m.utilization, "mean_wait": m.mean_wait, "bsld": m.mean_bounded_slowdown,
            "makespan": m.makespan, "rejected": len(res.rejected), "wall_s": time.perf_counter() - t}


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, scales=True)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    c = h.comm()
    sc, (radii, n_jobs) = h.scaled(args, SCALES)
    out = h.out_dir(args, c)
    sizes = ", ".join(f"radix {r} ({topology(r).n_nodes:,} nodes)" for r in radii)
    h.say(c, f"full: {sizes}, {n_jobs} jobs each" if sc == "full" else
          f"{sc}: {sizes}, {n_jobs} jobs each (full: radix 16-28, 1,024-5,488 nodes, 10,000 jobs)")
    items = [(sc, r, a) for r in radii for a in ALLOCATORS]
    res = dict(zip([(r, a) for _, r, a in items], h.deal(items, run, c)))
    rows, figures = [], {}
    for r in radii:
        n = topology(r).n_nodes
        base = res[(r, "firstfree")]
        for a in ALLOCATORS:
            x = res[(r, a)]
            rows.append([f"{n:,}", a, f"{x['utilization']:.4f}", f"{x['utilization'] / base['utilization']:.3f}",
                         f"{x['mean_wait'] / 3600:.2f}", f"{x['bsld']:.1f}", x["rejected"], f"{x['wall_s']:.1f}"])
            figures.setdefault(str(n), {})[a] = {"utilization": h.r4(x["utilization"]),
                                                 "vs_firstfree": h.r4(x["utilization"] / base["utilization"]),
                                                 "mean_wait_h": h.r4(x["mean_wait"] / 3600), "bsld": h.r4(x["bsld"])}
    h.say(c, "", f"FCFS + EASY, offered load {LOAD}: utilization (and relative to firstfree, the unconstrained baseline)",
          h.table(rows, ["nodes", "allocator", "utilization", "x firstfree", "mean wait (h)", "mean bsld", "rejected",
                         "replay (s)"]))
    if h.rank(c) == 0:
        _plot(figures, out / f"jigsaw_{sc}.png")
        h.say(c, f"figure: {out / f'jigsaw_{sc}.png'}")
    h.finish(c, {"script": "repro_jigsaw", "scale": sc, "jobs": n_jobs, "baseline": "firstfree", "machines": figures},
             t0)
    return 0


def _plot(figures, path):
    plt = h.plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = sorted(figures, key=int)
    for a in ALLOCATORS:
        ax.plot([int(x) for x in xs], [figures[x][a]["utilization"] for x in xs], "-o", label=a)
    ax.set_xlabel("nodes (full 3-level fat-tree)")
    ax.set_ylabel("utilization (FCFS + EASY)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
