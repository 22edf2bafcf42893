"""Quantities with units: values checked by hand, bad input named."""

import pytest

from cuzk_sim.io.units import UnitError, parse_bandwidth, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16 GiB", 16 * 2**30),
        ("4096 MiB", 2**32),
        ("6 GB", 6 * 10**9),
        ("0 B", 0),
        ("1.5KiB", 1536),
    ],
)
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"), [("690 ms", 0.69), ("2 h", 7200.0), ("10 us", 1e-5), ("1 min", 60.0)]
)
def test_durations(text, expected):
    assert parse_duration(text) == pytest.approx(expected)


def test_bandwidth():
    assert parse_bandwidth("24 GiB/s") == 24 * 2**30
    assert parse_bandwidth("1 MiB/ms") == 2**20 * 1000


@pytest.mark.parametrize("bad", ["16 GB/s", "16 gigs", "-1 GiB", "GiB", 16, True, ""])
def test_bad_sizes_say_what_was_expected(bad):
    with pytest.raises(UnitError, match="size"):
        parse_size(bad)


def test_bad_duration_names_units():
    with pytest.raises(UnitError, match="ms"):
        parse_duration("3 fortnights")
