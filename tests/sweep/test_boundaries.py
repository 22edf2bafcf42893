"""Boundaries: the min-VRAM bisection and the max-workers count, checked by a direct
search written here (on the public API only) and by simulating either side."""

from __future__ import annotations

import pytest
from sweep_fixtures import BASE, write_spec

from cuzk_sim import api

MiB = 2**20
WORKERS = "engine.gpus.gpu_workers_per_device"


def safe(overrides: dict) -> bool:
    result = api.simulate(api.load(BASE, overrides))
    return not result.oom and not result.stalled


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """min_vram over prestage variants for 2 workers; max_workers at 20 GiB."""
    text = f"""
base = "{BASE}"
[axes]
"variant.prestage" = ["outside_mutex", "under_mutex"]
"hardware.vram" = ["20 GiB"]
[search]
min_vram = true
max_workers = true
vram_range = ["8 GiB", "40 GiB"]
workers_limit = 5
"""
    spec = write_spec(tmp_path_factory.mktemp("b"), text, "b.toml")
    return api.sweep(spec, jobs=1, plots=False)


def direct_min_vram(prestage: str, lo_mib: int, hi_mib: int) -> tuple[int, int]:
    """Bisection over whole MiB until the bracket is 64 MiB or less: (unsafe, safe)."""
    fixed = {"variant.prestage": prestage, WORKERS: 2}
    assert safe({**fixed, "hardware.vram": f"{hi_mib} MiB"})
    assert not safe({**fixed, "hardware.vram": f"{lo_mib} MiB"})
    while hi_mib - lo_mib > 64:
        mid = (lo_mib + hi_mib) // 2
        if safe({**fixed, "hardware.vram": f"{mid} MiB"}):
            hi_mib = mid
        else:
            lo_mib = mid
    return lo_mib, hi_mib


@pytest.mark.parametrize("prestage", ["outside_mutex", "under_mutex"])
def test_min_vram_equals_a_direct_bisection(searched, prestage):
    (b,) = [
        s
        for s in searched.boundaries
        if s["kind"] == "min_vram" and s["group"] == {"variant.prestage": prestage}
    ]
    found_safe, found_unsafe = b["min_safe_vram_bytes"], b["max_unsafe_vram_bytes"]
    assert found_safe - found_unsafe <= 64 * MiB
    # the two ends, simulated directly: safe at the boundary, unsafe just below it
    fixed = {"variant.prestage": prestage, WORKERS: 2}
    assert safe({**fixed, "hardware.vram": f"{found_safe} B"})
    assert not safe({**fixed, "hardware.vram": f"{found_unsafe} B"})
    assert not safe({**fixed, "hardware.vram": f"{found_safe - 64 * MiB} B"})
    lo, hi = direct_min_vram(prestage, 8 * 1024, 40 * 1024)
    assert abs(hi * MiB - found_safe) <= 64 * MiB, (hi, found_safe / MiB)


def test_max_workers_equals_counting_up(searched):
    for b in (s for s in searched.boundaries if s["kind"] == "max_workers"):
        fixed = {**b["group"]}
        expected = 0
        for w in range(1, 6):
            if not safe({**fixed, WORKERS: w}):
                break
            expected = w
        assert (b["max_safe_workers"] or 0) == expected, b
        if expected < 5:
            assert b["first_unsafe_workers"] == expected + 1


def test_outside_mutex_needs_more_vram_than_under(searched):
    """The incident's lesson, as a boundary: staging outside the mutex lets both workers'
    6 GiB stage at once, so it needs more VRAM than the three-part fix."""
    by = {
        s["group"]["variant.prestage"]: s["min_safe_vram_bytes"]
        for s in searched.boundaries
        if s["kind"] == "min_vram"
    }
    assert by["outside_mutex"] > by["under_mutex"] + 4 * 2**30


def test_grid_summary_max_workers_by_hand(small_outcome):
    """From the rows: the largest worker count safe together with every smaller one."""
    rows = small_outcome.rows
    for g in small_outcome.summary["max_safe_workers"]:
        mine = sorted(
            (r for r in rows if all(r[k] == v for k, v in g["group"].items())),
            key=lambda r: r[WORKERS],
        )
        expected = None
        for r in mine:
            if not (r["error"] is None and not r["oom"] and not r["stalled"]):
                break
            expected = r[WORKERS]
        assert g["max_safe_workers"] == expected


def test_pareto_frontier_by_hand(small_outcome):
    safe_rows = [r for r in small_outcome.rows if r["safe"]]
    front = small_outcome.summary["frontier_vram"]
    for p in front:  # nobody is at least as cheap and strictly faster
        assert not any(
            r["vram_bytes"] <= p["vram_bytes"] and r["seconds_per_proof"] < p["seconds_per_proof"]
            for r in safe_rows
        )
    for r in safe_rows:  # every safe row is matched or beaten by a frontier point
        assert any(
            p["vram_bytes"] <= r["vram_bytes"] and p["seconds_per_proof"] <= r["seconds_per_proof"]
            for p in front
        )
    best = min(r["seconds_per_proof"] for r in safe_rows)
    assert small_outcome.summary["best_safe"]["seconds_per_proof"] == best
