#!/usr/bin/env python3
"""Benchmark: replay a whole SWF trace (by default the shipped CTC-SP2 log: 77,222 jobs, 338
nodes) with timekeeper jobs, against a minimal reference scheduler on the same trace.

Configurations, measured side by side in one run (median of ``--repeat`` runs each;
``--configs`` picks some):

* ``none``         - FCFS without backfilling (the simplest scheduler);
* ``easy``         - FCFS with EASY backfilling, fast count arithmetic (the default);
* ``easy-sjbf``    - EASY whose backfill candidates go shortest request first;
* ``easy-gen``     - the EASY decisions through the general allocator-driven path (copied
  allocation states, ``select`` after every expected release);
* ``conservative`` - conservative backfilling (``--no-conservative`` leaves it out).

Stand-ins for logs that are not at hand (stated in the output): ``--load-factor F`` divides
the inter-arrival times by F (CTC-SP2 at 1.3 stands in for the heavily loaded SDSC-SP2) and
``--tile-to N`` repeats the trace end to end until it has N jobs (CTC-SP2 tiled to 202,871
stands in for HPC2N's size; see ``scheduler.load.tile_workload``). Both are applied once,
before any timing, to the jobs both schedulers get.

For each: CPU time (user + sys of this process, ``time.process_time``) and wall time of the
replay (simulation plus metrics), the simulation's wall time alone, jobs per second, events,
and ratios. The named baseline is ``ref`` (``scripts/sched_reference.py``): a minimal
``heapq`` event loop with the same definitions, no kernel, no allocator, no metrics, timed
the same way on none, EASY and conservative; the table gives simhpc's CPU time as a multiple
of it and how many start times agree (all of them, when both are right). Reading the trace
is timed once, apart. Goals: EASY on the whole trace in under 10 s, and the CPU seconds of
``--goal-easy-cpu`` / ``--goal-conservative-cpu`` when given (the issue's goals for
SDSC-SP2 and HPC2N, whose logs are not shipped: pass them with ``--trace``). Prints a table
and, as its last line, one JSON object. Without the trace it says so and prints
``{"skipped": true, ...}``.

    python scripts/bench_scheduler.py [--trace PATH] [--repeat 3] [--limit N] [--no-reference]
        [--configs none,easy,easy-sjbf,easy-gen,conservative] [--load-factor F] [--tile-to N]
"""

from __future__ import annotations

import dataclasses
import math
import platform
import sys
import time
from pathlib import Path

import harness as h
import sched_reference
from scheduler.load import scale_load, tile_workload
from scheduler.replay_engine import replay
from scheduler.swf import read_swf
from simhpc.traces import trace_path

DEFAULT_TRACE = trace_path("CTC-SP2-1996-3.1-cln.swf.gz")
GOAL_S = 10.0
CONFIGS = ("none", "easy", "easy-sjbf", "easy-gen", "conservative")


def measure(trace, order: str, backfill: str, general: bool, repeat: int) -> tuple[dict, list[float]]:
    """simhpc's figures for one configuration, and the start times of its last run (rows in
    submission order)."""
    sims, walls, cpus = [], [], []
    res = None
    for _ in range(repeat):
        c0 = time.process_time()
        res = replay(trace, order=order, backfill=backfill, backfill_options={"general": general} if general else None)
        cpus.append(time.process_time() - c0)
        sims.append(res.sim_wall_s)
        walls.append(res.wall_s)
    assert res is not None
    sim = h.median(sims)
    s = res.summary()
    return {
        "cpu_s": h.median(cpus),
        "replay_s": h.median(walls),
        "sim_s": sim,
        "cpu_s_runs": cpus,
        "jobs": s["jobs"],
        "jobs_per_s": s["jobs"] / sim,
        "events": s["events"],
        "passes": s["passes"],
        "mean_wait": s["mean_wait"],
        "utilization": s["utilization"],
    }, res.table.start.tolist()


def measure_reference(trace, backfill: str, repeat: int) -> tuple[dict, list[float]]:
    """The reference scheduler's CPU and wall time (medians) and its start times, in the
    submission order of the replay's rows."""
    jobs = [(j.submit_time, j.nodes, j.run_time, j.request_time) for j in trace.jobs]
    cpus, walls = [], []
    starts: list[float] = []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        starts = sched_reference.schedule(jobs, trace.n_nodes, backfill)
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - w0)
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i][0], i))
    return {"cpu_s": h.median(cpus), "wall_s": h.median(walls), "cpu_s_runs": cpus}, [starts[i] for i in order]


def agree(a: list[float], b: list[float]) -> int:
    return sum(1 for x, y in zip(a, b) if x == y or (math.isnan(x) and math.isnan(y)))


def main() -> int:
    ap = h.parser(__doc__)
    ap.add_argument("--trace", default=str(DEFAULT_TRACE), help="an SWF trace (default: the shipped CTC-SP2 log)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration (median reported)")
    ap.add_argument("--limit", type=int, default=None, help="replay only the first N jobs")
    ap.add_argument("--conservative", action="store_true", help="(the default) also time conservative backfilling")
    ap.add_argument("--no-conservative", action="store_true", help="leave conservative backfilling out")
    ap.add_argument("--no-reference", action="store_true", help="leave the reference scheduler out")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help=f"comma-separated configurations to time (default: all of {', '.join(CONFIGS)})")
    ap.add_argument("--load-factor", type=float, default=1.0, metavar="F",
                    help="divide the inter-arrival times by F (a stand-in for a more loaded log)")
    ap.add_argument("--tile-to", type=int, default=None, metavar="N",
                    help="repeat the trace end to end to N jobs (a stand-in for a longer log)")
    ap.add_argument("--goal-easy-cpu", type=float, default=None, metavar="S",
                    help="report whether EASY's CPU time is under S seconds (e.g. 3 for SDSC-SP2)")
    ap.add_argument("--goal-conservative-cpu", type=float, default=None, metavar="S",
                    help="report whether conservative's CPU time is under S seconds (e.g. 30 for HPC2N)")
    args = ap.parse_args()
    path = Path(args.trace)
    if not path.exists():
        print(f"bench_scheduler: skipped: trace {path} is absent")
        h.emit({"benchmark": "scheduler", "skipped": True, "reason": f"trace {path} is absent"})
        return 0
    picked = [c.strip() for c in args.configs.split(",") if c.strip()]
    bad = [c for c in picked if c not in CONFIGS]
    if bad or not picked:
        ap.error(f"--configs: unknown configuration(s) {', '.join(bad) or '(none given)'}; valid: {', '.join(CONFIGS)}")
    if args.no_conservative and "conservative" in picked:
        picked.remove("conservative")
    if not args.load_factor > 0:
        ap.error(f"--load-factor must be > 0, got {args.load_factor}")
    if args.tile_to is not None and args.tile_to < 1:
        ap.error(f"--tile-to must be >= 1, got {args.tile_to}")
    t0 = time.perf_counter()
    trace = read_swf(path, limit=args.limit)
    load_s = time.perf_counter() - t0
    stand_in = []
    if args.tile_to is not None or args.load_factor != 1.0:
        jobs = trace.jobs
        if args.tile_to is not None:
            jobs = tile_workload(jobs, args.tile_to)
            stand_in.append(f"tiled end to end to {args.tile_to} jobs")
        if args.load_factor != 1.0:
            jobs = scale_load(jobs, args.load_factor)
            stand_in.append(f"inter-arrival times divided by {args.load_factor:g}")
        trace = dataclasses.replace(trace, jobs=jobs, rejected=[])
    configs = [(f"fcfs/{c}", "easy" if c == "easy-gen" else c, c == "easy-gen") for c in picked]
    results: dict[str, dict] = {}
    reference: dict[str, dict] = {}
    for name, backfill, general in configs:
        results[name], starts = measure(trace, "fcfs", backfill, general, args.repeat)
        if not args.no_reference and not general:
            ref, ref_starts = measure_reference(trace, backfill, args.repeat)
            ref["same_starts"] = agree(starts, ref_starts)
            reference[name] = ref
            results[name]["x_ref_cpu"] = results[name]["cpu_s"] / ref["cpu_s"] if ref["cpu_s"] > 0 else None
    rows = []
    for name, r in results.items():
        ref = reference.get(name)
        rows.append([name, r["jobs"], round(r["cpu_s"], 3), round(r["replay_s"], 3), round(r["sim_s"], 3),
                     round(r["jobs_per_s"]), r["events"], r["passes"],
                     "-" if ref is None else round(ref["cpu_s"], 3),
                     "-" if ref is None or r.get("x_ref_cpu") is None else round(r["x_ref_cpu"], 2),
                     "-" if ref is None else f"{ref['same_starts']}/{r['jobs']}",
                     round(r["mean_wait"]), round(r["utilization"], 4)])
    print(f"trace {path.name}: {len(trace.jobs)} jobs, {trace.n_nodes} nodes, read in {load_s:.3f} s; "
          f"median of {args.repeat} run(s); python {platform.python_version()} on {platform.machine()}")
    if stand_in:
        print(f"STAND-IN workload, not the log itself: {path.name} {', '.join(stand_in)}")
    print(h.table(rows, ["config", "jobs", "cpu s", "wall s", "sim wall s", "jobs/s", "events", "passes",
                         "ref cpu s", "x ref cpu", "same starts", "mean wait s", "util"]))
    easy = results.get("fcfs/easy")
    total_easy = None if easy is None else load_s + easy["replay_s"]
    if easy is not None:
        print(f"EASY on the whole trace: {easy['replay_s']:.2f} s replay ({total_easy:.2f} s with reading the trace), "
              f"{easy['cpu_s']:.2f} s CPU; goal < {GOAL_S:.0f} s: {'met' if total_easy < GOAL_S else 'NOT met'}")
    goals = {}
    for key, label, goal in (("fcfs/easy", "EASY", args.goal_easy_cpu),
                             ("fcfs/conservative", "conservative", args.goal_conservative_cpu)):
        if goal is not None and key in results:
            goals[key] = {"goal_cpu_s": goal, "met": results[key]["cpu_s"] < goal}
            print(f"{label}: {results[key]['cpu_s']:.2f} s CPU; goal < {goal:g} s CPU: "
                  f"{'met' if goals[key]['met'] else 'NOT met'}")
    out = {
        "benchmark": "scheduler",
        "trace": path.name,
        "stand_in": stand_in,
        "load_factor": args.load_factor,
        "tile_to": args.tile_to,
        "jobs": len(trace.jobs),
        "nodes": trace.n_nodes,
        "repeat": args.repeat,
        "load_s": load_s,
        "baseline": "ref (scripts/sched_reference.py: minimal heapq scheduler)",
        "results": results,
        "reference": reference,
        "goal_s": GOAL_S,
        "cpu_goals": goals,
    }
    if easy is not None:
        out.update(easy_cpu_s=easy["cpu_s"], easy_replay_s=easy["replay_s"], easy_total_s=total_easy,
                   easy_jobs_per_s=easy["jobs_per_s"], goal_met=total_easy < GOAL_S)
        if "fcfs/easy-gen" in results:
            out["easy_fast_speedup_vs_general"] = results["fcfs/easy-gen"]["cpu_s"] / easy["cpu_s"]
    if "fcfs/conservative" in results:
        out["conservative_cpu_s"] = results["fcfs/conservative"]["cpu_s"]
    h.emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
