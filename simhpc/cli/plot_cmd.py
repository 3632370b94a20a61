"""``simhpc plot``: the figures of one or more results files."""

from __future__ import annotations

import argparse

from ..outputs import output_problem
from .common import CliError, print_json

HELP = ("draw figures of results files: wait-time CDF, utilization and queue length over time, APH and bounded "
        "slowdown by job size, network slowdown (several files on one plot), Gantt chart and link heat map (per file)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="RESULTS.h5",
                        help="results files written by simhpc run; several are compared on one plot")
    parser.add_argument("--out", default=".", metavar="DIR",
                        help="directory for the figures (default: current directory; created when missing)")
    parser.add_argument("--format", default="png", choices=("png", "pdf", "svg"),
                        help="figure file format (default png)")
    parser.add_argument("--dpi", type=int, default=120, help="resolution of png figures (default 120)")
    parser.add_argument("--json", action="store_true", help="end the output with one JSON object listing the figures")


def run(args: argparse.Namespace) -> int:
    try:
        import matplotlib
    except ImportError:
        raise CliError("simhpc plot needs matplotlib: pip install 'simhpc[plot]'") from None
    matplotlib.use("Agg")  # no display needed; this process draws to files only
    from ..plots import plot_files
    from ..results.hdf5 import read_results

    if args.dpi < 10:
        raise CliError(f"--dpi must be >= 10, got {args.dpi}")
    problem = output_problem("--out", args.out, is_dir=True)
    if problem:
        raise CliError(problem)
    results = [read_results(f) for f in args.files]
    try:
        out = plot_files(results, args.out, fmt=args.format, dpi=args.dpi, stems=args.files)
    except OSError as exc:
        raise CliError(f"cannot write figures to {args.out}: {exc.strerror or exc}") from None
    for p in out.written:
        print(p)
    for note in out.skipped:
        print(f"skipped {note}")
    if args.json:
        print_json({"figures": [str(p) for p in out.written], "skipped": out.skipped})
    return 0
