"""A validation spec carries its criteria (issue 24: peaks within 1 %, s/proof within 5 %,
every verdict); the report judges by them and says which it applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner
from validation_fixtures import VALIDATION

from cuzk_sim.cli import app
from cuzk_sim.io.errors import InputError
from cuzk_sim.validation.compare import Criteria, compare_runs, report_markdown, summarize
from cuzk_sim.validation.spec import load_criteria, load_spec

GIB = 2**30


def _res(oom: bool, peak: int, spp: float | None) -> dict:
    return {
        "oom": oom,
        "first_oom_buffer": None,
        "peak_vram_bytes": {"0": peak},
        "seconds_per_proof": spp,
    }


def _pair(real_peak: int, real_spp: float) -> tuple[dict, dict]:
    """A prediction of a fitting run (peak 1015 MiB, 1.00 s/proof, 4 partitions) and its
    real run, both as validate writes them."""
    pred = {
        "key": "a@+1%",
        "config": "a",
        "cap": "+1%",
        "vram": 2 * GIB,
        "partitions": 4,
        "model": _res(False, 1015 << 20, 1.0),
    }
    real = {
        "key": "a@+1%",
        "config": "a",
        "cap": "+1%",
        "vram": 2 * GIB,
        "repeat": 0,
        "date": "2026-12-03 18:00:00 UTC",
        "real": _res(False, real_peak, real_spp),
        "details": {},
    }
    return pred, real


def test_a_peak_off_by_1_5_pct_passes_at_2_pct_and_fails_at_1_pct():
    # by hand: predicted 1015 MiB against a real 1000 MiB is +1.5 %; 1.04 s predicted as
    # 1.00 is -3.85 % (within 5 and 10 %)
    pred, real = _pair(1000 << 20, 1.04)
    loose, tight = Criteria(), Criteria(1.0, 0.01, 0.05, "test")
    rows = compare_runs([pred], [real], tight)
    assert rows[0].peak_error == pytest.approx(0.015)
    s2, s1 = summarize(rows, loose), summarize(rows, tight)
    assert s2["criteria"]["peak_within_2pct"] is True and s2["peak_within"] == 1
    assert s1["criteria"]["peak_within_1pct"] is False and s1["peak_within"] == 0
    assert s1["criteria"]["spp_within_5pct"] is True
    assert s1["criteria"]["oom_agreement_100pct"] is True
    text = report_markdown(rows, s1)
    assert "peak VRAM within 1 %: 0 / 1" in text and "within 2 %" not in text
    assert "s/proof within 5 % (runs of >= 4 partitions): 1 / 1" in text
    assert "criteria applied (test): OOM verdicts agree on all the runs" in text


def test_seconds_off_by_7_pct_pass_at_10_and_fail_at_5():
    # by hand: predicted 1.00 s against a real 1/1.07 s (0.9346 s) is +7.0 %
    pred, real = _pair(1015 << 20, 1 / 1.07)
    rows = compare_runs([pred], [real])
    assert rows[0].spp_error == pytest.approx(0.07)
    assert summarize(rows)["criteria"]["spp_within_10pct"] is True
    assert summarize(rows, Criteria(0.98, 0.02, 0.05))["criteria"]["spp_within_5pct"] is False


def test_one_verdict_missed_of_50_is_98_pct_and_misses_a_100_pct_criterion():
    preds, reals = [], []
    for i in range(50):
        p, r = _pair(1015 << 20, 1.0)
        p, r = {**p, "key": f"a@{i}"}, {**r, "key": f"a@{i}"}
        if i == 0:  # predicted fits, real OOM
            r = {**r, "real": _res(True, 900 << 20, None)}
        preds.append(p)
        reals.append(r)
    rows = compare_runs(preds, reals)
    assert summarize(rows)["criteria"]["oom_agreement_98pct"] is True  # 49 / 50
    strict = summarize(rows, Criteria(1.0, 0.02, 0.1))
    assert strict["criteria"]["oom_agreement_100pct"] is False


def test_production_spec_states_issue_24s_criteria_and_the_grid_spec_none():
    prod = load_spec(VALIDATION / "h200-production.toml").criteria
    assert (prod.oom_agreement, prod.peak_tolerance, prod.seconds_tolerance) == (1.0, 0.01, 0.05)
    name, grid = load_criteria(VALIDATION / "h200-grid.toml")
    assert name == "h200-grid"
    assert (grid.oom_agreement, grid.peak_tolerance, grid.seconds_tolerance) == (0.98, 0.02, 0.1)
    assert grid.source.startswith("issue 9's")


@pytest.mark.parametrize(
    "line, key",
    [
        ("peak_tolerance = 1", "peak_tolerance"),  # a percent where a fraction belongs
        ("peak_tolerance = 0", "peak_tolerance"),
        ("seconds_tolerance = -0.05", "seconds_tolerance"),
        ('seconds_tolerance = "5 %"', "seconds_tolerance"),
        ("oom_agreement = 1.5", "oom_agreement"),
        ("peak_tolrance = 0.01", "peak_tolrance"),
    ],
)
def test_bad_criteria_name_the_key(tmp_path: Path, line: str, key: str):
    (tmp_path / "base.toml").write_text((VALIDATION / "base.toml").read_text())
    spec = tmp_path / "spec.toml"
    spec.write_text(f'base = "base.toml"\n{line}\n[[config]]\nname = "a"\n')
    with pytest.raises(InputError, match=key):
        load_spec(spec)
    r = CliRunner().invoke(
        app, ["validate", str(spec), "--out", str(tmp_path / "o"), "--predict-only"]
    )
    assert r.exit_code == 2 and key in r.output and "Traceback" not in r.output


def _folder(tmp_path: Path, criteria: dict | None) -> tuple[Path, Path, Path]:
    """An output folder with one fitting run whose peak is 1.5 % off, and two specs of
    that name: one stating 1 %, one stating nothing."""
    pred, real = _pair(1000 << 20, 1.04)
    doc = {
        "spec": "mine",
        "source": "mine.toml",
        "date": "2026-12-03 17:00:00 UTC",
        "commit": "abc1234",
        "configs": [],
        "runs": [pred],
        "races": [],
    }
    if criteria is not None:
        doc["criteria"] = criteria
    out = tmp_path / "out"
    out.mkdir()
    (out / "predictions.json").write_text(json.dumps(doc))
    (out / "real.jsonl").write_text(json.dumps(real) + "\n")
    body = 'name = "mine"\nbase = "base.toml"\n{}\n[[config]]\nname = "a"\n'
    tight, plain = tmp_path / "tight.toml", tmp_path / "plain.toml"
    tight.write_text(body.format("peak_tolerance = 0.01\nseconds_tolerance = 0.05"))
    plain.write_text(body.format(""))
    return out, tight, plain


def test_report_only_judges_by_the_specs_criteria_and_says_so(tmp_path: Path):
    out, tight, plain = _folder(tmp_path, None)
    r = CliRunner().invoke(app, ["validate", str(tight), "--out", str(out), "--report-only"])
    assert r.exit_code == 1, r.output  # 1.5 % misses 1 %
    assert "peak VRAM within 1 %: 0 / 1" in r.output and f"spec {tight}" in r.output
    summary = json.loads((out / "summary.json").read_text())["summary"]
    assert summary["criteria"]["peak_within_1pct"] is False
    assert summary["criteria_applied"]["peak_tolerance"] == 0.01
    r = CliRunner().invoke(app, ["validate", str(plain), "--out", str(out), "--report-only"])
    assert r.exit_code == 0, r.output  # 1.5 % within issue 9's 2 %
    assert "peak VRAM within 2 %: 1 / 1" in r.output and "states none" in r.output


def test_criteria_registered_with_the_predictions_come_first(tmp_path: Path):
    out, tight, _ = _folder(
        tmp_path, {"oom_agreement": 0.98, "peak_tolerance": 0.02, "seconds_tolerance": 0.1}
    )
    r = CliRunner().invoke(app, ["validate", str(tight), "--out", str(out), "--report-only"])
    assert r.exit_code == 0, r.output
    assert "peak VRAM within 2 %: 1 / 1" in r.output
    assert "registered with the predictions" in r.output


def test_damaged_registered_criteria_are_refused(tmp_path: Path):
    out, tight, _ = _folder(tmp_path, {"peak_tolerance": "1 %"})
    r = CliRunner().invoke(app, ["validate", str(tight), "--out", str(out), "--report-only"])
    assert r.exit_code == 2 and "criteria" in r.output


def test_criteria_are_registered_with_the_predictions_and_hold_on_resume(
    tmp_path: Path, scenario_file
):
    scenario_file(workers=1, count=5, partitions=1)
    spec = tmp_path / "spec.toml"
    body = 'name = "t"\nbase = "s.toml"\ncaps = [3]\ngenerous = false\n{}[[config]]\nname = "w1"\n'
    spec.write_text(body.format("peak_tolerance = 0.01\n"))
    out = tmp_path / "out"
    argv = ["validate", str(spec), "--out", str(out), "--device", "dry-run"]
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 0, r.output
    preds = json.loads((out / "predictions.json").read_text())
    assert preds["criteria"] == {
        "oom_agreement": 0.98,
        "peak_tolerance": 0.01,
        "seconds_tolerance": 0.1,
    }
    assert "peak VRAM within 1 %" in (out / "report.md").read_text()
    spec.write_text(body.format("peak_tolerance = 0.03\n"))  # after the predictions
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 2 and "registered with criteria" in r.output
    assert "--fresh" in r.output
