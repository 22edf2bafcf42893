"""Replica columns (oom_probability, s/proof p50/p95) and cards as a sweep axis."""

from __future__ import annotations

import pytest
from sweep_fixtures import BASE, SCENARIOS, write_spec

from cuzk_sim import api
from cuzk_sim.io.errors import InputError
from cuzk_sim.simulate.replicas import run_replicas

GiB = 2**30


def test_replica_columns_equal_run_replicas(tmp_path):
    text = f"""
base = "{BASE}"
[axes]
"variant.prestage" = ["outside_mutex", "under_mutex"]
"""
    spec = write_spec(tmp_path, text, "r.toml")
    rows = api.sweep(spec, jobs=1, replicas=3, jitter=0.05, plots=False).rows
    for row in rows:
        scn = api.load(BASE, {"variant.prestage": row["variant.prestage"]})
        report = run_replicas(scn, 3, 0.05)
        assert row["oom_probability"] == report.oom_probability
        assert row["seconds_per_proof_p50"] == report.seconds_per_proof_p50
        assert row["seconds_per_proof_p95"] == report.seconds_per_proof_p95
        assert row["replicas"] == 3 and row["jitter"] == 0.05
        plain = api.simulate(scn)  # the other columns stay the unperturbed run's
        assert row["seconds_per_proof"] == plain.seconds_per_proof
        assert row["safe"] == (not plain.oom and report.oom_probability == 0)


def test_replicas_change_the_key(tmp_path, small_spec_path):
    out = tmp_path / "o"
    plain = api.sweep(small_spec_path, out, jobs=1, plots=False)
    jittered = api.sweep(
        small_spec_path, tmp_path / "j", jobs=1, replicas=2, jitter=0.01, plots=False
    )
    assert jittered.resumed == 0  # not the same work
    assert {r["key"] for r in plain.rows}.isdisjoint(r["key"] for r in jittered.rows)
    # into the plain sweep's folder it would replace every row: refused, folder kept
    before = (out / "results.json").read_bytes()
    with pytest.raises(InputError, match="another sweep.*replicas 1 \\(now 2\\)"):
        api.sweep(small_spec_path, out, jobs=1, replicas=2, jitter=0.01, plots=False)
    assert (out / "results.json").read_bytes() == before


def test_cards_as_an_axis(tmp_path):
    base = SCENARIOS / "sweeps" / "rtx4000ada-snapdeals.toml"
    text = f"""
base = "{base}"
[axes]
"hardware.card" = ["rtx5070ti", "rtx4000ada", "rtx4090", "h200"]
"variant.mutex_scope" = ["none"]
"""
    outcome = api.sweep(write_spec(tmp_path, text, "c.toml"), jobs=1, plots=False)
    rows = {r["hardware.card"]: r for r in outcome.rows}
    assert {c: r["vram_bytes"] for c, r in rows.items()} == {
        "rtx5070ti": 16 * GiB,
        "rtx4000ada": 20 * GiB,
        "rtx4090": 24 * GiB,
        "h200": 141 * GiB,
    }
    # the card rule: each card priced by its own profile (derived where none was measured)
    assert "derived from rtx5070ti" in rows["rtx4000ada"]["pricing"]
    assert "measured on this card" in rows["rtx5070ti"]["pricing"]
    assert {c: r["priced_by"] for c, r in rows.items()} == {
        "rtx5070ti": "rtx5070ti",
        "rtx4000ada": "rtx4000ada",
        "rtx4090": "rtx4090",
        "h200": "h200+cuzk",
    }
    # two workers without the mutex: the incident card OOMs, the H200 does not
    assert rows["rtx4000ada"]["oom"] and not rows["h200"]["oom"]
    (grid,) = outcome.summary["min_safe_vram"]
    assert grid["min_safe"] == "h200" and grid["largest_unsafe"] == "rtx4090"
