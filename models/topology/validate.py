"""Checks shared by the topology constructors.

Each check takes the parameter's name and the value given, returns the normalised value and
raises :class:`~models.errors.TopologyError` naming the parameter, the value and the valid
range when the value is unusable.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import TopologyError
from ..units import UnitError, parse_bandwidth, parse_time

# Link ids and vertex ids are int32 in the link arrays; stay well inside that range.
MAX_ELEMENTS = 2**31 - 1


def check_int(cls: str, name: str, value: Any, lo: int, hi: int | None = None) -> int:
    """An integer in ``[lo, hi]`` (``hi`` None: unbounded)."""
    rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
    if isinstance(value, bool) or not isinstance(value, int) and not _is_np_int(value):
        raise TopologyError(f"{cls}: {name} must be an integer {rng}, got {value!r}")
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        raise TopologyError(f"{cls}: {name} must be an integer {rng}, got {v}")
    return v


def check_ints(cls: str, name: str, value: Any, length: int | None, lo: int) -> tuple[int, ...]:
    """A tuple of integers >= ``lo`` (of exactly ``length`` entries when given)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) and not hasattr(value, "__len__"):
        raise TopologyError(f"{cls}: {name} must be a sequence of integers >= {lo}, got {value!r}")
    vals = tuple(value)
    if length is not None and len(vals) != length:
        raise TopologyError(f"{cls}: {name} must have {length} entries (one per level/dimension), got {len(vals)}: {vals!r}")
    return tuple(check_int(cls, f"{name}[{i}]", v, lo) for i, v in enumerate(vals))


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
    if value not in choices:
        raise TopologyError(f"{cls}: unknown {name} {value!r}; valid: {', '.join(choices)}")
    return str(value)


def check_size(cls: str, what: str, value: int) -> int:
    """A derived size that must fit the int32 id arrays."""
    if value > MAX_ELEMENTS:
        raise TopologyError(f"{cls}: the parameters give {value:,} {what}, more than the {MAX_ELEMENTS:,} that int32 ids can hold")
    return value


def _is_np_int(value: Any) -> bool:
    try:
        import numpy as np

        return isinstance(value, np.integer)
    except ImportError:  # pragma: no cover
        return False
