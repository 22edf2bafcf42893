"""Race validation (validation/race.py): racing configurations run >= 10 repeats at >= 5
caps, and the report sets the real OOM frequency (Wilson interval) against the model's
P(OOM)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.io.errors import InputError
from cuzk_sim.validation.boundary import vram_boundary
from cuzk_sim.validation.grid import load_predictions, predict, write_report
from cuzk_sim.validation.race import race_predictions
from cuzk_sim.validation.spec import load_spec

runner = CliRunner()

SPEC = """name = "t"
base = "s.toml"
caps = [1]
generous = false
repeats = 0
race_replicas = 40
{extra}
[[config]]
name = "w2-nomutex"
set = {{ "variant.mutex_scope" = "none" }}
race = true
"""


def _spec(tmp_path, scenario_file, extra: str = "race_caps = [-2, -1, 0, 1, 2]"):
    scenario_file(count=2, partitions=2)
    (tmp_path / "spec.toml").write_text(SPEC.format(extra=extra))
    return tmp_path / "spec.toml"


def test_a_marked_race_runs_its_repeats_at_every_race_cap_end_to_end(tmp_path, scenario_file):
    spec = _spec(tmp_path, scenario_file)
    out = tmp_path / "out"
    args = ["validate", str(spec), "--out", str(out), "--device", "dry-run"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output  # dry runs: no race criterion to miss
    assert "w2-nomutex@race-2%#9: model P(OOM) " in r.output  # the tenth repeat ran
    pred = json.loads((out / "predictions.json").read_text())
    race = [p for p in pred["runs"] if p.get("race")]
    assert [p["cap"] for p in race] == ["race-2%", "race-1%", "race+0%", "race+1%", "race+2%"]
    for p in race:  # the model's probability, written before any run
        assert p["p_oom"]["replicas"] == 40 and 0 <= p["p_oom"]["p"] <= 1
    assert pred["races"][0]["racing"] and "race = true" in pred["races"][0]["why"]
    recs = [json.loads(x) for x in (out / "real.jsonl").read_text().splitlines()]
    per_key = {}
    for rec in recs:
        per_key.setdefault(rec["key"], []).append(rec["repeat"])
    for p in race:
        assert sorted(per_key[p["key"]]) == list(range(10))  # 10 repeats, none skipped
    assert per_key["w2-nomutex@+1%"] == [0]  # the ordinary cap: repeated only on a miss
    # race runs go repeat by repeat over the caps (a call cut short leaves every cap
    # about as many repeats): the 5 caps' repeat 0, then their repeat 1, ...
    order = [(rec["repeat"], rec["cap"]) for rec in recs if rec["cap"].startswith("race")]
    assert order == [(r, p["cap"]) for r in range(10) for p in race]
    report = (out / "report.md").read_text()
    assert "## Races" in report and "race.png" in report
    assert sum(line.startswith("| w2-nomutex@race") for line in report.splitlines()) == 5
    assert (out / "race.png").stat().st_size > 1000
    summary = json.loads((out / "summary.json").read_text())["summary"]
    assert len(summary["races"]) == 5
    assert "race_within_15pct" not in summary["criteria"]  # a dry run's outcomes are fixed
    # resumed: every planned execution is there, nothing runs again
    assert runner.invoke(app, args).exit_code == 0
    assert len((out / "real.jsonl").read_text().splitlines()) == len(recs) == 51
    # a damaged race prediction is refused on resume, naming the run (no traceback)
    i = next(i for i, p in enumerate(pred["runs"]) if p.get("race"))
    for damage in ({"repeats": "ten"}, {"p_oom": {"p": 1.5, "ci95": [0, 1], "replicas": 40}}):
        bad = {**pred, "runs": [*pred["runs"]]}
        bad["runs"][i] = {**pred["runs"][i], **damage}
        (out / "predictions.json").write_text(json.dumps(bad))
        with pytest.raises(InputError, match=rf"runs\[{i}\]: not a prediction"):
            load_predictions(out / "predictions.json")


def _rec(key: str, repeat: int, oom: bool) -> dict:
    # a whole record, as run_grid writes one (grid.scan_reals drops anything less)
    real = {
        "oom": oom,
        "device": "real",
        "first_oom_buffer": "d_x" if oom else None,
        "seconds_per_proof": None if oom else 10.0,
        "peak_vram_bytes": {"0": 2**30},
    }
    return {
        "key": key,
        "config": key.split("@")[0],
        "repeat": repeat,
        "real": real,
        "details": {},
        "date": "2026-12-03 14:00:00 UTC",
    }


def test_hand_made_real_runs_are_judged_by_their_frequency(tmp_path):
    def race_run(cap: str, p: float) -> dict:
        return {
            "key": f"c@{cap}",
            "config": "c",
            "cap": cap,
            "vram": 2**30,
            "partitions": 4,
            "race": True,
            "repeats": 10,
            "model": {},
            "p_oom": {"p": p, "ci95": [p, p], "replicas": 100, "ooms": int(100 * p)},
        }

    predictions = {
        "source": "s",
        "date": "d",
        "commit": "c",
        "runs": [race_run("race-1%", 0.5), race_run("race+0%", 0.35), race_run("race+1%", 0.0)],
        "races": [{"config": "c", "racing": True, "why": "hand", "jitter_source": "j"}],
    }
    recs = [_rec("c@race-1%", i, i < 3) for i in range(10)]  # 3 of 10 against 0.5
    recs += [_rec("c@race+0%", i, i < 3) for i in range(10)]  # 3 of 10 against 0.35
    recs += [_rec("c@race+1%", i, False) for i in range(5)]  # 5 runs: too few to count
    (tmp_path / "real.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    _, summary = write_report(tmp_path, predictions)
    rows = {r["cap"]: r for r in summary["races"]}
    # Wilson 95 % for 3 of 10 by hand: centre (0.3 + 1.9208/10) / 1.38415 = 0.35550,
    # half 1.41600 * sqrt(0.021 + 0.0096037) = 0.24771 -> 0.1078 .. 0.6032
    assert rows["race-1%"]["real_ci95"] == pytest.approx([0.1078, 0.6032], abs=1e-3)
    assert rows["race-1%"]["error"] == pytest.approx(0.2)
    assert not rows["race-1%"]["within"]  # |0.5 - 0.3| > 0.15
    assert rows["race+0%"]["within"]  # |0.35 - 0.3| <= 0.15
    assert not rows["race+1%"]["counted"]  # 5 repeats < 10
    # 0.5 and 0.35 both lie in 0.1078 .. 0.6032, and 0.0 in 0 of 5's 0 .. 0.4345
    # (z^2 / (n + z^2) = 3.8415 / 8.8415)
    assert rows["race-1%"]["in_interval"] and rows["race+0%"]["in_interval"]
    assert rows["race+1%"]["in_interval"]
    assert summary["criteria"]["race_within_15pct"] is False
    # races alone: no ordinary caps, so no verdict criterion to fail vacuously
    assert set(summary["criteria"]) == {"race_within_15pct"} and summary["device"] == "real"
    report = (tmp_path / "report.md").read_text()
    assert "No ordinary caps in this spec" in report
    assert (
        "| c@race-1% | 1024.0 | 0.50 (0.50-0.50) | 3 of 10 | 0.30 (0.11-0.60) | +0.20 | **no** "
        "| yes |" in report
    )
    assert "race caps within 0.15: 1 / 2" in report
    assert "inside the real frequency's 95 % Wilson interval: 2 / 2" in report
    assert (tmp_path / "race.png").exists()


def test_the_bundled_grid_finds_its_races_and_leaves_safe_configs_alone():
    spec = load_spec("scenarios/validation/h200-grid.toml")
    by = {c.name: c for c in spec.configs}
    for name, racing in (("w2-nomutex-18", True), ("w1-caching-18", False)):
        c = by[name]
        b = vram_boundary(c.scenario, spec.tolerance)
        decision, runs = race_predictions(spec, c, b, 40)
        assert decision["racing"] is racing, decision
        assert len(runs) == (len(spec.race_caps) if racing else 0)
        assert all(r["repeats"] >= 10 for r in runs)
    assert len(spec.race_caps) >= 5
    assert sum(c.race for c in spec.configs) >= 2  # the spec marks its racing configurations


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("race_repeats = 5", "race_repeats"),
        ("race_caps = [-1, 0, 1, 2]", "race_caps"),
        ("race_caps = [-8, -1, 0, 1, 2]", "race_caps"),
    ],
)
def test_a_race_spec_below_the_minimum_is_refused_naming_the_key(
    tmp_path, scenario_file, extra, needle
):
    spec = _spec(tmp_path, scenario_file, extra)
    with pytest.raises(InputError) as e:
        load_spec(spec)
    assert needle in str(e.value)


def test_predict_writes_no_race_runs_for_a_config_that_cannot_race(tmp_path, scenario_file):
    scenario_file(workers=1, count=1, partitions=1)
    (tmp_path / "spec.toml").write_text(
        'name = "t"\nbase = "s.toml"\ncaps = [1]\n[[config]]\nname = "w1"\n'
    )
    pred = predict(load_spec(tmp_path / "spec.toml"))
    assert not any(p.get("race") for p in pred["runs"])
    assert pred["races"][0]["racing"] is False


def test_the_race_spec_is_the_grids_racing_configurations_and_a_mutex_control():
    import tomllib
    from pathlib import Path

    from cuzk_sim.validation.race import model_probability, race_caps
    from cuzk_sim.validation.spec import MIN_RACE_CAPS, MIN_RACE_REPEATS

    here = Path("scenarios/validation")
    raw = {n: tomllib.loads((here / f"{n}.toml").read_text()) for n in ("h200-grid", "h200-races")}
    grid = {c["name"]: c for c in raw["h200-grid"]["config"]}
    races = {c["name"]: c for c in raw["h200-races"]["config"]}
    marked = {n for n, c in grid.items() if c.get("race")}
    # the grid's racing configurations, `set` for `set`, at the grid's race caps
    assert marked == set(races) - {"w2-caching-18-control"}
    assert len(marked) >= 2 and {"w2-nomutex-18", "w2-prestage-aware-18"} <= marked
    for name in marked:
        assert races[name]["set"] == grid[name]["set"] and races[name].get("race")
    assert raw["h200-races"]["race_caps"] == raw["h200-grid"]["race_caps"]
    spec = load_spec("scenarios/validation/h200-races.toml")
    assert len(spec.race_caps) >= MIN_RACE_CAPS and spec.race_repeats >= MIN_RACE_REPEATS
    assert spec.configs[0].scenario.spec.variant.mutex_scope == "none"
    # the control (device mutex) is unsafe below its boundary and safe above by
    # construction: under the measured jitter its P(OOM) is exactly 1 or 0 at every cap
    control = next(c for c in spec.configs if c.name == "w2-caching-18-control")
    assert control.scenario.spec.variant.mutex_scope == "device"
    b = vram_boundary(control.scenario, spec.tolerance)
    caps = race_caps(b, spec.race_caps, control.scenario.config.context_overhead)
    ps = [model_probability(control, v, 20)["p"] for _, v in caps]
    assert len(ps) == len(spec.race_caps) and set(ps) <= {0.0, 1.0} and ps[0] == 1.0, ps


def test_a_configuration_may_run_its_own_number_of_race_repeats(tmp_path, scenario_file):
    spec = _spec(tmp_path, scenario_file, "race_caps = [-2, -1, 0, 1, 2]\nrace_repeats = 20")
    spec.write_text(spec.read_text() + "race_repeats = 12\n")  # the configuration's own
    pred = predict(load_spec(spec))
    assert {p["repeats"] for p in pred["runs"] if p.get("race")} == {12}
    spec.write_text(spec.read_text().replace("race_repeats = 12", "race_repeats = 9"))
    with pytest.raises(InputError, match="race_repeats"):
        load_spec(spec)


def test_a_real_runs_timeline_keeps_spans_and_assemblies_in_microseconds():
    from types import SimpleNamespace

    from cuzk_sim.results.sim_result import Span
    from cuzk_sim.validation.grid import run_timeline

    run = SimpleNamespace(
        spans=[
            Span("gpu0-w1", 0, "msm_l", "kernel", 0.0125, 0.0142),
            Span("gpu0-w0", 0, "porep-0/0", "partition", 0.0, 0.03),
        ],
        events=[
            (
                0.031,
                "step",
                {"worker": "gpu0-w0", "step": "assemble", "kind": "assemble", "seconds": 0.0101},
            ),
            (
                0.020,
                "step",
                {"worker": "gpu0-w0", "step": "msm_l", "kind": "msm_g1", "seconds": 0.0017},
            ),
            (0.021, "gpu_end", {"worker": "gpu0-w0"}),
        ],
    )
    t = run_timeline(run)
    # ordered by start; 12.5 ms -> 12500 us; only the assembly among the host steps
    assert t["spans"] == [
        ["gpu0-w0", "porep-0/0", "partition", 0, 30000],
        ["gpu0-w1", "msm_l", "kernel", 12500, 14200],
    ]
    assert t["cpu"] == [["gpu0-w0", "assemble", 31000, 10100]]
    assert t["truncated"] is False
