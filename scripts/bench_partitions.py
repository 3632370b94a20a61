#!/usr/bin/env python3
"""Benchmark: whole scheduling replays of the Zhou et al. BG/Q study with partition allocators.

Each configuration ``policy:selection:seed:jobs`` is one schedule of ``repro_zhou.py``'s
scheduling view: the seeded Mira-like workload (a 30 % sensitive fraction, a 30 % mesh
slowdown) replayed on Mira (49,152 nodes, 96 midplanes) with WFP + EASY and the partition
allocator ``policy`` (bgq-native, bgq-mesh, bgq-cfca, bgq-hybrid) choosing ``selection``
(least-blocking, first-fit); at 10,000 jobs it is one unit of the full-scale view. Every
replay runs in a child process (with ``--blas-threads``, default 1, BLAS threads) and
reports the CPU (user+sys) and wall of the replay alone and a hash of the schedule (every job's start, end, partition and nodes). With
``--baseline-tree PATH`` (another checkout, e.g. ``git worktree add /tmp/base HEAD``) every
configuration runs in both trees, alternating which goes first, and the script checks that
both give the same schedule and reports the median CPU of each and their ratio.

``--project`` adds the projected CPU of the full-scale scheduling view (36 distinct
schedules x 5 seeds of 10,000 jobs): the median CPU of each policy's unit (this tree) times
the number of schedules the view runs with that policy.

    python scripts/bench_partitions.py --baseline-tree /tmp/base --rounds 3
    python scripts/bench_partitions.py --configs bgq-cfca:least-blocking:0:10000 --baseline-tree /tmp/base
    python scripts/bench_partitions.py --configs "" --project --rounds 1
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import sys
import time

import numpy as np

import harness as h

# The simulator's packages are imported inside the functions: a child replay for
# --baseline-tree puts that tree first on sys.path before any of them is imported.

POLICIES = ("bgq-native", "bgq-mesh", "bgq-cfca", "bgq-hybrid")
SELECTIONS = ("least-blocking", "first-fit")
CONFIGS = ",".join(f"{p}:{s}:0:2000" for s in SELECTIONS for p in POLICIES)


def parse_config(text: str) -> tuple[str, str, int, int]:
    try:
        policy, selection, seed, jobs = text.split(":")
        out = policy, selection, int(seed), int(jobs)
    except ValueError:
        sys.exit(f"bench_partitions: --configs entry {text!r} is not policy:selection:seed:jobs")
    if policy not in POLICIES or selection not in SELECTIONS:
        sys.exit(f"bench_partitions: --configs entry {text!r}: policy one of {', '.join(POLICIES)}, "
                 f"selection one of {', '.join(SELECTIONS)}")
    return out


def schedule_hash(jobs) -> str:
    """sha256 over (job id, start, end, status, partition, nodes) of every job, in job id order."""
    d = hashlib.sha256()
    for j in sorted(jobs, key=lambda j: j.job_id):
        nodes = np.zeros(0, np.int64) if j.assigned_nodes is None else np.asarray(j.assigned_nodes, np.int64)
        info = getattr(j.assigned_nodes, "info", None)
        part = None if info is None else (info.kind, info.block_origin, info.blocks, info.wrap)
        d.update(repr((j.job_id, j.start_time, j.end_time, str(j.status), part, len(nodes))).encode())
        d.update(nodes.tobytes())
    return d.hexdigest()


def replay_child(config: str, tree: str | None) -> int:
    """One replay (in this process); prints its CPU, wall and schedule hash as JSON."""
    if tree:
        h.use_tree(tree, scripts=True)
    import repro_zhou as rz
    import scheduler
    from models.presets import get_machine
    from scheduler.lifecycle import simulate

    policy, selection, seed, n_jobs = parse_config(config)
    jobs = rz.workload(n_jobs, 0.3, seed)
    runner = rz.PenaltyRunner(1.3)
    topo = get_machine("mira").topology
    r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    res = simulate(jobs, n_nodes=topo.n_nodes, topology=topo, allocator=policy, ordering="wfp", backfill="easy",
                   runner=runner, seed=seed, allocator_options={"selection": selection})
    w1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    h.emit({"config": config, "cpu_s": cpu, "wall_s": w1 - w0, "hash": schedule_hash(res.jobs),
            "jobs": len(res.jobs), "package": os.path.dirname(os.path.dirname(scheduler.__file__))})
    return 0


def child(config: str, tree: str | None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--replay", config] + (["--tree", tree] if tree else [])
    return h.run_json(cmd, script="bench_partitions", timeout=None)


def limit_blas(threads: int) -> None:
    """Children inherit at most ``threads`` BLAS/OpenMP threads: the baseline's least-blocking
    multiplies float matrices, and idle BLAS threads spinning on a loaded machine would add
    CPU time that is not work (a full-scale run has one process per core anyway)."""
    if threads > 0:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(threads)


def view_schedules() -> dict[str, int]:
    """Schedules per policy in the full-scale scheduling view (repro_zhou: 5 seeds each)."""
    import repro_zhou as rz

    seeds = rz.SCALES["full"][4]
    out = {}
    for p in POLICIES:
        ds, df = rz._depends(p)
        out[p] = seeds * len({(sd if ds else 0.0, fr if df else 0.0) for sd, fr in rz.sweep(rz.SCALES["full"][5])})
    return out


def main() -> int:
    ap = h.parser(__doc__, rounds=3)
    ap.add_argument("--configs", default=CONFIGS, help=f"comma-separated policy:selection:seed:jobs (default {CONFIGS})")
    ap.add_argument("--baseline-tree", default=None, metavar="PATH",
                    help="another checkout: run every configuration there too and compare CPU and schedules")
    ap.add_argument("--project", action="store_true",
                    help="also time each policy's 10,000-job unit (this tree) and project the full-scale view's CPU")
    ap.add_argument("--selection", default="least-blocking", choices=SELECTIONS, help="selection for --project")
    ap.add_argument("--replay", default=None, help=argparse.SUPPRESS)  # (a child: one replay)
    ap.add_argument("--tree", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="BLAS/OpenMP threads of each replay (default 1; 0: the environment's)")
    args = ap.parse_args()
    if args.replay:
        return replay_child(args.replay, args.tree)
    limit_blas(args.blas_threads)
    configs = [c for c in args.configs.split(",") if c]
    for c in configs:
        parse_config(c)
    trees: list[tuple[str, str | None]] = [("new", None)]
    if args.baseline_tree:
        base = os.path.abspath(args.baseline_tree)
        if not os.path.isfile(os.path.join(base, "scheduler", "allocators", "torus_partitions.py")):
            sys.exit(f"bench_partitions: --baseline-tree {args.baseline_tree}: no scheduler/allocators/torus_partitions.py there")
        trees.append(("baseline", base))
    rows, heads, figures, same_all = h.compare_replays(configs, trees, args.rounds, child,
                                                       "policy:selection:seed:jobs")
    result = {"benchmark": "bench_partitions", "rounds": args.rounds, "baseline_tree": args.baseline_tree,
              "blas_threads": args.blas_threads, "cases": figures}
    if configs:
        print(f"Zhou-study replays (WFP + EASY on Mira), medians of {args.rounds} rounds per tree")
        print(h.table(rows, heads))
    if args.baseline_tree:
        result["same_schedules"] = same_all
        sp = [f["speedup_cpu"] for f in figures]
        result["speedup_cpu_median"] = h.r4(h.median(sp)) if sp else None
    if args.project:
        per = view_schedules()
        unit = {}
        for p in POLICIES:
            outs = [child(f"{p}:{args.selection}:0:10000", None) for _ in range(args.rounds)]
            unit[p] = h.median(o["cpu_s"] for o in outs)
            print(f"  unit {p} {args.selection}: cpu {unit[p]:.2f} s", file=sys.stderr)
        total = sum(unit[p] * per[p] for p in POLICIES)
        print(f"\nfull-scale scheduling view ({args.selection}): "
              + ", ".join(f"{p} {per[p]} x {unit[p]:.1f} s" for p in POLICIES)
              + f" = {total:.0f} CPU-s ({total / 3600:.2f} CPU-hours; {total / 16 / 60:.1f} min on 16 cores)")
        result["projection"] = {"selection": args.selection, "unit_cpu_s": {p: h.r4(unit[p]) for p in POLICIES},
                                "schedules": per, "total_cpu_s": h.r4(total), "cpu_hours": h.r4(total / 3600)}
    h.emit(result)
    return 0 if same_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
