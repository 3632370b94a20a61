"""Exceptions raised by the pdes kernel.

Every error the kernel raises derives from :class:`PdesError`, so a caller can catch the
package's errors with one ``except`` clause and still tell model bugs from kernel misuse.
"""

from __future__ import annotations


class UserError(ValueError):
    """A user mistake: the message says what is wrong, where, and how to fix it.

    The one root of every user-mistake error in simhpc (a bad parameter, a malformed trace
    line, an unknown policy name, a job larger than the machine): each layer raises a
    subclass, and the ``simhpc`` command line prints the message as one line with exit
    status 2, never a traceback.
    """


class PdesError(Exception):
    """Base class of every error raised by the pdes kernel."""


class ConfigError(PdesError, UserError):
    """A simulator or entity type was configured with an invalid value."""


class SendError(PdesError):
    """A send broke a kernel rule (negative delay, delay below the lookahead, unknown target)."""


class UnknownEntityError(SendError, LookupError):
    """The addressed entity does not exist."""


class UnknownServiceError(SendError, AttributeError):
    """The addressed entity has no such service (method)."""


class ProcessError(PdesError):
    """A blocking call was made where it cannot block (outside its own process)."""


class SimulationError(PdesError):
    """An exception escaped a service or process during a run.

    The original exception is chained (``__cause__``) so its traceback is kept; ``entity``,
    ``time`` and ``rank`` say where and when it happened.
    """

    def __init__(self, message: str, *, entity: str = "", time: float = float("nan"), rank: int = 0):
        super().__init__(message)
        self.entity = entity
        self.time = time
        self.rank = rank


class RemoteRankError(SimulationError):
    """Another MPI rank failed; this rank stopped because of it."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the run (a ``KeyboardInterrupt``, so it is never mistaken
    for a model error).

    ``signum`` is the signal. ``collective`` is True when every MPI rank raised it together
    at the same window exchange: no rank is left waiting for another in a collective, so
    each may end normally. Any other interrupt of a parallel program (one rank alone, or
    outside a run) must end every rank, e.g. with ``pdes.parallel.abort_world``.
    """

    def __init__(self, signum: int, *, collective: bool = False):
        super().__init__(signum)
        self.signum = signum
        self.collective = collective
