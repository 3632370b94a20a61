"""Checks shared by the topology constructors.

Each check takes the parameter's name and the value given, returns the normalised value and
raises :class:`~models.errors.TopologyError` naming the parameter, the value and the valid
range when the value is unusable.
"""

from __future__ import annotations

from typing import Any, Sequence

from pdes import validate as _v

from ..errors import TopologyError
from ..units import UnitError, parse_bandwidth, parse_time

# Link ids and vertex ids are int32 in the link arrays; stay well inside that range.
MAX_ELEMENTS = 2**31 - 1


def check_int(cls: str, name: str, value: Any, lo: int, hi: int | None = None) -> int:
    """An integer in ``[lo, hi]`` (``hi`` None: unbounded)."""
    return _v.check_int(f"{cls}: {name}", value, lo=lo, hi=hi, error=TopologyError)


def check_ints(cls: str, name: str, value: Any, length: int | None, lo: int) -> tuple[int, ...]:
    """A tuple of integers >= ``lo`` (of exactly ``length`` entries when given)."""
    return _v.check_ints(f"{cls}: {name}", value, length=length, lo=lo, error=TopologyError)


def check_bw(cls: str, name: str, value: Any) -> float:
    """A bandwidth > 0 in bytes/s, from a number or a string such as '4GB/s'."""
    try:
        v = parse_bandwidth(value)
    except UnitError as exc:
        raise TopologyError(f"{cls}: {name}: {exc}") from None
    if not v > 0 or v == float("inf"):
        raise TopologyError(f"{cls}: {name} must be a finite bandwidth > 0 (e.g. '4GB/s'), got {value!r}")
    return float(v)


def check_lat(cls: str, name: str, value: Any) -> float:
    """A latency > 0 in seconds, from a number or a string such as '100ns'."""
    try:
        v = parse_time(value)
    except UnitError as exc:
        raise TopologyError(f"{cls}: {name}: {exc}") from None
    if not v > 0 or v == float("inf"):
        raise TopologyError(f"{cls}: {name} must be a finite latency > 0 (e.g. '100ns'), got {value!r}")
    return float(v)


def check_choice(cls: str, name: str, value: Any, choices: Sequence[str]) -> str:
    """One of ``choices``."""
    return _v.check_choice(f"{cls}: {name}", value, choices, error=TopologyError)


def check_size(cls: str, what: str, value: int) -> int:
    """A derived size that must fit the int32 id arrays."""
    if value > MAX_ELEMENTS:
        raise TopologyError(f"{cls}: the parameters give {value:,} {what}, more than the {MAX_ELEMENTS:,} that int32 ids can hold")
    return value

