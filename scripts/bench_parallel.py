#!/usr/bin/env python3
"""Parallel kernel speed: PHOLD under mpirun at P = 1, 2 (4, 8, 16 where cores exist).

For each P measured, one PHOLD model: ``--lps`` LPs, 10 initial events each, delay =
lookahead + Exp(mean) with the lookahead equal to the mean, LPs cut into P regions (placed
one per rank at P ranks) and a fraction ``--remote`` of events sent to another region (so
that fraction crosses ranks at P ranks). Baselines, measured in the same run on that same
model (the very same events): the sequential kernel (no MPI at all) and P = 1 of the parallel
code (the windowed loop with its collectives on one rank); the speedup at P is over P = 1.
Every configuration is run ``--rounds`` times, interleaved, each in fresh processes; the
table gives medians. Wall time is the simulation run only (the slowest rank), not
interpreter or MPI start-up.

Usage: ``python scripts/bench_parallel.py [--lps 10000] [--remote 0.1] [--ranks 2,4]``.
The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import harness as h


def run_one(ranks: int | None, regions: int, a: argparse.Namespace) -> dict:
    """ranks=None: the sequential kernel; otherwise mpirun -n ranks with the windowed loop."""
    args = [
        "-m", "pdes.examples.phold", "--lps", str(a.lps), "--end", str(a.end), "--lookahead", str(a.lookahead),
        "--mean", str(a.lookahead), "--remote", str(a.remote), "--regions", str(regions), "--seed", str(a.seed),
        "--style", a.style,
    ]
    if ranks is None:
        cmd = [sys.executable, *args]
    else:
        cmd = [h.require_mpirun("bench_parallel"), "-n", str(ranks), sys.executable, *args, "--parallel"]
    return h.run_json(cmd, script="bench_parallel")


def main() -> None:
    ap = h.parser(__doc__, rounds=3, seed=1)
    ap.add_argument("--lps", type=int, default=10000)
    ap.add_argument("--end", type=float, default=40.0, help="simulated end time (events ~ lps * 10 * end / 2)")
    ap.add_argument("--lookahead", type=float, default=1.0, help="lookahead, also the mean of the exponential delay")
    ap.add_argument("--remote", type=float, default=0.1)
    ap.add_argument("--style", choices=["service", "process"], default="service")
    ap.add_argument("--ranks", default=None, help="rank counts P > 1 to measure (default: 2,4,8,16 up to the core count)")
    a = ap.parse_args()
    cores = os.cpu_count() or 1
    ranks = [int(r) for r in a.ranks.split(",")] if a.ranks else [p for p in (2, 4, 8, 16) if p <= max(cores, 2)]
    if any(p < 2 for p in ranks):
        sys.exit("bench_parallel: --ranks lists the rank counts P > 1 (P = 1 is always measured as the baseline)")
    # One model per P (its LPs cut into P regions), each measured three ways: the
    # sequential kernel, P = 1 of the parallel code (the baseline of the speedup) and P ranks.
    # All three execute exactly the same events (identical results for any P).
    configs = [(p, how) for p in ranks for how in ("seq", "1", str(p))]
    walls: dict[tuple, list[float]] = {}
    last: dict[tuple, dict] = {}
    for rnd in range(a.rounds):
        for p, how in configs:
            res = run_one(None if how == "seq" else int(how), p, a)
            walls.setdefault((p, how), []).append(res["wall_s"])
            last[(p, how)] = res
            name = "sequential" if how == "seq" else f"P={how}"
            print(f"  round {rnd + 1}/{a.rounds} {p:>2} regions {name:>10}: "
                  f"{res['events']:>9} events {res['wall_s']:7.3f} s", file=sys.stderr)
    print(f"PHOLD {a.lps} LPs x 10 events, lookahead = mean delay = {a.lookahead}, remote {a.remote:.0%} "
          f"(to another of P regions), {a.style} style, end {a.end}; median of {a.rounds} rounds; {cores} cores")
    hdr = (f"{'regions':>7}  {'config':<11}{'events':>10}{'wall s':>9}{'events/s':>12}{'speedup':>9}"
           f"{'windows':>9}{'ev/window':>11}{'remote':>8}{'sync':>7}")
    print(hdr)
    print("-" * len(hdr))
    rows: dict[str, dict] = {}
    speedup: dict[str, float] = {}
    p1_vs_seq: dict[str, float] = {}
    for p in ranks:
        med = {how: h.median(walls[(p, how)]) for how in ("seq", "1", str(p))}
        events = {how: last[(p, how)]["events"] for how in med}
        if len(set(events.values())) != 1:
            sys.exit(f"bench_parallel: the {p}-region model executed different event counts: {events}")
        rate = {how: events[how] / med[how] for how in med}
        for how in med:
            r = last[(p, how)]
            sp = rate[how] / rate["1"]
            epw = r["events"] / r["windows"] if r["windows"] else float("nan")
            name = "sequential" if how == "seq" else f"P={how}"
            # Share of the run the ranks spent in synchronization (exchange and waiting), mean over ranks.
            sync = r.get("sync_s_per_rank") or []
            busy = [x + y for x, y in zip(sync, r.get("exec_s_per_rank") or [])]
            sync_frac = statistics.mean(x / b for x, b in zip(sync, busy)) if sync and all(busy) else float("nan")
            print(f"{p:>7}  {name:<11}{r['events']:>10}{med[how]:>9.3f}{rate[how]:>12,.0f}{sp:>9.2f}"
                  f"{r['windows']:>9}{epw:>11.1f}{r['remote_fraction']:>8.3f}{sync_frac:>7.1%}")
            rows[f"{p}:{how}"] = {"events": r["events"], "wall_s": round(med[how], 4), "events_per_s": round(rate[how]),
                                  "speedup_vs_p1": round(sp, 3), "windows": r["windows"],
                                  "events_per_window": round(epw, 1), "remote_fraction": round(r["remote_fraction"], 4),
                                  "sync_fraction": round(sync_frac, 4)}
        speedup[str(p)] = round(rate[str(p)] / rate["1"], 3)
        p1_vs_seq[str(p)] = round(rate["1"] / rate["seq"], 3)
    print()
    for p in ranks:
        print(f"P={p}: speedup {speedup[str(p)]:.2f}x over P=1 of the same model; "
              f"P=1 runs at {p1_vs_seq[str(p)]:.3f}x the sequential kernel's event rate")
    h.emit({
        "bench": "parallel", "lps": a.lps, "remote": a.remote, "lookahead": a.lookahead, "style": a.style,
        "rounds": a.rounds, "cores": cores, "results": rows, "speedup": speedup, "p1_vs_sequential": p1_vs_seq,
        "speedup_p2": speedup.get("2"),
    })


if __name__ == "__main__":
    main()
