"""Workload traces shipped with simhpc, and the resolver of trace values in experiment files.

Two SWF logs of the Parallel Workloads Archive ship with the package, byte for byte with
their archive headers (see ``README.md`` in this folder for their source and how to cite
them): ``lublin_256.swf`` and ``CTC-SP2-1996-3.1-cln.swf.gz``.

An experiment or study file names a shipped trace with the ``builtin:`` scheme::

    [workload]
    kind = "swf"
    trace = "builtin:CTC-SP2-1996-3.1-cln.swf.gz"

Any other value is a path; a relative one is relative to the file that holds it. From
Python, :func:`trace_path` gives the file itself::

    import simhpc
    from simhpc.traces import trace_path
    rep = simhpc.replay(trace_path("lublin_256.swf"), nodes=256)
"""

from __future__ import annotations

import atexit
import os
from contextlib import ExitStack
from importlib.resources import as_file, files
from pathlib import Path

from pdes.errors import UserError

__all__ = ["BUILTIN", "UnknownTraceError", "available", "check_trace", "is_builtin", "resolve_trace", "trace_path"]

#: The scheme that names a shipped trace in a trace value (``"builtin:lublin_256.swf"``).
BUILTIN = "builtin:"

_SUFFIXES = (".swf", ".swf.gz")
# Keeps the files of a zipped install extracted until the interpreter exits.
_extracted = ExitStack()
atexit.register(_extracted.close)


class UnknownTraceError(UserError):
    """A ``builtin:`` trace name that simhpc does not ship."""


def available() -> tuple[str, ...]:
    """The names of the shipped traces, sorted."""
    return tuple(sorted(p.name for p in files(__name__).iterdir() if p.name.endswith(_SUFFIXES)))


def trace_path(name: str) -> Path:
    """The file of the shipped trace ``name`` (e.g. ``"lublin_256.swf"``).

    Raises :class:`UnknownTraceError`, listing the shipped names, for any other name.
    """
    names = available()
    if name not in names:
        raise UnknownTraceError(f"unknown built-in trace {name!r}; simhpc ships: {', '.join(names)} "
                                f"(name one as {BUILTIN}{names[-1]})")
    res = files(__name__) / name
    if isinstance(res, Path):
        return res
    return _extracted.enter_context(as_file(res))


def is_builtin(value: str | os.PathLike) -> bool:
    """Whether a trace value names a shipped trace (``builtin:NAME``)."""
    return isinstance(value, str) and value.startswith(BUILTIN)


def check_trace(name: str, value: str | os.PathLike, *, error: type[UserError] = UnknownTraceError) -> None:
    """Raise ``error`` (message prefixed by ``name``) if ``value`` is an unknown ``builtin:`` name."""
    if is_builtin(value):
        try:
            trace_path(str(value)[len(BUILTIN):])
        except UnknownTraceError as exc:
            raise error(f"{name}: {exc}") from None


def resolve_trace(value: str | os.PathLike, base_dir: str | os.PathLike = ".") -> Path:
    """The file a trace value names.

    ``"builtin:NAME"`` is the shipped trace ``NAME``; an absolute path is itself; a relative
    path is relative to ``base_dir`` (the folder of the experiment or study file). Only a
    ``builtin:`` name is checked here: whether a path exists is the reader's to say.
    """
    if is_builtin(value):
        return trace_path(str(value)[len(BUILTIN):])
    p = Path(value)
    return p if p.is_absolute() else Path(base_dir) / p
