"""gpu-run's table and JSON said 0 for figures its pipeline never measures (the new-user
walkthrough of 2026-12-03: "gpu-run's host row on a real device is computed from figures
it does not measure"): the host row read "cores 0% busy, synthesizers 0% busy, 0% waiting
on RAM", the GPU row "HtoD 0%, DtoH 0%", the bottleneck's evidence listed those zeros,
the JSON carried them as 0.0, and the last row called the run's wall time "simulated
time". What the pipeline measures (gpu/run_report.py `_metrics`): proofs and latencies,
per GPU the share of the run inside GPU sections and the lock waits; not the copy
engines' occupancy, nor anything on the host side (docs/validation.md)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).parents[2]
BASE = ROOT / "scenarios" / "validation" / "base.toml"
NOT_MEASURED = (
    "peak_host_bytes",
    "peak_host_rss_bytes",
    "peak_core_demand",
    "host_core_utilization",
    "synthesis_busy",
    "host_ram_wait",
    "gpu_starved",
    "cpu_pool_busy",
)


def _rows(text: str) -> dict[str, str]:
    """The table's rows, label -> value (wrapped lines joined)."""
    rows: dict[str, str] = {}
    label = ""
    for line in text.splitlines():
        cells = line.split("│")
        if len(cells) != 4:
            continue
        if cells[1].strip():
            label = cells[1].strip()
            rows[label] = cells[2].strip()
        elif label:
            rows[label] += " " + cells[2].strip()
    return rows


def _as_on_the_gpu():
    """The pipeline's result of base.toml, as the real device reports it: the dry-run
    pipeline's run (the metrics come from the same RunReport code on either device) with
    its device set to "real", as the CLI sets it after a real run."""
    from cuzk_sim.api import describe
    from cuzk_sim.cli.gpu_run import _real_run, _scenario

    scn = _scenario(BASE, ["workload[0].count=2"])
    run = _real_run(BASE, scn, "dry-run", None, 0, False, (None, None, None))
    result = run.execute()
    describe(result, scn)
    result.device = "real"
    return result


def test_the_real_devices_table_says_not_measured():
    from cuzk_sim.results.tables import print_run

    result = _as_on_the_gpu()
    console = Console(width=200, record=True)
    print_run(result, console)
    rows = _rows(console.export_text())
    assert rows["host"].startswith("not measured"), rows["host"]
    gpu = rows["GPU utilization"]
    assert "HtoD" not in gpu and "DtoH" not in gpu, gpu
    assert "copy engines not measured" in gpu, gpu
    evidence = rows["bottleneck"]
    # no figure of a stage it does not measure (the old evidence listed each at 0%)
    for unmeasured in ("synthesizers busy", "waiting on host RAM", "copy engines 0%", "cores 0%"):
        assert unmeasured not in evidence, evidence
    assert "not measured" in evidence, evidence
    assert "simulated time" not in rows, rows
    assert rows["wall time (measured)"].endswith(" s")


def test_the_real_devices_json_has_null_for_what_it_does_not_measure():
    data = _as_on_the_gpu().to_dict()
    for key in NOT_MEASURED:
        assert key in data, key  # the keys of `run --json`, so the two still diff
        assert data[key] is None, (key, data[key])
    for dev in data["devices"].values():
        assert dev["copy_utilization"] is None
        assert dev["mutex_held"] is not None  # measured: the GPU sections
    assert data["seconds_per_proof"] is not None  # measured on the real device


def test_the_dry_run_json_has_null_host_figures():
    res = CliRunner().invoke(
        app,
        ["gpu-run", str(BASE), "--device", "dry-run", "--json", "--set", "workload[0].count=1"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout[res.stdout.index("{") :])
    for key in NOT_MEASURED:
        assert data[key] is None, (key, data[key])


def test_the_model_keeps_its_host_figures():
    res = CliRunner().invoke(app, ["run", str(BASE), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["host_budget_bytes"] > 0
    for key in NOT_MEASURED:
        assert isinstance(data[key], int | float), (key, data[key])
