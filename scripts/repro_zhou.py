#!/usr/bin/env python3
"""Zhou et al. (TPDS): torus, mesh and contention-free partitions of Mira's 5D torus.

Network view: benchmarks run alone on a partition of Mira's 5D torus (8x12x16x16x2 routers,
one node each: 49,152 nodes; midplanes of 4x4x4x4x2, a 2x3x4x4x1 grid of them), modelled as
a torus sub-machine of the partition's shape whose per-dimension wrap flags make it a torus,
a mesh or a contention-free partition: torus wraps everywhere; mesh only in dimensions one
midplane long; contention-free there and in the dimensions it spans. The study compares
torus and mesh partitions at 2K, 4K and 8K nodes and torus and contention-free partitions
at 1K and 4K, the 1K contention-free partition being a mesh in its D dimension: PARTITIONS
gives the shapes (1K is two midplanes along D). Benchmarks: a bandwidth-bound MPI_Alltoall
(A2A_BYTES per pair) and a near-neighbour code (periodic 3D halo exchange, 64 KiB faces,
ranks mapped onto the partition by the topology-aware mapping, as a realistic application
would place its grid). Runtime ratios mesh/torus and contention-free/torus.

Scheduling view: a synthetic Mira-like workload (jobs of 512 to 32,768 nodes) replayed with
WFP ordering + EASY under bgq-native (all torus), bgq-mesh (MeshSched), bgq-cfca and
bgq-hybrid. A communication-sensitive job (a fraction of the jobs) on a partition with a
mesh dimension runs longer by the mesh slowdown; the slowdown is swept over 10-50 % (at a
30 % sensitive fraction) and the fraction over 10-50 % (at a 30 % slowdown), as the study
does. Figures: utilization over the stable period, mean wait and response, loss of capacity
(LoC), as mean +- standard error over workload seeds. Partitions are chosen least-blocking,
as in the study (Cobalt's scheme: among the free partitions that fit, the one that blocks the
fewest other partitions; allocator option selection = "least-blocking"); --selection
first-fit takes the first free one in grid order instead.

Scales (--scale): full runs Mira's midplanes, partitions of 1K-8K nodes, 10,000 jobs x 5
seeds and the whole 5 x 5 sweep (under mpirun the runs are dealt out over the ranks);
reduced keeps the midplane grid but with midplanes of 2x2x2x2x2 routers (32 nodes, so the
1K, 2K and 4K partitions have 64, 128 and 256 nodes in the same midplane shapes; the 8K one
is left out), 400 jobs x 2 seeds and the two one-parameter sweeps; tiny the reduced partitions of 1K and 2K shape, 100 jobs x 2 seeds.
--dry-run builds the machines and workloads and prints them. The network model is a
parameter (--network, default flow).

After Z. Zhou, X. Yang, Z. Lan, P. Rich, W. Tang, V. Morozov, N. Desai, "Improving batch
scheduling on Blue Gene/Q by relaxing network allocation constraints", IEEE TPDS (extending
IPDPS 2015; see docs/studies.md).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import harness as h

#: Partitions in midplanes of the 2x3x4x4x1 grid (A, B, C, D, E), by nominal size (full-scale nodes).
PARTITIONS = {
    1024: (1, 1, 1, 2, 1),
    2048: (1, 1, 2, 2, 1),
    4096: (2, 1, 2, 2, 1),
    8192: (2, 1, 2, 4, 1),
}
#: The comparisons of the study: (nominal size, kind against torus).
COMPARE = ((1024, "contention-free"), (2048, "mesh"), (4096, "mesh"), (4096, "contention-free"), (8192, "mesh"))
GRID = (2, 3, 4, 4, 1)
A2A_BYTES = "64KiB"
STENCIL_FACE = "64KiB"
POLICIES = ("bgq-native", "bgq-mesh", "bgq-cfca", "bgq-hybrid")
SLOWDOWNS = (0.1, 0.2, 0.3, 0.4, 0.5)
FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5)
SCALES = {
    #          midplane          sizes                    iters (a2a, halo)  jobs  seeds  sweep
    "full": ((4, 4, 4, 4, 2), (1024, 2048, 4096, 8192), (2, 5), 10000, 5, "grid"),
    "reduced": ((2, 2, 2, 2, 2), (1024, 2048, 4096), (2, 5), 400, 2, "cross"),
    "tiny": ((2, 2, 2, 2, 2), (1024, 2048), (1, 2), 100, 2, "cross"),
}


def sweep(kind: str) -> list[tuple[float, float]]:
    """(mesh slowdown, sensitive fraction) pairs: the whole grid, or each swept at 0.3 of the other."""
    if kind == "grid":
        return [(s, f) for s in SLOWDOWNS for f in FRACTIONS]
    return sorted({(s, 0.3) for s in SLOWDOWNS[::2]} | {(0.3, f) for f in FRACTIONS[::2]})


def wraps(blocks: tuple[int, ...], kind: str) -> tuple[bool, ...]:
    """Per-dimension wrap of a partition of ``blocks`` midplanes."""
    if kind == "torus":
        return (True,) * len(blocks)
    if kind == "mesh":
        return tuple(b == 1 for b in blocks)
    return tuple(b == 1 or b == g for b, g in zip(blocks, GRID))


#: Relative change of every link's bandwidth per perturbation (--spread): the last digits only.
PERTURB = 1e-12


#: Ratios of perturbed runs within this relative distance count as one outcome (--spread):
#: a perturbation moves every time by about PERTURB, and only a changed decision (which
#: flows end first) moves a runtime by more.
OUTCOME_TOL = 1e-9


def outcomes(xs: list[float], rel: float = OUTCOME_TOL) -> int:
    """The number of distinct values of ``xs``, values within ``rel`` (relative) of the
    previous one in sorted order counting as the same."""
    ys = sorted(xs)
    return sum(1 for a, b in zip([None] + ys, ys) if a is None or b - a > rel * abs(b))


def partition_machine(scale: str, size: int, kind: str, perturb: int = 0):
    """The partition as a machine of its own; ``perturb`` = i scales every link's bandwidth by
    1 + i * PERTURB (a change of the last digits, see --spread)."""
    from models.presets import Machine, get_machine
    from models.units import parse_bandwidth

    mira = get_machine("mira")
    blocks = PARTITIONS[size]
    shape = tuple(b * m for b, m in zip(blocks, SCALES[scale][0]))
    changes = {}
    if perturb:
        f = 1.0 + perturb * PERTURB
        for k in ("link_bw", "inject_bw"):
            v = mira.topology.constructor_params[k]  # per dimension, or one value
            many = isinstance(v, (tuple, list))
            changes[k] = tuple(parse_bandwidth(x) * f for x in v) if many else parse_bandwidth(v) * f
    topo = mira.topology.replace(dims=shape, wrap=wraps(blocks, kind), **changes)
    return Machine(name=f"mira-{size}-{kind}", topology=topo, cores_per_node=mira.cores_per_node,
                   flops_per_node=mira.flops_per_node, mem_bw_per_node=mira.mem_bw_per_node)


def halo_link_flows(scale: str, size: int, kind: str) -> int:
    """The most flows on one link when every exchange of the halo (``stencil3d``: both
    directions of every pair of grid neighbours, ranks placed by the topology-aware mapping
    as in :func:`network_run`) takes its route at once. A static count, not a run: on links
    of one bandwidth the flows of the busiest link get the smallest max-min fair share (its
    capacity over their number), so while the exchanges overlap the ratio of two partitions'
    counts predicts the ratio of their halo runtimes."""
    from apps.mapping import cartesian_neighbors, job_rank_nodes
    from apps.registry import get_app

    topo = partition_machine(scale, size, kind).topology
    n = topo.n_nodes
    args = {"face_bytes": STENCIL_FACE}
    nodes = np.array(job_rank_nodes("stencil3d", args, n, list(range(n)), 1, "topology", topo))
    a, b = cartesian_neighbors(get_app("stencil3d").process_grid(n, args))
    _, links = topo.routes(np.concatenate([nodes[a], nodes[b]]), np.concatenate([nodes[b], nodes[a]]))
    return int(np.bincount(links).max())


def network_run(item):
    from apps import run_app
    from models.network import NetworkConfig

    # (A sixth element, when present, is the perturbation: items without it are those that
    # --checkpoint folders hold from before --spread.)
    scale, size, app, kind, model, *perturb = item
    iters = SCALES[scale][2]
    m = partition_machine(scale, size, kind, *perturb)
    if app == "alltoall":
        args, mapping = {"nbytes": A2A_BYTES, "iters": iters[0]}, "block"
    else:
        args, mapping = {"face_bytes": STENCIL_FACE, "iters": iters[1]}, "topology"
    t = time.process_time()
    # Sequential (comm=None): under mpirun, h.deal gives each rank its own items, and the
    # default comm ("auto") would join the ranks' different items into one parallel run.
    r = run_app(m, app, m.n_nodes, ranks_per_node=1, network=NetworkConfig(model=model), hot_links=0, app_args=args,
                mapping=mapping, comm=None)
    return {"runtime": r.runtime, "events": r.events, "cpu_s": time.process_time() - t}


class PenaltyRunner:
    """Timekeeper jobs; a communication-sensitive job on a partition with a mesh dimension
    runs ``factor`` times longer."""

    enforces_walltime = True

    def __init__(self, factor: float):
        from scheduler.lifecycle import TimekeeperRunner

        self.base = TimekeeperRunner()
        self.factor = factor
        self.slowed = 0

    def start(self, sched, job, nodes):
        info = getattr(nodes, "info", None)
        if info is not None and job.sched_args.get("comm_sensitive") and not all(info.wrap):
            job.run_time *= self.factor
            self.slowed += 1
        self.base.start(sched, job, nodes)

    def kill(self, sched, job, reason):
        self.base.kill(sched, job, reason)


def workload(n_jobs: int, fraction: float, seed: int):
    from scheduler.workload import Choice, Exponential, LogNormal, SyntheticWorkload, Uniform, seeded_rng

    jobs = SyntheticWorkload(
        n_jobs=n_jobs, inter_arrival=Exponential(mean=420.0),
        size=Choice(values=(512, 1024, 2048, 4096, 8192, 16384, 32768), weights=(40, 20, 15, 10, 8, 5, 2)),
        run_time=LogNormal(median=3600.0, sigma=1.0), request_factor=Uniform(low=1.2, high=2.0),
        max_run_time=86400.0,
    ).generate(seed)
    # The same uniform draw per job at every fraction: a larger fraction adds sensitive jobs.
    sens = seeded_rng(seed, 0x5E45).random(len(jobs)) < fraction
    for j, s in zip(jobs, sens.tolist()):
        j.sched_args = {"comm_sensitive": bool(s)}
    return jobs


def schedule_run(item):
    from models.presets import get_machine
    from scheduler.lifecycle import simulate
    from scheduler.metrics import job_table, system_metrics

    scale, policy, selection, slowdown, fraction, seed = item
    jobs = workload(SCALES[scale][3], fraction, seed)
    runner = PenaltyRunner(1.0 + slowdown)
    topo = get_machine("mira").topology
    t = time.process_time()
    res = simulate(jobs, n_nodes=topo.n_nodes, topology=topo, allocator=policy, ordering="wfp", backfill="easy",
                   runner=runner, seed=seed, allocator_options={"selection": selection})
    m = system_metrics(job_table(res.jobs), topo.n_nodes)
    return {"utilization": h.stable_utilization(res.jobs, topo.n_nodes), "mean_wait": m.mean_wait,
            "mean_response": m.mean_response, "loss_of_capacity": m.loss_of_capacity, "killed": m.killed,
            "slowed": runner.slowed, "cpu_s": time.process_time() - t}


def _depends(policy: str) -> tuple[bool, bool]:
    """Whether a policy's schedule depends on (the slowdown, the sensitive fraction): native
    never slows a job; cfca and hybrid put sensitive jobs on torus partitions, so only the
    fraction matters; mesh on both."""
    return {"bgq-native": (False, False), "bgq-mesh": (True, True)}.get(policy, (False, True))


def _sizes(text: str) -> set[int]:
    """argparse type of --sizes: partition sizes such as "1K,2K" (or 1024,2048)."""
    import argparse

    valid = ", ".join(f"{s // 1024}K" for s in PARTITIONS)
    got = set()
    for part in filter(None, (p.strip().upper() for p in text.split(","))):
        digits, unit = (part[:-1], 1024) if part.endswith("K") else (part, 1)
        n = int(digits) * unit if digits.isdigit() else None
        if n not in PARTITIONS:
            raise argparse.ArgumentTypeError(f"{part!r} is not a partition size ({valid})")
        got.add(n)
    if not got:
        raise argparse.ArgumentTypeError(f"no partition size given ({valid})")
    return got


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, scales=True)
    ap.add_argument("--network", default="flow", choices=("flow", "packet"), help="network model (default flow)")
    ap.add_argument("--selection", default="least-blocking", choices=("least-blocking", "first-fit"),
                    help="how a free partition is chosen (default least-blocking, as in the study)")
    ap.add_argument("--view", default="both", choices=("both", "network", "scheduling"),
                    help="run both views (default) or one of them")
    ap.add_argument("--spread", default=1, type=int, metavar="K",
                    help=f"network view: run every cell K times, every link's bandwidth scaled by 1 + i * {PERTURB:g} "
                         "(i = 0..K-1), and report each ratio's mean +- standard error: the runs are "
                         "deterministic, but an all-to-all off the torus is sensitive to the last digits (default 1)")
    ap.add_argument("--sizes", default=None, type=_sizes, metavar="1K,2K,...",
                    help="network view: only these partitions (default: all of the scale's); runs saved by "
                         "--checkpoint are shared, so a study can be run a partition size at a time")
    args = ap.parse_args(argv)
    if args.spread < 1:
        ap.error(f"--spread must be >= 1, got {args.spread}")
    t0 = time.perf_counter()
    c = h.comm()
    sc, (midplane, sizes, iters, n_jobs, n_seeds, sweep_kind) = h.scaled(args, SCALES)
    if args.sizes is not None:
        extra = sorted(set(args.sizes) - set(sizes))
        if extra:
            ap.error(f"--sizes: {', '.join(f'{s // 1024}K' for s in extra)} is not a partition of the {sc} scale "
                     f"(it has {', '.join(f'{s // 1024}K' for s in sizes)})")
        sizes = tuple(s for s in sizes if s in args.sizes)
    seeds = list(range(args.seeds or n_seeds))
    points = sweep(sweep_kind)
    out = h.out_dir(args, c)
    mp_nodes = int(np.prod(midplane))
    what = (f"midplanes of {'x'.join(map(str, midplane))} routers ({mp_nodes} nodes); partitions "
            f"{', '.join(f'{s // 1024}K' for s in sizes)} ({', '.join(str(int(np.prod(PARTITIONS[s])) * mp_nodes) for s in sizes)}"
            f" nodes); all-to-all {A2A_BYTES}/pair x {iters[0]}, halo x {iters[1]}; {args.network} network; scheduling: "
            f"Mira (49,152 nodes), WFP + EASY, {n_jobs:,} jobs x {len(seeds)} seeds, {len(points)} (slowdown, fraction) points")
    h.say_setup(c, sc, what, "Mira's 4x4x4x4x2 midplanes, 1K-8K-node partitions, 10,000 jobs x 5 seeds, 5 x 5 sweep")
    if args.dry_run:
        rows = []
        for s in sizes:
            for kind in ("torus", "mesh", "contention-free"):
                m = partition_machine(sc, s, kind)
                rows.append([f"{s // 1024}K", kind, "x".join(map(str, m.topology.dims)), m.n_nodes,
                             "".join("T" if w else "M" for w in m.topology.wrap)])
        h.say(c, "", "dry run: partitions (wrap per dimension A B C D E: T torus, M mesh)",
              h.table(rows, ["partition", "kind", "routers", "nodes", "wraps"]))
        jobs = workload(n_jobs, 0.3, 0)
        h.say(c, "", f"workload 0: {len(jobs):,} jobs, mean size {np.mean([j.nodes for j in jobs]):.0f}, "
                     f"{np.mean([j.sched_args['comm_sensitive'] for j in jobs]):.1%} sensitive at fraction 0.3")
        h.finish(c, {"script": "repro_zhou", "scale": sc, "dry_run": True}, t0)
        return 0

    res, net = {}, {}
    if args.view != "scheduling":
        kinds_needed = {(s, "torus") for s in sizes} | {(s, k) for s, k in COMPARE if s in sizes}
        keys = [(s, a, k, i) for s, k in sorted(kinds_needed) for a in ("alltoall", "stencil3d")
                for i in range(args.spread)]
        # The unperturbed run's item has no sixth element (see network_run).
        items = [(sc, s, a, k, args.network) + ((i,) if i else ()) for s, a, k, i in keys]
        res = dict(zip(keys, h.deal(items, network_run, c, checkpoint=h.checkpoint(args, f"zhou-network-{sc}"))))
        rows = []
        torus_busiest: dict[int, int] = {}  # by size: the torus is compared with two kinds at 4K
        for s, k in COMPARE:
            if s not in sizes:
                continue
            for a in ("alltoall", "stencil3d"):
                runs = [(res[(s, a, "torus", i)], res[(s, a, k, i)]) for i in range(args.spread)]
                t, o = runs[0]
                fig = {"torus_us": h.r4(t["runtime"] * 1e6), "other_us": h.r4(o["runtime"] * 1e6),
                       "ratio": h.r4(o["runtime"] / t["runtime"])}
                if args.spread > 1:
                    ratios = [y["runtime"] / x["runtime"] for x, y in runs]
                    fig["ratio_spread"] = h.mean_se(ratios)
                    fig["ratio_range"] = [h.r4(min(ratios)), h.r4(max(ratios))]
                    fig["ratio_outcomes"] = outcomes(ratios)
                busiest = "-"
                if a == "stencil3d":
                    if s not in torus_busiest:
                        torus_busiest[s] = halo_link_flows(sc, s, "torus")
                    bt, bk = fig["busiest_link_flows"] = [torus_busiest[s], halo_link_flows(sc, s, k)]
                    busiest = f"{bt} / {bk} = {bk / bt:.3f}"
                net[f"{a}@{s // 1024}K/{k}"] = fig
                row = [f"{s // 1024}K", "x".join(str(b * m) for b, m in zip(PARTITIONS[s], midplane)), a, k,
                       f"{t['runtime'] * 1e6:.1f}", f"{o['runtime'] * 1e6:.1f}", f"{o['runtime'] / t['runtime']:.3f}"]
                if args.spread > 1:
                    row += [h.fmt_se(fig["ratio_spread"], 4), "{:.4f}-{:.4f}".format(*fig["ratio_range"]),
                            fig["ratio_outcomes"]]
                rows.append(row + [busiest, f"{sum(x['cpu_s'] + y['cpu_s'] for x, y in runs):.1f}"])
        title = "network view: runtime alone on a partition (us, one deterministic run each"
        spread = []
        if args.spread > 1:
            title += (f", unperturbed) and its ratio to the torus partition; over {args.spread} runs with every "
                      f"link's bandwidth scaled by 1 + i * {PERTURB:g}: the ratio's mean +- standard error, range, and "
                      f"outcomes (ratios that differ by more than {OUTCOME_TOL:g} relative; 1 where no perturbation "
                      "changed a decision of the run, so that its spread is that of one outcome)")
            spread = ["ratio, perturbed", "range", "outcomes"]
        else:
            title += ") and its ratio to the torus partition"
        title += ("; busiest link: the most halo flows on one link, torus / kind's, when all exchanges overlap "
                  "(halo_link_flows: their ratio predicts the halo's)")
        h.say(c, "", title, h.table(rows, ["partition", "routers", "app", "kind", "torus", "kind's", "kind/torus",
                                           *spread, "busiest link", "CPU (s)"]))

    got, sched = {}, {}
    if args.view != "network":
        sched_items = []
        for p in POLICIES:
            ds, df = _depends(p)
            for sd, fr in sorted({(sd if ds else 0.0, fr if df else 0.0) for sd, fr in points}):
                sched_items += [(sc, p, args.selection, sd, fr, s) for s in seeds]
        got = dict(zip([(it[1],) + it[3:] for it in sched_items], h.deal(sched_items, schedule_run, c, checkpoint=h.checkpoint(args, f"zhou-scheduling-{sc}"))))

        def figures(p, sd, fr):
            ds, df = _depends(p)
            return [got[(p, sd if ds else 0.0, fr if df else 0.0, s)] for s in seeds]

        rows = []
        for sd, fr in points:
            base = figures("bgq-native", sd, fr)
            for p in POLICIES:
                xs = figures(p, sd, fr)
                u = h.mean_se([x["utilization"] for x in xs])
                du = h.mean_se([x["utilization"] / b["utilization"] for x, b in zip(xs, base)])
                w = h.mean_se([x["mean_wait"] / 3600 for x in xs])
                dw = h.mean_se([x["mean_wait"] / b["mean_wait"] for x, b in zip(xs, base)])
                r = h.mean_se([x["mean_response"] / 3600 for x in xs])
                loc = h.mean_se([x["loss_of_capacity"] for x in xs])
                sched[f"{sd:.1f}/{fr:.1f}/{p}"] = {"slowdown": sd, "fraction": fr, "policy": p, "utilization": u,
                                                   "utilization_vs_native": du, "mean_wait_h": w, "wait_vs_native": dw,
                                                   "mean_response_h": r, "loss_of_capacity": loc}
                rows.append([f"{sd:.0%}", f"{fr:.0%}", p, h.fmt_se(u, 3), h.fmt_se(du, 3), h.fmt_se(w, 2),
                             h.fmt_se(dw, 3), h.fmt_se(r, 2), h.fmt_se(loc, 3)])
        h.say(c, "", f"scheduling view: Mira, WFP + EASY, {args.selection} partitions, {n_jobs:,} jobs; "
                     f"mean +- standard error ({len(seeds)} seeds); utilization over the stable period",
              h.table(rows, ["slowdown", "sensitive", "policy", "utilization", "x native", "wait (h)", "x native",
                             "response (h)", "LoC"]))
    cpu = sum(x["cpu_s"] for x in got.values()) + sum(x["cpu_s"] for x in res.values())
    if h.rank(c) == 0 and net and sched:
        _plot(net, sched, points, out / f"zhou_{sc}.png")
        h.say(c, f"figure: {out / f'zhou_{sc}.png'}")
    h.finish(c, {"script": "repro_zhou", "scale": sc, "baseline": "torus partitions / bgq-native",
                 "selection": args.selection, "network": net,
                 "scheduling": sched, "seeds": len(seeds), "jobs": n_jobs, "cpu_s_runs": round(cpu, 1)}, t0)
    return 0


def _plot(net, sched, points, path):
    plt = h.plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    labels = list(net)
    a1.bar(np.arange(len(labels)), [net[k]["ratio"] for k in labels], color="tab:blue")
    a1.axhline(1.0, color="grey", ls="--", lw=0.8)
    a1.set_xticks(np.arange(len(labels)), labels, rotation=30, fontsize=7, ha="right")
    a1.set_ylabel("runtime / runtime on a torus partition")
    sds = sorted({sd for sd, fr in points if fr == 0.3})
    for p in POLICIES:
        v = [sched[f"{sd:.1f}/0.3/{p}"]["utilization"] for sd in sds]
        a2.errorbar([100 * s for s in sds], [x["mean"] for x in v], yerr=[x["se"] or 0.0 for x in v], fmt="-o",
                    capsize=3, label=p)
    a2.set_xlabel("mesh slowdown of a sensitive job (%), 30 % sensitive")
    a2.set_ylabel("utilization (stable period)")
    a2.legend(fontsize=8)
    a2.set_title("scheduling view (Mira, WFP + EASY)", fontsize=10)
    for a in (a1, a2):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
