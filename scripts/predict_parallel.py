#!/usr/bin/env python3
"""Predicted parallel figures for P = 1, 2, 4, 8, 16 from one sequential run per case.

The kernel's statistics mode (``Simulator(predict_ranks=...)``, :mod:`pdes.predict`) runs a
model on one rank in the windows of a parallel run and attributes each event to the rank
that would own it, so that the windows, events per window per rank, remote fraction, load
balance and speedup bound it reports are those of ``mpirun -n P`` (the tests check windows
and events per rank against real runs at P = 2 and 4). The bound assumes every event costs
the same and exchanges are free: measured speedups are lower.

Cases:

* ``phold``: ``scripts/bench_parallel.py``'s model (10 000 LPs x 10 events, lookahead equal
  to the mean delay, 10% of events to another region) cut into 16 regions;
* ``cielo-evenodd``: 9 concurrent 1,024-rank even-odd jobs (one rank per node, disjoint random
  nodes, seed 1) on the Cielo preset, packet model (``--model``; ``--iters`` per job);
* ``default``: the default experiment (``simhpc run``).

Usage: ``python scripts/predict_parallel.py [--cases phold,cielo-evenodd,default] [--iters 2]``.
The last line of output is one JSON object.
"""

from __future__ import annotations

import sys
import time
from types import SimpleNamespace

import harness as h

RANKS = (1, 2, 4, 8, 16)


def phold(lps: int) -> tuple[object, dict]:
    from pdes.examples.phold import PholdParams, run

    p = PholdParams(n_lps=lps, events_per_lp=10, end_time=40.0, lookahead=1.0, mean_delay=1.0, remote=0.1,
                    regions=16)
    _, st = run(p, seed=1, comm=None, predict_ranks=RANKS)
    return st, {"lps": lps, "regions": 16}


def cielo_evenodd(model: str, iters: int, *, comm: object = None, predict_ranks: tuple[int, ...] = RANKS) -> tuple[object, dict]:
    """Run the Cielo case (sequentially with the statistics mode, or under ``comm``)."""
    import numpy as np

    from apps.node import LaunchSpec
    from apps.platform import build_platform
    from apps.registry import bind_args
    from models.presets import get_machine

    machine = get_machine("cielo")
    jobs, ranks = 9, 1024
    args = bind_args("even-odd", {"iters": iters}, size=ranks)
    perm = np.random.Generator(np.random.PCG64(1)).permutation(machine.n_nodes)[: jobs * ranks]
    plat = build_platform(machine, model, seed=1, comm=comm, predict_ranks=predict_ranks)
    for j in range(jobs):
        nodes = sorted(int(x) for x in perm[j * ranks : (j + 1) * ranks])
        plat.launch(LaunchSpec.build(job=j + 1, app="even-odd", args=args, rank_nodes=nodes, report_to=plat.manager_eid))
    st = plat.sim.run()
    bad = [r for r in (plat.shared_record(j + 1) for j in range(jobs)) if r.status != "ok"]
    if bad:
        sys.exit(f"predict_parallel: job {bad[0].job} ended {bad[0].status}: {bad[0].error}")
    return st, {"jobs": jobs, "ranks": ranks, "iters": iters, "model": model}


def default_experiment() -> tuple[object, dict]:
    from simhpc.experiment import default_experiment_text, loads
    from simhpc.experiment.runner import run_experiment

    from simhpc.experiment.results_builder import predicted_from_run

    run = run_experiment(loads(default_experiment_text()), comm=None, progress=False, predict_ranks=RANKS).run
    st = SimpleNamespace(predicted=predicted_from_run(run), events=int(run["events"]), windows=int(run["windows"]))
    return st, {"jobs": int(run["workload_jobs"])}


def main() -> None:
    ap = h.parser(__doc__)
    ap.add_argument("--cases", default="phold,cielo-evenodd,default")
    ap.add_argument("--iters", type=int, default=2, help="even-odd iterations per Cielo job (default 2)")
    ap.add_argument("--model", default="packet", help="network model of the Cielo case (default packet)")
    ap.add_argument("--lps", type=int, default=10_000, help="PHOLD LPs (default 10000)")
    a = ap.parse_args()
    cases = [c.strip() for c in a.cases.split(",") if c.strip()]
    known = {"phold": lambda: phold(a.lps), "cielo-evenodd": lambda: cielo_evenodd(a.model, a.iters), "default": default_experiment}
    for c in cases:
        if c not in known:
            ap.error(f"unknown case {c!r}; valid: {', '.join(known)}")
    rows, out = [], {}
    for c in cases:
        t0 = time.process_time()
        st, setup = known[c]()
        cpu = time.process_time() - t0
        print(f"  {c}: {st.events:,} events, {st.windows:,} windows, {cpu:.1f} s CPU", file=sys.stderr)
        out[c] = {"setup": setup, "events": st.events, "windows": st.windows, "cpu_s": h.r4(cpu),
                  "predicted": {str(p): {k: h.r4(v) if isinstance(v, float) else v for k, v in vars(r).items()
                                       if k != "events_per_rank"}
                                for p, r in st.predicted.items()}}
        for p, r in sorted(st.predicted.items()):
            rows.append([c, p, f"{r.windows:,}", f"{r.events_per_window_per_rank:.1f}", f"{r.remote_fraction:.1%}",
                         f"{r.busiest_rank_share:.1%}", f"{r.speedup_bound:.2f}"])
    print("Predicted from one sequential run per case (statistics mode; a bound, not a measurement)")
    print(h.table(rows, ["case", "P", "windows", "events/window/rank", "remote", "busiest rank", "speedup bound"]))
    h.emit({"bench": "predict_parallel", "ranks": list(RANKS), "cases": out})


if __name__ == "__main__":
    main()
