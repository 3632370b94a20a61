"""Physical quantities given as strings at the edge ("4GB/s", "700ns", "2h", "64KiB").

Inside simhpc every quantity is a float in SI base units: seconds, bytes, bytes per second,
flop/s. These parsers are used where users type values (TOML files, command lines, preset
tables); a bare number is taken as already being in SI units.
"""

from __future__ import annotations

import re

from pdes.errors import UserError
from pdes.validate import is_number

__all__ = ["UnitError", "parse_time", "parse_bytes", "parse_bandwidth", "parse_rate", "format_time", "format_bytes"]


class UnitError(UserError):
    """A quantity string could not be parsed; the message lists the accepted units."""


_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_RE = re.compile(rf"^\s*{_NUM}\s*([A-Za-z/]*)\s*$")

_TIME = {
    # Sub-second units are divisors so that '700ns' is exactly 700 / 1e9.
    "": 1.0, "s": 1.0, "sec": 1.0, "ms": -1e3, "us": -1e6, "ns": -1e9, "ps": -1e12,
    "m": 60.0, "min": 60.0, "h": 3600.0, "hr": 3600.0, "d": 86400.0, "day": 86400.0,
}
_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


def _split(value: str | float | int, what: str, kind: str) -> tuple[float, str]:
    if not isinstance(value, str):
        if not is_number(value):
            raise UnitError(f"{what}: expected a number or a string with a unit, e.g. {_EXAMPLES[kind]}; got {value!r}")
        return float(value), ""
    m = _RE.match(value.replace("µ", "u"))
    if not m:
        raise UnitError(f"{what}: cannot parse {value!r}; write a number and a unit, e.g. {_EXAMPLES[kind]}")
    return float(m.group(1)), m.group(2)


_EXAMPLES = {
    "time": "'700ns', '2.5us', '10s', '2h'",
    "size": "'64KiB', '4MB', '1GiB', '512' (bytes)",
    "bandwidth": "'4GB/s', '40Gb/s', '12.5GiB/s'",
    "rate": "'2.3TF', '10GF' (flop/s)",
}


def parse_time(value: str | float | int, *, what: str = "time") -> float:
    """Seconds from '700ns', '1.5us', '10ms', '3s', '5min', '2h', '1d' or a number of seconds."""
    x, unit = _split(value, what, "time")
    try:
        f = _TIME[unit]
    except KeyError:
        raise UnitError(f"{what}: unknown time unit {unit!r} in {value!r}; valid: {', '.join(k for k in _TIME if k)}") from None
    return x / -f if f < 0 else x * f


def _scale(unit: str) -> float | None:
    for pre, f in _BIN.items():
        if unit == pre:
            return f
    return _SI.get(unit)


def parse_bytes(value: str | float | int, *, what: str = "size") -> float:
    """Bytes from '64KiB', '4MB', '1GiB', '8Mb' (bits), or a number of bytes."""
    x, unit = _split(value, what, "size")
    bits = False
    if unit.endswith("B"):
        unit = unit[:-1]
    elif unit.endswith("b"):
        unit, bits = unit[:-1], True
    elif unit:
        raise UnitError(f"{what}: unknown size unit in {value!r}; use B (bytes) or b (bits) with a prefix, e.g. {_EXAMPLES['size']}")
    f = _scale(unit)
    if f is None:
        raise UnitError(f"{what}: unknown prefix {unit!r} in {value!r}; valid: k M G T P or Ki Mi Gi Ti Pi")
    return x * f / (8.0 if bits else 1.0)


def parse_bandwidth(value: str | float | int, *, what: str = "bandwidth") -> float:
    """Bytes per second from '4GB/s', '40Gb/s', '12.5GiB/s', '100Gbps', or a number of bytes/s."""
    if isinstance(value, str):
        v = value.strip()
        if v.endswith("bps"):
            v = v[:-3] + "b/s"
        if not v.endswith("/s"):
            if _RE.match(v) and _RE.match(v).group(2) == "":
                return parse_bytes(v, what=what)
            raise UnitError(f"{what}: {value!r} is not a bandwidth; write e.g. {_EXAMPLES['bandwidth']}")
        return parse_bytes(v[:-2], what=what)
    return parse_bytes(value, what=what)


def parse_rate(value: str | float | int, *, what: str = "rate") -> float:
    """Flop/s from '2.3TF', '10GF', '1.2TFLOPS', or a number."""
    x, unit = _split(value, what, "rate")
    u = unit
    for suffix in ("FLOPS", "flops", "Flops", "F/s", "F", "flop/s"):
        if u.endswith(suffix):
            u = u[: -len(suffix)]
            break
    f = _scale(u)
    if f is None:
        raise UnitError(f"{what}: unknown rate unit in {value!r}; write e.g. {_EXAMPLES['rate']}")
    return x * f


def format_time(seconds: float) -> str:
    """A short human string for a duration ('1.50 us', '2.00 h')."""
    s = abs(seconds)
    for unit, f in (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if s >= f or unit == "ns":
            return f"{seconds / f:.3g} {unit}"
    return f"{seconds} s"  # pragma: no cover


def format_bytes(n: float) -> str:
    """A short human string for a size ('64 KiB', '1.5 GiB')."""
    for unit, f in (("PiB", 2.0**50), ("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if abs(n) >= f:
            return f"{n / f:.3g} {unit}"
    return f"{n:.0f} B"
