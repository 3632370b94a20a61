#!/usr/bin/env python3
"""Cost per event, per message and memory per simulated rank as a job grows.

For each rank count of ``--ranks`` (default 1,024, 4,096 and 16,384), one job of ``--app``
(default: an allreduce of 1 KiB, ``--iters`` times) with one rank per node on the Mira preset
(49,152 nodes, 5-D torus; ``--machine``), on the ``--network`` model (default ``ideal``, so
that only the kernel and the MPI layer count), each in a fresh process, ``--rounds`` times,
interleaved. Per configuration (medians):

* ``run cpu s``: CPU of ``Simulator.run`` alone (building the machine and the job excluded);
* ``us/event`` and ``us/msg``: that CPU per executed event and per point-to-point message
  sent (collectives count their messages); ``vs smallest``: us/event over the smallest job's;
* ``KiB/rank``: the process's peak resident memory minus its resident memory once the machine
  was built, per rank (everything a rank costs: its process and stack, MPI state, routes,
  events in flight); ``marginal``: the growth of the peak from the previous rank count, per
  added rank (the fixed costs cancel).

Baseline: the smallest rank count (cost per event should not grow with scale).

``--floor`` also runs, in the same rounds and at each rank count, the least a greenlet-per-rank
simulator can do per event, in a fresh process: one greenlet per rank holding a few fields,
an event heap of float events (as ``pdes.event``), and per event: pop it, switch to its rank,
which updates its fields, pushes its next event and switches back. The events run in rank
order (each rank's state in turn, the order most kind to the caches) and, as a second
figure, in random order. Columns: ``floor us/ev`` (rank order), ``random us/ev``, and
``bound``: the least ``vs smallest`` this simulator could show if its cost per event grew by
no more than the floor's (its smallest job's us/event plus the floor's growth, over its
smallest job's). ``create us`` is the CPU (user + system) of a greenlet's whole life with
nothing in it (made, switched to once, finished): the first Python frame of a greenlet gets
a frame-stack chunk of its own from the system, and its end returns it.

``--floor-shape DEPTH,OBJECTS`` (with ``--floor``) also runs, in the same rounds, a floor of a
message's shape: each rank switches ``DEPTH`` calls below its loop (a rank of the allreduce
here enters 7 frames below its collective's loop per message: ``sendrecv``, the receive, the
send, the NIC's send, the wait, ``hibernate`` and the kernel's block, 4 deep at its switch
and 10 deep in all) and touches ``OBJECTS`` small objects
of its own per event, made one of each rank in turn so that a rank's objects lie among the
other ranks' (as the MPI state, node, job part, dictionaries and path a message touches do).
Columns ``shaped us/ev``, ``shaped random`` and ``shaped bound``, as the floor's.

With
``--baseline-tree PATH`` (another checkout of simhpc, e.g. ``git worktree add /tmp/old
<commit>``), every configuration also runs from that tree's own ``scripts/bench_scale.py``,
interleaved in the same rounds, and the table adds its us/msg and the ratio of this tree's
CPU to it: a change measured side by side with the code it replaces.

Usage: ``python scripts/bench_scale.py [--ranks 1024,4096,16384] [--rounds 3] [--iters 2] [--floor [--floor-shape 6,16]]
[--app allreduce|pairs|...] [--baseline-tree PATH]``.
The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import harness as h


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover - Linux only


def child(a: argparse.Namespace, ranks: int) -> None:
    from apps.node import LaunchSpec
    from apps.platform import build_platform
    from apps.registry import bind_args
    from models.presets import get_machine

    m = get_machine(a.machine)
    if ranks > m.n_nodes:
        sys.exit(f"bench_scale: {ranks} ranks do not fit {a.machine} ({m.n_nodes} nodes) at one rank per node")
    plat = build_platform(m, a.network, seed=1, comm=None)
    app_args = {"iters": a.iters}
    if a.app == "allreduce":
        app_args["nbytes"] = a.nbytes
    args = bind_args(a.app, app_args, size=ranks)
    base = _rss_mib()
    plat.launch(LaunchSpec.build(job=1, app=a.app, args=args, rank_nodes=list(range(ranks)), report_to=plat.manager_eid))
    c0 = time.process_time()
    st = plat.sim.run()
    cpu = time.process_time() - c0
    rec = plat.shared_record(1)
    if rec.status != "ok":
        sys.exit(f"bench_scale: the job ended {rec.status}: {rec.error}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"ranks": ranks, "events": st.events, "messages": plat.net.state.messages,
                      "run_cpu_s": cpu, "base_mib": base, "peak_mib": peak}))


FLOOR_EVENTS_PER_RANK = 40  # events per rank in the floor's loop


def floor_child(ranks: int, per_rank: int, depth: int = 0, objects: int = 0) -> None:
    """The floor of ``--floor`` for ``ranks`` ranks (see the module docstring); prints one JSON line.

    A ``depth`` >= 1 gives it the shape of ``--floor-shape``: each rank switches ``depth``
    calls below its loop and touches ``objects`` small objects of its own per event.
    """
    import random
    from heapq import heappop, heappush

    from greenlet import getcurrent, greenlet

    class Ev(float):  # pdes.event.Event's shape: a float with slots
        __slots__ = ("key", "rank")

    class Rank:
        __slots__ = ("g", "sent", "got", "last", "objs")

    class Obj:
        __slots__ = ("n",)

    def block(d: int) -> None:
        if d > 1:
            block(d - 1)
            return
        back()

    def body(r: Rank) -> None:
        if not depth:
            # The plain floor's loop, as it was before shapes existed: its figures stay comparable.
            while True:
                r.sent += 1
                r.got = r.last
                back()
        objs = r.objs
        while True:
            r.sent += 1
            r.got = r.last
            for o in objs:
                o.n += 1
            block(depth)

    out: dict = {"ranks": ranks}
    for order in ("rank", "random"):
        hub = getcurrent()
        back = hub.switch
        rs = []
        for _ in range(ranks):
            r = Rank()
            r.sent = r.got = r.last = 0
            r.objs = []
            r.g = greenlet(body)
            rs.append(r)
        # Made one of each rank in turn, as the ranks' own objects are (at launch, and at
        # each message), so that a rank's objects lie apart, among the other ranks'.
        for _ in range(objects):
            for r in rs:
                o = Obj()
                o.n = 0
                r.objs.append(o)
        for r in rs:
            r.g.switch(r)
        rng = random.Random(1)
        heap: list = []

        def push(t: float, i: int) -> None:
            e = Ev(t)
            e.key = i
            e.rank = rs[i]
            heappush(heap, e)

        for i in range(ranks):
            push(i * 1e-9 if order == "rank" else rng.random(), i)
        n = per_rank * ranks
        c0 = time.process_time()
        for _ in range(n):
            e = heappop(heap)
            r = e.rank
            r.last = e.key
            r.g.switch()
            push(e + (1.0 if order == "rank" else rng.random()), e.key)
        out[f"{order}_us_per_event"] = (time.process_time() - c0) / n * 1e6
        for r in rs:
            r.g.throw()  # end every rank (GreenletExit) before the next order
    if depth:
        print(json.dumps(out))  # (a greenlet's life is the plain floor's figure)
        return
    gs = [greenlet(lambda: None) for _ in range(ranks)]
    # (getrusage, not os.times: its clock ticks are 10 ms)
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    for g in gs:
        g.switch()
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    out["create_us"] = (t1.ru_utime + t1.ru_stime - t0.ru_utime - t0.ru_stime) / ranks * 1e6
    out["create_sys_us"] = (t1.ru_stime - t0.ru_stime) / ranks * 1e6
    print(json.dumps(out))


def main() -> None:
    ap = h.parser(__doc__, rounds=3)
    ap.add_argument("--ranks", default="1024,4096,16384")
    ap.add_argument("--machine", default="mira")
    ap.add_argument("--app", default="allreduce")
    ap.add_argument("--network", default="ideal")
    ap.add_argument("--nbytes", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--baseline-tree", default=None,
                    help="another checkout of simhpc to run side by side (its scripts/bench_scale.py)")
    ap.add_argument("--floor", action="store_true",
                    help="also measure the greenlet-per-rank floor at each rank count (see above)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--floor-shape", default=None, metavar="DEPTH,OBJECTS",
                    help="with --floor, also a floor of a message's shape: each rank switches DEPTH calls below its loop "
                         "and touches OBJECTS small objects of its own per event (see above)")
    ap.add_argument("--floor-child", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a, a.child)
        return
    shape = _shape(a.floor_shape) if a.floor_shape is not None else None
    if a.floor_child:
        floor_child(a.floor_child, FLOOR_EVENTS_PER_RANK, *(shape or (0, 0)))
        return
    if shape is not None and not a.floor:
        sys.exit("bench_scale: --floor-shape needs --floor")
    sizes = sorted(int(r) for r in a.ranks.split(","))
    opts = ["--machine", a.machine, "--app", a.app, "--network", a.network, "--nbytes", str(a.nbytes), "--iters", str(a.iters)]
    trees = {"this": [sys.executable, __file__] + opts}
    if a.baseline_tree:
        other = Path(a.baseline_tree).resolve() / "scripts" / "bench_scale.py"
        if not other.is_file():
            sys.exit(f"bench_scale: --baseline-tree {a.baseline_tree}: no scripts/bench_scale.py there")
        trees["baseline"] = [sys.executable, str(other)] + opts
    if a.floor:
        trees["floor"] = [sys.executable, __file__]
    if shape is not None:
        trees["shaped"] = [sys.executable, __file__, "--floor-shape", f"{shape[0]},{shape[1]}"]
    all_runs: dict[str, dict[int, list[dict]]] = {t: {n: [] for n in sizes} for t in trees}
    runs = all_runs["this"]
    for rnd in range(a.rounds):
        for n in sizes:
            for tree, cmd in trees.items():
                floorish = tree in ("floor", "shaped")
                p = subprocess.run(cmd + ["--floor-child" if floorish else "--child", str(n)],
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    sys.exit(f"bench_scale: {n} ranks failed ({tree} tree):\n{p.stderr}")
                r = h.last_json(p.stdout)
                all_runs[tree][n].append(r)
                if floorish:
                    label = "floor" if tree == "floor" else "shaped floor"
                    print(f"  round {rnd + 1}/{a.rounds} {n:>6} ranks, {label}: {r['rank_us_per_event']:.3f} us/event "
                          f"(random order {r['random_us_per_event']:.3f})", file=sys.stderr)
                    continue
                print(f"  round {rnd + 1}/{a.rounds} {n:>6} ranks, {tree} tree: {r['run_cpu_s']:.2f} s run CPU, "
                      f"peak {r['peak_mib']:.0f} MiB", file=sys.stderr)
    rows, out = [], {}
    first = None
    prev = None
    for n in sizes:
        cpu = h.median(r["run_cpu_s"] for r in runs[n])
        ev, msgs = runs[n][0]["events"], runs[n][0]["messages"]
        peak = h.median(r["peak_mib"] for r in runs[n])
        base = h.median(r["base_mib"] for r in runs[n])
        per_ev = cpu / ev * 1e6
        first = per_ev if first is None else first
        kib = (peak - base) * 1024 / n
        marginal = (peak - prev[1]) * 1024 / (n - prev[0]) if prev else float("nan")
        prev = (n, peak)
        out[str(n)] = {"events": ev, "messages": msgs, "run_cpu_s": h.r4(cpu), "us_per_event": h.r4(per_ev),
                       "us_per_message": h.r4(cpu / msgs * 1e6), "per_event_vs_smallest": h.r4(per_ev / first),
                       "peak_mib": h.r4(peak), "kib_per_rank": h.r4(kib), "marginal_kib_per_rank": h.r4(marginal)}
        row = [f"{n:,}", f"{ev:,}", f"{msgs:,}", f"{cpu:.2f}", f"{per_ev:.2f}", f"{cpu / msgs * 1e6:.2f}",
               f"{per_ev / first:.2f}", f"{peak:.0f}", f"{kib:.1f}", "-" if prev[0] == sizes[0] else f"{marginal:.1f}"]
        if "baseline" in trees:
            b = all_runs["baseline"][n]
            bcpu = h.median(r["run_cpu_s"] for r in b)
            bmsgs = b[0]["messages"]
            # Per-round ratios (this / baseline, same round): robust to the load drifting.
            ratio = h.median(x["run_cpu_s"] / y["run_cpu_s"] for x, y in zip(runs[n], b))
            out[str(n)].update({"baseline_run_cpu_s": h.r4(bcpu), "baseline_us_per_message": h.r4(bcpu / bmsgs * 1e6),
                                "baseline_events": b[0]["events"], "cpu_vs_baseline": h.r4(ratio)})
            row += [f"{bcpu / bmsgs * 1e6:.2f}", f"{ratio:.2f}"]
        if "floor" in trees:
            fl, bound, fvs = _floor_figures(all_runs["floor"], sizes[0], n, first)
            fl.update({k: h.median(r[k] for r in all_runs["floor"][n]) for k in ("create_us", "create_sys_us")})
            out[str(n)].update({"floor_us_per_event": h.r4(fl["rank_us_per_event"]),
                                "floor_random_us_per_event": h.r4(fl["random_us_per_event"]),
                                "floor_vs_smallest": h.r4(fvs), "bound_vs_smallest": h.r4(bound),
                                "greenlet_life_us": h.r4(fl["create_us"]), "greenlet_life_sys_us": h.r4(fl["create_sys_us"])})
            row += [f"{fl['rank_us_per_event']:.3f}", f"{fl['random_us_per_event']:.3f}", f"{bound:.2f}",
                    f"{fl['create_us']:.1f} ({fl['create_sys_us']:.1f} sys)"]
        if "shaped" in trees:
            sr, sbound, svs = _floor_figures(all_runs["shaped"], sizes[0], n, first)
            out[str(n)].update({"shaped_us_per_event": h.r4(sr["rank_us_per_event"]),
                                "shaped_random_us_per_event": h.r4(sr["random_us_per_event"]),
                                "shaped_vs_smallest": h.r4(svs), "shaped_bound_vs_smallest": h.r4(sbound)})
            row += [f"{sr['rank_us_per_event']:.3f}", f"{sr['random_us_per_event']:.3f}", f"{sbound:.2f}"]
        rows.append(row)
    size = f"{a.nbytes} B" if a.app == "allreduce" else "its default size"
    print(f"{a.app} ({size}, {a.iters} iterations) on {a.machine}, {a.network} network, one rank per node; "
          f"medians of {a.rounds} round(s); baseline: the smallest job"
          + (f"; side by side with the tree at {a.baseline_tree}" if a.baseline_tree else ""))
    heads = ["ranks", "events", "messages", "run cpu s", "us/event", "us/msg", "vs smallest", "peak MiB", "KiB/rank", "marginal"]
    if "baseline" in trees:
        heads += ["baseline us/msg", "cpu vs baseline"]
    if a.floor:
        heads += ["floor us/ev", "random us/ev", "bound", "create us"]
    if shape is not None:
        heads += ["shaped us/ev", "shaped random", "shaped bound"]
    print(h.table(rows, heads))
    h.emit({"bench": "scale", "machine": a.machine, "app": a.app, "network": a.network, "iters": a.iters,
            "rounds": a.rounds, "baseline": f"{sizes[0]} ranks", "baseline_tree": a.baseline_tree,
            "floor_events_per_rank": FLOOR_EVENTS_PER_RANK if a.floor else None,
            "floor_shape": {"depth": shape[0], "objects": shape[1]} if shape is not None else None, "results": out})


def _floor_figures(runs: dict[int, list[dict]], smallest: int, n: int, first: float) -> tuple[dict, float, float]:
    """A floor's medians at ``n`` ranks (us per event, rank and random order), its bound (this
    simulator's smallest us/event ``first`` plus the floor's growth, over ``first``) and its
    own growth over the smallest rank count."""
    fl = {k: h.median(r[k] for r in runs[n]) for k in ("rank_us_per_event", "random_us_per_event")}
    f0 = h.median(r["rank_us_per_event"] for r in runs[smallest])
    return fl, (first + fl["rank_us_per_event"] - f0) / first, fl["rank_us_per_event"] / f0


def _shape(text: str) -> tuple[int, int]:
    """``--floor-shape``'s DEPTH,OBJECTS: a depth >= 1 and a number of objects >= 0."""
    try:
        depth, objects = (int(x) for x in text.split(","))
    except ValueError:
        sys.exit(f"bench_scale: --floor-shape {text!r}: give DEPTH,OBJECTS, two whole numbers (e.g. 6,16)")
    if depth < 1 or objects < 0:
        sys.exit(f"bench_scale: --floor-shape {text!r}: DEPTH must be >= 1 and OBJECTS >= 0")
    return depth, objects


if __name__ == "__main__":
    main()
