#!/usr/bin/env python3
"""Network transport speed: the packet and flow models against the ideal model, sequential and P = 2.

Two workloads:

* ``a2a-torus``: all-to-all among the 64 nodes of a 4x4x4 torus, 64 KiB per pair, every
  message sent at t = 0 (the NICs interleave them round-robin);
* ``rd-fattree``: a recursive-doubling exchange (allreduce-like: round k+1 starts when the
  round-k message from the partner has arrived) on 1,024 nodes of the Cab fat-tree.

Each configuration runs in a fresh process (``mpirun -n 2`` for P = 2), ``--rounds`` times
interleaved; the table gives medians. "chunk hops" are link traversals of chunks (the
packet model's unit of work); the ideal model is the named baseline (one event per message).

Models, each sequential: ``packet`` (infinite buffers, the default), ``credit`` (the packet
model with ``buffers = "credit"``: finite input buffers, credit-based flow control), ``flow``
and ``ideal``; ``packet`` also under ``mpirun -n 2``. "cpu s" is the child's user + system
time (start-up included), "run cpu s" the CPU of ``Simulator.run`` alone; "cpu vs packet" is
the child's CPU over the packet model's; "us/msg" and "us/hop" are run CPU per message and per
chunk hop; "hop vs inf" is the credit model's run CPU per chunk hop over the packet model's
with infinite buffers (both cross the same routes with the same chunks). ``--quick``: one
round, no P = 2 runs.

Usage: ``python scripts/bench_network.py [--rounds 3] [--chunk 4096] [--no-mpi] [--quick]``.
The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import harness as h

WORKLOADS = ("a2a-torus", "rd-fattree")
MODELS = ("packet", "credit", "flow", "ideal")


def build_and_run(workload: str, model: str, chunk: int, comm) -> dict:
    from models.network import Network, NetworkConfig, NetworkNode, network_lookahead
    from models.presets import get_machine
    from pdes import Simulator

    if workload == "a2a-torus":
        topo = get_machine("tiny-torus").topology  # 4x4x4, one node per router
        nodes = list(range(topo.n_nodes))
        size = 64 * 1024
    else:
        topo = get_machine("cab").topology
        nodes = list(range(1024))
        size = 8 * 1024
    n = len(nodes)

    class A2A(NetworkNode):
        def go(self, _):
            me = self.node
            for k in range(1, n):
                self.net_send((me + k) % n, size, None)

    class RD(NetworkNode):
        rounds = n.bit_length() - 1

        def go(self, _):
            self.net_send(self.node ^ 1, size, 0)

        def on_message(self, src, nbytes, k, job):
            k += 1
            if k < self.rounds:
                self.net_send(self.node ^ (1 << k), size, k)

    cls = A2A if workload == "a2a-torus" else RD
    sim = Simulator(lookahead=network_lookahead(topo), comm=comm)
    if model == "credit":
        cfg = NetworkConfig(model="packet", chunk_size=chunk, buffers="credit")
    elif model == "packet":
        cfg = NetworkConfig(model=model, chunk_size=chunk)
    else:
        cfg = NetworkConfig(model=model)
    net = Network(sim, topo, cfg, node_cls=cls)
    for i in nodes:
        if sim.is_local(net.node_eid(i)):
            e = sim.entity("node", i)
            e.send(e.eid, "go", None, 0.0)
    c0 = time.process_time()
    st = sim.run()
    run_cpu = time.process_time() - c0
    ns = net.stats()
    # Chunk hops: every message of S bytes is ceil(S / C) chunks, each crossing len(route) links.
    nchunks = -(-size // chunk)
    if workload == "a2a-torus":
        pairs = [(s, (s + k) % n) for s in range(n) for k in range(1, n)]
    else:
        pairs = [(s, s ^ (1 << k)) for s in range(n) for k in range(n.bit_length() - 1)]
    hops = sum(len(topo.route(a, b)) for a, b in pairs) * nchunks
    return {
        "workload": workload, "model": model, "ranks": st.ranks, "events": st.events, "wall_s": st.wall_s,
        "sim_time": st.end_time, "chunk_hops": hops if model in ("packet", "credit") else 0, "messages": ns.messages,
        "run_cpu_s": run_cpu, "credit_stalls": ns.credit_stalls,
        "windows": st.windows, "flow_recomputes": ns.flow_recomputes, "flow_touched": ns.flow_touched,
        "flow_touched_max": ns.flow_touched_max, "flow_local": ns.flow_local,
    }


def main() -> None:
    ap = h.parser(__doc__, rounds=3)
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--no-mpi", action="store_true", help="skip the P = 2 runs")
    ap.add_argument("--quick", action="store_true", help="one round, no P = 2 runs")
    ap.add_argument("--one", nargs=2, metavar=("WORKLOAD", "MODEL"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        from pdes.parallel import world_comm

        comm = world_comm()
        res = build_and_run(a.one[0], a.one[1], a.chunk, comm)
        if comm is None or comm.rank == 0:
            h.emit(res)
        return
    if a.quick:
        a.rounds, a.no_mpi = 1, True
    h.compiled()
    configs = [(w, m, 1) for w in WORKLOADS for m in MODELS]
    mp = h.find_mpirun()
    if not a.no_mpi and mp is not None:
        configs += [(w, "packet", 2) for w in WORKLOADS]
    walls: dict[tuple, list[float]] = {}
    cpus: dict[tuple, list[float]] = {}
    run_cpus: dict[tuple, list[float]] = {}
    last: dict[tuple, dict] = {}
    for rnd in range(a.rounds):
        for cfg in configs:
            w, m, p = cfg
            cmd = [sys.executable, __file__, "--one", w, m, "--chunk", str(a.chunk)]
            if p > 1:
                cmd = [mp, "-n", str(p), *cmd]
            t0 = time.perf_counter()
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            res = h.run_json(cmd, script="bench_network")
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.setdefault(cfg, []).append(ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime)
            run_cpus.setdefault(cfg, []).append(res["run_cpu_s"])
            walls.setdefault(cfg, []).append(res["wall_s"])
            last[cfg] = res
            print(f"  round {rnd + 1}/{a.rounds} {w:<11} {m:<7} P={p}: {res['wall_s']:.3f} s "
                  f"({time.perf_counter() - t0:.1f} s with start-up)", file=sys.stderr)
    med = {c: h.median(v) for c, v in walls.items()}
    cpu = {c: h.median(v) for c, v in cpus.items()}
    rcpu = {c: h.median(v) for c, v in run_cpus.items()}
    print(f"Network transport, chunk {a.chunk} B, median of {a.rounds} round(s); cpu s: the whole child process "
          f"(every process of an mpirun), run cpu s: Simulator.run (rank 0 under mpirun)")
    hdr = (f"{'workload':<12}{'model':<8}{'P':>3}{'sim time':>12}{'events':>10}{'chunk hops':>12}{'wall s':>9}{'cpu s':>8}"
           f"{'run cpu s':>10}{'us/msg':>9}{'us/hop':>8}{'events/s':>11}{'hops/s':>11}{'vs ideal':>10}{'speedup':>9}"
           f"{'cpu vs packet':>14}{'hop vs inf':>11}")
    print(hdr)
    print("-" * len(hdr))
    rows = []
    for cfg in configs:
        w, m, p = cfg
        r = last[cfg]
        ev_s = r["events"] / med[cfg]
        hop_s = r["chunk_hops"] / med[cfg] if r["chunk_hops"] else 0.0
        vs_ideal = h.ratio(med[cfg], med[(w, "ideal", 1)])
        speedup = h.ratio(med[(w, m, 1)], med[cfg]) if (w, m, 1) in med else float("nan")
        cvp = h.ratio(cpu[cfg], cpu[(w, "packet", 1)])
        per_msg = rcpu[cfg] / r["messages"] * 1e6
        per_hop = rcpu[cfg] / r["chunk_hops"] * 1e6 if r["chunk_hops"] else float("nan")
        base_hop = rcpu[(w, "packet", 1)] / last[(w, "packet", 1)]["chunk_hops"] * 1e6
        hop_vs = h.ratio(per_hop, base_hop) if m == "credit" else float("nan")
        print(f"{w:<12}{m:<8}{p:>3}{r['sim_time'] * 1e6:>10.2f}us{r['events']:>10}{r['chunk_hops']:>12}{med[cfg]:>9.3f}"
              f"{cpu[cfg]:>8.2f}{rcpu[cfg]:>10.3f}{per_msg:>9.2f}{per_hop:>8.3f}{ev_s:>11,.0f}{hop_s:>11,.0f}"
              f"{vs_ideal:>10.1f}{speedup:>9.2f}{cvp:>14.3f}{hop_vs:>11.3f}")
        row = {"workload": w, "model": m, "ranks": p, "sim_time_s": r["sim_time"], "events": r["events"],
               "chunk_hops": r["chunk_hops"], "messages": r["messages"], "wall_s": round(med[cfg], 4),
               "cpu_s": round(cpu[cfg], 3), "run_cpu_s": round(rcpu[cfg], 4), "cpu_vs_packet": h.r4(cvp),
               "run_cpu_us_per_msg": h.r4(per_msg), "events_per_s": round(ev_s), "chunk_hops_per_s": round(hop_s),
               "wall_vs_ideal": round(vs_ideal, 2), "speedup_vs_p1": round(speedup, 3)}
        if r["chunk_hops"]:
            row["run_cpu_us_per_chunk_hop"] = h.r4(per_hop)
        if m == "credit":
            row.update({"chunk_hop_cost_vs_infinite": h.r4(hop_vs), "credit_stalls": r["credit_stalls"]})
        if m == "flow":
            row.update({k: r[k] for k in ("flow_recomputes", "flow_touched", "flow_touched_max", "flow_local")})
        rows.append(row)
    seq_hops = [r["chunk_hops_per_s"] for r in rows if r["model"] == "packet" and r["ranks"] == 1]
    credit = {r["workload"]: r["chunk_hop_cost_vs_infinite"] for r in rows if r["model"] == "credit"}
    flow = {r["workload"]: h.r4(h.ratio(1.0, r["cpu_vs_packet"])) for r in rows if r["model"] == "flow"}
    h.emit({"bench": "network", "chunk": a.chunk, "rounds": a.rounds, "baseline": "packet (infinite buffers), sequential",
            "results": rows, "min_sequential_chunk_hops_per_s": min(seq_hops),
            "credit_chunk_hop_cost_vs_infinite": credit, "packet_cpu_over_flow_cpu": flow})


if __name__ == "__main__":
    main()
