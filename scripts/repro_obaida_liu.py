#!/usr/bin/env python3
"""Obaida and Liu (PPT job-scheduler simulation on Simian): 1 to 9 concurrent even-odd jobs on Cielo.

Jobs of 1,024 ranks doing the even-odd exchange (rank 2i <-> 2i+1) run on the 3D Gemini
torus of LANL's Cielo (16x12x24 routers, 2 nodes each: 9,216 nodes), 1 to 9 of them at once,
every job on randomly chosen nodes; the foreground job's predicted runtime is reported
against the number of jobs, beside its runtime alone on the same nodes and on the ideal
network, as mean +- standard error over the seeds (at least 10) and the runtime relative to
one job (paired by seed).

The study states neither the message size, nor the iterations, nor the ranks per node: they
are parameters here (NBYTES, ITERS, RPN), swept over two message sizes (1 KiB, latency-bound;
1 MiB, bandwidth-bound) and over 1 and 16 ranks per node (16 fills a Cielo node; with block
mapping most even-odd partners then share a node). The network model is a parameter
(--network, default flow: max-min fair bandwidth sharing, see docs/network.md).

Scales (--scale): full is the study's shape (Cielo, 1,024-rank jobs, 10 iterations, 10
seeds; under mpirun the (k, seed) runs of each configuration are dealt out over the ranks);
reduced keeps the shape on a torus of half Cielo's extent in every dimension (8x6x12 routers,
1,152 nodes) with 128-rank jobs (9 jobs at 1 rank per node fill it), 5 iterations, 10 seeds;
tiny a 4x3x6 torus, 16-rank jobs, 2 seeds. --dry-run builds the machines and prints the setup.

After M. A. Obaida, J. Liu et al., "Parallel application performance prediction using
analysis based models and HPC simulations", SIGSIM-PADS 2018 (see docs/studies.md).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import harness as h

NBYTES = ("1KiB", "1MiB")
RPN = (1, 16)
SCALES = {
    #        torus dims    ranks  iters  seeds  jobs (k + 1)
    "full": ((16, 12, 24), 1024, 10, 10, tuple(range(1, 10))),
    "reduced": ((8, 6, 12), 128, 5, 10, tuple(range(1, 10))),
    "tiny": ((4, 3, 6), 16, 2, 2, (1, 3, 9)),
}


def machine(scale: str):
    from models.presets import Machine, get_machine

    dims = SCALES[scale][0]
    cielo = get_machine("cielo")
    if scale == "full":
        return cielo
    return Machine(name=f"cielo-{'x'.join(map(str, dims))}", topology=cielo.topology.replace(dims=dims),
                   cores_per_node=cielo.cores_per_node, flops_per_node=cielo.flops_per_node,
                   mem_bw_per_node=cielo.mem_bw_per_node, description="Cielo's Gemini torus, smaller extents")


def build(scale: str, nbytes: str, rpn: int, seeds: int, network: str):
    from models.network import NetworkConfig
    from simhpc.studies import BackgroundApp, ForegroundJob, InterferenceStudy

    _, ranks, iters, _, jobs = SCALES[scale]
    args = {"iters": iters, "nbytes": nbytes}
    return InterferenceStudy(
        name=f"obaida-liu-{scale}-{nbytes}-{rpn}", machine=machine(scale), ranks_per_node=rpn, allocator="random",
        k=tuple(j - 1 for j in jobs), seeds=seeds, network=NetworkConfig(model=network),
        foreground=ForegroundJob(app="even-odd", ranks=ranks, args=args),
        background=(BackgroundApp(app="even-odd", ranks=ranks, args=args),),
    )


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, scales=True)
    ap.add_argument("--network", default="flow", choices=("flow", "packet"), help="network model (default flow)")
    ap.add_argument("--messages", default=",".join(NBYTES),
                    help=f"message sizes to sweep, a subset of {','.join(NBYTES)} (default: both)")
    ap.add_argument("--ranks-per-node", default=",".join(map(str, RPN)),
                    help=f"ranks per node to sweep, a subset of {','.join(map(str, RPN))} (default: both)")
    args = ap.parse_args(argv)
    messages = tuple(x.strip() for x in args.messages.split(",") if x.strip())
    if not messages or any(x not in NBYTES for x in messages):
        ap.error(f"--messages {args.messages!r}: valid: {', '.join(NBYTES)} (comma-separated)")
    try:
        rpns = tuple(int(x) for x in args.ranks_per_node.split(",") if x.strip())
    except ValueError:
        rpns = ()
    if not rpns or any(x not in RPN for x in rpns):
        ap.error(f"--ranks-per-node {args.ranks_per_node!r}: valid: {', '.join(map(str, RPN))} (comma-separated)")
    t0 = time.perf_counter()
    c = h.comm()
    sc, (dims, ranks, iters, n_seeds, jobs) = h.scaled(args, SCALES)
    seeds = args.seeds or n_seeds
    out = h.out_dir(args, c)
    m = machine(sc)
    what = (f"{m.name} torus {'x'.join(map(str, dims))} x 2 nodes = {m.n_nodes} nodes, even-odd jobs of {ranks} ranks, "
            f"{iters} iterations, {len(jobs)} job counts ({jobs[0]}..{jobs[-1]}), messages {' / '.join(messages)}, "
            f"{' / '.join(map(str, rpns))} ranks per node, {seeds} seeds, {args.network} network")
    h.say_setup(c, sc, what, "Cielo 16x12x24 x 2 = 9,216 nodes, jobs of 1,024 ranks, 10 iterations")
    if args.dry_run:
        rows = []
        for rpn in rpns:
            st = build(sc, messages[0], rpn, seeds, args.network)
            nodes = -(-ranks // rpn)
            rows.append([rpn, nodes, jobs[-1] * nodes, f"{jobs[-1] * nodes / m.n_nodes:.1%}", len(st.runs())])
        h.say(c, "", "dry run: per message size", h.table(rows, ["ranks/node", "nodes/job", "nodes at 9 jobs",
                                                                 "of the machine", "runs"]))
        h.finish(c, {"script": "repro_obaida_liu", "scale": sc, "dry_run": True, "nodes": m.n_nodes}, t0)
        return 0
    from simhpc.studies import run_study

    configs, rows = {}, []
    for nb in messages:
        for rpn in rpns:
            t = time.process_time()
            res = run_study(build(sc, nb, rpn, seeds, args.network), comm=c)
            cpu = time.process_time() - t
            r = res.runs
            ok = r["status"] == "ok"
            k = np.asarray(r["k"])
            seed = np.asarray(r["seed"])
            one = {int(s): float(x) for s, x, o, kk in zip(seed, r["runtime"], ok, k) if o and kk == 0}
            series = []
            for j in jobs:
                sel = ok & (k == j - 1)
                rt = h.mean_se(np.asarray(r["runtime"])[sel] * 1e6)
                vs1 = h.mean_se([x / one[int(s)] for x, s in zip(np.asarray(r["runtime"])[sel], seed[sel])
                                 if int(s) in one])
                sl = h.mean_se(np.asarray(r["slowdown"])[sel])
                alone = h.mean_se(np.asarray(r["alone"])[sel] * 1e6)
                ideal = h.mean_se(np.asarray(r["ideal"])[sel] * 1e6)
                series.append({"jobs": j, "runtime_us": rt, "vs_one_job": vs1, "slowdown": sl, "alone_us": alone,
                               "ideal_us": ideal, "not_ok": int(((k == j - 1) & ~ok).sum())})
                rows.append([nb, rpn, j, h.fmt_se(rt, 1), h.fmt_se(alone, 1), h.fmt_se(ideal, 1), h.fmt_se(sl, 3),
                             h.fmt_se(vs1, 3)])
            configs[f"{nb}/{rpn}"] = {"nbytes": nb, "ranks_per_node": rpn, "series": series, "cpu_s": round(cpu, 1)}
    h.say(c, "", f"even-odd foreground ({ranks} ranks) among identical jobs, random placement: runtime (us), alone on "
                 "the same nodes, on the ideal network, slowdown (runtime / alone) and runtime relative to one job "
                 "(paired by seed); mean +- standard error (seeds)",
          h.table(rows, ["message", "ranks/node", "jobs", "runtime", "alone", "ideal", "slowdown", "x 1 job"]))
    if h.rank(c) == 0:
        _plot(configs, out / f"obaida_liu_{sc}.png", m.name, ranks)
        h.say(c, f"figure: {out / f'obaida_liu_{sc}.png'}")
    h.finish(c, {"script": "repro_obaida_liu", "scale": sc, "machine": m.name, "nodes": m.n_nodes, "ranks": ranks,
                 "iters": iters, "seeds": seeds, "network": args.network,
                 "baseline": "one job (the foreground alone), per seed", "configs": configs,
                 "runtime_9_vs_1": {k: v["series"][-1]["vs_one_job"] for k, v in configs.items()}}, t0)
    return 0


def _plot(configs, path, machine, ranks):
    plt = h.plt()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, cfg in configs.items():
        s = cfg["series"]
        ax.errorbar([x["jobs"] for x in s], [x["vs_one_job"]["mean"] or np.nan for x in s],
                    yerr=[x["vs_one_job"]["se"] or 0.0 for x in s], fmt="-o", capsize=3,
                    label=f"{cfg['nbytes']}, {cfg['ranks_per_node']} rank(s)/node")
    ax.set_xlabel("jobs running (identical even-odd jobs, random placement)")
    ax.set_ylabel("foreground runtime / its runtime as the only job")
    ax.set_title(f"even-odd, {ranks} ranks, on {machine} (mean +- s.e. over seeds)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
