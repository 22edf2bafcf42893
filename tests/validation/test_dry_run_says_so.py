"""A dry run (no GPU: the pipeline on the model's allocator ledger) says so everywhere and
gives no timing: gpu-run's table and JSON, validate's report and criteria."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cuzk_sim.cli import app

runner = CliRunner()


def test_gpu_run_dry_run_table_says_dry_run_and_has_no_throughput(scenario_file):
    r = runner.invoke(app, ["gpu-run", str(scenario_file()), "--device", "dry-run"])
    assert r.exit_code == 0, r.output
    assert "DRY RUN" in r.output
    assert "proofs/h" not in r.output and "per hour" not in r.output
    assert "GPU-bound" not in r.output and "bottleneck" not in r.output
    assert "not timed (dry run)" in r.output


def test_gpu_run_dry_run_json_says_dry_run_and_nulls_every_time(scenario_file):
    r = runner.invoke(app, ["gpu-run", str(scenario_file()), "--device", "dry-run", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["device"] == "dry-run"
    for key in ("seconds_per_proof", "proofs_per_hour", "sim_time_s", "bottleneck"):
        assert d[key] is None, key
    for kind in d["kinds"].values():
        assert kind["seconds_per_proof"] is None and kind["proofs_per_hour"] is None
        assert kind["latency_p50_s"] is None and kind["completed"] == 2
    for dev in d["devices"].values():
        assert dev["compute_utilization"] is None and dev["mutex_held"] is None
    assert d["bottleneck_evidence"].startswith("dry run")
    # what a dry run does measure stays: memory and counts
    assert d["proofs_completed"] == 2 and d["peak_vram_bytes"]["0"] > 0


def test_model_run_json_has_no_device_key(scenario_file):
    d = json.loads(runner.invoke(app, ["run", str(scenario_file()), "--json"]).stdout)
    assert "device" not in d and d["seconds_per_proof"] is not None


def test_validate_dry_run_report_says_dry_runs_and_has_no_timing_criterion(tmp_path, scenario_file):
    scenario_file(workers=1, count=5, partitions=1)  # >= 4 partitions: s/proof compared
    (tmp_path / "spec.toml").write_text(
        'name = "t"\nbase = "s.toml"\ncaps = [-0.3, 3]\n[[config]]\nname = "w1"\n'
    )
    out = tmp_path / "out"
    r = runner.invoke(
        app, ["validate", str(tmp_path / "spec.toml"), "--out", str(out), "--device", "dry-run"]
    )
    assert r.exit_code == 0, r.output  # memory criteria met; no timing criterion to miss
    report = (out / "report.md").read_text()
    assert "real runs" not in report and "dry runs (no GPU)" in report
    assert "DRY RUNS" in report
    assert "s/proof within 10 %" not in report
    runs = [line.split("|") for line in report.splitlines() if line.startswith("| w1@")]
    assert len(runs) == 3
    for cells in runs:  # s/proof (pred / dry run) and its error: no figure from a dry run
        spp, err = cells[-3].strip(), cells[-2].strip()
        assert (spp == "-" or spp.endswith("/ not timed")) and err == "-"
    assert sum(cells[-3].strip().endswith("/ not timed") for cells in runs) == 2  # 2 fit
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["device"] == "dry-run"
    assert "spp_within_10pct" not in summary["summary"]["criteria"]
    assert summary["summary"]["spp_runs"] == 0
    assert all(row["real_spp"] is None and row["spp_error"] is None for row in summary["rows"])
    lines = (out / "real.jsonl").read_text().splitlines()
    assert all(json.loads(x)["real"]["device"] == "dry-run" for x in lines)


def test_gpu_run_dry_run_trace_says_dry_run(scenario_file, tmp_path):
    trace = tmp_path / "t.json"
    r = runner.invoke(
        app, ["gpu-run", str(scenario_file()), "--device", "dry-run", "--trace", str(trace)]
    )
    assert r.exit_code == 0, r.output
    other = json.loads(trace.read_text())["otherData"]
    assert other["device"] == "dry-run" and "DRY RUN" in other["note_device"]
