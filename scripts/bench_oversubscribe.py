#!/usr/bin/env python3
"""More ranks than cores: how the window exchange's waiting mode (``PDES_MPI_WAIT``) copes.

One PHOLD model with few events per window (``--lps`` LPs in 4 regions, one initial event
each, lookahead = mean delay, half the events remote), so that the run is mostly window
exchanges: the case where waiting ranks that poll steal the cores of the ranks that compute.
Configurations, ``--rounds`` times each, interleaved, in fresh processes:

* ``seq``: the sequential kernel (no MPI), the named baseline of the work itself;
* ``P=2 spin``, ``P=4 spin``: MPI's own blocking collectives (MPICH polls while it waits);
* ``P=2 block``, ``P=4 block``: the node's ranks meet over Unix sockets and wait in the
  kernel (:mod:`pdes.mpi_wait`; ``auto`` picks it when a node has more ranks than cores).

Every configuration executes the very same events (results are identical for any P and
mode). Wall time is the simulation run (the slowest rank); CPU is user + system time of the
whole ``mpirun`` (every rank). ``P4/P2`` is the wall-time ratio of P = 4 to P = 2 in the same
mode; on a machine with 2 cores P = 4 is oversubscribed. ``--suite`` also times the MPI test
suite (``tests/mpi``) at ``-n 2`` and ``-n 4`` in both modes, once each.
``--baseline-tree PATH`` (another checkout of simhpc, e.g. ``git worktree add /tmp/old
HEAD~1``) also runs P = 2 spin and P = 4 block from that tree in every round, and with
``--suite`` its suite at ``-n 2`` spin and ``-n 4`` block: the code before a change, side by
side with it.

Usage: ``python scripts/bench_oversubscribe.py [--rounds 3] [--lps 16] [--end 20000] [--suite]
[--suite-auto] [--baseline-tree PATH]``. ``--suite-auto`` times the suite only in the runs
that ``auto`` picks on 2 cores (``-n 2`` spin, ``-n 4`` block), in both trees, interleaved
over the rounds, and reports medians.
The last line of output is one JSON object.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import harness as h

MODES = ("spin", "block")


def cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _env(mode: str, tree: str | None) -> dict:
    env = {**os.environ, "PDES_MPI_WAIT": mode}
    if tree:
        env["PYTHONPATH"] = tree
    return env


def run_phold(ranks: int | None, mode: str, a, tree: str | None = None) -> tuple[dict, float]:
    args = ["-m", "pdes.examples.phold", "--lps", str(a.lps), "--events", "1", "--end", str(a.end),
            "--lookahead", "1", "--mean", "1", "--remote", "0.5", "--regions", "4", "--seed", str(a.seed)]
    if ranks is None:
        cmd = [sys.executable, *args]
    else:
        cmd = [h.require_mpirun("bench_oversubscribe"), "-n", str(ranks), sys.executable, *args, "--parallel"]
    c0 = cpu_children()
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(mode, tree), cwd=tree)
    if p.returncode != 0:
        sys.exit(f"bench_oversubscribe: {' '.join(cmd)} failed:\n{p.stderr}")
    return h.last_json(p.stdout), cpu_children() - c0


def run_suite(ranks: int, mode: str, tree: str | None = None) -> tuple[float, float, bool]:
    root = tree or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = [h.require_mpirun("bench_oversubscribe"), "-n", str(ranks), sys.executable, "-m", "pytest", "-q",
           "-p", "no:cacheprovider", "--with-mpi", "tests/mpi"]
    env = _env(mode, tree)
    c0 = cpu_children()
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    return time.perf_counter() - t0, cpu_children() - c0, p.returncode == 0


def suite_auto(rounds: int, base: str | None) -> dict:
    """The suite at -n 2 spin and -n 4 block (what auto picks on 2 cores), in this tree and
    the baseline tree, interleaved over ``rounds``; prints the table, returns the figures."""
    trees = [("this", None)] + ([("baseline", base)] if base else [])
    walls: dict = {}
    cpus: dict = {}
    ok = True
    for r in range(rounds):
        for name, tree in (trees if r % 2 == 0 else trees[::-1]):
            for p, m in ((2, "spin"), (4, "block")):
                wall, c, passed = run_suite(p, m, tree)
                ok &= passed
                walls.setdefault((name, p), []).append(wall)
                cpus.setdefault((name, p), []).append(c)
                print(f"  round {r} {name} suite -n {p} {m}: {wall:.1f} s wall, {c:.1f} s CPU, passed {passed}",
                      file=sys.stderr)
    rows, out = [], {"rounds": rounds, "passed": ok}
    for name, _ in trees:
        w2, w4 = h.median(walls[(name, 2)]), h.median(walls[(name, 4)])
        c2, c4 = h.median(cpus[(name, 2)]), h.median(cpus[(name, 4)])
        out[name] = {"n2_wall_s": h.r4(w2), "n4_wall_s": h.r4(w4), "n4_over_n2": h.r4(h.ratio(w4, w2)),
                     "n2_cpu_s": h.r4(c2), "n4_cpu_s": h.r4(c4)}
        rows.append([name, f"{w2:.1f}", f"{w4:.1f}", f"{w4 / w2:.2f}", f"{c2:.1f}", f"{c4:.1f}"])
    print(f"\nMPI test suite (tests/mpi), auto's modes on 2 cores, medians of {rounds}")
    print(h.table(rows, ["tree", "-n 2 spin wall s", "-n 4 block wall s", "n4/n2", "-n 2 cpu s", "-n 4 cpu s"]))
    return out


def _name(cfg: tuple) -> str:
    name = "seq" if cfg[0] is None else f"P={cfg[0]} {cfg[1]}"
    return name + " (baseline tree)" if len(cfg) == 3 else name


def main() -> None:
    ap = h.parser(__doc__, rounds=3, seed=1)
    ap.add_argument("--lps", type=int, default=16)
    ap.add_argument("--end", type=float, default=20000.0)
    ap.add_argument("--suite", action="store_true", help="also time tests/mpi at -n 2 and -n 4 in both modes")
    ap.add_argument("--suite-auto", action="store_true",
                    help="time the suite only in the modes auto picks on 2 cores (spin at -n 2, block at -n 4), "
                         "interleaved with the baseline tree's, --rounds times (medians)")
    ap.add_argument("--baseline-tree", default=None, metavar="PATH",
                    help="another checkout of simhpc: also run P=2 spin and P=4 block from it")
    a = ap.parse_args()
    base = None
    if a.baseline_tree:
        base = os.path.abspath(a.baseline_tree)
        if not os.path.isfile(os.path.join(base, "pdes", "mpi_wait.py")):
            sys.exit(f"bench_oversubscribe: --baseline-tree {a.baseline_tree}: no pdes/mpi_wait.py there")
    configs = [(None, "spin")] + [(p, m) for p in (2, 4) for m in MODES]
    if base:
        configs += [(2, "spin", base), (4, "block", base)]
    walls: dict[tuple, list[float]] = {}
    cpus: dict[tuple, list[float]] = {}
    last: dict[tuple, dict] = {}
    for rnd in range(a.rounds):
        for cfg in configs:
            res, cpu = run_phold(cfg[0], cfg[1], a, *cfg[2:])
            walls.setdefault(cfg, []).append(res["wall_s"])
            cpus.setdefault(cfg, []).append(cpu)
            last[cfg] = res
            print(f"  round {rnd + 1}/{a.rounds} {_name(cfg)}: {res['wall_s']:.2f} s", file=sys.stderr)
    events = {r["events"] for r in last.values()}
    if len(events) != 1:
        sys.exit(f"bench_oversubscribe: the configurations ran different event counts {sorted(events)}")
    med = {c: h.median(v) for c, v in walls.items()}
    cpu = {c: h.median(v) for c, v in cpus.items()}
    seq = (None, "spin")
    print(f"PHOLD, {a.lps} LPs, {last[seq]['events']:,} events, {last[(2, 'spin')]['windows']:,} windows; "
          f"median of {a.rounds} rounds on {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    rows, out = [], []
    for cfg in configs:
        p, m = cfg[:2]
        name = _name(cfg)
        if p == 4 and len(cfg) == 3:
            p4p2 = h.ratio(med[cfg], med[(2, "spin", base)])
        elif p == 4:
            p4p2 = h.ratio(med[cfg], med[(2, m)])
        else:
            p4p2 = float("nan")
        us_win = med[cfg] / last[cfg]["windows"] * 1e6 if p else float("nan")
        rows.append([name, f"{med[cfg]:.2f}", f"{cpu[cfg]:.2f}", f"{h.ratio(med[cfg], med[seq]):.2f}",
                     f"{us_win:.1f}", f"{p4p2:.2f}"])
        out.append({"config": name, "ranks": p or 1, "mode": m if p else "sequential", "tree": cfg[2] if len(cfg) == 3 else "this",
                    "wall_s": h.r4(med[cfg]),
                    "cpu_s": h.r4(cpu[cfg]), "wall_vs_seq": h.r4(h.ratio(med[cfg], med[seq])),
                    "us_per_window": h.r4(us_win), "p4_over_p2": h.r4(p4p2)})
    print(h.table(rows, ["config", "wall s", "cpu s", "vs seq", "us/window", "P4/P2"]))
    figures = {"bench": "oversubscribe", "rounds": a.rounds, "events": last[seq]["events"],
               "windows": last[(2, "spin")]["windows"], "cores": os.cpu_count(), "results": out,
               "block_vs_spin_p4_wall": h.r4(h.ratio(med[(4, "block")], med[(4, "spin")])),
               "block_vs_spin_p4_cpu": h.r4(h.ratio(cpu[(4, "block")], cpu[(4, "spin")])), "baseline_tree": base}
    if base:
        figures["p4_block_vs_baseline_tree_wall"] = h.r4(h.ratio(med[(4, "block")], med[(4, "block", base)]))
    if a.suite_auto:
        figures["suite"] = suite_auto(a.rounds, base)
    elif a.suite:
        srows, sres = [], {}
        for m in MODES:
            for p in (2, 4):
                wall, c, ok = run_suite(p, m)
                sres[f"{m}_n{p}"] = {"wall_s": h.r4(wall), "cpu_s": h.r4(c), "passed": ok}
                print(f"  suite -n {p} {m}: {wall:.1f} s", file=sys.stderr)
        if base:
            for p, m in ((2, "spin"), (4, "block")):
                wall, c, ok = run_suite(p, m, base)
                sres[f"baseline_{m}_n{p}"] = {"wall_s": h.r4(wall), "cpu_s": h.r4(c), "passed": ok}
                print(f"  suite -n {p} {m} (baseline tree): {wall:.1f} s", file=sys.stderr)
        for m in MODES:
            n2, n4 = sres[f"{m}_n2"], sres[f"{m}_n4"]
            srows.append([m, f"{n2['wall_s']:.1f}", f"{n4['wall_s']:.1f}", f"{n4['wall_s'] / n2['wall_s']:.2f}",
                          f"{n2['cpu_s']:.1f}", f"{n4['cpu_s']:.1f}", str(n2["passed"] and n4["passed"])])
        n2, n4 = sres["spin_n2"], sres["block_n4"]
        srows.append(["auto (spin at 2 on 2 cores, block at 4)", f"{n2['wall_s']:.1f}", f"{n4['wall_s']:.1f}",
                      f"{n4['wall_s'] / n2['wall_s']:.2f}", f"{n2['cpu_s']:.1f}", f"{n4['cpu_s']:.1f}",
                      str(n2["passed"] and n4["passed"])])
        if base:
            n2, n4 = sres["baseline_spin_n2"], sres["baseline_block_n4"]
            srows.append(["baseline tree: spin at 2, block at 4", f"{n2['wall_s']:.1f}", f"{n4['wall_s']:.1f}",
                          f"{n4['wall_s'] / n2['wall_s']:.2f}", f"{n2['cpu_s']:.1f}", f"{n4['cpu_s']:.1f}",
                          str(n2["passed"] and n4["passed"])])
        print("\nMPI test suite (tests/mpi), once each")
        print(h.table(srows, ["mode", "-n 2 wall s", "-n 4 wall s", "n4/n2", "-n 2 cpu s", "-n 4 cpu s", "passed"]))
        figures["suite"] = sres
    h.emit(figures)


if __name__ == "__main__":
    main()
