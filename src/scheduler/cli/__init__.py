"""The ``simhpc`` command line: one console script with subcommands.

Each subcommand lives in its own module of this package and exposes ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``. User mistakes raise :class:`CliError`
(or one of the package's validation errors) and are printed to stderr with exit status 2,
never as a bare traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .common import CliError, user_errors

# Subcommand name -> module (imported only when used, so `simhpc machine` stays fast).
SUBCOMMANDS = {
    "run": "scheduler.cli.run_cmd",
    "replay": "scheduler.cli.replay_cmd",
    "app": "scheduler.cli.app_cmd",
    "machine": "scheduler.cli.machine_cmd",
    "show": "scheduler.cli.show_cmd",
    "plot": "scheduler.cli.plot_cmd",
    "study": "scheduler.cli.study_cmd",
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
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help(sys.stderr)
        return 2
    with user_errors() as status:
        status.code = args._run(args)
    return status.code


__all__ = ["CliError", "main", "build_parser"]
