"""``simhpc traffic``: an offered-load sweep of a synthetic traffic pattern on a machine.
Prints the accepted throughput and the latency per load; ``--plot`` draws the curves."""

from __future__ import annotations

import argparse
from typing import Any

from .common import CliError, print_json, table

HELP = "offered-load sweep of a synthetic traffic pattern: accepted throughput and latency per load"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--machine", default="tiny-torus", help="machine preset (default: tiny-torus; see simhpc machine --list)")
    parser.add_argument("--pattern", default="uniform", help="traffic pattern (default: uniform; see --list)")
    parser.add_argument("--load", default="0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9",
                        help="offered loads, fractions of injection bandwidth in (0, 1], comma-separated (default: 0.1,...,0.9)")
    parser.add_argument("--routing", default=None, help="routing of the machine's topology (default: the preset's)")
    parser.add_argument("--network", default="packet", help="network model: packet, flow or ideal (default: packet)")
    parser.add_argument("--buffers", default="infinite",
                        help="packet model buffers: infinite or credit (finite, credit flow control) (default: infinite)")
    parser.add_argument("--buffer-size", default=None,
                        help="with --buffers credit: input buffer per port and virtual channel (default: 16KiB)")
    parser.add_argument("--vcs", type=int, default=None,
                        help="with --buffers credit: virtual channels per port (default: what the routing needs)")
    parser.add_argument("--msg-bytes", default="4KiB", help="message size (default: 4KiB)")
    parser.add_argument("--duration", default="100us", help="injection time per load, simulated (default: 100us)")
    parser.add_argument("--warmup", default="20us", help="start of the measurement window (default: 20us)")
    parser.add_argument("--shift", type=int, default=None, help="the shift pattern's shift (default: half the nodes)")
    parser.add_argument("--hot-nodes", type=int, default=1, help="hotspot: number of hot nodes (default: 1)")
    parser.add_argument("--hot-fraction", type=float, default=0.1, help="hotspot: fraction of messages to them (default: 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="run seed (default: 0)")
    parser.add_argument("--plot", default=None, metavar="FILE", help="draw throughput and latency against offered load into FILE (.png, .pdf, .svg)")
    parser.add_argument("--list", action="store_true", help="list the traffic patterns")
    parser.add_argument("--json", action="store_true", help="print one JSON object (last line) instead of the table")


def _loads(text: str) -> list[float]:
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            out.append(float(part))
        except ValueError:
            raise CliError(f"--load: {part!r} is not a number; give fractions of injection bandwidth in (0, 1], "
                           "e.g. --load 0.1,0.2,0.5") from None
    return out


def _list(as_json: bool) -> int:
    from apps.traffic.patterns import PATTERNS

    if as_json:
        print_json({"patterns": [{"name": p.name, "summary": p.summary} for p in PATTERNS.values()]})
        return 0
    w = max(len(n) for n in PATTERNS)
    for p in PATTERNS.values():
        print(f"{p.name:<{w}}  {p.summary}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args.json)
    from apps.errors import AppConfigError
    from apps.traffic.sweep import check_loads, sweep
    from models.network import NetworkConfig
    from models.units import parse_time
    from pdes.parallel import install_abort_hook, world_comm

    try:
        loads = check_loads(_loads(args.load), key="--load")
    except AppConfigError as exc:
        raise CliError(str(exc)) from None
    if args.plot is not None:
        from ..plots._common import mpl

        mpl()  # a missing matplotlib is named before the sweep runs, not after
    network = NetworkConfig(model=args.network, buffers=args.buffers, buffer_size=args.buffer_size, vcs=args.vcs)
    duration = parse_time(args.duration, what="--duration")
    warmup = parse_time(args.warmup, what="--warmup")
    if not 0 <= warmup < duration:
        raise CliError(f"--warmup ({args.warmup}) must be >= 0 and shorter than --duration ({args.duration})")
    comm = world_comm()
    install_abort_hook(comm)
    rank = comm.rank if comm is not None else 0
    s = sweep(args.machine, args.pattern, loads, routing=args.routing, network=network, msg_bytes=args.msg_bytes,
              duration=args.duration, warmup=args.warmup, seed=args.seed, comm=comm, shift=args.shift,
              hot_nodes=args.hot_nodes, hot_fraction=args.hot_fraction)
    if rank != 0:
        return 0
    if args.plot is not None:
        from ..plots.traffic import traffic_curves

        traffic_curves(s).savefig(args.plot)
    if args.json:
        out = s.to_dict()
        if args.plot is not None:
            out["plot"] = args.plot
        print_json(out)
        return 0
    print(_report(s, args.plot))
    return 0


def _report(s: Any, plot: str | None) -> str:
    from models.units import format_time

    def us(t: float) -> str:
        return "-" if t != t else format_time(t)

    net = f"{s.network} network" + (f", {s.buffers} buffers" if s.buffers != "infinite" else "")
    head = (f"{s.pattern} traffic on {s.machine} ({s.nodes} nodes, {s.routing} routing, {net}); "
            f"throughput in fractions of injection bandwidth")
    rows = [(f"{p.load:.3g}", f"{p.offered:.3f}", f"{p.accepted:.3f}", us(p.latency_mean), us(p.latency_p99),
             p.messages, f"{p.wall_s:.2f}") for p in s.points]
    out = [head, table(rows, ["load", "offered", "accepted", "mean latency", "p99 latency", "messages", "wall s"])]
    if plot is not None:
        out.append(f"curves written to {plot}")
    return "\n".join(out)
