#!/usr/bin/env python3
"""Parallel kernel speed: PHOLD under mpirun at P = 1, 2 (4, 8, 16 where cores exist).

Baselines, measured in the same run: the sequential kernel (no MPI at all) and P = 1 of the
parallel code (the windowed loop with its collectives on one rank). Every configuration is
run ``--rounds`` times, interleaved, each in fresh processes; the table gives medians.

PHOLD here: ``--lps`` LPs, 10 initial events each, delay = lookahead + Exp(mean) with the
lookahead equal to the mean, LPs cut into P regions placed one per rank, and a fraction
``--remote`` of events sent to another region (so that fraction crosses ranks). Wall time
is the simulation run only (the slowest rank), not interpreter or MPI start-up.

Usage: ``python scripts/bench_parallel.py [--lps 10000] [--remote 0.1] [--ranks 1,2]``.
The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys


def mpirun() -> str:
    exe = shutil.which("mpirun", path=os.path.dirname(sys.executable)) or shutil.which("mpirun")
    if exe is None:
        sys.exit("bench_parallel: mpirun not found; pip install '.[mpi]'")
    return exe


def run_one(ranks: int | None, a: argparse.Namespace) -> dict:
    """ranks=None: the sequential kernel; otherwise mpirun -n ranks with the windowed loop."""
    args = [
        "-m", "pdes.examples.phold", "--lps", str(a.lps), "--end", str(a.end), "--lookahead", str(a.lookahead),
        "--mean", str(a.lookahead), "--remote", str(a.remote), "--regions", str(ranks or 1), "--seed", str(a.seed),
        "--style", a.style,
    ]
    if ranks is None:
        cmd = [sys.executable, *args]
    else:
        cmd = [mpirun(), "-n", str(ranks), sys.executable, *args, "--parallel"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        sys.exit(f"bench_parallel: {' '.join(cmd)} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lps", type=int, default=10000)
    ap.add_argument("--end", type=float, default=40.0, help="simulated end time (events ~ lps * 10 * end / 2)")
    ap.add_argument("--lookahead", type=float, default=1.0, help="lookahead, also the mean of the exponential delay")
    ap.add_argument("--remote", type=float, default=0.1)
    ap.add_argument("--style", choices=["service", "process"], default="service")
    ap.add_argument("--ranks", default=None, help="rank counts to measure (default: 1,2,4,8,16 up to the core count)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    cores = os.cpu_count() or 1
    ranks = [int(r) for r in a.ranks.split(",")] if a.ranks else [p for p in (1, 2, 4, 8, 16) if p <= max(cores, 2)]
    configs: list[int | None] = [None, *ranks]
    walls: dict[str, list[float]] = {}
    last: dict[str, dict] = {}
    for rnd in range(a.rounds):
        for p in configs:
            key = "seq" if p is None else str(p)
            res = run_one(p, a)
            walls.setdefault(key, []).append(res["wall_s"])
            last[key] = res
            print(f"  round {rnd + 1}/{a.rounds} {'sequential' if p is None else f'P={p}':>10}: "
                  f"{res['events']:>9} events {res['wall_s']:7.3f} s", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in walls.items()}
    ev = {k: last[k]["events"] for k in last}
    rate = {k: ev[k] / med[k] for k in med}
    base = rate["1"] if "1" in rate else None
    print(f"PHOLD {a.lps} LPs x 10 events, lookahead = mean delay = {a.lookahead}, remote {a.remote:.0%}, "
          f"{a.style} style, end {a.end}; median of {a.rounds} rounds; {cores} cores")
    hdr = f"{'config':<12}{'events':>10}{'wall s':>9}{'events/s':>12}{'speedup':>9}{'windows':>9}{'ev/window':>11}{'remote':>8}"
    print(hdr)
    print("-" * len(hdr))
    rows = {}
    for k in ["seq", *[str(p) for p in ranks]]:
        r = last[k]
        sp = rate[k] / base if base else float("nan")
        epw = r["events"] / r["windows"] if r["windows"] else float("nan")
        name = "sequential" if k == "seq" else f"P={k}"
        print(f"{name:<12}{r['events']:>10}{med[k]:>9.3f}{rate[k]:>12,.0f}{sp:>9.2f}{r['windows']:>9}{epw:>11.1f}{r['remote_fraction']:>8.3f}")
        rows[k] = {"events": r["events"], "wall_s": round(med[k], 4), "events_per_s": round(rate[k]),
                   "speedup_vs_p1": round(sp, 3), "windows": r["windows"], "events_per_window": round(epw, 1),
                   "remote_fraction": round(r["remote_fraction"], 4)}
    p1_vs_seq = rate["1"] / rate["seq"] if "1" in rate else None
    if p1_vs_seq is not None:
        print(f"\nP=1 of the parallel code runs at {p1_vs_seq:.3f}x the sequential kernel's event rate")
    print(json.dumps({
        "bench": "parallel", "lps": a.lps, "remote": a.remote, "lookahead": a.lookahead, "style": a.style,
        "rounds": a.rounds, "cores": cores, "results": rows,
        "p1_vs_sequential": round(p1_vs_seq, 3) if p1_vs_seq else None,
        "speedup_p2": rows.get("2", {}).get("speedup_vs_p1"),
    }))


if __name__ == "__main__":
    main()
