"""Argument parsing shared by the skeletons: sizes and times accept unit strings."""

from __future__ import annotations

import math
from typing import Any

from models.units import UnitError, parse_bytes, parse_time
from pdes.validate import check_float, check_int, check_ints


def _strip(exc: Exception) -> str:
    """The unit parser's message without its leading 'size: ' / 'time: ' label."""
    return str(exc).split(": ", 1)[-1]


def nbytes(v: Any, name: str) -> float:
    """A size in bytes >= 0 ('64KiB' accepted); whole numbers come back as int."""
    try:
        b = parse_bytes(v, what=name)
    except UnitError as exc:
        raise ValueError(f"{name}: {_strip(exc)}") from None
    if not (b >= 0 and math.isfinite(b)):
        raise ValueError(f"{name} must be a size in bytes >= 0, got {v!r}")
    return int(b) if float(b).is_integer() else b


def seconds(v: Any, name: str) -> float:
    """A duration in seconds >= 0 ('2ms' accepted)."""
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


def algorithm(v: Any, coll: str) -> None:
    """A collective algorithm name for ``coll`` (None: MPICH's choice)."""
    from ..mpi.collectives import COLLECTIVES

    if v is not None and v != "auto" and v not in COLLECTIVES[coll]:
        raise ValueError(f"algorithm {v!r} is not one of {coll}'s: auto, {', '.join(COLLECTIVES[coll])}")


def grid(v: Any, ndims: int | None, size: int, name: str = "grid") -> tuple[int, ...] | None:
    """A process grid given as a sequence of ints (or 'AxBxC'); None stays None."""
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
    if math.prod(v) != size:
        raise ValueError(f"{name} {'x'.join(map(str, v))} has {math.prod(v)} cells but the job has {size} ranks")
    return tuple(v)
