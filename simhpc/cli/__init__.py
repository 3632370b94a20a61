"""The ``simhpc`` command line: one console script with subcommands.

Each subcommand lives in its own module of this package and exposes ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``. User mistakes raise :class:`CliError`
(or one of the package's validation errors) and are printed to stderr with exit status 2,
never as a bare traceback.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys

from .common import CliError, terminate_as_interrupt, user_errors
from .stdout import StdoutError, finish, guarded_stdout, lost

# Subcommand name -> module (imported only when used, so `simhpc machine` stays fast).
SUBCOMMANDS = {
    "run": "simhpc.cli.run_cmd",
    "replay": "simhpc.cli.replay_cmd",
    "app": "simhpc.cli.app_cmd",
    "machine": "simhpc.cli.machine_cmd",
    "show": "simhpc.cli.show_cmd",
    "plot": "simhpc.cli.plot_cmd",
    "study": "simhpc.cli.study_cmd",
    "traffic": "simhpc.cli.traffic_cmd",
}


def _available() -> dict[str, object]:
    mods = {}
    for name, modname in SUBCOMMANDS.items():
        try:
            mods[name] = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            if exc.name != modname:
                raise
    return mods


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simhpc",
        description="simhpc: parallel discrete-event simulation of HPC schedulers, MPI applications and networks",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"simhpc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in _available().items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run, _take_extra=getattr(mod, "take_extra", None))
    return parser


def main(argv: list[str] | None = None) -> int:
    from .notices import warnings_as_lines

    parser = build_parser()
    # parse_known_args: a subcommand may take positional arguments after its options (the app
    # arguments of `simhpc app NAME --ranks 8 nbytes=1KiB`), which argparse leaves over.
    args, extra = parser.parse_known_args(argv)
    if extra:
        take = getattr(args, "_take_extra", None)
        rest = take(args, extra) if take is not None else extra
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if getattr(args, "_run", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        with guarded_stdout(), terminate_as_interrupt(), user_errors() as status:
            with warnings_as_lines():
                status.code = args._run(args)
    except BrokenPipeError:
        # The reader went away (`simhpc machine cab | head`): not an error of ours. Point
        # stdout at devnull so that the interpreter's final flush does not fail again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except StdoutError as exc:
        # Standard output that cannot be written (`> /dev/full`): one line, status 1.
        return lost(exc.error)
    # Flushed here, not at the interpreter's exit, so that a failure is reported as one line.
    return finish(status.code)


def console() -> int:
    """The ``simhpc`` console script: :func:`main` in a process that ends when it returns."""
    code = main()
    # The process ends now, and what the command built (a simulator holding every rank,
    # node and link of a machine, all in reference cycles) is garbage the operating system
    # takes back whole. Frozen, it is left out of the interpreter's last collection, which
    # would otherwise walk and free it object by object: about 0.2 s of CPU after a run on
    # Cielo's 9,216 nodes (scripts/bench_apps.py). Files and outputs are closed by then;
    # main() called in-process (tests, notebooks) does not freeze anything.
    gc.freeze()
    return code


__all__ = ["CliError", "main", "console", "build_parser"]
