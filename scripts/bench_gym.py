#!/usr/bin/env python3
"""Benchmark: steps per second of the scheduling environment (simhpc.gym) in both runtime modes.

For each mode, windows of lublin_256 jobs are played through the environment by FCFS (always
the first waiting job: one step per decision), and the same windows are run again as plain
simulations with the scheduler's own FCFS without backfilling (``backfill="none"``, no
environment, no pauses): the baseline. Both give the same schedule (checked). Reported per
mode, as medians of ``--rounds``: wall and CPU (user+sys) seconds of the windows, steps,
steps per second (wall and CPU), the baseline's wall and CPU seconds, and the ratio of the
environment's wall time to the baseline's (what pausing at every decision costs).

Modes: ``trace`` (trace runtimes; ``--jobs`` jobs per window, ``--windows`` windows) and
``simulated`` on the flow and packet networks (skeletons on the default 256-node tapered
fat-tree; ``--sim-jobs`` and ``--sim-windows``). Prints a table and, as its last line, one
JSON object.

    python scripts/bench_gym.py [--rounds 3] [--networks flow,packet]
"""

from __future__ import annotations

import platform
import sys
import time

import harness as h

try:
    import simhpc.gym  # noqa: F401
except ImportError:
    h.emit({"skipped": True, "reason": "gymnasium is not installed (pip install 'simhpc[gym]')"})
    sys.exit(0)

from scheduler.backfill import make_backfill
from simhpc.gym import SchedulingEnv
from simhpc.gym.episode import build_episode


def windows(env: SchedulingEnv, seeds: list[int]) -> list[tuple[int, int]]:
    """(seed, start) of each window: where a reset with the seed starts (a reset redraws a
    window that asks for no decision; those draws are left out of the timings)."""
    out = []
    for s in seeds:
        _, info = env.reset(seed=s)
        out.append((s, info["start"]))
    return out


def play(env: SchedulingEnv, wins: list[tuple[int, int]]) -> dict:
    """FCFS through the environment over the windows; also the baseline runs of the same windows."""
    steps = 0
    wall = cpu = base_wall = base_cpu = 0.0
    same = True
    for seed, start in wins:
        t0, c0 = time.perf_counter(), time.process_time()
        obs, info = env.reset(seed=seed, options={"start": start})
        done = False
        while not done:
            obs, _, done, _, info = env.step(0)
            steps += 1
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        jobs = env.episode_jobs
        fresh = [j.fresh() for j in jobs]
        t0, c0 = time.perf_counter(), time.process_time()
        ep = build_episode(env.config, fresh, n_nodes=env.n_nodes, machine=env.machine, seed=env.episode_seed,
                           policy=make_backfill("none"))
        ep.sim.run()
        base_wall += time.perf_counter() - t0
        base_cpu += time.process_time() - c0
        same &= [j.start_time for j in ep.sched.jobs] == [j.start_time for j in jobs]
    return {"steps": steps, "wall_s": wall, "cpu_s": cpu, "base_wall_s": base_wall, "base_cpu_s": base_cpu,
            "same_schedule": same}


def main() -> None:
    ap = h.parser(__doc__, rounds=3, seed=1)
    ap.add_argument("--jobs", type=int, default=128, help="jobs per window in trace mode (default 128)")
    ap.add_argument("--windows", type=int, default=20, help="windows in trace mode (default 20)")
    ap.add_argument("--sim-jobs", type=int, default=32, help="jobs per window in simulated mode (default 32)")
    ap.add_argument("--sim-windows", type=int, default=2, help="windows in simulated mode (default 2)")
    ap.add_argument("--networks", default="flow,packet", help="networks of the simulated mode (default flow,packet)")
    ap.add_argument("--sim-machine", default=None,
                    help="machine preset of the simulated mode (default: the environment's 256-node fat-tree)")
    a = ap.parse_args()
    t_start = time.perf_counter()
    modes = [("trace", {"runtime": "trace", "jobs": a.jobs}, a.windows)]
    for net in [n for n in a.networks.split(",") if n]:
        modes.append((f"simulated/{net}", {"runtime": "simulated", "network": net, "jobs": a.sim_jobs,
                                           "machine": a.sim_machine}, a.sim_windows))
    rows, figures = [], {}
    for name, kw, n_windows in modes:
        env = SchedulingEnv(**kw)
        wins = windows(env, [a.seed * 1000 + i for i in range(n_windows)])
        runs = [play(env, wins) for _ in range(a.rounds)]
        med = {k: h.median([r[k] for r in runs]) for k in ("wall_s", "cpu_s", "base_wall_s", "base_cpu_s")}
        steps = runs[0]["steps"]
        f = {
            "windows": n_windows, "jobs_per_window": kw["jobs"], "steps": steps,
            "wall_s": h.r4(med["wall_s"]), "cpu_s": h.r4(med["cpu_s"]),
            "steps_per_s": h.r4(steps / med["wall_s"]), "steps_per_cpu_s": h.r4(steps / med["cpu_s"]),
            "baseline_wall_s": h.r4(med["base_wall_s"]), "baseline_cpu_s": h.r4(med["base_cpu_s"]),
            "wall_vs_baseline": h.r4(h.ratio(med["wall_s"], med["base_wall_s"])),
            "cpu_vs_baseline": h.r4(h.ratio(med["cpu_s"], med["base_cpu_s"])),
            "same_schedule": all(r["same_schedule"] for r in runs),
            "wall_s_runs": [h.r4(r["wall_s"]) for r in runs],
        }
        figures[name] = f
        rows.append([name, f"{n_windows} x {kw['jobs']}", steps, f"{f['wall_s']:.3f}", f"{f['cpu_s']:.3f}",
                     f"{f['steps_per_s']:.1f}", f"{f['steps_per_cpu_s']:.1f}", f"{f['baseline_wall_s']:.3f}",
                     f"{f['baseline_cpu_s']:.3f}", f"{f['wall_vs_baseline']:.2f}", "yes" if f["same_schedule"] else "NO"])
    print(f"simhpc.gym steps per second, FCFS through the environment against the plain FCFS run of the same "
          f"windows (backfill none); medians of {a.rounds} rounds")
    print(h.table(rows, ["mode", "windows", "steps", "wall s", "cpu s", "steps/s", "steps/cpu s", "base wall s",
                         "base cpu s", "wall/base", "same"], align="llrrrrrrrrl"))
    h.finish(None, {"baseline": "plain FCFS run of the same windows (backfill none, no environment)",
                    "sim_machine": a.sim_machine or "gym-fattree-256",
                    "rounds": a.rounds, "python": platform.python_version(), "modes": figures}, t_start)


if __name__ == "__main__":
    main()
