#!/usr/bin/env python3
"""Obaida & Liu style interference: an even-odd job among 1 to 9 identical jobs on Cielo.

An even-odd exchange job (rank 2i <-> 2i+1, 64 KiB, one rank per node) runs on the 3D
Gemini torus of LANL's Cielo together with 0 to 8 identical jobs, every job on randomly
chosen nodes; its predicted runtime is reported against the number of jobs sharing the
machine, with its runtime alone (same nodes) and on the ideal network as baselines.

Scales: --full is the published shape (Cielo, 9,216 nodes, jobs of 1,024 ranks: 9 jobs fill
the machine; run it on a cluster, e.g. mpirun -n 27 python scripts/repro_obaida_liu.py
--full, where the 27 (k, seed) runs are dealt out over the ranks). The default reduced scale
keeps the shape on a torus of half Cielo's extent in every dimension (8x6x12 routers, 1,152
nodes) with jobs of 128 ranks, so that 9 jobs again fill it; --tiny uses 4x3x6 routers.

After M. A. Obaida, J. Liu et al., "Parallel application performance prediction using
analysis based models and HPC simulations", SIGSIM-PADS 2018 (see docs/studies.md).
"""

from __future__ import annotations

import sys
import time

import harness as h

SCALES = {
    #        torus dims    ranks  iters  seeds
    "full": ((16, 12, 24), 1024, 10, 3),
    "reduced": ((8, 6, 12), 128, 5, 3),
    "tiny": ((4, 3, 6), 16, 3, 1),
}


def build(scale: str, seeds: int | None):
    from models.presets import Machine, get_machine
    from simhpc.studies import BackgroundApp, ForegroundJob, InterferenceStudy

    dims, ranks, iters, n_seeds = SCALES[scale]
    cielo = get_machine("cielo")
    if scale == "full":
        machine = cielo
    else:
        machine = Machine(name=f"cielo-{'x'.join(map(str, dims))}", topology=cielo.topology.replace(dims=dims),
                          cores_per_node=cielo.cores_per_node, flops_per_node=cielo.flops_per_node,
                          mem_bw_per_node=cielo.mem_bw_per_node, description="Cielo's Gemini torus, smaller extents")
    args = {"iters": iters, "nbytes": "64KiB"}
    ks = (0, 2, 4, 8) if scale == "tiny" else tuple(range(9))
    return InterferenceStudy(
        name=f"obaida-liu-{scale}", machine=machine, ranks_per_node=1, allocator="random", k=ks,
        seeds=seeds or n_seeds, foreground=ForegroundJob(app="even-odd", ranks=ranks, args=args),
        background=(BackgroundApp(app="even-odd", ranks=ranks, args=args),),
    )


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, scales=True)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    c = h.comm()
    sc, (dims, ranks, iters, _) = h.scaled(args, SCALES)
    out = h.out_dir(args, c)
    study = build(sc, args.seeds)
    m = study.build_machine()
    what = (f"{m.name} torus {'x'.join(map(str, dims))} x 2 nodes = {m.n_nodes} nodes, jobs of {ranks} ranks "
            f"(1 per node), {iters} iterations, {len(study.seeds)} seed(s), k = {list(study.k)}")
    if sc == "full":
        h.say(c, f"full: {what}")
    else:
        h.say(c, f"{sc}: {what} (published: Cielo 16x12x24 x 2 = 9,216 nodes, jobs of 1,024 ranks)")
    from simhpc.studies import run_study, write_study

    res = run_study(study, comm=c)
    rows = res.by_k()
    base = rows[0]["runtime"]["median"]
    table_rows, series = [], []
    for r in rows:
        med = r["runtime"]["median"]
        table_rows.append([r["k"] + 1, f"{r['ok']}/{r['runs']}", f"{med * 1e6:.1f}", f"{r['runtime']['min'] * 1e6:.1f}",
                           f"{r['runtime']['max'] * 1e6:.1f}", f"{r['alone']['median'] * 1e6:.1f}",
                           f"{r['ideal']['median'] * 1e6:.1f}", f"{r['slowdown']['median']:.3f}", f"{med / base:.3f}",
                           f"{r['max_util']['median']:.3f}"])
        series.append({"jobs": r["k"] + 1, "runtime_us": h.r4(med * 1e6), "min_us": h.r4(r["runtime"]["min"] * 1e6),
                       "max_us": h.r4(r["runtime"]["max"] * 1e6), "alone_us": h.r4(r["alone"]["median"] * 1e6),
                       "ideal_us": h.r4(r["ideal"]["median"] * 1e6), "slowdown": h.r4(r["slowdown"]["median"]),
                       "vs_one_job": h.r4(med / base)})
    h.say(c, "", f"even-odd foreground ({ranks} ranks) among identical jobs, random placement; runtimes in us, "
                 "medians over seeds (baselines: the same job alone on its nodes, and on the ideal network)",
          h.table(table_rows, ["jobs", "ok/runs", "runtime", "min", "max", "alone", "ideal", "slowdown",
                               "x 1 job", "max link util"]))
    if h.rank(c) == 0:
        write_study(res, out / f"obaida_liu_{sc}.h5")
        _plot(res, series, out / f"obaida_liu_{sc}.png", m.name, ranks)
        h.say(c, f"figure: {out / f'obaida_liu_{sc}.png'}, results: {out / f'obaida_liu_{sc}.h5'}")
    h.finish(c, {"script": "repro_obaida_liu", "scale": sc, "machine": m.name, "nodes": m.n_nodes, "ranks": ranks,
                 "baseline": "one job (the foreground alone) and the ideal network", "series": series,
                 "runtime_9_vs_1": series[-1]["vs_one_job"]}, t0)
    return 0


def _plot(res, series, path, machine, ranks):
    plt = h.plt()
    x = [s["jobs"] for s in series]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(x, [s["runtime_us"] for s in series], "-o", color="tab:red", label="with the other jobs (median)")
    ax.fill_between(x, [s["min_us"] for s in series], [s["max_us"] for s in series], color="tab:red", alpha=0.15,
                    label="min-max over seeds")
    ax.plot(x, [s["alone_us"] for s in series], "-s", color="tab:blue", label="alone on the same nodes")
    ax.plot(x, [s["ideal_us"] for s in series], "-^", color="tab:green", label="ideal network")
    ax.set_xlabel("jobs running (identical even-odd jobs, random placement)")
    ax.set_ylabel("predicted runtime (us)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"even-odd, {ranks} ranks, on {machine}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
