"""The example GitHub workflow runs what exists: the tests through .ci/run, and a gate
command that passes on the bundled scenarios and writes its JUnit report."""

from __future__ import annotations

import os
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).resolve().parents[2]
yaml = pytest.importorskip("yaml", reason="PyYAML reads the workflow file")


def workflow() -> dict:
    return yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())


def test_the_test_job_runs_the_ci_entry_point():
    steps = workflow()["jobs"]["test"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    assert runs == [".ci/run"] and os.access(ROOT / ".ci" / "run", os.X_OK)


def test_the_gate_job_command_passes_and_writes_junit(tmp_path, monkeypatch):
    steps = workflow()["jobs"]["gate"]["steps"]
    (command,) = [s["run"] for s in steps if "cuzk_sim gate" in s.get("run", "")]
    words = shlex.split(command)
    assert words[:3] == ["python3", "-m", "cuzk_sim"]
    junit = words.index("--junit") + 1
    words[junit] = str(tmp_path / words[junit])
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = CliRunner().invoke(app, words[3:])
    assert result.exit_code == 0, result.output
    assert "::error" not in result.output
    suite = ET.parse(words[junit]).getroot()
    assert int(suite.get("tests")) == len(list((ROOT / "scenarios" / "gate").glob("*.toml")))
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
