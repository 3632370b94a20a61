#!/usr/bin/env python3
"""Runtime estimates x backfilling variants on an SWF trace: mean wait, bounded slowdown, CPU.

Replays one trace (default: the shipped CTC-SP2 trace, 77,222 jobs on 338 nodes) under every
estimate model (user = the request, exact, the f-model with f = 1, recent = Tsafrir et al.'s
user history) and every EASY variant (EASY, EASY-SJBF, EASY with 4 reservations) plus
conservative backfilling, FCFS order, kills at the request. For each: mean and 90th
percentile wait, mean bounded slowdown (tau 10 s), their ratio to the baseline (user
estimates, EASY) measured in the same run, events, and the simulation's CPU time (user+sys
of this process) and wall time. Prints a table and, as its last line, one JSON object.

    python scripts/estimates_backfill.py [--trace PATH] [--limit N] [--seed S]
"""

from __future__ import annotations

import os
import time

import harness as h
from scheduler.lifecycle import simulate
from scheduler.metrics import job_table, system_metrics
from scheduler.swf import read_swf
from simhpc.traces import trace_path

ESTIMATES = (("user", {}), ("exact", {}), ("fmodel", {"f": 1.0}), ("recent", {}))
BACKFILLS = (("easy", {}), ("easy-sjbf", {}), ("easy", {"depth": 4}), ("conservative", {}))


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def label(name: str, options: dict) -> str:
    return name + ("(" + ",".join(f"{k}={v:g}" for k, v in options.items()) + ")" if options else "")


def main() -> None:
    p = h.parser(__doc__, seed=0)
    p.add_argument("--trace", default=str(trace_path("CTC-SP2-1996-3.1-cln.swf.gz")), help="an SWF trace")
    p.add_argument("--limit", type=int, default=None, help="replay only the first N jobs")
    args = p.parse_args()
    t0 = time.perf_counter()
    tr = read_swf(args.trace, limit=args.limit)
    rows, results = [], []
    base = None
    for est, eopts in ESTIMATES:
        for bf, bopts in BACKFILLS:
            c0, w0 = cpu(), time.perf_counter()
            res = simulate(tr.jobs, n_nodes=tr.n_nodes, backfill=bf, backfill_options=bopts, estimate=est,
                           estimate_options=eopts, seed=args.seed)
            c1, w1 = cpu(), time.perf_counter()
            m = system_metrics(job_table(res.jobs), tr.n_nodes)
            r = {"estimate": label(est, eopts), "backfill": label(bf, bopts), "mean_wait": m.mean_wait,
                 "wait_p90": m.wait_p90, "mean_bsld": m.mean_bounded_slowdown, "events": res.stats.events,
                 "cpu_s": c1 - c0, "wall_s": w1 - w0}
            if base is None:
                base = r
            r["wait_vs_base"] = h.ratio(r["mean_wait"], base["mean_wait"])
            r["bsld_vs_base"] = h.ratio(r["mean_bsld"], base["mean_bsld"])
            results.append(r)
            rows.append([r["estimate"], r["backfill"], f"{r['mean_wait']:.0f}", f"{r['wait_p90']:.0f}",
                         f"{r['mean_bsld']:.2f}", f"{r['wait_vs_base']:.3f}", f"{r['bsld_vs_base']:.3f}",
                         r["events"], f"{r['cpu_s']:.2f}", f"{r['wall_s']:.2f}"])
    print(f"trace {args.trace}: {len(tr.jobs)} jobs on {tr.n_nodes} nodes; FCFS, kills at the request; "
          "baseline: user estimates, EASY")
    print(h.table(rows, ["estimate", "backfill", "mean wait s", "p90 wait s", "mean bsld", "wait/base",
                         "bsld/base", "events", "cpu s", "wall s"], align="llrrrrrrrr"))
    h.finish(None, {"bench": "estimates_backfill", "trace": os.path.basename(args.trace), "jobs": len(tr.jobs),
                    "nodes": tr.n_nodes, "baseline": "user/easy",
                    "results": [{k: h.r4(v) for k, v in r.items()} for r in results]}, t0)


if __name__ == "__main__":
    main()
