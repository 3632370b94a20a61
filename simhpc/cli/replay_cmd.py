"""``simhpc replay``: an SWF trace through a scheduler (pyss/AccaSim style)."""

from __future__ import annotations

import argparse
from typing import Any

from pdes.validate import check_seed

from ..outputs import output_problem
from .common import CliError, print_json, table, positive_int

HELP = "replay an SWF workload trace through a scheduler and print its metrics"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from scheduler.allocators import ALLOCATORS
    from scheduler.backfill import BACKFILLS
    from scheduler.estimates import ESTIMATES
    from scheduler.ordering import ORDERINGS

    parser.add_argument("trace", metavar="TRACE", help="an SWF trace (.swf or .swf.gz), or builtin:NAME for a trace shipped with simhpc")
    parser.add_argument("--nodes", type=int, metavar="N", help="machine size in nodes (default: from the trace header)")
    parser.add_argument("--cores-per-node", type=int, metavar="C",
                        help="processes per node (default 1: an SWF processor count is a node count)")
    parser.add_argument("--machine", metavar="PRESET", help="a machine preset (sets nodes, cores per node, topology)")
    parser.add_argument("--allocator", default="firstfree", metavar="NAME",
                        help=f"node allocator: {', '.join(ALLOCATORS)} (default firstfree)")
    parser.add_argument("--allocator-option", action="append", default=[], metavar="KEY=VALUE",
                        help="an allocator option (repeatable), e.g. ordering=hilbert or gap=2; values are JSON or strings")
    parser.add_argument("--order", default="fcfs", metavar="POLICY",
                        help=f"queue ordering: {'|'.join(ORDERINGS)} (default fcfs)")
    parser.add_argument("--backfill", default="easy", metavar="POLICY",
                        help=f"reservation/backfill: {'|'.join(BACKFILLS)} (default easy)")
    parser.add_argument("--backfill-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a backfill option (repeatable), e.g. depth=4 (reservations kept by easy and easy-sjbf)")
    parser.add_argument("--estimate", default="user", metavar="MODEL",
                        help=f"runtime estimates the scheduler plans with: {'|'.join(ESTIMATES)} (default user: the "
                             "trace's request; kills stay at the request)")
    parser.add_argument("--estimate-option", action="append", default=[], metavar="KEY=VALUE",
                        help="an estimate model option (repeatable), e.g. f=1 (fmodel) or history=3 (recent)")
    parser.add_argument("--no-kill", action="store_true",
                        help="let jobs run past their requested time instead of killing them")
    parser.add_argument("--strict", action="store_true",
                        help="a job larger than the machine is an error (default: rejected and counted)")
    parser.add_argument("--skip-malformed", action="store_true",
                        help="skip and count malformed trace lines (default: stop at the first)")
    parser.add_argument("--limit", type=positive_int, metavar="N", help="replay only the first N jobs")
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument("--tau", default="10", metavar="SECONDS",
                        help="bounded-slowdown threshold: max(response / max(run, tau), 1) (default 10 s; e.g. 60 or 1min)")
    parser.add_argument("--load-factor", type=float, default=1.0, metavar="F",
                        help="divide the trace's inter-arrival times by F (> 0; 1.2 = 20%% more load), for load sweeps")
    parser.add_argument("--skip-first", type=int, default=0, metavar="N",
                        help="leave the first N jobs (submission order) out of the measured figures (warm-up); "
                             "they are still simulated")
    parser.add_argument("--skip-last", type=int, default=0, metavar="N",
                        help="leave the last N jobs out of the measured figures (cool-down)")
    parser.add_argument("--window", metavar="START:END",
                        help="measure only the jobs submitted in [START, END) (simulated time, e.g. 2d:30d; END may "
                             "be left empty)")
    parser.add_argument("--jobs-out", metavar="FILE.csv", help="write the per-job table as CSV")
    parser.add_argument("--out", metavar="RESULTS.h5",
                        help="write the results file (the schema of simhpc run: simhpc show / plot read it); an "
                             "existing regular file is replaced, a symbolic link to one is written through, "
                             "anything else (a device, a FIFO) is refused")
    parser.add_argument("--swf-out", metavar="FILE.swf",
                        help="write the simulated schedule as SWF (simulated wait and run time; status 1 "
                             "completed, 0 killed or failed, 5 rejected)")
    parser.add_argument("--json", action="store_true", help="end the output with one JSON object of the figures")


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.4g} s"
    if seconds < 7200:
        return f"{seconds / 60:.4g} min"
    if seconds < 172800:
        return f"{seconds / 3600:.4g} h"
    return f"{seconds / 86400:.4g} d"


def _opts(options: dict[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in options.items()) + ")" if options else ""


def parse_options(items: list[str], flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` strings into a dict; a value is JSON when it parses, else a string."""
    import json

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"{flag} {item!r}: write KEY=VALUE, e.g. {flag} ordering=hilbert")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def run(args: argparse.Namespace) -> int:
    from scheduler.errors import SwfMachineSizeError

    from ..trace_replay import replay
    from .show_cmd import reasons_text

    from ..traces import resolve_trace
    from models.units import parse_time

    if args.nodes is not None and args.nodes < 1:
        raise CliError(f"--nodes must be >= 1, got {args.nodes}; give the machine size in nodes, e.g. --nodes 128")
    if args.cores_per_node is not None and args.cores_per_node < 1:
        raise CliError(f"--cores-per-node must be >= 1, got {args.cores_per_node}")
    check_seed("--seed", args.seed, error=CliError)
    for flag, path, example in (("--out", args.out, "results.h5"), ("--swf-out", args.swf_out, "schedule.swf")):
        problem = output_problem(flag, path, example=example) if path is not None else None
        if problem:
            raise CliError(problem)
    try:
        res = replay(
            str(resolve_trace(args.trace)),
            nodes=args.nodes,
            cores_per_node=args.cores_per_node,
            machine=args.machine,
            allocator=args.allocator,
            order=args.order,
            backfill=args.backfill,
            kill_overrun=not args.no_kill,
            seed=args.seed,
            strict=args.strict,
            skip_malformed=args.skip_malformed,
            limit=args.limit,
            allocator_options=parse_options(args.allocator_option, "--allocator-option"),
            backfill_options=parse_options(args.backfill_option, "--backfill-option"),
            estimate=args.estimate,
            estimate_options=parse_options(args.estimate_option, "--estimate-option"),
            tau=parse_time(args.tau, what="--tau"),
            load_factor=args.load_factor,
            skip_first=args.skip_first,
            skip_last=args.skip_last,
            window=args.window,
            out=args.out,
            swf_out=args.swf_out,
        )
    except SwfMachineSizeError as exc:
        # The trace header gives no machine size: name this command's options for it.
        raise CliError(str(exc.naming("--nodes N or --machine PRESET"))) from None
    s = res.summary()
    rows: list[list[Any]] = [
        ["trace", s["trace"]],
        ["machine", f"{s['nodes']} nodes x {s['cores_per_node']} core(s)" + (f" ({s['machine']})" if s["machine"] else "")],
        ["scheduler", f"order={s['order']} backfill={s['backfill']}{_opts(s['backfill_options'])} "
                      f"allocator={s['allocator']}"],
        ["estimates", f"{s['estimate']}{_opts(s['estimate_options'])}, "
                      + ("kills at the request" if s["kill_overrun"] else "no kills")],
        ["jobs run", s["jobs"]],
        ["rejected", s["rejected"]],
        ["not simulated", reasons_text(s["rejected_by_reason"])],
        ["killed (walltime)", s["killed"]],
        ["makespan", _fmt_time(s["makespan"])],
        ["mean wait", _fmt_time(s["mean_wait"])],
        ["max wait", _fmt_time(s["max_wait"])],
        ["mean bounded slowdown", s["mean_bounded_slowdown"] if s["mean_bounded_slowdown"] is not None else "-"],
        ["wait p50 / p90 / p99", " / ".join(_fmt_time(s[f"wait_p{p}"]) for p in (50, 90, 99))],
        ["bounded slowdown p50/p90/p99",
         " / ".join("-" if s[f"bounded_slowdown_p{p}"] is None else f"{s[f'bounded_slowdown_p{p}']:.4g}"
                    for p in (50, 90, 99)) + f" (tau {s['tau']:g} s)"],
        ["utilization", f"{100 * s['utilization']:.2f} %"],
        ["loss of capacity", f"{100 * s['loss_of_capacity']:.2f} %"],
        ["wall time", f"{s['wall_s']:.3g} s (simulation {s['sim_wall_s']:.3g} s)"],
    ]
    if s["load_factor"] != 1.0:
        rows.insert(3, ["load factor", f"{s['load_factor']:g} (inter-arrival times / {s['load_factor']:g})"])
    if "trim" in s:
        rows.insert(4, ["measured", f"{s['measured_jobs']} jobs ({res.trim.describe()}), submitted "
                        f"{_fmt_time(s['measure_start'])} .. {_fmt_time(s['measure_end'])}"])
    rep = res.swf_report
    if rep is not None:
        filt = {k: v for k, v in rep.as_dict().items() if v and k not in ("lines", "kept")}
        rows.insert(4, ["trace filter", f"{rep.lines} lines, {rep.kept} kept"
                        + (": " + ", ".join(f"{k} {v}" for k, v in filt.items()) if filt else "")])
    print(table(rows, ["figure", "value"]))
    if res.placement is not None and res.placement["bins"]:
        print()
        print(table([[b["nodes"], b["jobs"], b["mean_aph"], b["mean_mind"], b["mean_diameter"], b["mean_span"]]
                     for b in res.placement["bins"]],
                    ["job nodes", "jobs", "mean APH", "mean MIND", "mean diameter", "mean span"]))
    for key, title in (("by_size", "job nodes"), ("by_run", "run time")):
        cols = s["classes"].get(key)
        if cols and cols["class"]:
            print()
            print(table([[c, n, _fmt_time(w), _fmt_time(w90), f"{b:.4g}", f"{b90:.4g}"]
                         for c, n, w, w90, b, b90 in zip(cols["class"], cols["jobs"], cols["mean_wait"],
                                                         cols["wait_p90"], cols["mean_bounded_slowdown"],
                                                         cols["bounded_slowdown_p90"])],
                        [title, "jobs", "mean wait", "p90 wait", "mean bsld", "p90 bsld"]))
    if args.jobs_out:
        try:
            n = res.table.to_csv(args.jobs_out)
        except OSError as exc:
            raise CliError(f"cannot write --jobs-out {args.jobs_out!r}: {exc.strerror or exc}") from None
        print(f"wrote {n} job rows to {args.jobs_out}")
    if args.out is not None:
        print(f"results written to {args.out}")
    if args.swf_out is not None:
        print(f"simulated schedule written to {args.swf_out}")
    if args.json:
        if args.out is not None:
            s["results"] = args.out
        print_json(s)
    return 0

