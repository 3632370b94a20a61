"""``simhpc run``: run an experiment file (or the bundled default) and write its results."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import CliError, print_json, table

HELP = "run an experiment (a TOML file, or the bundled default) and write its results (HDF5)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("experiment", nargs="?", metavar="EXP.toml",
                        help="experiment file (default: the bundled default experiment)")
    parser.add_argument("--out", metavar="RESULTS.h5", help="results file (default: the experiment's output.path)")
    parser.add_argument("--no-out", action="store_true", help="do not write a results file")
    parser.add_argument("--seed", type=int, help="override the experiment's seed")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="override a value of the experiment, e.g. --set scheduler.allocator=random "
                             "or --set workload.jobs=50 (repeatable)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--print-config", action="store_true", help="print the experiment as TOML and exit")
    parser.add_argument("--json", action="store_true", help="end the output with one JSON object of the figures")


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "-"
    if unit == "time":
        from models.units import format_time

        return format_time(float(v))
    if unit == "%":
        return f"{100 * float(v):.2f} %"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def summary_rows(s: dict[str, Any]) -> list[list[Any]]:
    """The summary table rows shared by ``run`` and ``show``."""
    rows = [
        ["experiment", s.get("name")],
        ["machine", f"{s.get('machine')} ({s.get('nodes')} nodes)"],
        ["jobs", f"{s.get('jobs')} ({s.get('jobs_run')} ran, {s.get('rejected')} rejected, "
                 f"{s.get('killed')} killed, {s.get('failed')} failed; {s.get('app_jobs')} app jobs)"],
        ["makespan", _fmt(s.get("makespan"), "time")],
        ["utilization", _fmt(s.get("utilization"), "%")],
        ["loss of capacity", _fmt(s.get("loss_of_capacity"), "%")],
        ["mean wait", _fmt(s.get("mean_wait"), "time")],
        ["max wait", _fmt(s.get("max_wait"), "time")],
        ["mean bounded slowdown", _fmt(s.get("mean_bounded_slowdown"))],
        ["mean network slowdown", _fmt(s.get("mean_network_slowdown"))],
        ["network", f"{s.get('network_model')} (max queueing delay {_fmt(s.get('max_queue_delay'), 'time')})"],
        ["events", f"{s.get('events')} on {s.get('ranks')} rank(s)"],
        ["wall time", _fmt(s.get("wall_s"), "time")],
    ]
    return rows


def run(args: argparse.Namespace) -> int:
    from ..experiment import default_experiment_text, dumps, load, loads
    from ..experiment.runner import run_experiment
    from pdes.parallel import world_comm

    overrides = list(args.overrides)
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    if args.experiment:
        exp = load(args.experiment, overrides)
    else:
        exp = loads(default_experiment_text(), source="<default experiment>", overrides=overrides)
    if args.print_config:
        sys.stdout.write(dumps(exp))
        return 0
    out = None if args.no_out else (args.out or exp.output.path)
    comm = world_comm()
    rank = comm.rank if comm is not None else 0
    if out is not None and rank == 0:
        _check_writable(out)
    res = run_experiment(exp, comm=comm, progress=False if args.quiet else None)
    if rank != 0:
        return 0
    assert res is not None
    if out is not None:
        from ..results.hdf5 import write_results

        write_results(res, out)
    s = res.summary()
    print(table(summary_rows(s), ["figure", "value"]))
    if out is not None:
        print(f"results written to {out}")
    if args.json:
        if out is not None:
            s["results"] = out
        print_json(s)
    return 0


def _check_writable(path: str) -> None:
    import os

    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise CliError(f"--out {path!r}: the folder {d!r} does not exist")
    if not os.access(d, os.W_OK):
        raise CliError(f"--out {path!r}: the folder {d!r} is not writable")
