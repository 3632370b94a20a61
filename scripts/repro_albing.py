#!/usr/bin/env python3
"""Stoltzfus's HECToR node-allocation study (extending Albing et al.): MIND of allocation policies, log replayed in order.

A job log is replayed in log order on an empty machine: each entry places a job (the
allocator picks its nodes from the free ones) or removes one; there are no run times and
no queue, so every policy sees the same sequence of free-node counts and only the node
choices differ. Machine: HECToR's Gemini 3D torus 15x6x16 with 2 nodes per coordinate
(2,880 nodes), of which 64 are service nodes (held for the whole replay), leaving 2,816
compute nodes. Policies: FIFO-0 (the first free nodes of the ordering; the baseline), First
Fit and Largest Fit with gaps 0, 4 and 8 (busy nodes tolerated inside a window or run),
Closest Fit and dual-end. MIND = the mean wrap-aware Manhattan distance (router hops) over
the pairs of a job's nodes. A policy's improvement over FIFO-0 is
100 * (1 - sum_j MIND_j / ln n_j  /  sum_j MIND0_j / ln n_j) over the jobs of a class
(small: 1-10 nodes, large: 11-2,048, and overall; 1-node jobs have no pairs and are left
out), the log(job size) normalisation keeping the large jobs' larger distances from
swamping the small ones. Then the same log on a 2,816-node dragonfly (44 groups of 16
routers with 4 nodes; best case: nodes numbered group by group, worst case: consecutive
nodes in different groups) and a 5D torus 11x8x4x4x2. Improvements are mean +- standard
error over logs (seeds).

No HECToR log is public: the log is synthetic with HECToR-like sizes (SMALL_SHARE = 75 % of
jobs of 1-10 nodes, the rest log-uniform over 11-2,048; parameters), generated against the
2,816 compute nodes: before a job is placed, randomly chosen running jobs are removed until
it fits, and after it each running job is removed with probability REMOVE_P (a busy
machine, as on a production system). The service nodes' positions (every 45th node, one
per 2 coordinates in node order) and the node ordering of the torus (node id order,
'topological') are parameters too.

Scales (--scale): full replays 5 logs of 100,000 jobs (under mpirun the (machine, policy,
log) replays are dealt out over the ranks); reduced 3 logs of 2,000 jobs; tiny 2 logs of
80 jobs. --machines picks some of the machines (default all four). --dry-run builds the
machines and the logs and prints them.

After A. Stoltzfus's HECToR allocation study and C. Albing, N. Troullier, S. Whalen,
R. Olson, J. Glenski, H. Pritchard, H. Mills, "Scalable node allocation for improved
performance in regular and anisotropic 3D torus supercomputers", EuroMPI 2011 (see
docs/studies.md).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

import harness as h

#: (label, allocator, options); the first is the baseline.
POLICIES = (("fifo0", "fifo0", {}),
            *((f"firstfit-g{g}", "firstfit", {"gap": g}) for g in (0, 4, 8)),
            *((f"largestfit-g{g}", "largestfit", {"gap": g}) for g in (0, 4, 8)),
            ("closestfit", "closestfit", {}), ("dualend", "dualend", {}))
CLASSES = (("small", 2, 10), ("large", 11, 2048), ("overall", 2, 2048))
SCALES = {"full": (100000, 5), "reduced": (2000, 3), "tiny": (80, 2)}
COMPUTE_NODES = 2816
SERVICE_NODES = 64
SMALL_SHARE = 0.75
REMOVE_P = 0.02
MACHINES = ("hector", "dragonfly-best", "dragonfly-worst", "torus5d")


def topology(name: str):
    from models.presets import get_machine
    from models.topology import Dragonfly, Torus

    if name == "hector":
        return get_machine("hector").topology
    if name.startswith("dragonfly"):
        return Dragonfly(a=16, p=4, h=3, g=44)  # 44 groups x 16 routers x 4 nodes = 2,816
    return Torus(dims=(11, 8, 4, 4, 2), nodes_per_router=1, wrap=True)


def service_nodes(name: str, n_nodes: int) -> np.ndarray:
    """The nodes held for the whole replay: HECToR's 64 service nodes, spread evenly."""
    if name != "hector":
        return np.zeros(0, dtype=np.int64)
    step = n_nodes // SERVICE_NODES
    return np.arange(SERVICE_NODES, dtype=np.int64) * step


def ordering(name: str, topo) -> object:
    """The allocators' node ordering on machine ``name``."""
    if name != "dragonfly-worst":
        return "topological"
    # Worst case: consecutive positions in different groups (node i of every group, then i + 1).
    per_group = topo.n_nodes // topo.g
    return np.arange(topo.n_nodes, dtype=np.int64).reshape(topo.g, per_group).T.reshape(-1)


def job_sizes(rng: np.random.Generator, n: int) -> np.ndarray:
    small = rng.random(n) < SMALL_SHARE
    s = rng.integers(1, 11, n)
    large = np.floor(np.exp(rng.uniform(math.log(11), math.log(2049), n))).astype(np.int64)
    return np.where(small, s, np.minimum(large, 2048))


def make_log(n_jobs: int, seed: int) -> list[tuple[str, int, int]]:
    """The synthetic log: ('place', job, size) and ('remove', job, size) entries."""
    from scheduler.workload import seeded_rng

    rng = seeded_rng(seed, 0x4EC7)
    sizes = job_sizes(rng, n_jobs)
    free = COMPUTE_NODES
    running: list[int] = []
    log: list[tuple[str, int, int]] = []
    for j, s in enumerate(sizes.tolist()):
        while free < s:
            k = running.pop(int(rng.integers(len(running))))
            log.append(("remove", k, int(sizes[k])))
            free += int(sizes[k])
        log.append(("place", j, s))
        running.append(j)
        free -= s
        for k in [x for x in running if rng.random() < REMOVE_P]:
            running.remove(k)
            log.append(("remove", k, int(sizes[k])))
            free += int(sizes[k])
    return log


def replay(item):
    """One (machine, policy, log seed): each job's (size, MIND)."""
    from scheduler.allocators import make_allocator
    from scheduler.job import Job

    scale, mname, label, seed = item
    _, alloc_name, opts = next(p for p in POLICIES if p[0] == label)
    topo = topology(mname)
    alloc = make_allocator(alloc_name, n_nodes=topo.n_nodes, topology=topo, seed=seed, ordering=ordering(mname, topo),
                           **opts)
    st = alloc.new_state()
    svc = service_nodes(mname, topo.n_nodes)
    if len(svc):
        alloc.commit(Job.build(job_id=-1, job_size=len(svc), nodes=len(svc), submit_time=0.0, request_time=1.0,
                               run_time=1.0), svc, st)
    t = time.process_time()
    jobs: dict[int, tuple] = {}
    sizes, minds = [], []
    for what, j, s in make_log(SCALES[scale][0], seed):
        if what == "remove":
            job, nodes = jobs.pop(j)
            alloc.release(job, nodes, st)
            continue
        job = Job.build(job_id=j, job_size=s, nodes=s, submit_time=0.0, request_time=1.0, run_time=1.0)
        nodes = alloc.select(job, st)
        if nodes is None:
            raise RuntimeError(f"{label} on {mname}: log entry {j} ({s} nodes) does not fit with {st.n_free} free")
        alloc.commit(job, nodes, st)
        jobs[j] = (job, nodes)
        sizes.append(s)
        minds.append(topo.pair_hop_sum(np.asarray(nodes)) / (s * (s - 1) / 2) if s > 1 else 0.0)
    return {"sizes": np.asarray(sizes), "mind": np.asarray(minds), "cpu_s": time.process_time() - t}


def improvement(base, other, lo: int, hi: int) -> float:
    s = base["sizes"]
    m = (s >= lo) & (s <= hi) & (s >= 2)
    w = 1.0 / np.log(s[m])
    b = float((base["mind"][m] * w).sum())
    return 100.0 * (1.0 - float((other["mind"][m] * w).sum()) / b) if b > 0 else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, scales=True)
    ap.add_argument("--machines", nargs="+", choices=MACHINES, default=list(MACHINES),
                    help="machines to replay the logs on (default: all four)")
    args = ap.parse_args(argv)
    machines = [m for m in MACHINES if m in args.machines]
    t0 = time.perf_counter()
    c = h.comm()
    sc, (n_jobs, n_seeds) = h.scaled(args, SCALES)
    seeds = list(range(args.seeds or n_seeds))
    out = h.out_dir(args, c)
    what = (f"{len(seeds)} synthetic logs of {n_jobs:,} jobs, replayed in log order; HECToR torus 15x6x16 x 2 "
            f"({COMPUTE_NODES:,} compute + {SERVICE_NODES} service nodes), dragonfly (best/worst case) and 5D torus "
            f"11x8x4x4x2 of {COMPUTE_NODES:,} nodes" + ("" if machines == list(MACHINES) else
                                                        f"; replayed on {', '.join(machines)} only"))
    h.say_setup(c, sc, what, "5 logs of 100,000 jobs")
    if args.dry_run:
        rows = []
        for mname in machines:
            topo = topology(mname)
            rows.append([mname, topo.name, topo.n_nodes, len(service_nodes(mname, topo.n_nodes)), topo.diameter])
        h.say(c, "", "dry run: machines", h.table(rows, ["machine", "topology", "nodes", "service", "diameter"]))
        log = make_log(n_jobs, 0)
        sz = np.array([s for w, _, s in log if w == "place"])
        h.say(c, "", f"log 0: {len(log):,} entries, {len(sz):,} jobs, {np.mean(sz <= 10):.1%} of 1-10 nodes, mean size "
                     f"{sz.mean():.1f}, largest {sz.max()}")
        h.finish(c, {"script": "repro_albing", "scale": sc, "dry_run": True}, t0)
        return 0
    items = [(sc, mn, p[0], s) for mn in machines for p in POLICIES for s in seeds]
    res = dict(zip([it[1:] for it in items], h.deal(items, replay, c, checkpoint=h.checkpoint(args, f"albing-{sc}"))))
    figures: dict = {}
    base_label = POLICIES[0][0]
    for mname in machines:
        rows = []
        fig_m: dict = {}
        for label, _, _ in POLICIES:
            row = [label]
            for cname, lo, hi in CLASSES:
                mind = h.mean_se([float(np.mean(res[(mname, label, s)]["mind"][
                    (res[(mname, label, s)]["sizes"] >= max(lo, 2)) & (res[(mname, label, s)]["sizes"] <= hi)]))
                    for s in seeds])
                imp = h.mean_se([improvement(res[(mname, base_label, s)], res[(mname, label, s)], lo, hi) for s in seeds])
                row += [h.fmt_se(mind, 2), h.fmt_se(imp, 1)]
                fig_m.setdefault(label, {})[cname] = {"mind": mind, "improvement_pct": imp}
            row.append(f"{sum(res[(mname, label, s)]['cpu_s'] for s in seeds):.1f}")
            rows.append(row)
        topo = topology(mname)
        h.say(c, "", f"{mname} ({topo.name}, {topo.n_nodes:,} nodes): mean MIND (router hops) and improvement over FIFO-0 "
                     "(%, log(size)-normalised), by class; mean +- standard error (logs)",
              h.table(rows, ["policy", *[f"{x} {cn}" for cn, _, _ in CLASSES for x in ("MIND", "impr.")], "CPU (s)"]))
        figures[mname] = fig_m
    if h.rank(c) == 0:
        _plot(figures, out / f"albing_{sc}.png")
        h.say(c, f"figure: {out / f'albing_{sc}.png'}")
    h.finish(c, {"script": "repro_albing", "scale": sc, "jobs": n_jobs, "logs": len(seeds), "baseline": "fifo0",
                 "machines": figures, "cpu_s_runs": round(sum(r["cpu_s"] for r in res.values()), 1)}, t0)
    return 0


def _plot(figures, path):
    plt = h.plt()
    fig, axes = plt.subplots(1, len(figures), figsize=(4.5 * len(figures), 4), sharey=True, squeeze=False)
    labels = [p[0] for p in POLICIES[1:]]
    for ax, (mname, f) in zip(axes[0], figures.items()):
        x = np.arange(len(labels))
        w = 0.8 / len(CLASSES)
        for i, (cname, _, _) in enumerate(CLASSES):
            v = [f[p][cname]["improvement_pct"] for p in labels]
            ax.bar(x + (i - 1) * w, [y["mean"] or 0.0 for y in v], w, yerr=[y["se"] or 0.0 for y in v], label=cname)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(x, labels, rotation=60, fontsize=7)
        ax.set_title(mname, fontsize=10)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("MIND improvement over FIFO-0 (%)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
