#!/usr/bin/env python3
"""Zhou et al. style: torus, mesh and contention-free partitions of a Mira-like 5D torus.

Network view: an all-to-all skeleton (MPICH's Bruck algorithm, 256 B per pair) and a
nearest-neighbour skeleton (periodic 3D halo exchange, 64 KiB faces) run alone on a
partition of Mira's 5D torus, modelled as a torus sub-machine of the partition's shape
(Mira's links) whose per-dimension wrap flags make it a torus, a mesh or a contention-free
partition: torus wraps everywhere; mesh wraps only in dimensions one midplane long (the
midplane's own wiring); contention-free wraps there and in dimensions the partition spans
(its wrap cables are then its own). Partitions span the A dimension, so that the three
kinds differ. Slowdown of mesh and contention-free against torus.

Scheduling view: a synthetic Mira-like workload (jobs of 512 to 32,768 nodes, 30 %
communication-sensitive) replayed with FCFS + EASY under the four policies: bgq-native (all
torus), bgq-mesh (MeshSched), bgq-cfca and bgq-hybrid. A sensitive job that gets a
partition with a mesh dimension runs longer by the all-to-all mesh slowdown measured in
the network view (at the largest partition); jobs that then exceed their request are
killed, as on the real machine. Utilization, mean wait, loss of capacity, slowed jobs.

Scales: --full runs partitions of 1K to 16K nodes and 10,000 jobs (use a cluster: mpirun
-n 64 ...; runs are dealt out over the ranks); the default reduced scale runs 1K and 2K-node
partitions with 16 KiB chunks (the packet model's speed knob) and 1,500 jobs; --tiny one
1K-node partition and 300 jobs.

After Z. Zhou, X. Yang, Z. Lan, P. Rich, W. Tang, V. Morozov, N. Desai, "Improving batch
scheduling on Blue Gene/Q by relaxing 5D torus network allocation constraints", IPDPS 2015
(see docs/studies.md).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import harness as h

# Partitions in midplanes (Mira's midplane grid is 2x3x4x4x1 of 4x4x4x4x2 routers); all span A.
PARTITIONS = {
    1024: (2, 1, 1, 1, 1),
    2048: (2, 1, 1, 2, 1),
    4096: (2, 1, 2, 2, 1),
    8192: (2, 2, 2, 2, 1),
    16384: (2, 2, 2, 4, 1),
}
MIDPLANE = (4, 4, 4, 4, 2)
GRID = (2, 3, 4, 4, 1)
APPS = {
    "alltoall": {"nbytes": 256},
    "stencil3d": {"face_bytes": "64KiB"},
}
KINDS = ("torus", "mesh", "contention-free")
POLICIES = ("bgq-native", "bgq-mesh", "bgq-cfca", "bgq-hybrid")
SCALES = {
    #          sizes                          iters (a2a, stencil) chunk     jobs
    "full": ((1024, 2048, 4096, 8192, 16384), (2, 5), "4KiB", 10000),
    "reduced": ((1024, 2048), (1, 2), "16KiB", 1500),
    "tiny": ((1024,), (1, 1), "16KiB", 300),
}
SENSITIVE = 0.3


def wraps(blocks: tuple[int, ...], kind: str) -> tuple[bool, ...]:
    """Per-dimension wrap of a partition of ``blocks`` midplanes."""
    if kind == "torus":
        return (True,) * len(blocks)
    if kind == "mesh":
        return tuple(b == 1 for b in blocks)
    return tuple(b == 1 or b == g for b, g in zip(blocks, GRID))


def partition_machine(size: int, kind: str):
    from models.presets import Machine, get_machine

    mira = get_machine("mira")
    blocks = PARTITIONS[size]
    shape = tuple(b * m for b, m in zip(blocks, MIDPLANE))
    topo = mira.topology.replace(dims=shape, wrap=wraps(blocks, kind))
    return Machine(name=f"mira-{size}-{kind}", topology=topo, cores_per_node=mira.cores_per_node,
                   flops_per_node=mira.flops_per_node, mem_bw_per_node=mira.mem_bw_per_node)


def network_run(item):
    from apps import run_app
    from models.network import NetworkConfig

    scale, size, app, kind = item
    _, iters, chunk, _ = SCALES[scale]
    m = partition_machine(size, kind)
    it = iters[0] if app == "alltoall" else iters[1]
    r = run_app(m, app, size, ranks_per_node=1, network=NetworkConfig(chunk_size=chunk), hot_links=0,
                app_args={**APPS[app], "iters": it})
    return {"runtime": r.runtime, "hop_bytes": r.hop_bytes, "events": r.events, "wall_s": r.wall_s}


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


def workload(n_jobs: int):
    from scheduler.workload import Choice, Exponential, LogNormal, SyntheticWorkload, Uniform, seeded_rng

    jobs = SyntheticWorkload(
        n_jobs=n_jobs, inter_arrival=Exponential(mean=420.0),
        size=Choice(values=(512, 1024, 2048, 4096, 8192, 16384, 32768), weights=(40, 20, 15, 10, 8, 5, 2)),
        run_time=LogNormal(median=3600.0, sigma=1.0), request_factor=Uniform(low=1.2, high=2.0),
        max_run_time=86400.0,
    ).generate(5)
    sens = seeded_rng(5, 0x5E45).random(len(jobs)) < SENSITIVE
    for j, s in zip(jobs, sens.tolist()):
        j.sched_args = {"comm_sensitive": bool(s)}
    return jobs


def schedule_run(item):
    from models.presets import get_machine
    from scheduler.lifecycle import simulate
    from scheduler.metrics import job_table, system_metrics

    scale, policy, factor = item
    jobs = workload(SCALES[scale][3])
    runner = PenaltyRunner(factor)
    topo = get_machine("mira").topology
    t = time.perf_counter()
    # simulate() rather than replay(): replay also computes every allocation's placement
    # metrics, which this view does not report.
    res = simulate(jobs, n_nodes=topo.n_nodes, topology=topo, allocator=policy, ordering="fcfs", backfill="easy",
                   runner=runner, seed=5)
    m = system_metrics(job_table(res.jobs), topo.n_nodes)
    kinds: dict[str, int] = {}
    for j in res.jobs:
        info = getattr(j.assigned_nodes, "info", None)
        if info is not None:
            kinds[info.kind] = kinds.get(info.kind, 0) + 1
    sens = [j for j in res.jobs if j.sched_args.get("comm_sensitive")]
    return {"policy": policy, "utilization": m.utilization, "mean_wait": m.mean_wait,
            "loss_of_capacity": m.loss_of_capacity, "makespan": m.makespan,
            "mean_bounded_slowdown": m.mean_bounded_slowdown, "killed": m.killed, "slowed": runner.slowed,
            "sensitive": len(sens), "kinds": kinds, "wall_s": time.perf_counter() - t}


def main(argv: list[str] | None = None) -> int:
    ap = h.parser(__doc__, scales=True)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    c = h.comm()
    sc, (sizes, iters, chunk, n_jobs) = h.scaled(args, SCALES)
    out = h.out_dir(args, c)
    what = (f"partitions of {', '.join(f'{s:,}' for s in sizes)} nodes of Mira's 5D torus, all-to-all x {iters[0]} "
            f"and halo x {iters[1]} iterations, {chunk} chunks; scheduling: Mira (49,152 nodes), {n_jobs} jobs")
    h.say(c, f"full: {what}" if sc == "full" else f"{sc}: {what} (full: 1K-16K-node partitions, 10,000 jobs)")

    items = [(sc, s, a, k) for s in sizes for a in APPS for k in KINDS]
    res = dict(zip([(s, a, k) for _, s, a, k in items], h.deal(items, network_run, c)))
    rows, slow = [], {}
    for s in sizes:
        blocks = PARTITIONS[s]
        shape = "x".join(str(b * m) for b, m in zip(blocks, MIDPLANE))
        for a in APPS:
            t = res[(s, a, "torus")]["runtime"]
            me = res[(s, a, "mesh")]["runtime"]
            cf = res[(s, a, "contention-free")]["runtime"]
            slow[f"{a}@{s}"] = {"torus_us": h.r4(t * 1e6), "mesh_slowdown": h.r4(me / t), "cf_slowdown": h.r4(cf / t)}
            rows.append([f"{s:,}", shape, a, f"{t * 1e6:.1f}", f"{me * 1e6:.1f}", f"{me / t:.3f}", f"{cf * 1e6:.1f}",
                         f"{cf / t:.3f}"])
    h.say(c, "", "network view: runtime alone on a partition (us); slowdown against the torus partition "
                 "(mesh wraps only one-midplane dimensions, contention-free also the spanned dimension A)",
          h.table(rows, ["nodes", "routers", "app", "torus", "mesh", "mesh/torus", "contention-free", "cf/torus"]))
    factor = max(1.0, slow[f"alltoall@{sizes[-1]}"]["mesh_slowdown"])
    sched = h.deal([(sc, p, factor) for p in POLICIES], schedule_run, c)
    base = sched[0]
    rows = []
    for x in sched:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(x["kinds"].items()))
        rows.append([x["policy"], f"{x['utilization']:.4f}", f"{x['utilization'] / base['utilization']:.3f}",
                     f"{x['mean_wait'] / 3600:.2f}", f"{x['mean_wait'] / base['mean_wait']:.3f}",
                     f"{x['loss_of_capacity']:.4f}", f"{x['mean_bounded_slowdown']:.2f}", x["slowed"], x["killed"], kinds])
    h.say(c, "", f"scheduling view: Mira, {n_jobs} synthetic jobs ({SENSITIVE:.0%} communication-sensitive), FCFS + EASY; "
                 f"a sensitive job on a partition with a mesh dimension runs x{factor:.3f} longer",
          h.table(rows, ["policy", "utilization", "x native", "mean wait (h)", "x native", "loss of capacity",
                         "mean bsld", "slowed", "killed", "partitions"]))
    if h.rank(c) == 0:
        _plot(slow, sched, sizes, out / f"zhou_{sc}.png")
        h.say(c, f"figure: {out / f'zhou_{sc}.png'}")
    h.finish(c, {
        "script": "repro_zhou", "scale": sc, "baseline": "torus partitions / bgq-native", "slowdowns": slow,
        "mesh_penalty_factor": h.r4(factor),
        "scheduling": {x["policy"]: {"utilization": h.r4(x["utilization"]), "mean_wait_s": h.r4(x["mean_wait"]),
                                     "loss_of_capacity": h.r4(x["loss_of_capacity"]), "slowed": x["slowed"],
                                     "killed": x["killed"]} for x in sched},
    }, t0)
    return 0


def _plot(slow, sched, sizes, path):
    plt = h.plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    w = 0.2
    labels = list(slow)
    x = np.arange(len(labels))
    a1.bar(x - w / 2, [slow[k]["mesh_slowdown"] for k in labels], w, label="mesh / torus")
    a1.bar(x + w / 2, [slow[k]["cf_slowdown"] for k in labels], w, label="contention-free / torus")
    a1.axhline(1.0, color="grey", ls="--", lw=0.8)
    a1.set_xticks(x, labels, rotation=30, fontsize=7)
    a1.set_ylabel("slowdown against a torus partition")
    a1.legend(fontsize=8)
    p = [s["policy"] for s in sched]
    a2.bar(np.arange(len(p)) - w / 2, [s["utilization"] for s in sched], w, label="utilization")
    a2.bar(np.arange(len(p)) + w / 2, [s["loss_of_capacity"] for s in sched], w, label="loss of capacity")
    a2.set_xticks(np.arange(len(p)), p, fontsize=8)
    a2.set_ylim(0, 1.15)
    a2.legend(fontsize=8, loc="upper center", ncol=2)
    a2.set_title("scheduling view (Mira, FCFS + EASY)", fontsize=10)
    for a in (a1, a2):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
