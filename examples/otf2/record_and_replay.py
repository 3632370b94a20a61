#!/usr/bin/env python3
"""Record, replay and study an OTF2 trace (needs ``pip install 'simhpc[otf2]'``).

1. A 32-rank 3D stencil runs alone on the tiny torus and writes an OTF2 trace of the
   simulated run (``otf2=DIR``), as ``simhpc app ... --otf2 DIR`` does. A Score-P trace of a
   real code takes its place in practice.
2. The otf2 app replays the trace on the same machine: the same runtime, since the same
   messages cross the same network. With ``compute_scale=0.5`` (nodes twice as fast) it runs
   as the skeleton with half its compute does: shorter, though not by half the compute,
   since the exchanges now meet each other on the links at other times.
3. The trace replays on another machine (a fat-tree): its runtime there emerges from that
   network.
4. ``replay_among_background.toml`` places two replayed jobs among background jobs.

Usage: ``python examples/otf2/record_and_replay.py [--out DIR] [--jobs 20] [--iters 10]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # run from a checkout without installing


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="folder for the trace (default: a temporary one)")
    ap.add_argument("--jobs", type=int, default=20, help="background jobs of step 4 (default: 20)")
    ap.add_argument("--iters", type=int, default=10, help="iterations of the recorded stencil (default: 10)")
    a = ap.parse_args(argv)

    from apps import run_app
    from simhpc.experiment import load
    from simhpc.experiment.runner import run_experiment

    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="otf2_example_"))
    trace = out / "stencil3d.otf2"
    args = {"iters": a.iters, "face_bytes": "256KiB", "compute_s": 0.0005}
    rec = run_app("tiny-torus", "stencil3d", 32, app_args=args, otf2=str(trace), comm=None)
    print(f"1. stencil3d alone on tiny-torus: {rec.runtime * 1e3:.4f} ms; trace {trace} "
          f"({rec.otf2['calls']} MPI calls, {rec.otf2['events']} records)")
    rep = run_app("tiny-torus", "otf2", 32, trace=str(trace), comm=None)
    fast = run_app("tiny-torus", "otf2", 32, trace=str(trace), compute_scale=0.5, comm=None)
    half = run_app("tiny-torus", "stencil3d", 32, app_args={**args, "compute_s": 0.00025}, comm=None)
    print(f"2. replayed: {rep.runtime * 1e3:.4f} ms (the same); with compute_scale=0.5: {fast.runtime * 1e3:.4f} ms "
          f"(the skeleton with half its compute: {half.runtime * 1e3:.4f} ms)")
    other = run_app("tiny-fattree3", "otf2", 32, trace=str(trace), comm=None)
    print(f"3. replayed on tiny-fattree3: {other.runtime * 1e3:.4f} ms")
    exp = load(HERE / "replay_among_background.toml",
               [f'foreground.0.args={{trace="{trace.as_posix()}", compute_scale=0.5}}', f"workload.jobs={a.jobs}"])
    res = run_experiment(exp, comm=None, progress=False)
    j = res.jobs
    fg = j["foreground"]
    slow = [float(x) for x in (j["run"][fg] / j["alone_run"][fg])]
    print(f"4. {int(fg.sum())} replayed jobs among {a.jobs} background jobs ran "
          f"{', '.join(f'{s:.2f}x' for s in slow)} as long as alone on their nodes")
    return {"runtime": rec.runtime, "replay": rep.runtime, "half_compute": fast.runtime, "half_skeleton": half.runtime,
            "fattree": other.runtime, "slowdowns": slow}


if __name__ == "__main__":
    main()
