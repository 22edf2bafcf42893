"""`cuzk-sim gate`: regressions and OOMs fail, an unchanged plan passes.

Oracle: a one-kernel plan under a profile where the kernel costs exactly 10 ms per unit of
size and nothing else costs time, so one partition per proof and one worker complete a
proof every size x 10 ms (hand arithmetic); baselines are written by hand from that.
"""

import json
import math
import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.gate.verdicts import parse_tolerance
from cuzk_sim.plan.contract import Alloc, Free, Kernel, Lock, Plan, Unlock

runner = CliRunner()
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
GIB = 2**30

ZERO = 'time = "0 s"\nsize = 1\n'
PROFILE = (
    textwrap.dedent("""
    name = "gate-toy"
    provenance = "test: msm_g1 costs 10 ms per point, everything else nothing"
    [gpu]
    model = "toy"
    vram = "16 GiB"
    context_overhead = "400 MiB"
    [copy_engine]
    pinned = "1 GiB/s"
    pageable = "1 GiB/s"
    latency = "0 s"
    [kernel.msm_g1]
    time = "1 s"
    size = 100
    [pce]
    extract = { time = "0 s", size = 1 }
    load = "0 s"
    host_bytes = "1 GiB"
    """)
    + "".join(
        f"[kernel.{k}]\n{ZERO}"
        for k in ("ntt", "pointwise", "msm_g2", "batch_add_g1", "batch_add_g2")
    )
    + "".join(f"[cpu.{k}]\n{ZERO}" for k in ("synthesis", "prep_msm", "msm_g2_cpu", "assemble"))
)

SCENARIO = textwrap.dedent("""
    name = "toy-gate"
    profile = "profile.toml"
    on_oom = "continue"
    [engine.gpus]
    gpu_workers_per_device = 1
    [engine.pce]
    cached = ["porep"]
    [plan]
    file = "plan.json"
    [[workload]]
    kind = "porep"
    count = 4
    partitions = 1
    """)


def one_kernel_plan(points: int, extra_alloc: int = 0) -> Plan:
    steps = [Lock("gpu"), Alloc("d_points", GIB)]
    if extra_alloc:
        steps.append(Alloc("d_extra", extra_alloc))
    steps += [Kernel("msm", "msm_g1", points), Free("d_points")]
    if extra_alloc:
        steps.append(Free("d_extra"))
    steps.append(Unlock("gpu"))
    return Plan("toy", tuple(steps))


def setup(tmp_path: Path, plan: Plan, baseline_s: float | None = 1.0) -> Path:
    (tmp_path / "profile.toml").write_text(PROFILE)
    (tmp_path / "plan.json").write_text(plan.to_json())
    (tmp_path / "toy.toml").write_text(SCENARIO)
    entries = {} if baseline_s is None else {"toy-gate": {"seconds_per_proof": baseline_s}}
    for e in entries.values():
        e["oom"] = False
    (tmp_path / "baseline.json").write_text(json.dumps({"scenarios": entries}))
    return tmp_path / "baseline.json"


def gate(tmp_path: Path, *args: str):
    return runner.invoke(
        app,
        ["gate", str(tmp_path / "toy.toml"), "--baseline", str(tmp_path / "baseline.json")]
        + list(args),
    )


def test_unchanged_plan_passes(tmp_path):
    setup(tmp_path, one_kernel_plan(100))  # 100 points x 10 ms = 1 s per proof
    result = gate(tmp_path, "--json")
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)["rows"][0]
    assert row["verdict"] == "PASS"
    assert row["seconds_per_proof"] == pytest.approx(1.0)
    assert row["delta"] == pytest.approx(0.0, abs=1e-9)


def test_a_bigger_kernel_fails_with_its_delta(tmp_path):
    setup(tmp_path, one_kernel_plan(150))  # 1.5 s per proof against 1 s: +50 %
    result = gate(tmp_path, "--json")
    assert result.exit_code == 1, result.output
    row = json.loads(result.output)["rows"][0]
    assert row["verdict"] == "FAIL" and row["oom"] == "no"
    assert row["delta"] == pytest.approx(0.5)
    assert any("throughput regression" in r and "+50.0%" in r for r in row["reasons"])
    table = gate(tmp_path)
    assert table.exit_code == 1
    assert "+50.0%" in table.output and "FAIL" in table.output


def test_tolerance_decides(tmp_path):
    setup(tmp_path, one_kernel_plan(104))  # +4 %
    assert gate(tmp_path, "--tolerance", "5%").exit_code == 0
    assert gate(tmp_path, "--tolerance", "0.03").exit_code == 1


def test_faster_passes_with_a_note(tmp_path):
    setup(tmp_path, one_kernel_plan(50))  # 0.5 s: -50 %
    result = gate(tmp_path)
    assert result.exit_code == 0, result.output
    assert "faster than the baseline by 50.0%" in result.output


def test_an_extra_alloc_in_the_critical_section_ooms_and_fails(tmp_path):
    # 1 GiB + 15 GiB + 400 MiB context > 16 GiB: the extra buffer cannot fit.
    setup(tmp_path, one_kernel_plan(100, extra_alloc=15 * GIB))
    result = gate(tmp_path, "--json")
    assert result.exit_code == 1, result.output
    row = json.loads(result.output)["rows"][0]
    # the post-mortem's sentence, as `run` prints it
    assert any(
        r.startswith("unexpected OOM at t=") and "on gpu0" in r and "d_extra" in r
        for r in row["reasons"]
    )
    assert row["oom"] == "yes"
    assert row["seconds_per_proof"] is None
    assert any("no proof completed" in r for r in row["reasons"])


def test_the_extra_alloc_that_still_fits_passes(tmp_path):
    # 1 GiB + 14 GiB + 400 MiB = 15.39 GiB <= 16 GiB.
    setup(tmp_path, one_kernel_plan(100, extra_alloc=14 * GIB))
    assert gate(tmp_path).exit_code == 0


def test_missing_baseline_entry_is_a_clear_failure(tmp_path):
    setup(tmp_path, one_kernel_plan(100), baseline_s=None)
    result = gate(tmp_path)
    assert result.exit_code == 1
    assert "no baseline entry" in result.output
    assert "Traceback" not in result.output


def test_missing_baseline_file_is_bad_input(tmp_path):
    setup(tmp_path, one_kernel_plan(100))
    (tmp_path / "baseline.json").unlink()
    result = gate(tmp_path)
    assert result.exit_code == 2
    assert "baseline.json: no such baseline file" in result.output


@pytest.mark.parametrize(
    "doc, key",
    [
        ("{", "not JSON"),
        ('{"scenarios": []}', "scenarios: expected an object"),
        ('{"scenarios": {"toy-gate": {"seconds_per_proof": -1, "oom": false}}}', "toy-gate"),
        ('{"scenarios": {"toy-gate": {"seconds_per_proof": 1}}}', "toy-gate.oom"),
    ],
)
def test_malformed_baseline_names_the_key(tmp_path, doc, key):
    setup(tmp_path, one_kernel_plan(100))
    (tmp_path / "baseline.json").write_text(doc)
    result = gate(tmp_path)
    assert result.exit_code == 2
    assert key in result.output


def test_update_baseline_records_the_hand_figure(tmp_path):
    baseline = setup(tmp_path, one_kernel_plan(250))
    baseline.unlink()
    result = gate(tmp_path, "--update-baseline")
    assert result.exit_code == 0, result.output
    doc = json.loads(baseline.read_text())
    assert doc["scenarios"]["toy-gate"]["seconds_per_proof"] == pytest.approx(2.5)
    assert doc["scenarios"]["toy-gate"]["oom"] is False
    assert doc["command"].startswith("cuzk-sim gate ") and "--update-baseline" in doc["command"]
    assert gate(tmp_path).exit_code == 0  # the recorded state now passes


def test_update_keeps_entries_of_scenarios_not_run(tmp_path):
    baseline = setup(tmp_path, one_kernel_plan(100))
    doc = json.loads(baseline.read_text())
    doc["scenarios"]["other"] = {"seconds_per_proof": 7.0, "oom": False}
    baseline.write_text(json.dumps(doc))
    assert gate(tmp_path, "--update-baseline").exit_code == 0
    assert json.loads(baseline.read_text())["scenarios"]["other"]["seconds_per_proof"] == 7.0


def test_a_broken_scenario_is_bad_input(tmp_path):
    setup(tmp_path, one_kernel_plan(100))
    (tmp_path / "toy.toml").write_text(SCENARIO.replace("count = 4", "cont = 4"))
    result = gate(tmp_path)
    assert result.exit_code == 2
    assert "workload[0].cont: unknown key" in result.output


@pytest.mark.parametrize(
    "text, value",
    [("5%", 0.05), ("0.05", 0.05), (" 12.5% ", 0.125), ("0", 0.0), ("0%", 0.0)],
)
def test_tolerance_parsing(text, value):
    assert math.isclose(parse_tolerance(text), value)


@pytest.mark.parametrize("text", ["five", "5 %%", "-1%", "nan", "", "%", "2000%"])
def test_bad_tolerance_is_refused(text):
    with pytest.raises(ValueError, match="tolerance|percentage"):
        parse_tolerance(text)


def test_bad_tolerance_on_the_command_line_names_the_option(tmp_path):
    setup(tmp_path, one_kernel_plan(100))
    result = gate(tmp_path, "--tolerance", "lots")
    assert result.exit_code == 2
    assert "--tolerance" in result.output and "lots" in result.output


def test_bundled_gate_passes_against_its_committed_baseline():
    result = runner.invoke(
        app,
        ["gate", str(SCENARIOS / "gate"), "--baseline", str(SCENARIOS / "gate" / "baseline.json")],
    )
    assert result.exit_code == 0, result.output
    for name in (
        "gate-ours-h200-2workers",
        "gate-ours-h200-prestage-pinned",
        "gate-ours-16gib-incident-card",
        "gate-ours-16gib-msm-chunks",
    ):
        assert name in result.output


def test_check_recurses_into_sub_folders(tmp_path):
    setup(tmp_path, one_kernel_plan(100))
    sub = tmp_path / "deep" / "er"
    sub.mkdir(parents=True)
    (sub / "profile.toml").write_text(PROFILE)
    (sub / "plan.json").write_text(one_kernel_plan(100, extra_alloc=15 * GIB).to_json())
    (sub / "nested.toml").write_text(
        SCENARIO.replace('"toy-gate"', '"nested"') + "[expect]\noom = false\n"
    )
    (tmp_path / "toy.toml").unlink()
    result = runner.invoke(app, ["check", str(tmp_path)])
    # found two folders down, and its OOM is a mismatch (exit 1); the profile TOMLs beside
    # the scenarios are the scenarios' own files, not scenarios: skipped, not errors
    assert result.exit_code == 1, result.output
    assert re.search(r"│ nested\s+│ FAIL", result.output), result.output
    assert "profile.toml" not in result.output


def test_check_reports_a_folder_toml_that_is_no_scenario_profile_or_spec(tmp_path):
    (tmp_path / "typo.toml").write_text('name = "forgot the workload"\n')
    (tmp_path / "spec.toml").write_text('base = "typo.toml"\n[axes]\n"hardware.gpus" = [1]\n')
    result = runner.invoke(app, ["check", str(tmp_path)])
    assert result.exit_code == 2  # the broken scenario is reported; the spec is skipped
    flat = re.sub(r"[\s│]+", "", result.output)
    assert "typo.toml:workload:requiredkeyismissing" in flat
    assert "spec.toml" not in result.output


def test_check_of_every_bundled_scenario_includes_the_gate_folder():
    result = runner.invoke(app, ["check", str(SCENARIOS)])
    assert result.exit_code == 0, result.output
    assert "gate-ours-16gib-incident-card" in result.output
    assert "FAIL" not in result.output


def test_a_kernel_kind_the_profile_cannot_price_is_bad_input_not_a_traceback(tmp_path):
    setup(tmp_path, Plan("new-kernel", (Lock("gpu"), Kernel("k", "fft", 10), Unlock("gpu"))))
    (tmp_path / "toy.toml").write_text(SCENARIO + "[expect]\noom = false\n")
    result = gate(tmp_path)
    assert result.exit_code == 2, result.output
    assert "kernel kind 'fft' is not priced" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    checked = runner.invoke(app, ["check", str(tmp_path / "toy.toml")])
    assert checked.exit_code == 2 and "ERROR" in checked.output
    assert "kernel kind 'fft'" in checked.output


def test_two_scenarios_with_one_name_are_bad_input(tmp_path):
    setup(tmp_path, one_kernel_plan(100))
    (tmp_path / "twin.toml").write_text(SCENARIO)
    result = runner.invoke(
        app, ["gate", str(tmp_path), "--baseline", str(tmp_path / "baseline.json")]
    )
    assert result.exit_code == 2
    assert "scenario name 'toy-gate' is also used by" in result.output


def test_update_baseline_with_a_broken_scenario_writes_nothing(tmp_path):
    baseline = setup(tmp_path, one_kernel_plan(100))
    before = baseline.read_text()
    (tmp_path / "broken.toml").write_text("[[workload]]\nkind = 'nope'\n")
    result = runner.invoke(
        app,
        ["gate", str(tmp_path), "--baseline", str(baseline), "--update-baseline"],
    )
    assert result.exit_code == 2
    assert "baseline NOT written" in result.output
    assert baseline.read_text() == before


def test_more_peak_vram_than_the_baseline_is_a_note_not_a_failure(tmp_path):
    baseline = setup(tmp_path, one_kernel_plan(100, extra_alloc=14 * GIB))
    doc = json.loads(baseline.read_text())
    # hand: 400 MiB context + 1 GiB; the plan now also holds 14 GiB more
    doc["scenarios"]["toy-gate"]["peak_vram_bytes"] = {"0": 400 * 2**20 + GIB}
    baseline.write_text(json.dumps(doc))
    result = gate(tmp_path, "--json")
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)["rows"][0]
    now = 400 * 2**20 + 15 * GIB
    expected = f"{now / (400 * 2**20 + GIB) - 1:+.1%}"
    assert any(f"peak VRAM on gpu0 15.39 GiB is {expected}" in n for n in row["notes"])


def test_a_malformed_baseline_peak_names_its_key(tmp_path):
    baseline = setup(tmp_path, one_kernel_plan(100))
    doc = json.loads(baseline.read_text())
    doc["scenarios"]["toy-gate"]["peak_vram_bytes"] = [1, 2]
    baseline.write_text(json.dumps(doc))
    result = gate(tmp_path)
    assert result.exit_code == 2
    assert "scenarios.toy-gate.peak_vram_bytes" in result.output
