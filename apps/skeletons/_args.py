"""Argument parsing shared by the skeletons: sizes and times accept unit strings.

Each parser ``f(value, name)`` returns the value converted or raises ``ValueError`` naming
``name``; the skeletons register them as their parameters' checks (``@app(checks=...)``), so
a bad value is refused before anything runs.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from models.units import UnitError, parse_bytes, parse_time
from pdes.validate import check_bool, check_float, check_int, check_ints


def _strip(exc: Exception) -> str:
    """The unit parser's message without its leading 'size: ' / 'time: ' label."""
    return str(exc).split(": ", 1)[-1]


_EXACT = 1 << 53  # ints up to here are floats exactly: parsing them gives them back
_INF = math.inf


def nbytes(v: Any, name: str) -> float:
    """A size in bytes >= 0 ('64KiB' accepted); whole numbers come back as int."""
    # A plain number, what the checked arguments of every rank hold: the parser's result
    # without the parsing (each rank of a job calls this once).
    c = v.__class__
    if c is int and 0 <= v <= _EXACT:
        return v
    if c is float and 0.0 <= v < _INF:
        return int(v) if v.is_integer() else v
    try:
        b = parse_bytes(v, what=name)
    except UnitError as exc:
        raise ValueError(f"{name}: {_strip(exc)}") from None
    if not (b >= 0 and math.isfinite(b)):
        raise ValueError(f"{name} must be a size in bytes >= 0, got {v!r}")
    return int(b) if float(b).is_integer() else b


def seconds(v: Any, name: str) -> float:
    """A duration in seconds >= 0 ('2ms' accepted)."""
    if v.__class__ is float and 0.0 <= v < _INF:
        return v  # (the parser's result for a plain float)
    try:
        t = parse_time(v, what=name)
    except UnitError as exc:
        raise ValueError(f"{name}: {_strip(exc)}") from None
    if not (t >= 0 and math.isfinite(t)):
        raise ValueError(f"{name} must be a duration >= 0 seconds, got {v!r}")
    return t


def count(v: Any, name: str, lo: int = 0) -> int:
    """An integer >= lo."""
    return check_int(name, v, lo=lo)


def number(v: Any, name: str, lo: float = 0.0) -> float:
    """A finite number >= lo."""
    return check_float(name, v, lo=lo)


def flag(v: Any, name: str) -> bool:
    """True or false."""
    return check_bool(name, v)


def optional(check: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """``check`` for a parameter whose value may also be None."""
    def check_or_none(v: Any, name: str) -> Any:
        return None if v is None else check(v, name)

    return check_or_none


def one_of(choices: Sequence[str]) -> Callable[[Any, str], str]:
    """A check that the value is one of ``choices``."""
    def check(v: Any, name: str) -> str:
        if v not in choices:
            raise ValueError(f"{name} must be one of {', '.join(choices)}, got {v!r}")
        return v

    return check


def algorithm(v: Any, coll: str, name: str = "algorithm") -> None:
    """A collective algorithm name for ``coll`` (None: MPICH's choice)."""
    from ..mpi.collectives import COLLECTIVES

    if v is not None and v != "auto" and v not in COLLECTIVES[coll]:
        raise ValueError(f"{name} {v!r} is not one of {coll}'s: auto, {', '.join(COLLECTIVES[coll])}")


def algorithm_of(coll: str) -> Callable[[Any, str], None]:
    """The check of an ``algorithm`` parameter for collective ``coll``."""
    return lambda v, name: algorithm(v, coll, name)


def grid_of(ndims: int) -> Callable[[Any, str], Any]:
    """The check of a ``grid`` parameter of ``ndims`` dimensions (its cell count against
    the job's size is checked when the size is known)."""
    return lambda v, name: grid(v, ndims, None, name)


def grid(v: Any, ndims: int | None, size: int | None, name: str = "grid") -> tuple[int, ...] | None:
    """A process grid given as a sequence of ints (or 'AxBxC'); None stays None. With
    ``size`` None the grid's cell count is not checked (the job's size is not known yet)."""
    if v is None:
        return None
    if isinstance(v, str):
        try:
            v = [int(x) for x in v.lower().split("x")]
        except ValueError:
            raise ValueError(f"{name} must look like '4x4x2' or be a list of integers, got {v!r}") from None
    v = check_ints(name, v, lo=1)
    if ndims is not None and len(v) != ndims:
        raise ValueError(f"{name} must have {ndims} dimensions, got {len(v)}")
    if size is not None and math.prod(v) != size:
        raise ValueError(f"{name} {'x'.join(map(str, v))} has {math.prod(v)} cells but the job has {size} ranks")
    return tuple(v)
