"""Checks of user-given values, shared by every layer of simhpc.

Each check takes the value's name as the user knows it (``"FatTree: radix"``,
``"scheduler.ranks_per_node"``, ``"ranks"``), the value given and its valid range, and either
returns the normalised value (a plain ``int``/``float``/``str``) or raises ``error`` (a
:class:`~pdes.errors.UserError` subclass; the caller's own error type by default) with a
message of one form everywhere::

    <name> must be an integer >= 1, got 0
    <name> must be a finite number in [0, 1], got nan
    unknown <name> 'fifo'; valid: fcfs, sjf, ljf
    <owner>: unknown <name> 'xy'; valid: dmodk, ecmp     (for a name "<owner>: <name>")

Booleans are never taken for numbers (``True`` is not a rank count), numpy scalars are.
These run where values enter (constructors, file readers, the command line), never inside the
event loop.
"""

from __future__ import annotations

import math
import unicodedata
from numbers import Integral, Real
from typing import Any, Iterable, Sequence

from .errors import UserError

__all__ = ["is_int", "is_number", "check_int", "check_ints", "check_float", "check_choice", "check_bool",
           "SEED_MAX", "check_seed", "check_text"]

#: The largest run seed. Seeds are whole numbers in [0, SEED_MAX]: workload draws seed numpy
#: from the seed's low 63 bits and results files store it as a signed 64-bit integer, so a
#: larger or a negative seed would repeat another seed's draws or fail when the results are
#: written, after the whole run.
SEED_MAX = 2**63 - 1


def is_int(value: Any) -> bool:
    """True for a Python or numpy integer, False for a bool or anything else."""
    t = type(value)
    # A plain int is the common case; the ABC check (numpy integers) only runs for the rest.
    return t is int or (t is not bool and isinstance(value, Integral))


def is_number(value: Any) -> bool:
    """True for a Python or numpy integer or float, False for a bool or anything else."""
    t = type(value)
    return t is float or t is int or (t is not bool and isinstance(value, Real))


def _int_range(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"in {lo}..{hi}"
    if lo is not None:
        return f">= {lo}"
    if hi is not None:
        return f"<= {hi}"
    return ""


def check_int(name: str, value: Any, *, lo: int | None = None, hi: int | None = None,
              error: type[Exception] = UserError) -> int:
    """An integer in ``[lo, hi]`` (either bound None: unbounded on that side)."""
    rng = _int_range(lo, hi)
    what = f"an integer {rng}".rstrip()
    if not is_int(value):
        raise error(f"{name} must be {what}, got {value!r}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise error(f"{name} must be {what}, got {v}")
    return v


def check_seed(name: str, value: Any, *, error: type[Exception] = UserError) -> int:
    """A run seed: an integer in ``[0, SEED_MAX]``."""
    return check_int(name, value, lo=0, hi=SEED_MAX, error=error)


def check_text(name: str, value: Any, *, error: type[Exception] = UserError) -> str:
    """A non-empty one-line text (a name stored in results files and printed on one line): a
    ``str`` without control characters (NUL, newline, tab, escape...) that UTF-8 can encode."""
    if not isinstance(value, str) or not value:
        raise error(f"{name} must be a non-empty string, got {value!r}")
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cs")), None)
    if bad is not None:
        kind = "a control character" if unicodedata.category(bad) == "Cc" else "a lone surrogate"
        raise error(f"{name} must be one line of printable text, got {value!r} (it contains {kind}, {bad!r})")
    return value


def check_ints(name: str, value: Any, *, length: int | None = None, lo: int | None = None,
               hi: int | None = None, error: type[Exception] = UserError) -> tuple[int, ...]:
    """A sequence of integers in ``[lo, hi]``, of exactly ``length`` entries when given."""
    what = f"integers {_int_range(lo, hi)}".rstrip()
    if isinstance(value, (str, bytes)) or not (isinstance(value, Sequence) or hasattr(value, "__len__")):
        raise error(f"{name} must be a sequence of {what}, got {value!r}")
    vals = tuple(value)
    if length is not None and len(vals) != length:
        raise error(f"{name} must have {length} entries, got {len(vals)}: {vals!r}")
    return tuple(check_int(f"{name}[{i}]", v, lo=lo, hi=hi, error=error) for i, v in enumerate(vals))


def _bound(x: float) -> str:
    # Whole bounds print as integers ("[300, inf)"), others exactly (repr, not %g rounding).
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(x)


def check_float(name: str, value: Any, *, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, hi_open: bool = False, finite: bool = True,
                error: type[Exception] = UserError) -> float:
    """A real number in the interval given by ``lo``/``hi`` (open ends when ``*_open``).

    ``finite=False`` admits ``inf`` (e.g. "no limit"); NaN is never admitted.
    """
    parts = []
    if lo is not None or hi is not None:
        left = "-inf" if lo is None else _bound(lo)
        right = "inf" if hi is None else _bound(hi)
        parts.append(f" in {'(' if lo_open or lo is None else '['}{left}, {right}{')' if hi_open or hi is None else ']'}")
    what = f"{'a finite' if finite else 'a'} number{''.join(parts)}"
    if not is_number(value):
        raise error(f"{name} must be {what}, got {value!r}")
    v = float(value)
    if (math.isnan(v) or (finite and math.isinf(v))
            or (lo is not None and (v < lo or (lo_open and v == lo)))
            or (hi is not None and (v > hi or (hi_open and v == hi)))):
        raise error(f"{name} must be {what}, got {int(value) if is_int(value) else v!r}")
    return v


def check_choice(name: str, value: Any, choices: Iterable[str], *, error: type[Exception] = UserError) -> str:
    """One of ``choices`` (the message lists them).

    A name written ``"Owner: param"`` reads ``Owner: unknown param 'x'; valid: ...``.
    """
    valid = tuple(choices)
    if not isinstance(value, str) or value not in valid:
        owner, sep, param = name.rpartition(": ")
        raise error(f"{owner}{sep}unknown {param} {value!r}; valid: {', '.join(valid)}")
    return value


def check_bool(name: str, value: Any, *, error: type[Exception] = UserError) -> bool:
    """``True`` or ``False`` (numpy bools included; 0/1 are not booleans)."""
    if isinstance(value, bool):
        return value
    try:
        import numpy as np

        if isinstance(value, np.bool_):
            return bool(value)
    except ImportError:  # pragma: no cover
        pass
    raise error(f"{name} must be true or false, got {value!r}")
