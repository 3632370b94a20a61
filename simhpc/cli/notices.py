"""Warnings of a command as one line on stderr each: ``simhpc: warning: ...``.

simhpc's own warnings (a valid but unusual setting, e.g. more ranks per node than cores)
are for the user, not for a developer: no file name, line number or source line. Under
mpirun every rank meets the same setting, so rank 0 alone prints it. Other warnings are
shown as Python shows them.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from typing import Any, Iterator

from pdes.parallel import launcher_rank

#: Packages whose warnings are the user's business.
_OWN = ("pdes", "models", "apps", "scheduler", "simhpc")


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """While a command runs, print simhpc's warnings as ``simhpc: warning: MESSAGE``."""
    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if category.__module__.split(".")[0] not in _OWN:
            shown(message, category, filename, lineno, file, line)
        elif launcher_rank() == 0:
            print(f"simhpc: warning: {message}", file=sys.stderr if file is None else file)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


__all__ = ["warnings_as_lines"]
