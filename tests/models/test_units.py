"""Unit strings are parsed at the edge into SI floats, with clear errors."""

import pytest

from models.units import UnitError, format_bytes, format_time, parse_bandwidth, parse_bytes, parse_rate, parse_time


@pytest.mark.parametrize("text,value", [
    ("700ns", 700e-9), ("2.5us", 2.5e-6), ("1µs", 1e-6), ("10ms", 0.01), ("3s", 3.0), ("5min", 300.0),
    ("2h", 7200.0), ("1d", 86400.0), (4, 4.0), ("1e-3 s", 1e-3),
])
def test_times(text, value):
    assert parse_time(text) == pytest.approx(value, rel=1e-15)


def test_sub_second_units_are_exact_divisions():
    assert parse_time("700ns") == 700 / 1e9
    assert parse_time("100ns") == 1e-7


@pytest.mark.parametrize("text,value", [
    ("64KiB", 65536), ("4MB", 4e6), ("1GiB", 2**30), ("8Mb", 1e6), (512, 512), ("512B", 512),
])
def test_sizes(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text,value", [
    ("4GB/s", 4e9), ("40Gb/s", 5e9), ("100Gbps", 12.5e9), ("12.5GiB/s", 12.5 * 2**30), (3e9, 3e9),
])
def test_bandwidths(text, value):
    assert parse_bandwidth(text) == value


def test_rates():
    assert parse_rate("2.3TF") == pytest.approx(2.3e12)
    assert parse_rate("10GFLOPS") == 10e9


@pytest.mark.parametrize("fn,bad,msg", [
    (parse_time, "3 parsecs", "unknown time unit"),
    (parse_time, "fast", "cannot parse"),
    (parse_time, True, "expected a number"),
    (parse_bytes, "4XB", "unknown prefix"),
    (parse_bandwidth, "4GB", "not a bandwidth"),
    (parse_rate, "3 apples", "unknown rate unit"),
])
def test_errors_name_the_quantity_and_examples(fn, bad, msg):
    with pytest.raises(UnitError, match=msg):
        fn(bad, what="link_bw")
    with pytest.raises(UnitError, match="link_bw"):
        fn(bad, what="link_bw")


def test_formatting():
    assert format_time(2.5e-6) == "2.5 us"
    assert format_time(7200) == "2 h"
    assert format_bytes(65536) == "64 KiB"
    assert format_bytes(100) == "100 B"
