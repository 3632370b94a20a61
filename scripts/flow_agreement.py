#!/usr/bin/env python3
"""Agreement of the flow model with the packet model on the repository's own scenarios.

Two parts, every run sequential, the packet model (the default, infinite buffers) the named
baseline:

* apps alone: each skeleton (default sizes, ``--iters`` iterations, one rank per node on
  nodes drawn at random from the seed) on the small presets ``tiny-fattree3`` (16 nodes),
  ``tiny-torus`` (64) and ``tiny-dragonfly`` (72, 64 ranks): the predicted runtime under
  packet, flow and ideal, and flow / packet - 1;
* the default experiment (what ``simhpc run`` runs: 40 jobs on a 2:1 tapered 64-node
  fat-tree, random placement), once with ``[network] model = "packet"`` and once with
  ``"flow"`` (its packet-only ``chunk_size`` dropped): per app job, the runtime among the
  others (``app_run``) and alone on its nodes (``alone_run``) under each model, and the mean
  interference slowdown (app_run / alone_run) and network slowdown (app_run / ideal_run) of
  each run. The two runs schedule alike only while runtimes agree: a job that ends earlier
  under one model lets the next one start earlier, so jobs can meet other neighbours.

``--quick``: two apps per machine and the experiment. The last line of output is one JSON
object (relative differences: flow / packet - 1).
"""

from __future__ import annotations

import sys
import time
import tomllib

import numpy as np

import harness as h

MACHINES = (("tiny-fattree3", 16), ("tiny-torus", 64), ("tiny-dragonfly", 64))
APPS = ("stencil3d", "pairs", "sub-a2a", "alltoall", "allreduce", "even-odd")
QUICK_APPS = ("stencil3d", "pairs")
#: Arguments beyond the skeleton's defaults: allreduce of 1 MiB (Rabenseifner: bandwidth-bound).
EXTRA = {"allreduce": {"nbytes": 1 << 20}}


def app_rows(apps: tuple[str, ...], iters: int, seed: int) -> list[dict]:
    """Runtime of every (machine, app) under the three models."""
    from apps import run_app

    rows = []
    for machine, ranks in MACHINES:
        for app in apps:
            args = {"iters": iters, **EXTRA.get(app, {})}
            rt = {}
            for model in ("packet", "flow", "ideal"):
                r = run_app(machine, app, ranks, ranks_per_node=1, network=model, seed=seed, comm=None,
                            placement="random", app_args=args)
                rt[model] = r.runtime
            rows.append({"machine": machine, "ranks": ranks, "app": app, "args": args, "packet_us": rt["packet"] * 1e6,
                         "flow_us": rt["flow"] * 1e6, "ideal_us": rt["ideal"] * 1e6,
                         "flow_vs_packet": rt["flow"] / rt["packet"] - 1,
                         "packet_vs_ideal": rt["packet"] / rt["ideal"]})
            print(f"  {machine} {app}: packet {rt['packet'] * 1e6:.2f} us, flow {rt['flow'] * 1e6:.2f} us",
                  file=sys.stderr)
    return rows


def experiment(model: str):
    """The default experiment under ``model``; its Results and the CPU seconds it took."""
    from simhpc.experiment.runner import run_experiment
    from simhpc.experiment.toml_io import default_experiment_text, from_dict

    d = tomllib.loads(default_experiment_text())
    d["output"]["path"] = "unused.h5"  # the results stay in memory
    if model != "packet":
        d["network"]["model"] = model
        d["network"].pop("chunk_size", None)
    c0 = time.process_time()
    res = run_experiment(from_dict(d), comm=None, progress=False)
    return res, time.process_time() - c0


def rel(a: float, b: float) -> float:
    return a / b - 1 if b else float("nan")


def main() -> None:
    ap = h.parser(__doc__, seed=1)
    ap.add_argument("--iters", type=int, default=3, help="iterations of each app (default 3)")
    ap.add_argument("--quick", action="store_true", help="two apps per machine")
    a = ap.parse_args()
    t0 = time.perf_counter()
    rows = app_rows(QUICK_APPS if a.quick else APPS, a.iters, a.seed)
    print(f"Apps alone, one rank per node on random nodes (seed {a.seed}), {a.iters} iterations, default sizes "
          f"(allreduce 1 MiB); runtimes in us")
    print(h.table([[r["machine"], r["ranks"], r["app"], f"{r['ideal_us']:.2f}", f"{r['packet_us']:.2f}",
                    f"{r['flow_us']:.2f}", f"{r['packet_vs_ideal']:.3f}", f"{100 * r['flow_vs_packet']:+.1f}%"]
                   for r in rows],
                  ["machine", "ranks", "app", "ideal", "packet", "flow", "packet/ideal", "flow vs packet"],
                  align="lrlrrrrr"))
    diffs = np.array([r["flow_vs_packet"] for r in rows])

    runs = {m: experiment(m) for m in ("packet", "flow")}
    jobs = {m: runs[m][0].jobs for m in runs}
    jp, jf = jobs["packet"], jobs["flow"]
    pos = {int(j): i for i, j in enumerate(jf["job_id"])}
    exp_rows, app_d, alone_d, exp_json = [], [], [], []
    for i, jid in enumerate(jp["job_id"]):
        k = pos.get(int(jid))
        if k is None or jp["app"][i] == "timekeeper" or not (np.isfinite(jp["app_run"][i]) and np.isfinite(jf["app_run"][k])):
            continue
        ar, fr = float(jp["app_run"][i]), float(jf["app_run"][k])
        al, fl = float(jp["alone_run"][i]), float(jf["alone_run"][k])
        exp_json.append({"job": int(jid), "app": str(jp["app"][i]), "packet_run_ms": h.r4(ar * 1e3),
                         "flow_run_ms": h.r4(fr * 1e3), "packet_alone_ms": h.r4(al * 1e3), "flow_alone_ms": h.r4(fl * 1e3)})
        app_d.append(rel(fr, ar))
        alone_d.append(rel(fl, al))
        exp_rows.append([int(jid), jp["app"][i], "yes" if jp["foreground"][i] else "", f"{ar * 1e3:.3f}", f"{fr * 1e3:.3f}",
                         f"{100 * rel(fr, ar):+.1f}%", f"{al * 1e3:.3f}", f"{fl * 1e3:.3f}", f"{100 * rel(fl, al):+.1f}%",
                         f"{ar / al:.3f}", f"{fr / fl:.3f}"])
    print("\nThe default experiment (simhpc run), app jobs: runtime among the others (run) and alone on its nodes "
          "(alone), ms")
    print(h.table(exp_rows, ["job", "app", "fg", "packet run", "flow run", "diff", "packet alone", "flow alone", "diff",
                             "packet slowdown", "flow slowdown"], align="rllrrrrrrrr"))
    sd = {m: runs[m][0].slowdowns() for m in runs}
    keys = ("mean_interference_slowdown", "foreground_interference_slowdown", "mean_network_slowdown",
            "foreground_network_slowdown")
    print("\n" + h.table([[k, f"{sd['packet'].get(k, float('nan')):.3f}", f"{sd['flow'].get(k, float('nan')):.3f}"]
                          for k in keys] + [["cpu s of the run", f"{runs['packet'][1]:.1f}", f"{runs['flow'][1]:.1f}"]],
                         ["figure", "packet", "flow"], align="lrr"))
    app_d, alone_d = np.array(app_d), np.array(alone_d)
    summ = {
        "apps_median_abs_diff": h.r4(np.median(np.abs(diffs))), "apps_max_abs_diff": h.r4(np.max(np.abs(diffs))),
        "exp_run_median_abs_diff": h.r4(np.median(np.abs(app_d))), "exp_run_max_abs_diff": h.r4(np.max(np.abs(app_d))),
        "exp_alone_median_abs_diff": h.r4(np.median(np.abs(alone_d))),
        "exp_alone_max_abs_diff": h.r4(np.max(np.abs(alone_d))),
    }
    print(f"\n|flow / packet - 1|: apps alone median {100 * summ['apps_median_abs_diff']:.1f}%, max "
          f"{100 * summ['apps_max_abs_diff']:.1f}%; experiment app_run median {100 * summ['exp_run_median_abs_diff']:.1f}%"
          f", max {100 * summ['exp_run_max_abs_diff']:.1f}%; alone_run median "
          f"{100 * summ['exp_alone_median_abs_diff']:.1f}%, max {100 * summ['exp_alone_max_abs_diff']:.1f}%")
    h.finish(None, {"script": "flow_agreement", "baseline": "packet model (infinite buffers)", "iters": a.iters,
                    "seed": a.seed, "apps": [{k: (h.r4(v) if isinstance(v, float) else v) for k, v in r.items()}
                                             for r in rows],
                    "experiment": {m: {k: h.r4(sd[m].get(k)) for k in keys} | {"cpu_s": round(runs[m][1], 2)}
                                   for m in runs},
                    "experiment_jobs": exp_json, **summ}, t0)


if __name__ == "__main__":
    main()
