"""Helpers shared by the subcommands: error reporting, JSON output and tables."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from pdes.errors import Interrupted, UserError
from pdes.parallel import abort_world, launcher_rank

#: How long a rank other than 0, interrupted by SIGINT outside a run's windows, waits for
#: rank 0 to end every rank before it reports the interrupt itself (seconds).
ALONE_AFTER_S = 1.0


class CliError(UserError):
    """A user mistake on the command line; printed without a traceback, exit status 2."""


@dataclass
class _Status:
    code: int = 0


@contextlib.contextmanager
def user_errors() -> Iterator[_Status]:
    """Turn user errors into one line on stderr and exit status 2.

    Under mpirun every rank meets the same mistake (they read the same files and options);
    rank 0 alone prints it, so the user sees one line, and every rank exits with status 2.

    An interrupt (Ctrl-C, or SIGTERM under :func:`terminate_as_interrupt`) prints
    "simhpc: interrupted" and gives status 128 + the signal number (130, 143). A rank of a
    parallel program that is interrupted alone ends every rank (``MPI_Abort``).
    """
    status = _Status()
    try:
        yield status
    # Every layer's user mistakes derive from UserError; a missing file or a folder given
    # where a file is expected, named by the user, is a mistake too.
    except (UserError, FileNotFoundError, IsADirectoryError) as exc:
        if launcher_rank() == 0:
            print(f"simhpc: error: {exc}", file=sys.stderr)
        status.code = 2
    except KeyboardInterrupt as exc:
        # Ctrl-C or SIGTERM: outputs are written only when a command completes (temp file
        # and rename), so whatever existed is left as it was.
        signum = getattr(exc, "signum", signal.SIGINT)
        status.code = 128 + signum
        if getattr(exc, "collective", False):
            # Every rank of a parallel run stopped together at a window exchange: one line.
            if launcher_rank() == 0:
                print("simhpc: interrupted", file=sys.stderr)
        else:
            if signum == signal.SIGINT and launcher_rank() != 0:
                # Ctrl-C under mpirun reaches every rank, and ranks that each run a whole
                # simulation (an experiment's parallel = "baselines") stop each on their
                # own: rank 0 prints and ends them all. A rank still alive after a moment
                # was interrupted alone, and says so itself.
                time.sleep(ALONE_AFTER_S)
            print("simhpc: interrupted", file=sys.stderr)
            # This rank stops alone (interrupted outside a run's windows, or the only one
            # signalled): the others would wait for it in their next collective.
            abort_world(status.code)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While a command runs, SIGTERM stops it as Ctrl-C does (``pdes.Interrupted``).

    Python's default for SIGTERM ends the process at once: no message and, under mpirun,
    the other ranks left to the launcher's clean-up. Off the main thread, or where SIGTERM
    was set to something else, nothing changes.
    """
    installed = False
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_interrupted)
        installed = True
    try:
        yield
    finally:
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _raise_interrupted(signum: int, _frame: Any) -> None:
    raise Interrupted(signum)


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1."""
    import argparse

    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return v


def print_json(obj: Any) -> None:
    """Print one JSON object on one line (the last line of a --json run)."""
    print(json.dumps(obj, default=_default, sort_keys=False))


def _default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """A plain aligned text table."""
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in cells:
        out.append("  ".join(c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(r, widths)))
    return "\n".join(out)


def _fmt(c: Any) -> str:
    if isinstance(c, float):
        return f"{c:.4g}"
    return str(c)


def _numeric(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def predict_ranks_arg(text: str | None) -> tuple[int, ...]:
    """--predict-ranks as rank counts (whole numbers >= 1)."""
    if text is None:
        return ()
    try:
        ps = tuple(int(x) for x in text.split(","))
    except ValueError:
        ps = ()
    if not ps or min(ps) < 1:
        raise CliError(f"--predict-ranks takes rank counts >= 1 separated by commas, e.g. 2,4,8,16; got {text!r}")
    return ps


def prediction_text(predicted: dict[int, Any]) -> str:
    """The kernel's parallel prediction (rank count -> :class:`pdes.predict.RankPrediction`)
    as printed after a run: a blank line, a heading, the table."""
    from pdes.predict import prediction_table

    return "\nparallel prediction (the same windows and events under mpirun -n P):\n" + prediction_table(predicted)
