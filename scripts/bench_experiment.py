#!/usr/bin/env python3
"""A whole experiment under mpirun: ``simhpc run`` (the default experiment) sequential
against ``mpirun -n P`` in each way an experiment can use its ranks.

Configurations, ``--rounds`` times each, interleaved, each a fresh ``simhpc run --no-out
--quiet`` process timed from outside (wall, and user + system CPU of every process):

* ``sequential``: no MPI, the named baseline;
* ``P baselines``: every rank runs the whole simulation (no exchanges) and the alone and
  ideal baseline runs are dealt out over the ranks (``--parallel baselines``; what ``auto``
  picks below 1,024 nodes per rank);
* ``P simulation`` (with ``--simulation``, or ``--modes simulation``): the simulation itself
  spread over the ranks in conservative windows. On the default experiment it is slow, so
  ``--simulation`` alone adds it for one round; ``--modes`` puts it in every round.

``--ranks`` takes one P or a list (``2,4,8,16``).

Every configuration gives the same results (the tests check it). ``--set KEY=VALUE`` is
passed on to ``simhpc run`` (another experiment: ``--experiment FILE``).

Usage: ``python scripts/bench_experiment.py [--rounds 3] [--ranks 2] [--simulation] [--modes baselines,simulation]``.
The last line of output is one JSON object.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import harness as h


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (all child processes) of one run of ``cmd``."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"bench_experiment: {' '.join(cmd)} failed:\n{p.stderr}")
    return wall, (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)


def main() -> None:
    ap = h.parser(__doc__, rounds=3)
    ap.add_argument("--ranks", default="2", help="P, or a list of P (default 2)")
    ap.add_argument("--simulation", action="store_true", help="also one round of --parallel simulation")
    ap.add_argument("--modes", default="baselines", help="ways to use the ranks in every round: baselines, simulation, or both (comma-separated)")
    ap.add_argument("--experiment", default=None, help="experiment file (default: the default experiment)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    h.compiled()
    # The installed CLI, run by this interpreter (no console script needed on PATH).
    simhpc = [sys.executable, "-c", "import sys; from simhpc.cli import console; sys.exit(console())", "run", "--no-out", "--quiet"]
    if a.experiment:
        simhpc.insert(4, a.experiment)  # after "run"
    for kv in a.set:
        simhpc += ["--set", kv]
    mp = h.require_mpirun("bench_experiment")
    ranks = [int(p) for p in str(a.ranks).split(",")]
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in ("baselines", "simulation")]
    if bad or not modes:
        ap.error(f"--modes {a.modes!r}: valid: baselines, simulation (comma-separated)")
    configs = {"sequential": simhpc}
    for p in ranks:
        for m in modes:
            configs[f"P={p} {m}"] = [mp, "-n", str(p), *simhpc, "--parallel", m]
    walls: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    for rnd in range(a.rounds):
        for name, cmd in configs.items():
            w, c = timed(cmd)
            walls.setdefault(name, []).append(w)
            cpus.setdefault(name, []).append(c)
            print(f"  round {rnd + 1}/{a.rounds} {name}: {w:.1f} s", file=sys.stderr)
    if a.simulation and "simulation" not in modes:
        for p in ranks:
            name = f"P={p} simulation"
            w, c = timed([mp, "-n", str(p), *simhpc, "--parallel", "simulation"])
            walls[name], cpus[name] = [w], [c]
    seq_w, seq_c = h.median(walls["sequential"]), h.median(cpus["sequential"])
    rows, out = [], []
    for name in walls:
        w, c = h.median(walls[name]), h.median(cpus[name])
        rows.append([name, len(walls[name]), f"{w:.2f}", f"{c:.2f}", f"{h.ratio(w, seq_w):.2f}", f"{h.ratio(c, seq_c):.2f}"])
        out.append({"config": name, "runs": len(walls[name]), "wall_s": h.r4(w), "cpu_s": h.r4(c),
                    "wall_vs_sequential": h.r4(h.ratio(w, seq_w)), "cpu_vs_sequential": h.r4(h.ratio(c, seq_c))})
    print(f"simhpc run ({a.experiment or 'the default experiment'}), medians; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(h.table(rows, ["config", "runs", "wall s", "cpu s", "wall vs seq", "cpu vs seq"]))
    h.emit({"bench": "experiment", "experiment": a.experiment or "default", "ranks": ranks, "modes": modes,
            "rounds": a.rounds, "baseline": "sequential", "results": out})


if __name__ == "__main__":
    main()
