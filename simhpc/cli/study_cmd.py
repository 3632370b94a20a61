"""``simhpc study``: run an interference study (a TOML file with a ``[study]`` table).

Prints one row per number of background jobs (slowdown of the foreground against its
runtime alone, over the seeds), writes the results file (``--out``, schema
``simhpc-study``) and the figure (``--plot DIR``). Under ``mpirun -n P`` the runs are dealt
out over the ranks (or each run is parallel, ``study.parallel = "simulation"``); rank 0
prints and writes.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from ..outputs import output_problem
from .common import CliError, print_json, table

HELP = "run an interference study: a foreground job among background jobs, against its runtime alone and ideal"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", metavar="STUDY.toml", help="study file (see docs/studies.md)")
    parser.add_argument("--out", metavar="FILE.h5",
                        help="write the results (HDF5, schema simhpc-study) to this file; an existing regular file "
                             "is replaced, a symbolic link to one is written through, anything else is refused")
    parser.add_argument("--plot", metavar="DIR", help="draw the figure (slowdown and runtime vs background jobs) "
                                                      "as DIR/<study name>.png (DIR is created when missing)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="override a value of the study file, e.g. --set study.seeds=5 or "
                             "--set study.allocator=t123 (repeatable)")
    parser.add_argument("--hot", action="store_true", help="also list the busiest links the foreground crossed, per run")
    parser.add_argument("--progress", action="store_true", help="print a line per finished run (stderr)")
    parser.add_argument("--print-config", action="store_true", help="print the study as TOML and exit")
    parser.add_argument("--json", action="store_true", help="end the output with one JSON object of the figures")


def _output_problem(args: argparse.Namespace) -> str | None:
    """Why --out or --plot cannot be written (None when both can)."""
    if args.out is not None:
        problem = output_problem("--out", args.out, example="study.h5")
        if problem:
            return problem
    if args.plot is not None:
        return output_problem("--plot", args.plot, is_dir=True)
    return None


def run(args: argparse.Namespace) -> int:
    from pdes.parallel import world_comm

    from ..studies import dumps_study, load_study, run_study

    study = load_study(args.study, args.overrides)
    if args.print_config:
        sys.stdout.write(dumps_study(study))
        return 0
    comm = world_comm()
    rank = comm.rank if comm is not None else 0
    # Checked on rank 0 and shared, so that every rank stops (none waits for rank 0 in the runs).
    problem = _output_problem(args) if rank == 0 else None
    if comm is not None and comm.size > 1:
        problem = comm.bcast(problem, root=0)
    if problem:
        raise CliError(problem)
    res = run_study(study, comm=comm, progress=args.progress)
    if rank != 0:
        return 0
    fg = res.foreground
    print(f"study {res.name} ({res.mode}): {fg['app']} x {fg['ranks']} ranks on {res.machine['name']} "
          f"({res.machine['nodes']} nodes), {fg['allocator']} placement, {res.n_runs} runs on {res.info['ranks']} rank(s) "
          f"in {res.info['wall_s']:.1f} s")
    print(table(res.table_rows(), list(res.TABLE_HEADERS)))
    bad = [(int(k), int(s), st, r) for k, s, st, r in zip(res.runs["k"], res.runs["seed"], res.runs["status"],
                                                          res.runs["reason"]) if st != "ok"]
    for k, s, st, r in bad[:10]:
        print(f"run k={k} seed={s}: {st}: {r}")
    if len(bad) > 10:
        print(f"... and {len(bad) - 10} more runs not ok")
    if args.hot:
        rows = []
        for i in range(res.n_runs):
            for h in res.hot_links_of(i):
                rows.append([int(res.runs["k"][i]), int(res.runs["seed"][i]), h["rank"], h["link"],
                             f"{h['src']}->{h['dst']}", h["kind"], f"{h['utilization']:.3f}",
                             f"{h['utilization_alone']:.3f}", f"{h['fg_bytes']:.4g}", f"{h['other_bytes']:.4g}"])
        print(table(rows, ["k", "seed", "#", "link", "vertices", "kind", "util", "util alone", "fg bytes",
                           "other bytes"]))
    s = res.summary()
    if args.out is not None:
        from ..studies.hdf5 import write_study

        write_study(res, args.out)
        print(f"results written to {args.out}")
        s["results"] = args.out
    if args.plot is not None:
        from ..outputs import ensure_folder
        from ..studies.plot import plot_study

        ensure_folder("--plot", args.plot)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", res.name) or "study"
        out = plot_study(res, os.path.join(args.plot, f"{name}.png"))
        print(f"figure written to {out}")
        s["figure"] = str(out)
    if args.json:
        print_json(s)
    return 0
