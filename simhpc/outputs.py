"""Checks of the files and folders a run will write, made before the run starts (so a long
simulation never ends in an unwritable path with its results lost), and the one way the
results writers pick the file they replace and its temporary sibling.

A results file is written to a temporary file in the same folder and renamed over the final
name once complete. Only a regular file is ever replaced: a device (``/dev/null``), a FIFO,
a socket or a folder is refused. A symbolic link to a regular file is followed (the file it
points to is replaced, the link stays a link); a dangling link, or a link to anything else,
is refused.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from pdes.errors import UserError

__all__ = ["OutputPathError", "output_problem", "write_target", "temp_sibling", "ensure_folder"]

# The temporary file is named ".<start of the final name>.<pid>.<random>.tmp": the final name
# is cut to this many characters so that the temporary name fits wherever the final one does.
_TMP_STEM_CHARS = 40
# ".<stem>" + "." + pid (at most 10 digits) + "." + 8 hex digits + ".tmp"
_TMP_EXTRA = 1 + 1 + 10 + 1 + 8 + 4


class OutputPathError(UserError):
    """An output path that cannot be written: one line naming it; ``path`` and ``reason``
    (the message without the path) as attributes."""

    def __init__(self, message: str, *, path: str | os.PathLike[str], reason: str):
        super().__init__(message)
        self.path = os.fspath(path)
        self.reason = reason


def _name_max(folder: str) -> int:
    try:
        return int(os.pathconf(folder or ".", "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255  # the common limit where the system does not say


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _target_problem(p: str) -> tuple[str | None, str | None]:
    """(the file a write of ``p`` replaces, None), or (None, why ``p`` cannot be replaced)."""
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p, None
    except OSError as exc:
        return None, f"cannot be written ({exc.strerror or exc})"
    if stat.S_ISREG(st.st_mode):
        return p, None
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(p)
        try:
            tst = os.stat(target)
        except OSError:
            return None, f"is a symbolic link to {target!r}, which does not exist"
        if not stat.S_ISREG(tst.st_mode):
            return None, f"is a symbolic link to {target!r}, {_kind(tst.st_mode)}; only regular files are replaced"
        return target, None
    if stat.S_ISDIR(st.st_mode):
        return None, "is a directory"
    return None, f"is {_kind(st.st_mode)}; only regular files are replaced"


def temp_sibling(target: str | os.PathLike[str]) -> Path:
    """A fresh temporary name in ``target``'s folder (the rename must not cross file systems),
    hidden, and short enough wherever ``target``'s own name fits."""
    t = Path(target)
    stem = t.name[:_TMP_STEM_CHARS]
    return t.parent / f".{stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def write_target(path: str | os.PathLike[str]) -> Path:
    """The file a write of ``path`` replaces: ``path``, or for a symbolic link the regular file it
    points to. Raises :class:`OutputPathError` when ``path`` is anything else (a device, a FIFO,
    a folder, a dangling link). The writers call it at the end of a run too, in case the path
    changed during it."""
    p = os.fspath(path)
    target, problem = _target_problem(p)
    if problem:
        raise OutputPathError(f"{p}: {problem}", path=p, reason=problem)
    assert target is not None
    return Path(target)


def output_problem(what: str, path: str | os.PathLike[str], *, example: str = "", is_dir: bool = False) -> str | None:
    """Why ``path`` cannot be written (None when it can), as a message that starts with
    ``what`` (the option or the file's role, e.g. ``"--out"``).

    ``is_dir``: ``path`` is a folder to write into; it may be missing (the writer creates it,
    :func:`ensure_folder`) when its nearest existing parent is a writable folder. Otherwise
    ``path`` is a file: its folder must exist and be writable, it must be missing, a regular
    file or a symbolic link to one (see the module docstring), and its name (and the name of
    the temporary file written first) must fit the file system.
    ``example`` names a good file name for the message.
    """
    p = os.fspath(path)
    if p == "":
        hint = f", such as {example}" if example else ""
        return f"{what} is empty; give a {'folder' if is_dir else 'file'} name{hint}"
    if "\x00" in p:
        return f"{what} {p!r} contains a NUL character"
    if is_dir:
        return _folder_problem(what, p)
    # The name's length first: a name too long cannot even be looked at (ENAMETOOLONG).
    problem = _name_problem(what, os.path.abspath(p))
    if problem:
        return problem
    target, problem = _target_problem(p)
    if problem:
        hint = f"; give a file name such as {example}" if example else "; give a file name"
        return f"{what} {p!r} {problem}{hint}"
    assert target is not None
    d = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(d):
        return f"{what} {p!r}: the folder {d!r} does not exist"
    if not os.access(d, os.W_OK):
        return f"{what} {p!r}: the folder {d!r} is not writable"
    return _name_problem(what, os.path.abspath(target))


def _name_problem(what: str, path: str) -> str | None:
    """Why the file name of ``path`` (or of the temporary file written first) is too long for
    its folder's file system (None when it fits or the folder is missing: that is said apart)."""
    d, name = os.path.split(path)
    if not os.path.isdir(d):
        return None
    limit = _name_max(d)
    size = len(os.fsencode(name))
    if size > limit:
        return (f"{what}: the file name {name[:24]!r}... is {size} bytes long; the file system of {d!r} "
                f"allows {limit}; give a shorter name")
    if len(os.fsencode(name[:_TMP_STEM_CHARS])) + _TMP_EXTRA > limit:
        return (f"{what}: the file system of {d!r} allows names of {limit} bytes, too short for the "
                f"temporary file written first (up to {_TMP_EXTRA} bytes more than the name); give a shorter name")
    return None


def _folder_problem(what: str, p: str) -> str | None:
    if os.path.exists(p) and not os.path.isdir(p):
        return f"{what} {p!r} exists and is not a folder"
    if os.path.isdir(p):
        if not os.access(p, os.W_OK):
            return f"{what} {p!r}: the folder is not writable"
        return None
    # Missing: the nearest existing parent must be a folder we may create it in.
    parent = os.path.dirname(os.path.abspath(p))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return f"{what} {p!r} cannot be created: {parent!r} is not a folder"
    if not os.access(parent, os.W_OK):
        return f"{what} {p!r} cannot be created: the folder {parent!r} is not writable"
    limit = _name_max(parent)
    for part in Path(os.path.abspath(p)).parts:
        if len(os.fsencode(part)) > limit:
            return f"{what}: the folder name {part[:20]!r}... is {len(os.fsencode(part))} bytes long; the file system allows {limit}"
    return None


def ensure_folder(what: str, path: str | os.PathLike[str]) -> Path:
    """Create the folder ``path`` (and its parents) when missing; returns it. Raises
    :class:`OutputPathError` when it cannot be (see :func:`output_problem`)."""
    problem = output_problem(what, path, is_dir=True)
    if problem:
        raise OutputPathError(problem, path=path, reason=problem)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        reason = f"cannot be created ({exc.strerror or exc})"
        raise OutputPathError(f"{what} {os.fspath(path)!r} {reason}", path=path, reason=reason) from None
    return Path(path)
