#!/usr/bin/env python3
"""Measured parallel speed of a whole multi-job app run: 9 x 1,024-rank even-odd on Cielo.

The case of ``scripts/predict_parallel.py`` (9 concurrent 1,024-rank even-odd jobs, one rank
per node on disjoint random nodes, seed 1, packet model, ``--iters`` per job), run for real:
sequentially (no MPI: the baseline of the speedup; ``mpirun -n 1`` runs the same loop),
and under ``mpirun -n P`` for each P of ``--ranks``. Every configuration runs ``--rounds`` times, interleaved, in fresh processes;
the table gives medians of the simulation run's wall time (the slowest rank; not start-up
nor building the 9,216-node machine) and of the run's CPU time summed over ranks. All
configurations execute the same events (checked).

Usage: ``python scripts/bench_parallel_cielo.py [--ranks 2,4,8,16] [--rounds 1] [--iters 2]``.
The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import harness as h


def child(mode: str, model: str, iters: int) -> None:
    """One run (``mode``: ``seq``, or ``mpi`` under mpirun); prints one JSON line on rank 0."""
    from predict_parallel import cielo_evenodd

    comm = None
    if mode == "mpi":
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    c0 = time.process_time()
    st, _ = cielo_evenodd(model, iters, comm=comm, predict_ranks=())
    cpu = time.process_time() - c0
    cpus = comm.gather(cpu, root=0) if comm is not None else [cpu]
    if comm is None or comm.rank == 0:
        print(json.dumps({"events": st.events, "wall_s": st.wall_s, "windows": st.windows, "ranks": st.ranks,
                          "remote_fraction": st.remote_fraction, "cpu_s": sum(cpus),
                          "exec_s_per_rank": st.exec_s_per_rank, "sync_s_per_rank": st.sync_s_per_rank}))


def main() -> None:
    ap = h.parser(__doc__, rounds=1)
    ap.add_argument("--ranks", default="2,4,8,16", help="rank counts P > 1 to measure (default 2,4,8,16)")
    ap.add_argument("--iters", type=int, default=2, help="even-odd iterations per job (default 2)")
    ap.add_argument("--model", default="packet", help="network model (default packet)")
    ap.add_argument("--child", choices=["seq", "mpi"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.model, a.iters)
        return
    ranks = [int(r) for r in a.ranks.split(",")]
    if any(p < 2 for p in ranks):
        sys.exit("bench_parallel_cielo: --ranks lists the rank counts P > 1 (the sequential run is always measured)")
    mpirun = h.require_mpirun("bench_parallel_cielo")
    me = [sys.executable, os.path.abspath(__file__), "--iters", str(a.iters), "--model", a.model]
    configs = ["seq", *ranks]
    runs: dict[object, list[dict]] = {c: [] for c in configs}
    for rnd in range(a.rounds):
        for c in configs:
            cmd = me + ["--child", "seq"] if c == "seq" else [mpirun, "-n", str(c), *me, "--child", "mpi"]
            r = h.run_json(cmd, script="bench_parallel_cielo")
            runs[c].append(r)
            print(f"  round {rnd + 1}/{a.rounds} {('sequential' if c == 'seq' else f'P={c}'):>10}: "
                  f"{r['events']:,} events, {r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU", file=sys.stderr)
    events = {str(c): runs[c][0]["events"] for c in configs}
    if len(set(events.values())) != 1:
        sys.exit(f"bench_parallel_cielo: configurations executed different event counts: {events}")
    seq = h.median(r["wall_s"] for r in runs["seq"])
    rows, out = [], {}
    for c in configs:
        wall = h.median(r["wall_s"] for r in runs[c])
        cpu = h.median(r["cpu_s"] for r in runs[c])
        last = runs[c][-1]
        sync = [s / (s + e) for s, e in zip(last["sync_s_per_rank"], last["exec_s_per_rank"]) if s + e > 0]
        name = "sequential" if c == "seq" else f"P={c}"
        out[name] = {"wall_s": h.r4(wall), "cpu_s": h.r4(cpu), "speedup_vs_sequential": h.r4(seq / wall),
                     "cpu_vs_sequential": h.r4(cpu / h.median(r["cpu_s"] for r in runs["seq"])), "windows": last["windows"],
                     "remote_fraction": h.r4(last["remote_fraction"]),
                     "sync_fraction": h.r4(sum(sync) / len(sync)) if sync else None}
        rows.append([name, f"{wall:.2f}", f"{cpu:.2f}", f"{seq / wall:.2f}", f"{last['windows']:,}",
                     f"{last['remote_fraction']:.2%}", f"{out[name]['sync_fraction']:.0%}" if sync else "-"])
    print(f"9 x 1,024-rank even-odd on Cielo ({a.model}, {a.iters} iterations), {events['seq']:,} events; "
          f"median of {a.rounds} round(s); {os.cpu_count()} cores")
    print(h.table(rows, ["config", "wall s", "cpu s", "speedup vs sequential", "windows", "remote", "sync"]))
    h.emit({"bench": "parallel_cielo", "iters": a.iters, "model": a.model, "rounds": a.rounds, "cores": os.cpu_count(),
            "events": events["seq"], "baseline": "sequential kernel (no MPI)", "results": out})


if __name__ == "__main__":
    main()
