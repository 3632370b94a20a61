#!/usr/bin/env python3
"""Albing et al. style: MIND of contiguous allocation policies against FIFO-0, by job size.

A synthetic workload whose job sizes peak at 1 node and at 9-16 nodes (the shape of the
Cray XE6 workloads these policies were tuned on) is scheduled FCFS + EASY on a HECToR-like
3D torus (15x6x16 routers, 2 nodes each: 2,880 nodes) with First Fit, Closest Fit,
Largest Fit and dual-end allocation over the machine's node ordering, and with FIFO-0 (the
first free nodes of the ordering) as the baseline. For each job-size class: mean MIND
(mean inter-node distance, router hops over the pairs of a job's nodes) and each policy's
improvement over FIFO-0. Then the same on a dragonfly and on a 5D torus with the same
2,880 nodes, to see whether the ranking carries over.

All these allocators can place a job on any free nodes, so EASY's schedule (every start
time) is the same for all of them: only the placements differ (the script checks this).

Scales: --full 20,000 jobs; the default reduced scale 5,000 jobs; --tiny 300 jobs. The
machines are the same at every scale (under mpirun the (machine, policy) replays are
dealt out over the ranks).

After C. Albing, N. Troullier, S. Whalen, R. Olson, J. Glenski, H. Pritchard, H. Mills,
"Scalable node allocation for improved performance in regular and anisotropic 3D torus
supercomputers", EuroMPI 2011, and the related Cray allocation-policy studies (see
docs/studies.md).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import harness as h

POLICIES = ("fifo0", "firstfit", "closestfit", "largestfit", "dualend")
BINS = [(1, 1, "1"), (2, 8, "2-8"), (9, 16, "9-16"), (17, 64, "17-64"), (65, 256, "65-256"), (257, 1 << 20, "257+")]
SCALES = {"full": 20000, "reduced": 5000, "tiny": 300}
MACHINES = ("hector", "dragonfly-2880", "torus5d-2880")


def topology(name: str):
    from models.presets import get_machine
    from models.topology import Dragonfly, Torus

    if name == "hector":
        return get_machine("hector").topology
    if name == "dragonfly-2880":
        # 60 groups of 12 routers with 4 nodes each.
        return Dragonfly(a=12, p=4, h=5, g=60)
    return Torus(dims=(6, 6, 5, 4, 4), nodes_per_router=1, wrap=True)


def sizes_distribution():
    """Job sizes 1..512: 30 % one node, 30 % 9-16 nodes, 40 % log-uniform over the rest."""
    from scheduler.workload import Choice

    values = np.arange(1, 513)
    w = np.zeros(len(values))
    w[0] = 0.30
    w[8:16] = 0.30 / 8
    rest = np.r_[1:8, 16:512]
    lw = 1.0 / values[rest]
    w[rest] = 0.40 * lw / lw.sum()
    return Choice(values=tuple(float(v) for v in values), weights=tuple(float(x) for x in w))


def workload(n: int):
    from scheduler.workload import Exponential, LogNormal, SyntheticWorkload, Uniform

    return SyntheticWorkload(n_jobs=n, inter_arrival=Exponential(mean=45.0), size=sizes_distribution(),
                             run_time=LogNormal(median=1800.0, sigma=1.2), request_factor=Uniform(low=1.0, high=3.0),
                             max_run_time=86400.0).generate(3)


def run(item):
    from scheduler.allocators.metrics import allocation_metrics_by_size
    from scheduler.lifecycle import simulate
    from scheduler.metrics import job_table, system_metrics

    scale, mname, policy = item
    topo = topology(mname)
    jobs = workload(SCALES[scale])
    t = time.perf_counter()
    res = simulate(jobs, n_nodes=topo.n_nodes, topology=topo, allocator=policy, ordering="fcfs", backfill="easy", seed=3)
    m = system_metrics(job_table(res.jobs), topo.n_nodes)
    pl = allocation_metrics_by_size(res.jobs, topo, bins=BINS)
    return {"utilization": m.utilization, "mean_wait": m.mean_wait, "starts": [j.start_time for j in res.jobs],
            "bins": {b["nodes"]: (b["jobs"], b["mean_mind"]) for b in pl["bins"]}, "all": pl["all"]["mean_mind"],
            "wall_s": time.perf_counter() - t}


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, scales=True)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    c = h.comm()
    sc, n = h.scaled(args, SCALES)
    out = h.out_dir(args, c)
    h.say(c, f"full: {n} jobs" if sc == "full" else f"{sc}: {n} jobs (full: 20,000); machines of 2,880 nodes: "
                                                       "HECToR-like 3D torus, dragonfly, 5D torus")
    items = [(sc, mname, p) for mname in MACHINES for p in POLICIES]
    res = dict(zip([(mn, p) for _, mn, p in items], h.deal(items, run, c)))
    figures: dict = {}
    for mname in MACHINES:
        base = res[(mname, "fifo0")]
        same = all(res[(mname, p)]["starts"] == base["starts"] for p in POLICIES)
        rows = []
        fig_m: dict = {}
        for lo, hi, label in BINS:
            if label not in base["bins"]:
                continue
            jobs_in, b_mind = base["bins"][label]
            row = [label, jobs_in, f"{b_mind:.3f}"]
            for p in POLICIES[1:]:
                mind = res[(mname, p)]["bins"][label][1]
                imp = 100.0 * (b_mind - mind) / b_mind if b_mind > 0 else None
                row.append(f"{mind:.3f} ({'-' if imp is None else f'{imp:+.1f}%'})")
                fig_m.setdefault(p, {})[label] = h.r4(imp)
            rows.append(row)
        row = ["all", sum(v[0] for v in base["bins"].values()), f"{base['all']:.3f}"]
        for p in POLICIES[1:]:
            mind = res[(mname, p)]["all"]
            imp = 100.0 * (base["all"] - mind) / base["all"]
            row.append(f"{mind:.3f} ({imp:+.1f}%)")
            fig_m.setdefault(p, {})["all"] = h.r4(imp)
        rows.append(row)
        topo = topology(mname)
        h.say(c, "", f"{mname} ({topo.name}, {topo.n_nodes} nodes, diameter {topo.diameter}): mean MIND by job size "
                     f"(router hops); in brackets the improvement over FIFO-0; utilization {base['utilization']:.4f}, "
                     f"identical schedules: {'yes' if same else 'NO'}",
              h.table(rows, ["nodes", "jobs", "fifo0", *POLICIES[1:]]))
        figures[mname] = {"improvement_pct": fig_m, "fifo0_mind": {k: h.r4(v[1]) for k, v in base["bins"].items()},
                          "identical_schedules": same, "utilization": h.r4(base["utilization"])}
    if h.rank(c) == 0:
        _plot(figures, out / f"albing_{sc}.png")
        h.say(c, f"figure: {out / f'albing_{sc}.png'}")
    h.finish(c, {"script": "repro_albing", "scale": sc, "jobs": n, "baseline": "fifo0", "machines": figures}, t0)
    return 0


def _plot(figures, path):
    plt = h.plt()
    fig, axes = plt.subplots(1, len(figures), figsize=(5 * len(figures), 4), sharey=True)
    for ax, (mname, f) in zip(np.atleast_1d(axes), figures.items()):
        labels = [b[2] for b in BINS if b[2] in f["fifo0_mind"] and b[2] != "1"]
        x = np.arange(len(labels))
        w = 0.8 / len(POLICIES[1:])
        for i, p in enumerate(POLICIES[1:]):
            ax.bar(x + (i - 1.5) * w, [f["improvement_pct"][p].get(lbl) or 0.0 for lbl in labels], w, label=p)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(x, labels)
        ax.set_xlabel("job size (nodes)")
        ax.set_title(mname, fontsize=10)
        ax.grid(True, alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("MIND improvement over FIFO-0 (%)")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
