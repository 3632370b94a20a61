"""Exceptions of the apps layer.

User mistakes made before a run (an unknown app, wrong app arguments, a bad placement) raise
:class:`AppConfigError`, a :class:`pdes.ConfigError`, so the command line prints them without
a traceback. Errors of the simulated application itself surface after the run:
:class:`AppError` (an app raised), :class:`DeadlockError` (ranks blocked forever) and
:class:`AppTimeoutError` (the run reached its end time first).
"""

from __future__ import annotations

from pdes import ConfigError


class AppsError(Exception):
    """Base class of the errors of the apps layer."""


class AppConfigError(AppsError, ConfigError):
    """An app, its arguments or its run options are invalid (raised before the run)."""


class OversubscriptionWarning(UserWarning):
    """More ranks per node than the node has cores: the run goes on, the ranks share the cores."""


class MpiError(AppsError):
    """An MPI call was used wrongly inside an app (a bad rank, tag, size or algorithm).

    Raised inside the rank's process, so it fails the job like any exception of the app.
    """


class AppError(AppsError):
    """A rank of a job raised: names the job, the rank, the simulated time and the error."""

    def __init__(self, message: str, *, job: int, rank: int, time: float, error: str, traceback: str = ""):
        super().__init__(message)
        self.job = job
        self.rank = rank
        self.time = time
        self.error = error
        self.traceback = traceback


class DeadlockError(AppsError):
    """Ranks of a job were blocked forever when the run ended.

    ``blocked`` lists ``(rank, node, what it waits for)`` for every unfinished rank.
    """

    def __init__(self, message: str, *, job: int, blocked: list[tuple[int, int, str]], time: float):
        super().__init__(message)
        self.job = job
        self.blocked = blocked
        self.time = time


class AppTimeoutError(AppsError):
    """The run reached its end time while ranks of the job were still working."""

    def __init__(self, message: str, *, job: int, unfinished: int, time: float):
        super().__init__(message)
        self.job = job
        self.unfinished = unfinished
        self.time = time
