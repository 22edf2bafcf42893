"""`cuzk-sim run` / `check`: outputs and exit codes a CI can gate on."""

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from cuzk_sim.cli import app

runner = CliRunner()
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
DOCS = (SCENARIOS.parent / "docs" / "simulator.md").read_text()


def test_check_bundled_scenarios_passes():
    result = runner.invoke(app, ["check", str(SCENARIOS)])
    assert result.exit_code == 0, result.output
    assert "phase9-dual-worker-three-part-fix" in result.output
    assert "FAIL" not in result.output


def test_check_fails_on_a_mismatch(tmp_path):
    text = (SCENARIOS / "phase9-dual-worker-three-part-fix.toml").read_text()
    (tmp_path / "wrong.toml").write_text(text.replace("oom = false", "oom = true"))
    result = runner.invoke(app, ["check", str(tmp_path)])
    assert result.exit_code == 1
    assert "FAIL" in result.output


def test_run_json_has_the_documented_keys():
    result = runner.invoke(app, ["run", str(SCENARIOS / "phase9-single-worker.toml"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in (
        "scenario",
        "oom",
        "oom_events",
        "peak_vram_bytes",
        "seconds_per_proof",
        "proofs_completed",
        "proofs_failed",
        "stopped_at_oom",
        "pce_extractions",
        "stalled",
        "stall",
    ):
        assert key in data
        # documented in the --json description (the proofs_* trio is written as one word)
        assert f"`{key}`" in DOCS or key.startswith("proofs_")
    assert data["stalled"] is False and data["stall"] is None
    assert data["oom"] is False and data["proofs_completed"] == 10


def test_run_exits_1_on_predicted_oom_and_prints_a_post_mortem():
    path = SCENARIOS / "phase9-dual-worker-prestage-under-mutex.toml"
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 1
    assert "OOM at t=" in result.output and "live at that instant" in result.output


def test_run_bad_input_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[hardware]\nvram = "lots"\n[[workload]]\nkind = "porep"\ncount = 1\n')
    result = runner.invoke(app, ["run", str(bad)])
    assert result.exit_code == 2
    assert "hardware.vram" in result.output and "Traceback" not in result.output


def test_trace_and_plot_files(tmp_path):
    path = SCENARIOS / "phase9-dual-worker-prestage-outside-mutex.toml"
    trace, plot = tmp_path / "t.json", tmp_path / "p.png"
    result = runner.invoke(app, ["run", str(path), "--trace", str(trace), "--plot", str(plot)])
    assert result.exit_code == 1
    events = json.loads(trace.read_text())["traceEvents"]
    phases = {e["ph"] for e in events}
    assert {"X", "C", "i", "M"} <= phases  # spans, VRAM counter, OOM instants, names
    cats = {e.get("cat") for e in events if e["ph"] == "X"}
    assert {"kernel", "copy", "lock", "partition", "synthesis"} <= cats
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_scenario_paths_are_relative_to_the_scenario(tmp_path):
    shutil.copytree(SCENARIOS, tmp_path / "s")
    result = runner.invoke(app, ["check", str(tmp_path / "s" / "replay-ours-porep-mutex.toml")])
    assert result.exit_code == 0, result.output


def test_bundled_scenarios_fast_and_traced_agree():
    from test_properties import assert_same_run

    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.scenario.files import scenario_files
    from cuzk_sim.simulate.runner import simulate

    for path in scenario_files([SCENARIOS]):  # gate/ too; not the sweep specs in sweeps/
        scn = load_scenario(path)
        if scn.spec.expect is None:
            continue
        assert_same_run(simulate(scn), simulate(scn, record=True), path.name)


def test_check_reports_an_invalid_scenario_as_error(tmp_path):
    (tmp_path / "broken.toml").write_text('[hardware]\ngpus = 0\n[[workload]]\nkind = "porep"\n')
    result = runner.invoke(app, ["check", str(tmp_path)])
    assert result.exit_code == 2  # bad input, as documented (and as `gate` does)
    assert "ERROR" in result.output and "hardware.gpus" in result.output


def test_check_with_an_unusable_and_a_mismatching_scenario_exits_2_after_the_table(tmp_path):
    (tmp_path / "broken.toml").write_text('[hardware]\ngpus = 0\n[[workload]]\nkind = "porep"\n')
    shutil.copy(SCENARIOS / "phase8-baseline.toml", tmp_path / "ok.toml")
    mismatch = tmp_path / "mismatch.toml"
    mismatch.write_text(
        '[hardware]\ngpus = 1\nvram = "16 GiB"\n[[workload]]\nkind = "winning_post"\n'
        "count = 1\n[expect]\noom = true\n"
    )
    result = runner.invoke(app, ["check", str(tmp_path)])
    assert result.exit_code == 2
    assert "ERROR" in result.output and "FAIL" in result.output and "PASS" in result.output
    mismatch_only = tmp_path / "m"
    mismatch_only.mkdir()
    mismatch.rename(mismatch_only / "mismatch.toml")
    assert runner.invoke(app, ["check", str(mismatch_only)]).exit_code == 1


def test_check_of_a_missing_path_is_bad_input(tmp_path):
    result = runner.invoke(app, ["check", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no such file or folder" in result.output


def test_check_explains_an_unexpected_oom(tmp_path):
    text = (SCENARIOS / "phase9-dual-worker-prestage-under-mutex.toml").read_text()
    (tmp_path / "hopeful.toml").write_text(text.replace("oom = true", "oom = false"))
    result = runner.invoke(app, ["check", str(tmp_path)])
    assert result.exit_code == 1
    assert "live at that instant" in result.output and "d_a_stage" in result.output


def test_bad_output_options_exit_2_before_simulating(tmp_path, monkeypatch):
    import cuzk_sim.simulate.runner

    def no_simulating(*args, **kwargs):
        raise AssertionError("simulated before checking the output options")

    monkeypatch.setattr(cuzk_sim.simulate.runner, "simulate", no_simulating)
    path = str(SCENARIOS / "phase9-single-worker.toml")
    cases = [
        (["--plot", str(tmp_path / "p.txt")], "--plot", "must end in one of .png, .pdf, .svg"),
        (["--plot", str(tmp_path / "no" / "p.png")], "--plot", "does not exist"),
        (["--trace", str(tmp_path / "no" / "t.json")], "--trace", "does not exist"),
        (["--trace", str(tmp_path)], "--trace", "is a folder"),
    ]
    for options, option, needle in cases:
        result = runner.invoke(app, ["run", path, *options])
        assert result.exit_code == 2, (options, result.output)
        assert option in result.output and needle in result.output
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_gate_update_baseline_into_a_missing_folder_exits_2_before_simulating(tmp_path):
    target = tmp_path / "no" / "baseline.json"
    result = runner.invoke(
        app,
        ["gate", str(SCENARIOS / "gate"), "--baseline", str(target), "--update-baseline"],
    )
    assert result.exit_code == 2
    assert "--update-baseline" in result.output and "does not exist" in result.output
    assert "cuzk-sim gate" not in result.output  # no table: nothing was simulated
