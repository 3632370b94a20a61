"""Checks of the files and folders a run will write, made before the run starts (so a long
simulation never ends in an unwritable path with its results lost)."""

from __future__ import annotations

import os

__all__ = ["output_problem"]


def output_problem(what: str, path: str | os.PathLike[str], *, example: str = "", is_dir: bool = False) -> str | None:
    """Why ``path`` cannot be written (None when it can), as a message that starts with
    ``what`` (the option or the file's role, e.g. ``"--out"``).

    ``is_dir``: ``path`` is a folder to write into (it must exist and be writable); otherwise
    it is a file whose folder must exist and be writable, and it must not be a folder.
    ``example`` names a good file name for the message.
    """
    p = os.fspath(path)
    if not is_dir and os.path.isdir(p):
        hint = f" such as {example}" if example else ""
        return f"{what} {p!r} is a directory; give a file name{hint}"
    d = p if is_dir else os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(d):
        return f"{what} {p!r}: the folder {d!r} does not exist"
    if not os.access(d, os.W_OK):
        return f"{what} {p!r}: the folder {d!r} is not writable"
    return None
