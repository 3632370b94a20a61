#!/usr/bin/env python3
"""OTF2 replay speed: replaying a trace against running the equivalent skeleton, side by side.

For each pattern a skeleton run is recorded once (``otf2=DIR``) and its trace replayed with the
``otf2`` app; then, ``--rounds`` times, interleaved in this process, the skeleton (the named
baseline) and the replay run on the same machine and placement. The replay must reproduce the
skeleton's runtime and event count exactly (the JSON says whether it did): the two runs simulate
the same messages, so the difference is what replaying costs (reading the trace and walking
each rank's program) against the skeleton's Python loop.

Patterns (one rank per node, contiguous placement on ``--machine``, default cab):

* ``stencil3d``: halo exchange on a 3D grid (isend/irecv/waitall; ``--ranks``, ``--iters``);
* ``allreduce``: compute + allreduce of 64 KiB (collectives);
* ``pairs``: sendrecv with a random partner per iteration (blocking point-to-point).

CPU seconds are user + system time of this process (``time.process_time``) over
``run_app``; wall seconds beside them. ``parse cpu s`` is reading the trace into the ranks'
programs (``load_trace``, part of the replay's CPU); ``record cpu s`` is the skeleton run
with ``otf2=DIR`` (recording and writing the trace). The goal: replay CPU at most 1.3x the
skeleton's. The table gives medians, the ratios compare medians.

Usage: ``python scripts/bench_otf2.py [--machine cab] [--ranks 256] [--iters 20] [--rounds 5]``.
The last line of output is one JSON object.
"""

from __future__ import annotations

import tempfile
import time

import harness as h

GOAL = 1.3


def _patterns(iters: int) -> dict[str, tuple[str, dict]]:
    return {
        "stencil3d": ("stencil3d", {"face_bytes": 32768, "iters": iters, "compute_s": 1e-5}),
        "allreduce": ("allreduce", {"nbytes": 65536, "iters": iters, "compute_s": 1e-5}),
        "pairs": ("pairs", {"nbytes": 16384, "iters": iters, "compute_s": 1e-5}),
    }


def _timed(fn, *args, **kw):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn(*args, **kw)
    return out, time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    t0 = time.perf_counter()
    ap = h.parser(__doc__, rounds=5)
    ap.add_argument("--machine", default="cab")
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--network", default="packet")
    ap.add_argument("--patterns", default="stencil3d,allreduce,pairs")
    a = ap.parse_args()

    from apps import run_app
    from apps.otf2trace.trace import load_trace
    from models.presets import get_machine

    machine = get_machine(a.machine)
    pats = _patterns(a.iters)
    names = [p.strip() for p in a.patterns.split(",") if p.strip()]
    common = {"ranks_per_node": 1, "network": a.network, "comm": None}
    figures: dict[str, dict] = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_otf2_") as tmp:
        for name in names:
            app, args = pats[name]
            path = f"{tmp}/{name}"
            rec, rec_cpu, _ = _timed(run_app, machine, app, a.ranks, app_args=args, otf2=path, **common)
            _, parse_cpu, _ = _timed(load_trace, path)
            ske_cpu, ske_wall, rep_cpu, rep_wall = [], [], [], []
            same = True
            for _ in range(a.rounds):
                s, c, w = _timed(run_app, machine, app, a.ranks, app_args=args, **common)
                ske_cpu.append(c)
                ske_wall.append(w)
                r, c, w = _timed(run_app, machine, "otf2", a.ranks, trace=path, **common)
                rep_cpu.append(c)
                rep_wall.append(w)
                same = same and (r.runtime, r.events, r.bytes_sent) == (s.runtime, s.events, s.bytes_sent)
            f = {
                "app": app, "args": args, "ranks": a.ranks, "events": s.events, "messages": s.messages,
                "trace_events": rec.otf2["events"], "same_simulation": same,
                "skeleton_cpu_s": h.r4(h.median(ske_cpu)), "skeleton_wall_s": h.r4(h.median(ske_wall)),
                "replay_cpu_s": h.r4(h.median(rep_cpu)), "replay_wall_s": h.r4(h.median(rep_wall)),
                "parse_cpu_s": h.r4(parse_cpu), "record_cpu_s": h.r4(rec_cpu),
                "replay_vs_skeleton_cpu": h.r4(h.ratio(h.median(rep_cpu), h.median(ske_cpu))),
                "replay_vs_skeleton_wall": h.r4(h.ratio(h.median(rep_wall), h.median(ske_wall))),
                "record_vs_skeleton_cpu": h.r4(h.ratio(rec_cpu, h.median(ske_cpu))),
            }
            figures[name] = f
            rows.append((name, f["events"], f["trace_events"], f["skeleton_cpu_s"], f["replay_cpu_s"],
                         f["parse_cpu_s"], f["replay_vs_skeleton_cpu"], f["skeleton_wall_s"], f["replay_wall_s"],
                         f["record_cpu_s"], "yes" if same else "NO"))
    print(f"OTF2 replay vs skeleton on {machine.name}, {a.ranks} ranks (1 per node), {a.network} network, "
          f"{a.iters} iterations, medians of {a.rounds} rounds")
    print(h.table(rows, ["pattern", "events", "trace records", "skeleton cpu s", "replay cpu s", "parse cpu s",
                         "replay/skeleton cpu", "skeleton wall s", "replay wall s", "record cpu s", "same sim"]))
    worst = max(f["replay_vs_skeleton_cpu"] for f in figures.values())
    print(f"worst replay/skeleton CPU ratio {worst:.3f} (goal <= {GOAL})")
    h.finish(None, {"bench": "otf2", "baseline": "skeleton", "machine": machine.name, "ranks": a.ranks,
                    "iters": a.iters, "rounds": a.rounds, "network": a.network, "patterns": figures,
                    "worst_replay_vs_skeleton_cpu": worst, "goal": GOAL, "goal_met": worst <= GOAL,
                    "same_simulation": all(f["same_simulation"] for f in figures.values())}, t0)


if __name__ == "__main__":
    main()
