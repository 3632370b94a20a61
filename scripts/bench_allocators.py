#!/usr/bin/env python3
"""Benchmark: the cost of ``select`` (and of copying a state) for every allocator on the
machine presets it is meant for, against ``firstfree`` on the same machine.

Backfilling calls ``select`` thousands of times per pass and copies states to plan
reservations, so both must stay cheap on 1k-50k node machines. For each case the script

* loads the machine with the allocator itself: a seeded stream of jobs (log-normal sizes)
  arrives and, with probability 0.3 per arrival, a random running job leaves, until
  ``--load`` of the nodes (of the midplanes, for partition allocators) are held, or the
  stream gives up;
* times ``select`` on ``--probes`` probe jobs (log-normal sizes up to a third of the free
  nodes, so some do not fit a fragmented machine): median and 95th percentile per call;
* times ``state.copy()`` (median);

and prints a table and, as its last line, one JSON object with every figure and the ratio
of each median to the baseline (``firstfree`` on the same machine, loaded the same way).

    python scripts/bench_allocators.py              # all cases
    python scripts/bench_allocators.py --probes 50  # quicker

``--fattree-study`` instead times whole replays of the Jigsaw study (``repro_jigsaw.py``:
FCFS + EASY on a full 3-level fat-tree, one synthetic workload) with the ``t123``,
``t123-whole-pods`` and ``jigsaw`` allocators, each replay in a child process (CPU user+sys
and wall of the replay alone). With ``--baseline-tree PATH`` (another checkout, e.g. ``git
worktree add /tmp/base HEAD``) every configuration runs in both trees, alternating, and the
script checks that the two give the same schedule (a hash over every job's start, end and
nodes) and reports the median CPU of each and their ratio:

    python scripts/bench_allocators.py --fattree-study --baseline-tree /tmp/base --rounds 3 \\
        --configs 16:16:t123:0:2000,16:16:jigsaw:0:2000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

import harness as h

# The simulator's packages are imported inside the functions: a child replay run for
# --baseline-tree puts that tree first on sys.path before any of them is imported.

CASES = {
    "cab": [
        ("random", {}), ("roundrobin", {}), ("dualend", {}), ("fifo0", {}), ("vpart", {"parts": 4}),
        ("firstfit", {}), ("bestfit", {}), ("largestfit", {}), ("closestfit", {}), ("closestfit-mind", {}),
        ("treefit", {}), ("t123", {}), ("jigsaw", {}),
    ],
    "fattree44": [("random", {}), ("closestfit", {}), ("treefit", {}), ("t123", {}), ("jigsaw", {})],
    "cielo": [("fifo0", {"ordering": "hilbert"}), ("firstfit", {"ordering": "hilbert", "gap": 4}),
              ("closestfit", {"ordering": "hilbert"}), ("largestfit", {"ordering": "xyz"})],
    "mira": [("random", {}), ("fifo0", {"ordering": "hilbert"}), ("closestfit", {"ordering": "hilbert"}),
             ("bgq-native", {}), ("bgq-cfca", {"sensitive_fraction": 0.5}), ("bgq-mesh", {})],
    "theta": [("treefit", {}), ("vpart", {"parts": 12}), ("closestfit", {})],
}


def make_job(jid: int, n: int):
    from scheduler.job import Job

    return Job(job_id=jid, job_size=int(n), submit_time=0.0, request_time=1.0, run_time=1.0)


def held(alloc, st) -> tuple[float, int]:
    """(busy fraction, free nodes): partition allocators count whole midplanes as held."""
    mp = getattr(st, "midplane", None)
    if mp is not None:
        free_mp = int((mp == -1).sum())
        return 1 - free_mp / len(mp), free_mp * alloc.nodes_per_mp
    return 1 - st.n_free / alloc.n_nodes, st.n_free


def load(alloc, frac: float, seed: int):
    rng = np.random.default_rng(seed)
    st = alloc.new_state()
    N = alloc.n_nodes
    running = []
    jid = 1
    for _ in range(20000):
        if held(alloc, st)[0] >= frac:
            break
        n = int(min(N // 4, max(1, rng.lognormal(3.0, 1.5))))
        j = make_job(jid, n)
        jid += 1
        p = alloc.select(j, st)
        if p is not None:
            alloc.commit(j, p, st)
            running.append((j, p))
        if running and rng.random() < 0.3:
            j, p = running.pop(int(rng.integers(len(running))))
            alloc.release(j, p, st)
    return st


def measure(alloc, st, probes: int, seed: int) -> dict:
    rng = np.random.default_rng(seed + 1)
    free = max(1, held(alloc, st)[1])
    sizes = [int(min(max(1, free // 3), max(1, rng.lognormal(3.0, 1.8)))) for _ in range(probes)]
    times = []
    fits = 0
    for i, n in enumerate(sizes):
        j = make_job(10**7 + i, n)
        t0 = time.perf_counter()
        p = alloc.select(j, st)
        times.append(time.perf_counter() - t0)
        fits += p is not None
    ct = []
    for _ in range(20):
        t0 = time.perf_counter()
        st.copy()
        ct.append(time.perf_counter() - t0)
    times.sort()
    return {
        "select_median_us": 1e6 * h.median(times),
        "select_p95_us": 1e6 * times[min(len(times) - 1, int(0.95 * len(times)))],
        "copy_median_us": 1e6 * h.median(ct),
        "fit_fraction": fits / len(sizes),
        "busy": held(alloc, st)[0],
    }


def main() -> int:
    ap = h.parser(__doc__, seed=1, rounds=3)
    ap.add_argument("--probes", type=int, default=200, help="probe jobs per case (default 200)")
    ap.add_argument("--load", type=float, default=0.75, help="busy fraction to load each machine to (default 0.75)")
    ap.add_argument("--fattree-study", action="store_true",
                    help="time whole Jigsaw-study replays of the fat-tree isolating allocators instead")
    ap.add_argument("--configs", default=",".join(STUDY_CONFIGS),
                    help="--fattree-study: radix:mean size:allocator label:seed:jobs, comma-separated")
    ap.add_argument("--baseline-tree", default=None, metavar="PATH",
                    help="--fattree-study: run every configuration in this checkout too and compare")
    ap.add_argument("--replay", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.replay:
        return replay_child(args.replay, args.tree)
    if args.fattree_study:
        return fattree_study(args)
    from models.presets import get_machine
    from scheduler.allocators import make_allocator

    rows = []
    print(f"{'machine':10s} {'allocator':16s} {'nodes':>6s} {'busy':>5s} {'fits':>5s} "
          f"{'select med':>11s} {'p95':>9s} {'x firstfree':>11s} {'copy med':>9s}")
    for mname, cases in CASES.items():
        topo = get_machine(mname).topology
        base_alloc = make_allocator("firstfree", n_nodes=topo.n_nodes, topology=topo, seed=args.seed)
        base = measure(base_alloc, load(base_alloc, args.load, args.seed), args.probes, args.seed)
        for name, opts in [("firstfree", {})] + cases:
            alloc = make_allocator(name, n_nodes=topo.n_nodes, topology=topo, seed=args.seed, **opts)
            m = base if name == "firstfree" else measure(alloc, load(alloc, args.load, args.seed), args.probes, args.seed)
            ratio = h.ratio(m["select_median_us"], base["select_median_us"])
            rows.append({"machine": mname, "allocator": name, "options": opts, "nodes": topo.n_nodes, **m,
                         "select_ratio_to_firstfree": ratio})
            print(f"{mname:10s} {name:16s} {topo.n_nodes:6d} {m['busy']:5.2f} {m['fit_fraction']:5.2f} "
                  f"{m['select_median_us']:9.1f}us {m['select_p95_us']:7.1f}us {ratio:11.1f} {m['copy_median_us']:7.1f}us")
    h.emit({"benchmark": "bench_allocators", "baseline": "firstfree", "probes": args.probes, "load": args.load,
            "cases": rows})
    return 0


# ------------------------------------------------------------------ fat-tree study replays
#: radix:mean job size:allocator label (repro_jigsaw.ALLOCATORS):seed:jobs
STUDY_CONFIGS = ("16:16:t123:0:2000", "16:16:t123-whole-pods:0:2000", "16:16:jigsaw:0:2000")


def parse_config(text: str) -> tuple[int, float, str, int, int]:
    try:
        radix, mean, label, seed, jobs = text.split(":")
        return int(radix), float(mean), label, int(seed), int(jobs)
    except ValueError:
        sys.exit(f"bench_allocators: --configs entry {text!r} is not radix:mean:allocator:seed:jobs")


def schedule_hash(jobs) -> str:
    """sha256 over (job id, start, end, sorted nodes) of every job, in job id order."""
    d = hashlib.sha256()
    for j in sorted(jobs, key=lambda j: j.job_id):
        nodes = np.zeros(0, np.int64) if j.assigned_nodes is None else np.sort(np.asarray(j.assigned_nodes, np.int64))
        d.update(repr((j.job_id, j.start_time, j.end_time, len(nodes))).encode())
        d.update(nodes.tobytes())
    return d.hexdigest()


def replay_child(config: str, tree: str | None) -> int:
    """One replay (in this process); prints its CPU, wall and schedule hash as JSON."""
    if tree:
        h.use_tree(tree)
    import repro_jigsaw as rj
    import scheduler
    from scheduler.lifecycle import simulate

    radix, mean, label, seed, n_jobs = parse_config(config)
    _, alloc, opts = next((a for a in rj.ALLOCATORS if a[0] == label), (None, None, None))
    if alloc is None:
        sys.exit(f"bench_allocators: unknown allocator label {label!r}; valid: {', '.join(a[0] for a in rj.ALLOCATORS)}")
    topo = rj.topology(radix)
    jobs = rj.workload(topo.n_nodes, mean, n_jobs, seed)
    r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    res = simulate(jobs, n_nodes=topo.n_nodes, topology=topo, allocator=alloc, allocator_options=opts,
                   ordering="fcfs", backfill="easy", seed=seed)
    w1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    h.emit({"config": config, "cpu_s": cpu, "wall_s": w1 - w0, "hash": schedule_hash(res.jobs),
            "jobs": len(res.jobs), "package": os.path.dirname(os.path.dirname(scheduler.__file__))})
    return 0


def fattree_study(args) -> int:
    configs = [c for c in args.configs.split(",") if c]
    for c in configs:
        parse_config(c)
    trees = [("new", None)]
    if args.baseline_tree:
        base = os.path.abspath(args.baseline_tree)
        if not os.path.isfile(os.path.join(base, "scheduler", "allocators", "isolating.py")):
            sys.exit(f"bench_allocators: --baseline-tree {args.baseline_tree}: no scheduler/allocators/isolating.py there")
        trees.append(("baseline", base))

    def run_one(c: str, tree: str | None) -> dict:
        cmd = [sys.executable, os.path.abspath(__file__), "--replay", c] + (["--tree", tree] if tree else [])
        return h.run_json(cmd, script="bench_allocators")

    rows, heads, figures, same_all = h.compare_replays(configs, trees, args.rounds, run_one,
                                                       "radix:mean:allocator:seed:jobs")
    print(f"Jigsaw-study replays (FCFS + EASY), medians of {args.rounds} rounds per tree")
    print(h.table(rows, heads))
    h.emit({"benchmark": "bench_allocators", "mode": "fattree_study", "rounds": args.rounds,
            "baseline_tree": args.baseline_tree, "all_same_schedule": same_all if args.baseline_tree else None,
            "cases": figures})
    return 0 if same_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
