#!/usr/bin/env python3
"""Simulated MPI speed: an allreduce of 1 KiB on 8,192 ranks (one per node) of the Cielo preset.

Configurations, each run ``--rounds`` times, interleaved, in fresh processes:

* ``ideal``: the ideal network model, sequential -- the named baseline (no routers, no
  contention: the same MPI traffic with the cheapest transport);
* ``packet``: the packet model, sequential (the goal: under 60 s on a 2-core machine);
* ``flow``: the flow model, sequential, side by side with the packet model (``cpu vs
  packet``: its CPU seconds over the packet model's);
* ``flow q``: with ``--flow-quantum Q``, the flow model with that rate quantum
  (``NetworkConfig(flow_quantum=Q)``: starts and rate changes only at multiples of Q);
* ``packet P=2``: the packet model under ``mpirun -n 2``.

``--app``, ``--placement`` and ``--args`` (a JSON object of app arguments) run another app:
``--app stencil3d --machine fattree44 --ranks 10648 --iters 1`` is a filled fat-tree.
``--jobs N`` runs N concurrent jobs of ``--ranks`` ranks each instead of one (all launched at
t = 0, one rank per node, each on its own nodes drawn at random from the run seed, as the
random allocator of the interference studies places them): ``--jobs 9 --ranks 1024 --app
even-odd --args '{"iters": 10}'`` is the Obaida & Liu case of 9 even-odd jobs filling Cielo
(``scripts/repro_obaida_liu.py --full``); "sim runtime" is then the makespan.
``--baseline-tree PATH`` (another checkout of simhpc, e.g. ``git worktree add /tmp/old HEAD~1``)
also runs the sequential configurations (ideal, packet, flow, flow q) from that tree in every
round, alternating which tree goes first: the code before a change, side by side with it (CPU
per message over the baseline tree's; whether the simulated results are identical, and the
ratio of the runtimes, are in the JSON). ``--ideal-only`` runs the ideal network alone (in both trees): the MPI layer's own cost.
``--quick`` is one round without the P=2 run. CPU seconds are the child's user + system time
(every process of an mpirun); ``run cpu s`` is the CPU of building the machine and
running it (rank 0), ``sim cpu s`` that of ``Simulator.run`` alone and ``us/msg`` sim CPU per
message sent.

Wall time is the simulation run (``Simulator.run``, the slowest rank); ``setup`` is building
the machine, the network and the job. Events per second = simulated events / run wall time.
The table gives medians; the ratios compare medians. The P=2 run must reproduce the
sequential packet run exactly (runtime, events, bytes): the JSON says whether it did.

Usage: ``python scripts/bench_apps.py [--ranks 8192] [--nbytes 1024] [--iters 1] [--rounds 3]
[--baseline-tree PATH]``.
The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time

import harness as h


def worker(a: argparse.Namespace) -> None:
    """One measurement in this process; prints one JSON line (rank 0 only)."""
    t0 = time.perf_counter()
    from apps import run_app
    from models.presets import get_machine
    from pdes.parallel import world_comm

    comm = world_comm()
    machine = get_machine(a.machine)
    sim_cpu = _time_simulator_runs()
    app_args = {"iters": a.iters, **json.loads(a.args)}
    if a.app == "allreduce":
        app_args.setdefault("nbytes", a.nbytes)
    if a.jobs > 1:
        c0 = time.process_time()
        res = _run_jobs(machine, a, app_args, comm)
    else:
        c0 = time.process_time()
        res = run_app(machine, a.app, a.ranks, ranks_per_node=1, network=_network(a), seed=a.seed, comm=comm,
                      placement=a.placement, app_args=app_args)
    run_cpu = time.process_time() - c0
    total = time.perf_counter() - t0
    # The process ends as the simhpc console script's does (simhpc.cli.console): the last
    # collection does not walk the run's objects.
    gc.freeze()
    if comm is not None and comm.rank != 0:
        return
    h.emit({
        "network": a.network, "sim_ranks": res.sim_ranks, "wall_s": res.wall_s, "total_s": total,
        "setup_s": total - res.wall_s, "events": res.events, "runtime": res.runtime, "bytes_sent": res.bytes_sent,
        "messages": res.messages, "windows": res.stats.windows, "remote_events": res.stats.remote_events,
        "run_cpu_s": run_cpu, "sim_cpu_s": sum(sim_cpu), "flows": res.net.flows, "flow_recomputes": res.net.flow_recomputes,
        "flow_touched": res.net.flow_touched, "flow_touched_max": res.net.flow_touched_max,
        "flow_local": res.net.flow_local,
    })


def _time_simulator_runs() -> list[float]:
    """From now on, the CPU seconds of every ``Simulator.run`` of this process are appended
    to the list returned (the run alone, not building the machine)."""
    from pdes import Simulator

    spent: list[float] = []
    run = Simulator.run

    def timed(self, *args, **kwargs):
        c0 = time.process_time()
        try:
            return run(self, *args, **kwargs)
        finally:
            spent.append(time.process_time() - c0)

    Simulator.run = timed
    return spent


def _run_jobs(machine, a: argparse.Namespace, app_args: dict, comm) -> argparse.Namespace:
    """``a.jobs`` jobs of ``a.ranks`` ranks (one per node) at t = 0 on disjoint random nodes;
    the figures of :func:`worker` for all of them (runtime: the makespan)."""
    import numpy as np

    from apps.node import LaunchSpec
    from apps.platform import build_platform
    from apps.registry import bind_args

    need = a.jobs * a.ranks
    if need > machine.n_nodes:
        raise SystemExit(f"bench_apps: --jobs {a.jobs} x --ranks {a.ranks} = {need} nodes; "
                         f"{machine.name} has {machine.n_nodes}")
    args = bind_args(a.app, app_args, size=a.ranks)
    rng = np.random.Generator(np.random.PCG64(a.seed))
    perm = rng.permutation(machine.n_nodes)[:need]
    plat = build_platform(machine, _network(a), seed=a.seed, comm=comm)
    for j in range(a.jobs):
        nodes = sorted(int(x) for x in perm[j * a.ranks:(j + 1) * a.ranks])
        plat.launch(LaunchSpec.build(job=j + 1, app=a.app, args=args, rank_nodes=nodes, report_to=plat.manager_eid))
    st = plat.sim.run()
    recs = [plat.shared_record(j + 1) for j in range(a.jobs)]
    bad = [r for r in recs if r.status != "ok"]
    if bad:
        raise SystemExit(f"bench_apps: job {bad[0].job} ended {bad[0].status}: {bad[0].error}")
    ns = plat.net.stats()
    start = min(r.start for r in recs)
    return argparse.Namespace(
        sim_ranks=st.ranks, wall_s=st.wall_s, events=st.events, runtime=max(r.end for r in recs) - start,
        bytes_sent=sum(r.bytes_sent for r in recs), messages=sum(r.messages for r in recs), stats=st, net=ns,
        job_runtimes=[r.runtime for r in recs])


def _network(a: argparse.Namespace) -> object:
    """The worker's network: a model name, or the flow model with ``--flow-quantum``."""
    from models.network import NetworkConfig

    if a.network == "flowq":
        return NetworkConfig(model="flow", flow_quantum=a.flow_quantum)
    return a.network


BASE = " (base)"  # the suffix of a configuration run from the baseline tree


def run_one(network: str, procs: int, a: argparse.Namespace, tree: str | None = None) -> dict:
    """One configuration in a fresh process; ``tree``: run it from that checkout instead."""
    script = os.path.join(tree, "scripts", "bench_apps.py") if tree else os.path.abspath(__file__)
    args = [script, "--worker", "--network", network, "--machine", a.machine, "--ranks", str(a.ranks),
            "--nbytes", str(a.nbytes), "--iters", str(a.iters), "--seed", str(a.seed), "--app", a.app,
            "--placement", a.placement, "--args", a.args, "--jobs", str(a.jobs)]
    if a.flow_quantum is not None:
        args += ["--flow-quantum", a.flow_quantum]
    if procs > 1:
        cmd = [h.require_mpirun("bench_apps"), "-n", str(procs), sys.executable, *args]
    else:
        cmd = [sys.executable, *args]
    env = None
    if tree:
        # The baseline tree's packages, not this checkout's (nor an installed copy).
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))}
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        res = h.run_json(cmd, script="bench_apps", timeout=a.timeout, env=env, cwd=tree)
    except subprocess.TimeoutExpired:
        # Killed at the limit: its CPU so far is a lower bound, its other figures unknown.
        nan = float("nan")
        res = {"timed_out": True, "network": network, "wall_s": nan, "total_s": float(a.timeout), "setup_s": nan,
               "events": 0, "runtime": nan, "bytes_sent": nan, "messages": 0, "windows": 0, "remote_events": 0,
               "run_cpu_s": nan, "sim_cpu_s": nan, "flows": 0, "flow_recomputes": 0, "flow_touched": 0,
               "flow_touched_max": 0, "flow_local": 0}
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res["cpu_s"] = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return res


def main() -> None:
    ap = h.parser(__doc__, rounds=3, seed=0)
    ap.add_argument("--machine", default="cielo")
    ap.add_argument("--ranks", type=int, default=8192)
    ap.add_argument("--nbytes", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=1)
    ap.add_argument("--app", default="allreduce", help="the app (default: allreduce)")
    ap.add_argument("--placement", default="contiguous", help="contiguous or random (default: contiguous)")
    ap.add_argument("--args", default="{}", help="more app arguments as a JSON object, e.g. '{\"nbytes\": 4096}'")
    ap.add_argument("--jobs", type=int, default=1, help="concurrent jobs of --ranks ranks on random nodes (default 1)")
    ap.add_argument("--quick", action="store_true", help="one round, no mpirun -n 2 run")
    ap.add_argument("--timeout", type=float, default=3600.0,
                    help="seconds one configuration may run; one that runs longer is killed and reported with "
                         "its CPU so far as a lower bound (default 3600)")
    ap.add_argument("--no-flow", action="store_true", help="skip the flow model")
    ap.add_argument("--flow-quantum", default=None, help="also the flow model with this rate quantum, e.g. 1us")
    ap.add_argument("--no-parallel", action="store_true", help="skip the mpirun -n 2 configuration")
    ap.add_argument("--ideal-only", action="store_true",
                    help="only the ideal network (no packet, flow or P=2 runs): the MPI layer's own cost")
    ap.add_argument("--baseline-tree", default=None, metavar="PATH",
                    help="another checkout of simhpc: also run the ideal and packet configurations from it")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--network", default="packet", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.jobs < 1:
        ap.error(f"--jobs must be a whole number >= 1, got {a.jobs}")
    if a.worker:
        worker(a)
        return
    if a.quick:
        a.rounds, a.no_parallel = 1, True
    base = None
    if a.baseline_tree:
        base = os.path.abspath(a.baseline_tree)
        if not os.path.isfile(os.path.join(base, "scripts", "bench_apps.py")):
            sys.exit(f"bench_apps: --baseline-tree {a.baseline_tree}: no scripts/bench_apps.py there")
    h.compiled(*filter(None, [h.ROOT, base]))
    load0 = os.getloadavg()
    if a.ideal_only:
        a.no_flow, a.no_parallel, a.flow_quantum = True, True, None
    configs = [("ideal", "ideal", 1)] if a.ideal_only else [("ideal", "ideal", 1), ("packet", "packet", 1)]
    if not a.no_flow:
        configs.append(("flow", "flow", 1))
    if a.flow_quantum is not None:
        configs.append(("flow q", "flowq", 1))
    if not a.no_parallel:
        configs.append(("packet P=2", "packet", 2))
    if base:
        # Each sequential configuration followed by the same from the baseline tree.
        configs = [x for c in configs for x in ([c, (c[0] + BASE, c[1], 1)] if c[2] == 1 else [c])]
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in configs}
    for rnd in range(a.rounds):
        order = configs
        if base and rnd % 2:
            # Every other round the baseline tree goes first (of each pair of trees).
            order = []
            for c in configs:
                if c[0].endswith(BASE) and order and order[-1][0] + BASE == c[0]:
                    order.insert(len(order) - 1, c)
                else:
                    order.append(c)
        for name, network, procs in order:
            r = run_one(network, procs, a, base if name.endswith(BASE) else None)
            runs[name].append(r)
            if r.get("timed_out"):
                print(f"  round {rnd + 1}/{a.rounds} {name:>11}: killed after {a.timeout:.0f} s, cpu {r['cpu_s']:7.2f} s",
                      file=sys.stderr)
                continue
            print(f"  round {rnd + 1}/{a.rounds} {name:>11}: {r['events']:>9} events, run {r['wall_s']:7.2f} s, "
                  f"set-up {r['setup_s']:5.2f} s, cpu {r['cpu_s']:7.2f} s", file=sys.stderr)
    med = {k: {f: h.median(x[f] for x in v) for f in ("wall_s", "setup_s", "total_s", "cpu_s", "run_cpu_s", "sim_cpu_s")}
           for k, v in runs.items()}
    last = {k: v[-1] for k, v in runs.items()}
    rate = {k: h.ratio(last[k]["events"], med[k]["wall_s"]) for k in runs}
    cores = os.cpu_count() or 1
    what = f"{a.app} {a.args}" if a.app != "allreduce" else f"allreduce of {a.nbytes} B x {a.iters} iterations"
    if a.jobs > 1:
        where = f"{a.jobs} concurrent jobs of {a.ranks} ranks (one per node, random nodes)"
    else:
        where = f"{a.ranks} ranks (one per node, {a.placement})"
    load1 = os.getloadavg()
    print(f"{what} on {where} of {a.machine}; median of {a.rounds} round(s); {cores} cores; "
          f"load average {load0[0]:.2f} before, {load1[0]:.2f} after")
    hdr = (f"{'config':<14}{'events':>10}{'run s':>9}{'cpu s':>9}{'run cpu s':>10}{'sim cpu s':>10}{'us/msg':>9}{'set-up s':>10}"
           f"{'events/s':>12}{'vs ideal':>10}{'cpu vs packet':>14}{'sim runtime':>14}")
    print(hdr)
    print("-" * len(hdr))
    rows = {}
    for k in runs:
        r = last[k]
        vs = h.ratio(med[k]["wall_s"], med["ideal" + (BASE if k.endswith(BASE) else "")]["wall_s"])
        pk = "packet" + (BASE if k.endswith(BASE) else "")
        cvp = h.ratio(med[k]["cpu_s"], med[pk]["cpu_s"]) if pk in med else float("nan")
        per_msg = h.ratio(med[k]["sim_cpu_s"], r["messages"]) * 1e6
        print(f"{k:<14}{r['events']:>10}{med[k]['wall_s']:>9.2f}{med[k]['cpu_s']:>9.2f}{med[k]['run_cpu_s']:>10.2f}"
              f"{med[k]['sim_cpu_s']:>10.2f}"
              f"{per_msg:>9.1f}{med[k]['setup_s']:>10.2f}{rate[k]:>12,.0f}{vs:>10.2f}{cvp:>14.3f}"
              f"{r['runtime'] * 1e6:>11.3f} us")
        rows[k] = {"events": r["events"], "wall_s": round(med[k]["wall_s"], 3), "setup_s": round(med[k]["setup_s"], 3),
                   "cpu_s": round(med[k]["cpu_s"], 3), "run_cpu_s": round(med[k]["run_cpu_s"], 3),
                   "sim_cpu_s": round(med[k]["sim_cpu_s"], 3), "sim_cpu_us_per_msg": h.r4(per_msg), "cpu_vs_packet": h.r4(cvp),
                   "events_per_s": h.r4(rate[k]), "wall_vs_ideal": h.r4(vs), "sim_runtime_s": r["runtime"] if r["runtime"] == r["runtime"] else None,
                   "bytes_sent": r["bytes_sent"], "messages": r["messages"]}
        if r.get("timed_out"):
            print(f"{'':<14}(killed after {a.timeout:.0f} s: its cpu s is a lower bound, cpu vs packet too)")
            rows[k]["timed_out"] = True
        if k.replace(BASE, "") in ("flow", "flow q"):
            rows[k].update({f: r.get(f, 0) for f in ("flows", "flow_recomputes", "flow_touched", "flow_touched_max",
                                                      "flow_local")})
    if base:
        print(f"\nbaseline tree {base}: sim CPU per message, this tree over the baseline (medians):")
        for k in [k for k in ("ideal", "packet", "flow", "flow q") if k in runs]:
            mine, theirs = last[k], last[k + BASE]
            same = all(mine[f] == theirs[f] for f in ("runtime", "events", "bytes_sent", "messages"))
            us, us_b = rows[k]["sim_cpu_us_per_msg"], rows[k + BASE]["sim_cpu_us_per_msg"]
            rows[k]["vs_baseline_tree"] = h.r4(h.ratio(us, us_b))
            rows[k]["cpu_vs_baseline_tree"] = h.r4(h.ratio(med[k]["cpu_s"], med[k + BASE]["cpu_s"]))
            rows[k]["baseline_identical"] = same
            rows[k]["runtime_vs_baseline_tree"] = h.ratio(mine["runtime"], theirs["runtime"])
            print(f"  {k:<8}{us:9.2f} us/msg vs {us_b:9.2f} us/msg: {h.ratio(us, us_b):.3f}; whole-process cpu "
                  f"{rows[k]['cpu_vs_baseline_tree']:.3f}; simulated results identical: {same} (runtime ratio "
                  f"{rows[k]['runtime_vs_baseline_tree']!r})")
    out = {"bench": "apps", "app": a.app, "args": json.loads(a.args), "placement": a.placement, "machine": a.machine,
           "ranks": a.ranks, "jobs": a.jobs, "nbytes": a.nbytes, "iters": a.iters, "rounds": a.rounds, "cores": cores,
           "baseline": "ideal", "results": rows, "baseline_tree": base,
           "load_avg_before": round(load0[0], 2), "load_avg_after": round(load1[0], 2),
           "packet_vs_ideal_wall": rows["packet"]["wall_vs_ideal"] if "packet" in rows else None, "goal_s": 60.0,
           "packet_under_goal": med["packet"]["wall_s"] < 60.0 if "packet" in med else None}
    if "flow" in runs:
        # An upper bound where the flow run was killed (flow_timed_out).
        out["packet_cpu_over_flow_cpu"] = h.r4(h.ratio(med["packet"]["cpu_s"], med["flow"]["cpu_s"]))
        out["flow_timed_out"] = bool(last["flow"].get("timed_out"))
        out["flow_runtime_over_packet"] = h.r4(h.ratio(last["flow"]["runtime"], last["packet"]["runtime"]))
    if "flow q" in runs:
        out["flow_quantum"] = a.flow_quantum
        out["packet_cpu_over_flow_quantum_cpu"] = h.r4(h.ratio(med["packet"]["cpu_s"], med["flow q"]["cpu_s"]))
        out["flow_quantum_runtime_over_packet"] = h.r4(h.ratio(last["flow q"]["runtime"], last["packet"]["runtime"]))
    if "packet P=2" in runs:
        p2 = last["packet P=2"]
        same = all(p2[f] == last["packet"][f] for f in ("runtime", "events", "bytes_sent", "messages"))
        sp = h.ratio(med["packet"]["wall_s"], med["packet P=2"]["wall_s"])
        print(f"\nP=2 runs the packet model {sp:.2f}x as fast as the sequential run "
              f"({p2['windows']} windows, {p2['remote_events']} remote events); results identical: {same}")
        out["p2_speedup_vs_sequential"] = round(sp, 3)
        out["p2_identical"] = same
    h.emit(out)


if __name__ == "__main__":
    main()
