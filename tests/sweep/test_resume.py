"""Resume: a rerun with the same --out skips the rows already there; an interrupted
sweep leaves complete files (written atomically) and the rerun finishes the rest."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import cuzk_sim.sweep.run as sweep_run
from cuzk_sim import api
from cuzk_sim.cli import app

runner = CliRunner()


class Counting:
    """Stands in for `evaluate` in the sweep runner: counts calls, and can raise
    KeyboardInterrupt (a user's Ctrl-C) before the call numbered `stop_after`."""

    def __init__(self, original, stop_after: int | None = None) -> None:
        self.original, self.stop_after, self.calls = original, stop_after, 0

    def __call__(self, task):
        if self.stop_after is not None and self.calls == self.stop_after:
            raise KeyboardInterrupt
        self.calls += 1
        return self.original(task)


@pytest.fixture
def counting(monkeypatch):
    original = sweep_run.evaluate

    def install(stop_after: int | None = None) -> Counting:
        c = Counting(original, stop_after)
        monkeypatch.setattr(sweep_run, "evaluate", c)
        return c

    return install


def test_rerun_skips_done_rows(tmp_path, small_spec_path, small_outcome, counting):
    out = tmp_path / "out"
    first = counting()
    api.sweep(small_spec_path, out, jobs=1, plots=False)
    assert first.calls == 18
    again = counting()
    outcome = api.sweep(small_spec_path, out, jobs=1, plots=False)
    assert again.calls == 0
    assert outcome.resumed == 18 and outcome.ran == 0
    assert outcome.rows == small_outcome.rows


def test_interrupted_sweep_resumes(tmp_path, small_spec_path, small_outcome, counting):
    out = tmp_path / "out"
    counting(stop_after=5)
    with pytest.raises(KeyboardInterrupt):
        api.sweep(small_spec_path, out, jobs=1, plots=False)
    doc = json.loads((out / "results.json").read_text())
    assert [r["index"] for r in doc["rows"]] == [0, 1, 2, 3, 4]
    assert not list(out.glob(".*tmp"))  # no temporary file left behind
    csv_lines = (out / "results.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + 5
    rest = counting()
    outcome = api.sweep(small_spec_path, out, jobs=1, plots=False)
    assert rest.calls == 13
    assert outcome.rows == small_outcome.rows


def test_changed_base_reruns(tmp_path, small_spec_path, counting):
    """The key covers the resolved scenario: a different base scenario is new work."""
    out = tmp_path / "out"
    api.sweep(small_spec_path, out, jobs=1, plots=False)
    other = tmp_path / "other.toml"
    other.write_text(
        small_spec_path.read_text().replace("phase9-dual-worker-three-part-fix", "phase8-baseline")
    )
    c = counting()
    api.sweep(other, out, jobs=1, plots=False)
    assert c.calls == 18


def test_cli_writes_every_file_and_reports_resume(tmp_path, small_spec_path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["sweep", str(small_spec_path), "--out", str(out), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    for name in (
        "results.json",
        "results.csv",
        "summary.json",
        "summary.md",
        "heatmap.png",
        "frontier.png",
    ):
        assert (out / name).stat().st_size > 0, name
    assert (out / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "18 configurations" in result.output and "max safe workers" in result.output
    again = runner.invoke(app, ["sweep", str(small_spec_path), "--out", str(out), "--jobs", "1"])
    assert again.exit_code == 0 and "18 taken from the output folder" in again.output


def test_changed_model_code_reruns(tmp_path, small_spec_path, counting, monkeypatch):
    """Rows computed by other model code are not reused: the key covers the code."""
    import cuzk_sim.sweep.fingerprint as fingerprint

    out = tmp_path / "out"
    api.sweep(small_spec_path, out, jobs=1, plots=False)
    monkeypatch.setattr(fingerprint, "code_fingerprint", lambda: "another-model")
    monkeypatch.setattr(sweep_run, "code_fingerprint", lambda: "another-model")
    c = counting()
    outcome = api.sweep(small_spec_path, out, jobs=1, plots=False)
    assert c.calls == 18 and outcome.resumed == 0


def test_a_worker_with_other_code_stops_the_sweep(small_spec_path):
    from dataclasses import replace

    from cuzk_sim.io.errors import InputError
    from cuzk_sim.sweep.evaluate import evaluate
    from cuzk_sim.sweep.run import _task, expand

    spec = api.load_sweep(small_spec_path)
    task = _task(spec, expand(spec)[0].raw, "k", 1, 0.0)
    assert evaluate(task)["error"] is None  # the client's own fingerprint passes
    with pytest.raises(InputError, match="runs other cuzk-sim code"):
        evaluate(replace(task, code="0123456789abcdef"))
