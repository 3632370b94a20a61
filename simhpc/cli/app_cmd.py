"""``simhpc app``: run one skeleton app alone on a machine and print its predicted runtime,
bytes sent and the busiest links. Works sequentially and under ``mpirun -n P``."""

from __future__ import annotations

import argparse
import ast
import sys
from typing import Any

from pdes.errors import UserError

from .common import CliError, predict_ranks_arg, prediction_text, print_json, table

HELP = "run one skeleton app alone on a machine: predicted runtime, bytes sent, per-link hot spots"
#: How a rank's error starts when the otf2 app found its trace unreplayable (apps.otf2trace.trace.TraceError).
_TRACE_ERROR = "TraceError: "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME", help="registered app (see --list)")
    parser.add_argument("app_args", nargs="*", metavar="KEY=VALUE",
                        help="app arguments after the name or at the end, e.g. nbytes=64KiB iters=3 (same as --arg)")
    parser.add_argument("--list", action="store_true", help="list the apps and their parameters")
    parser.add_argument("--machine", default="tiny-torus", help="machine preset (default: tiny-torus; see simhpc machine --list)")
    parser.add_argument("--ranks", type=int, default=None, help="number of ranks (required to run)")
    parser.add_argument("--placement", default="contiguous",
                        help="contiguous, random, or a comma-separated list of node ids (default: contiguous)")
    parser.add_argument("--network", default="packet", help="network model: packet, flow or ideal (default: packet)")
    parser.add_argument("--chunk-size", default=None, help="packet model chunk size, e.g. 4KiB")
    parser.add_argument("--flow-segment", default=None,
                        help="flow model only: messages larger than this cross the network as flows of this size, "
                             "one after the other, e.g. 1MiB (default: one flow per message)")
    parser.add_argument("--flow-quantum", default=None,
                        help="flow model only: start flows and change rates only at multiples of this time, "
                             "e.g. 1us (default: exact rates)")
    parser.add_argument("--ranks-per-node", type=int, default=None, help="ranks per node (default: the machine's cores per node)")
    parser.add_argument("--mapping", default="block", help="rank-to-node mapping: block, round_robin or topology (grid-aware for Cartesian apps; default: block)")
    parser.add_argument("--seed", type=int, default=0, help="run seed (default: 0)")
    parser.add_argument("--eager", default=None, help="eager threshold, e.g. 64KiB (default: 64KiB)")
    parser.add_argument("--algorithm", action="append", default=[], metavar="COLL=ALG",
                        help="force a collective algorithm for the whole run, e.g. allreduce=rabenseifner (repeatable)")
    parser.add_argument("--end-time", default=None, help="simulated time limit, e.g. 10s (default: none)")
    parser.add_argument("--top", type=int, default=10, help="hot links to show (default: 10)")
    parser.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                        help="an app argument (repeatable); values are Python literals or strings, e.g. nbytes=64KiB, grid=[4,4,2]")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--trace", default=None, metavar="TRACE.otf2",
                        help="the otf2 app's trace (same as trace=...); --ranks then defaults to its rank count")
    parser.add_argument("--otf2", default=None, metavar="DIR",
                        help="write an OTF2 trace of the simulated run into DIR (every rank's MPI calls at their "
                             "simulated times), for Vampir, otf2-print or the otf2 app")
    parser.add_argument("--predict-ranks", default=None, metavar="P,P,...",
                        help="run sequentially and predict how the run would parallelize on these "
                             "MPI rank counts (windows, events per window per rank, remote events, "
                             "speedup bound), e.g. 2,4,8,16")


def take_extra(args: argparse.Namespace, extra: list[str]) -> list[str]:
    """App arguments given after the options (``... --ranks 8 nbytes=1KiB``): argparse leaves
    them over; keep the KEY=VALUE ones and return the rest (reported as unrecognized)."""
    rest = []
    for item in extra:
        if not item.startswith("-") and "=" in item:
            args.app_args.append(item)
        else:
            rest.append(item)
    return rest


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _pairs(items: list[str], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CliError(f"{what} {item!r}: write KEY=VALUE")
        out[key] = _value(val.strip())
    return out


def _flow_segment(text: str, model: str) -> int:
    """``--flow-segment`` in bytes (a whole number >= 1), for the flow model only."""
    from models.units import UnitError, parse_bytes

    if model != "flow":
        raise CliError(f"--flow-segment is an option of the flow model only, got it with --network {model} "
                       "(use --network flow)")
    try:
        seg = parse_bytes(text, what="--flow-segment")
    except UnitError as exc:
        raise CliError(f"--flow-segment: {str(exc).split(': ', 1)[-1]}") from None
    if not (seg >= 1 and float(seg).is_integer()):
        raise CliError(f"--flow-segment must be a whole number of bytes >= 1, got {text!r}")
    return int(seg)


def _list_apps(as_json: bool) -> int:
    from apps import app_names, get_app

    infos = [get_app(n) for n in app_names()]
    if as_json:
        print_json({"apps": [{"name": i.name, "signature": i.signature(), "summary": i.summary,
                              "per_rank": i.per_rank} for i in infos]})
        return 0
    import textwrap

    for i in infos:
        print(i.signature())
        print(textwrap.fill(i.summary, width=92, initial_indent="    ", subsequent_indent="    "))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.list or args.name is None:
        if args.name is not None:
            raise CliError("give either --list or an app NAME, not both")
        return _list_apps(args.json)
    app_args = _pairs(list(args.app_args) + list(args.arg), "app argument")
    if args.trace is not None:
        if args.name != "otf2":
            raise CliError(f"--trace is the otf2 app's argument, not {args.name!r}'s (simhpc app otf2 --trace ...)")
        if "trace" in app_args:
            raise CliError("give the trace once: --trace or trace=..., not both")
        app_args["trace"] = args.trace
    if args.ranks is None and args.name == "otf2" and "trace" in app_args:
        from apps.otf2trace.trace import trace_ranks

        args.ranks = trace_ranks(app_args["trace"], app_args.get("job"))
    if args.ranks is None:
        raise CliError("--ranks is required to run an app")
    import warnings

    from apps import AppsError, run_app
    from apps.errors import OversubscriptionWarning
    from apps.mapping import oversubscription
    from models.presets import get_machine
    from models.network import NetworkConfig
    from models.units import parse_time
    from pdes.parallel import install_abort_hook, world_comm

    placement: Any = args.placement
    if placement not in ("contiguous", "random"):
        try:
            placement = [int(x) for x in placement.split(",") if x.strip()]
        except ValueError:
            raise CliError(f"--placement must be contiguous, random or a comma-separated list of node ids, got {args.placement!r}") from None
    net_kw: dict[str, Any] = {"model": args.network}
    if args.chunk_size is not None:
        net_kw["chunk_size"] = args.chunk_size
    if args.flow_segment is not None:
        net_kw["flow_segment"] = _flow_segment(args.flow_segment, args.network)
    if args.flow_quantum is not None:
        if args.network != "flow":
            raise CliError(f"--flow-quantum is an option of the flow model only, got it with --network {args.network} "
                           "(use --network flow)")
        net_kw["flow_quantum"] = args.flow_quantum
    network = NetworkConfig(**net_kw)
    options: dict[str, Any] = {}
    if args.eager is not None:
        from apps.node import whole_bytes

        options["eager_threshold"] = whole_bytes("--eager", args.eager, error=CliError)
    if args.end_time is not None:
        options["end_time"] = parse_time(args.end_time, what="--end-time")
    algorithms = {k: str(v) for k, v in _pairs(args.algorithm, "--algorithm").items()}
    if args.otf2 is not None:
        from apps.otf2trace.export import check_output

        check_output(args.otf2, "--otf2")
        options["otf2"] = args.otf2
    predict = predict_ranks_arg(args.predict_ranks)
    comm = world_comm()
    if predict and comm is not None and comm.size > 1:
        raise CliError("--predict-ranks runs on one rank (it predicts a parallel run); run it without mpirun")
    install_abort_hook(comm)
    rank = comm.rank if comm is not None else 0
    machine = get_machine(args.machine)
    if args.ranks_per_node is not None:
        oversubscription(args.ranks_per_node, machine.cores_per_node, what="--ranks-per-node")
    try:
        with warnings.catch_warnings():
            # Warned above, under the option's name.
            warnings.simplefilter("ignore", OversubscriptionWarning)
            res = run_app(machine, args.name, args.ranks, placement=placement, network=network,
                          ranks_per_node=args.ranks_per_node, mapping=args.mapping, seed=args.seed, comm=comm,
                          algorithms=algorithms, hot_links=args.top, app_args=app_args, predict_ranks=predict,
                          **options)
    except UserError:  # a bad app, argument or option: one line, exit status 2 (common.user_errors)
        raise
    except AppsError as exc:  # the simulated app failed (raised, deadlocked, timed out): exit status 1
        err = getattr(exc, "error", "")
        if err.startswith(_TRACE_ERROR):  # a trace the otf2 app cannot replay: bad input, one line
            if rank == 0:
                print(f"simhpc: error: {err[len(_TRACE_ERROR):]}", file=sys.stderr)
            return 2
        if rank == 0:
            print(f"simhpc: error: {exc}", file=sys.stderr)
        return 1
    if rank != 0:
        return 0
    if args.json:
        print_json(res.to_dict())
        return 0
    print(_report(res))
    if res.otf2 is not None:
        o = res.otf2
        print(f"OTF2 trace written to {o['path']} ({o['ranks']} ranks, {o['calls']} MPI calls, {o['events']} events)")
    if res.stats.predicted:
        print(prediction_text(res.stats.predicted))
    return 0



def _fmt_time(s: float) -> str:
    from models.units import format_time

    # Sub-picosecond values are rounding noise of time differences: show them as zero.
    return format_time(s if abs(s) >= 1e-12 else 0.0)


def _report(res: Any) -> str:
    from models.units import format_bytes

    n_nodes = len(res.nodes)
    args = ", ".join(f"{k}={v!r}" for k, v in res.args.items()) or "defaults"
    rows = [
        ("app", f"{res.app} ({args})"),
        ("machine", f"{res.machine}, {res.network} network model"),
        ("ranks", f"{res.ranks} on {n_nodes} node{'s' if n_nodes != 1 else ''} ({res.ranks_per_node} per node)"),
        ("predicted runtime", _fmt_time(res.runtime)),
        ("bytes sent", f"{format_bytes(res.bytes_sent)} in {res.messages} messages"),
        ("network bytes", f"{format_bytes(res.network_bytes)} (hop-bytes {format_bytes(res.hop_bytes)})"),
        ("intra-node messages", str(res.intra_node_messages)),
        ("max queueing delay", _fmt_time(res.net.max_queue_delay)),
        ("simulation", f"{res.events} events in {res.wall_s:.3g} s ({res.events_per_s:,.0f} events/s, {res.sim_ranks} rank{'s' if res.sim_ranks != 1 else ''})"),
    ]
    w = max(len(k) for k, _ in rows)
    out = [f"{k:<{w}}  {v}" for k, v in rows]
    if res.hot_links:
        out.append("")
        out.append("hot links (network links by busy time):")
        trows = [(h["link"], h["from"], h["to"], h["kind"], format_bytes(h["bytes"]), _fmt_time(h["busy_s"]),
                  "-" if h["utilization"] is None else f"{h['utilization']:.1%}", _fmt_time(h["max_queue_s"]))
                 for h in res.hot_links]
        out.append(table(trows, ["link", "from", "to", "kind", "bytes", "busy", "utilization", "max queue"]))
        if not res.net.contention:
            out.append("ideal network: no contention, so links have no utilization; busy is bytes / bandwidth "
                       "(the offered load, which may exceed the runtime)")
    else:
        out.append("")
        out.append("no traffic crossed the network")
    return "\n".join(out)
