"""Two rows of the run table said something other than what they hold (the new-user
review of 2026-12-03): the bottleneck of an idle run read "nothing saturated: nothing
saturated (under capacity): ...", and gpu-run's "peak host RAM" read "0 B/507.00 GiB
budget" where gpu-run measures no host memory (docs/validation.md: host-side metrics are
0, not measured)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).parents[2]


def _row(output: str, label: str) -> str:
    line = next(x for x in output.splitlines() if x.startswith(f"│ {label} "))
    return line.split("│")[2].strip()


def test_an_idle_run_names_its_bottleneck_once(tmp_path: Path):
    # a scenario with no proof (count = 0, as scenario-from-log writes for a log without
    # jobs): nothing runs, so nothing is saturated
    text = (ROOT / "scenarios" / "phase8-baseline.toml").read_text()
    path = tmp_path / "idle.toml"
    path.write_text(text.replace("count = 10", "count = 0").split("[expect]")[0])
    res = CliRunner().invoke(app, ["run", str(path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    row = _row(res.output, "bottleneck")
    assert row.startswith("nothing saturated (under capacity):"), row
    assert res.output.count("nothing saturated") == 1, res.output


def test_gpu_run_does_not_report_an_unmeasured_host_peak():
    base = ROOT / "scenarios" / "validation" / "base.toml"
    res = CliRunner().invoke(
        app,
        ["gpu-run", str(base), "--device", "dry-run", "--set", "workload[0].count=1"],
        env={"COLUMNS": "200"},
    )
    assert res.exit_code == 0, res.output
    row = _row(res.output, "peak host RAM")
    assert row.startswith("not measured (gpu-run;"), row
    assert "0 B/" not in row
