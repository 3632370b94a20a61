"""``simhpc run``: run an experiment file (or the bundled default) and write its results."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pdes.validate import check_seed

from ..outputs import output_problem
from .common import CliError, predict_ranks_arg, prediction_text, print_json

HELP = "run an experiment (a TOML file, or the bundled default) and write its results (HDF5)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("experiment", nargs="?", metavar="EXP.toml",
                        help="experiment file (default: the bundled default experiment)")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--out", metavar="RESULTS.h5",
                     help="results file (default: the experiment's output.path); an existing regular file is "
                          "replaced, a symbolic link to one is written through, anything else (a device, a FIFO) "
                          "is refused")
    out.add_argument("--no-out", action="store_true", help="do not write a results file")
    parser.add_argument("--seed", type=int, help="override the experiment's seed")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="override a value of the experiment, e.g. --set scheduler.allocator=random "
                             "or --set workload.jobs=50 (repeatable)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--parallel", default="auto", choices=("auto", "simulation", "baselines"),
                        help="under mpirun: spread the simulation over the ranks (simulation), or run it whole "
                             "on every rank and deal out only the alone/ideal baseline runs (baselines); auto: "
                             "simulation from 1,024 nodes per rank on (default: auto). Results are the same")
    parser.add_argument("--predict-ranks", default=None, metavar="P,P,...",
                        help="run on one rank and predict how the run would parallelize on these MPI rank "
                             "counts (windows, events per window per rank, remote events, speedup bound), "
                             "e.g. 2,4,8,16; recorded in the results (/run/predicted_*)")
    parser.add_argument("--otf2", default=None, metavar="DIR",
                        help="write an OTF2 trace of the simulated run into DIR (every MPI call of every rank of the "
                             "app jobs at its simulated times, one system tree node per job), for Vampir, otf2-print "
                             "or the otf2 app (job=J picks a job)")
    parser.add_argument("--print-config", action="store_true", help="print the experiment as TOML and exit")
    parser.add_argument("--json", action="store_true", help="end the output with one JSON object of the figures")


def run(args: argparse.Namespace) -> int:
    from ..experiment import ConfigError, default_experiment_text, dumps, load, loads
    from ..experiment.runner import run_experiment

    overrides = list(args.overrides)
    if args.seed is not None:
        check_seed("--seed", args.seed, error=CliError)
        overrides.append(f"seed={args.seed}")
    source = args.experiment or "<default experiment>"
    if args.experiment:
        exp = load(args.experiment, overrides)
    else:
        exp = loads(default_experiment_text(), source=source, overrides=overrides)
    if args.print_config:
        sys.stdout.write(dumps(exp))
        return 0
    out, flag = None, "--out"
    if not args.no_out:
        out, flag = (args.out, "--out") if args.out is not None else (exp.output.path, "output.path")
    predict = predict_ranks_arg(args.predict_ranks)
    comm = _world_comm()
    if predict and comm is not None and comm.size > 1:
        raise CliError("--predict-ranks runs on one rank (it predicts a parallel run); run it without mpirun")
    rank = comm.rank if comm is not None else 0
    if out is not None:
        # Checked on rank 0 and shared, so that every rank stops (none waits for rank 0 in the run).
        problem = output_problem(flag, out, example="results.h5") if rank == 0 else None
        if comm is not None:
            problem = comm.bcast(problem, root=0)
        if problem:
            raise CliError(problem)
    try:
        res = run_experiment(exp, comm=comm, progress=False if args.quiet else None, predict_ranks=predict,
                             parallel=args.parallel, otf2=args.otf2)
    except ConfigError as exc:
        # Values checked only when the run builds its parts (allocator options, the trace file).
        raise ConfigError(f"{source}: {exc}") from None
    if rank != 0:
        return 0
    assert res is not None
    if out is not None:
        from ..results.hdf5 import write_results

        write_results(res, out)
    from .show_cmd import summary_text

    s = res.summary()
    print(summary_text(s))
    if predict:
        from ..experiment.results_builder import predicted_from_run

        print(prediction_text(predicted_from_run(res.run)))
    if out is not None:
        print(f"results written to {out}")
    if args.otf2 is not None:
        print(f"OTF2 trace written to {args.otf2}")
    if args.json:
        if out is not None:
            s["results"] = out
        print_json(s)
    return 0


def _world_comm() -> Any:
    from pdes.parallel import world_comm

    try:
        return world_comm()
    except ImportError:
        raise CliError("running under mpirun needs mpi4py: pip install 'simhpc[mpi]'") from None
