"""Errors of the scheduler layer.

:class:`UserError` marks a user mistake (a bad policy name, a trace that is not SWF, a job
larger than the machine): the command line prints its one-line message without a traceback.
:class:`SchedulerError` marks a broken internal invariant or a misuse of the scheduler's API by
model code (a job ended twice, nodes committed twice); it is a bug, not bad input.
"""

from __future__ import annotations

from pdes.errors import UserError

__all__ = ["UserError", "SwfError", "SwfMachineSizeError", "SchedulerError"]


class SwfError(UserError):
    """A Standard Workload Format file could not be read.

    ``path`` and ``line`` (1-based, 0 when the whole file is at fault) say where.
    """

    def __init__(self, path: str, line: int, reason: str):
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class SwfMachineSizeError(SwfError):
    """An SWF header gives no machine size and the caller gave none.

    ``how`` is how the caller's user gives the size (``"n_nodes=N"`` for :func:`read_swf`);
    a caller with its own option raises it again naming that option (:meth:`naming`).
    """

    def __init__(self, path: str, how: str):
        super().__init__(path, 0, "the header gives no machine size (no '; MaxProcs:' or '; MaxNodes:' line); "
                                  f"give it with {how}")
        self.how = how

    def naming(self, how: str) -> "SwfMachineSizeError":
        """The same error, telling to give the size with ``how``."""
        return SwfMachineSizeError(self.path, how)


class SchedulerError(RuntimeError):
    """An internal invariant of the scheduler broke, or model code misused its API."""
