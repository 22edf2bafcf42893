"""Profiles say what they price: card, prover, a basis per figure; `run` warns when a
scenario uses a profile for another card or another prover; `profile show` lists it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.profiles.profile import BUNDLED, load_profile, plan_prover, profile_warnings
from cuzk_sim.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
runner = CliRunner()


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_profiles_name_card_prover_and_every_basis(name):
    p = load_profile(name)
    assert p.prover in ("cuzk", "cuzk_sim.gpu") and p.gpu_model
    assert p.figures and all(
        f.basis in ("measured", "fitted", "derived", "assumed") for f in p.figures
    ), [f.key for f in p.figures if f.basis == "unstated"]
    assert all(f.source for f in p.figures if f.key.startswith(("kernel.", "cpu.")))


def test_rtx5070ti_prices_cuzk_and_h200_prices_our_prover():
    # the h200 figures are device measurements of cuzk_sim.gpu (docs/benchmarks.md); the
    # rtx5070ti figures are cuzk's published phase reports (cuzk-facts.md)
    assert load_profile("rtx5070ti").prover == "cuzk"
    assert load_profile("h200").prover == "cuzk_sim.gpu"


def test_no_warning_when_card_and_prover_match():
    scn = load_scenario(SCENARIOS / "phase9-single-worker.toml")  # 16 GiB, cuzk, rtx5070ti
    assert plan_prover(scn) == "cuzk"
    assert profile_warnings(scn) == []
    scn = load_scenario(SCENARIOS / "gate" / "ours-h200-2workers.toml")
    assert plan_prover(scn) == "cuzk_sim.gpu"
    assert profile_warnings(scn) == []


def test_warns_on_another_card_and_another_prover():
    # the case: an H100-sized scenario priced by the h200 profile (our prover)
    scn = load_scenario(
        SCENARIOS / "phase9-single-worker.toml", {"hardware.vram": "80 GiB", "profile": "h200"}
    )
    warnings = profile_warnings(scn)
    assert len(warnings) == 2
    assert "hardware.vram = 80 GiB" in warnings[0] and "H200" in warnings[0]
    assert "prices our CuPy prover" in warnings[1] and "cuzk (supraseal-c2)" in warnings[1]
    # our prover's plan file priced by the cuzk profile
    scn = load_scenario(SCENARIOS / "replay-ours-porep-mutex.toml")
    assert plan_prover(scn) == "cuzk_sim.gpu"
    assert any("prices cuzk" in w for w in profile_warnings(scn))


def test_run_prints_each_warning_on_one_line_and_in_json():
    path = SCENARIOS / "phase9-single-worker.toml"
    args = ["run", str(path), "--set", "hardware.vram=24 GiB"]
    result = runner.invoke(app, args)
    lines = [x for x in result.stderr.splitlines() if x.startswith("warning:")]
    assert len(lines) == 1 and "hardware.vram = 24 GiB" in lines[0]
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert data["warnings"] == [lines[0].removeprefix("warning: ")]


def test_a_profile_without_prover_or_basis_loads_and_says_so(tmp_path):
    text = (Path(__file__).resolve().parents[2] / "cuzk_sim/profiles/rtx5070ti.toml").read_text()
    text = "\n".join(
        line for line in text.splitlines() if not line.startswith(("prover =", "basis ="))
    )
    text = text.replace(', basis = "measured" }', " }")
    (tmp_path / "p.toml").write_text(text)
    p = load_profile(str(tmp_path / "p.toml"))
    assert p.prover is None and {f.basis for f in p.figures} == {"unstated"}
    scn_text = (SCENARIOS / "phase9-single-worker.toml").read_text()
    (tmp_path / "s.toml").write_text(
        scn_text.replace('profile = "rtx5070ti"', 'profile = "p.toml"')
    )
    scn = load_scenario(tmp_path / "s.toml")
    assert any("does not say which prover" in w for w in profile_warnings(scn))


def test_profile_show_lists_every_figure_with_its_basis():
    result = runner.invoke(app, ["profile", "show", "h200"])
    assert result.exit_code == 0, result.output
    assert "our CuPy prover" in result.output and "NVIDIA H200" in result.output
    for key in ("kernel.ntt", "kernel.msm_g1", "copy_engine.pinned", "cpu.synthesis"):
        assert key in result.output
    assert "fitted" in result.output and "assumed" in result.output
    bad = runner.invoke(app, ["profile", "show", "no-such-card"])
    assert bad.exit_code == 2 and "no-such-card" in bad.output


def test_warns_when_hardware_card_is_not_the_profiles_card():
    path = SCENARIOS / "phase9-single-worker.toml"
    scn = load_scenario(path, {"hardware.card": "rtx4090", "hardware.vram": "16 GiB"})
    assert any("hardware.card = 'rtx4090'" in w for w in profile_warnings(scn))
    scn = load_scenario(path, {"hardware.card": "rtx5070ti"})
    assert profile_warnings(scn) == []
