#!/usr/bin/env python3
"""Benchmark: replay the whole CTC-SP2 trace (77,222 jobs, 338 nodes) with timekeeper jobs.

Configurations, measured side by side in one run (median of ``--repeat`` runs each):

* ``fcfs/none``      - the baseline: FCFS without backfilling (the simplest scheduler);
* ``fcfs/easy``      - FCFS with EASY backfilling, fast count arithmetic (the default);
* ``fcfs/easy-gen``  - the same EASY decisions through the general allocator-driven path
  (copied allocation states, ``select`` after every expected release): the
  straightforward implementation the fast path must beat;
* ``fcfs/conservative`` - conservative backfilling, for reference (``--conservative``).

For each: simulation wall time (the event loop), replay wall time (simulation plus the
metrics), jobs per second, events, and ratios against the baselines. Reading the trace is
timed once, apart. The goal is EASY on the full trace in under 10 s. Prints a table and, as
its last line, one JSON object. Without the trace it says so and prints
``{"skipped": true, ...}``.

    python scripts/bench_scheduler.py [--trace PATH] [--repeat 3] [--limit N]
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import harness as h
from scheduler.replay_engine import replay
from scheduler.swf import read_swf
from simhpc.traces import trace_path

DEFAULT_TRACE = trace_path("CTC-SP2-1996-3.1-cln.swf.gz")
GOAL_S = 10.0


def measure(trace, order: str, backfill: str, general: bool, repeat: int) -> dict:
    sims, walls = [], []
    res = None
    for _ in range(repeat):
        res = replay(trace, order=order, backfill=backfill, backfill_options={"general": general} if general else None)
        sims.append(res.sim_wall_s)
        walls.append(res.wall_s)
    assert res is not None
    sim = h.median(sims)
    wall = h.median(walls)
    s = res.summary()
    return {
        "sim_s": sim,
        "replay_s": wall,
        "sim_s_runs": sims,
        "jobs": s["jobs"],
        "jobs_per_s": s["jobs"] / sim,
        "events": s["events"],
        "passes": s["passes"],
        "mean_wait": s["mean_wait"],
        "utilization": s["utilization"],
    }


def main() -> int:
    ap = h.parser(__doc__)
    ap.add_argument("--trace", default=str(DEFAULT_TRACE), help="an SWF trace (default: the shipped CTC-SP2 log)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration (median reported)")
    ap.add_argument("--limit", type=int, default=None, help="replay only the first N jobs")
    ap.add_argument("--conservative", action="store_true", help="also time conservative backfilling")
    args = ap.parse_args()
    path = Path(args.trace)
    if not path.exists():
        print(f"bench_scheduler: skipped: trace {path} is absent")
        h.emit({"benchmark": "scheduler", "skipped": True, "reason": f"trace {path} is absent"})
        return 0
    t0 = time.perf_counter()
    trace = read_swf(path, limit=args.limit)
    load_s = time.perf_counter() - t0
    configs = [("fcfs/none", "fcfs", "none", False), ("fcfs/easy", "fcfs", "easy", False),
               ("fcfs/easy-gen", "fcfs", "easy", True)]
    if args.conservative:
        configs.append(("fcfs/conservative", "fcfs", "conservative", False))
    results = {}
    for name, order, backfill, general in configs:
        results[name] = measure(trace, order, backfill, general, args.repeat)
    base = results["fcfs/none"]["sim_s"]
    gen = results["fcfs/easy-gen"]["sim_s"]
    rows = []
    for name, r in results.items():
        rows.append([name, r["jobs"], round(r["sim_s"], 3), round(r["replay_s"], 3), round(r["jobs_per_s"]),
                     r["events"], r["passes"], round(r["sim_s"] / base, 2), round(gen / r["sim_s"], 2),
                     round(r["mean_wait"]), round(r["utilization"], 4)])
    print(f"trace {path.name}: {len(trace.jobs)} jobs, {trace.n_nodes} nodes, read in {load_s:.3f} s; "
          f"median of {args.repeat} run(s); python {platform.python_version()} on {platform.machine()}")
    print(h.table(rows, ["config", "jobs", "sim s", "replay s", "jobs/s", "events", "passes",
                         "x fcfs/none", "easy-gen/this", "mean wait s", "util"]))
    easy = results["fcfs/easy"]
    total_easy = load_s + easy["replay_s"]
    print(f"EASY on the whole trace: {easy['replay_s']:.2f} s replay ({total_easy:.2f} s with reading the trace); "
          f"goal < {GOAL_S:.0f} s: {'met' if total_easy < GOAL_S else 'NOT met'}")
    out = {
        "benchmark": "scheduler",
        "trace": path.name,
        "jobs": len(trace.jobs),
        "nodes": trace.n_nodes,
        "repeat": args.repeat,
        "load_s": load_s,
        "baseline": "fcfs/none",
        "results": results,
        "easy_sim_s": easy["sim_s"],
        "easy_replay_s": easy["replay_s"],
        "easy_total_s": total_easy,
        "easy_jobs_per_s": easy["jobs_per_s"],
        "easy_vs_fcfs_none": easy["sim_s"] / base,
        "easy_fast_speedup_vs_general": gen / easy["sim_s"],
        "goal_s": GOAL_S,
        "goal_met": total_easy < GOAL_S,
    }
    h.emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
