#!/usr/bin/env python3
"""Utilization of the interference-free fat-tree allocators against unconstrained ones.

Replays one seeded synthetic overload (jobs of 1-256 nodes arriving faster than Cab can run
them, requests 1-2x the run time) through EASY backfilling on the Cab preset with
``firstfree`` (the baseline: no placement constraint), ``treefit``, ``t123`` (Pollard/Jain)
and ``jigsaw`` (link reservation), and prints utilization, mean wait and simulation wall
time, then, as its last line, one JSON object with the figures and each allocator's
utilization relative to the baseline.

    python scripts/isolation_utilization.py            # 2,000 jobs
    python scripts/isolation_utilization.py --jobs 500 # quicker
"""

from __future__ import annotations

import time

import harness as h
from models.presets import get_machine
from scheduler.lifecycle import simulate
from scheduler.metrics import job_table, system_metrics
from scheduler.workload import Exponential, LogNormal, PowerOfTwo, SyntheticWorkload, Uniform

ALLOCATORS = ("firstfree", "treefit", "t123", "jigsaw")


def main() -> int:
    ap = h.parser(__doc__, seed=7)
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--machine", default="cab")
    args = ap.parse_args()
    topo = get_machine(args.machine).topology
    jobs = SyntheticWorkload(
        n_jobs=args.jobs,
        inter_arrival=Exponential(mean=45.0),
        size=PowerOfTwo(low=1, high=256),
        run_time=LogNormal(median=1800.0, sigma=1.0),
        request_factor=Uniform(low=1.0, high=2.0),
        max_run_time=40000.0,
    ).generate(args.seed)
    rows = []
    print(f"{'allocator':10s} {'utilization':>11s} {'x firstfree':>11s} {'mean wait':>10s} {'wall':>8s}")
    base = None
    for name in ALLOCATORS:
        t0 = time.perf_counter()
        res = simulate(jobs, n_nodes=topo.n_nodes, topology=topo, allocator=name, backfill="easy", seed=args.seed)
        wall = time.perf_counter() - t0
        m = system_metrics(job_table(res.jobs), topo.n_nodes)
        base = m.utilization if base is None else base
        rows.append({"allocator": name, "utilization": m.utilization, "utilization_ratio": m.utilization / base,
                     "mean_wait_s": m.mean_wait, "wall_s": wall, "passes": res.passes})
        print(f"{name:10s} {m.utilization:11.3f} {m.utilization / base:11.3f} {m.mean_wait / 3600:8.2f} h {wall:7.1f}s")
    h.emit({"script": "isolation_utilization", "machine": args.machine, "jobs": args.jobs, "baseline": "firstfree",
            "cases": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
