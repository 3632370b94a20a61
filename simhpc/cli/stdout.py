"""What the command line does when its standard output cannot be written (``> /dev/full``,
a full disk, a closed pipe): one line on stderr and a non-zero status, never a traceback
from a ``print`` or from the interpreter's final flush."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

from pdes.parallel import launcher_rank

#: Exit status when the output could not be written (not a user mistake: that is 2).
STATUS = 1


class StdoutError(Exception):
    """Standard output could not be written; ``error`` is the OSError of the write."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


class _Guarded:
    """``sys.stdout`` while a command runs: an OSError of a write or flush becomes a
    :class:`StdoutError`, told apart from the OSErrors of files (a reader gone away stays
    a ``BrokenPipeError``)."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutError(exc) from None

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutError(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """Run a command with ``sys.stdout`` guarded (see :class:`StdoutError`); restored after."""
    stream = sys.stdout
    sys.stdout = _Guarded(stream)
    try:
        yield
    finally:
        sys.stdout = stream


def stdout_error() -> OSError | None:
    """Flush standard output; the error when it cannot be written (None when it can)."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        return exc
    return None


def finish(code: int) -> int:
    """Flush standard output at the end of a command, while its errors can still be reported:
    ``code`` when it was written (or the reader went away), :data:`STATUS` otherwise."""
    exc = stdout_error()
    if exc is None:
        return code
    if isinstance(exc, BrokenPipeError):
        _drop_stdout()
        return code
    return lost(exc)


def lost(exc: OSError) -> int:
    """Report that standard output could not be written; returns :data:`STATUS`."""
    if launcher_rank() == 0:
        print(f"simhpc: error: cannot write the standard output ({exc.strerror or exc})", file=sys.stderr)
    _drop_stdout()
    return STATUS


def _drop_stdout() -> None:
    # What is still buffered goes to devnull, so the interpreter's final flush does not fail again.
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file (captured output)
    os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
