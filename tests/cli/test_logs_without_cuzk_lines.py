"""`logs`, `calibrate` and `scenario-from-log` refuse a file with no cuzk line in it (the
new-user review of 2026-12-03): `logs scenario.toml` printed "0 known, 33 not cuzk's
(ignored) ... findings: none" and exited 0 -- an all-clear for CI from a file that was
never a log -- and `scenario-from-log` wrote a scenario of assumptions from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

NOT_A_LOG = "name = 'x'\n[hardware]\ngpus = 1\n"
# one TIMELINE line of the format docs/logs.md lists: a worker's GPU section starting
A_LOG = "TIMELINE,1000,GPU_START,porep-0,0,gpu0-w0,0\n"


@pytest.mark.parametrize("text", ["", NOT_A_LOG])
@pytest.mark.parametrize(
    "command",
    [
        ["logs"],
        ["logs", "--json"],
        ["scenario-from-log", "-o", "{out}"],
        ["calibrate", "--base", "h200", "-o", "{out}"],
    ],
)
def test_a_file_without_a_cuzk_line_is_bad_input(tmp_path: Path, text: str, command):
    log = tmp_path / "daemon.log"
    log.write_text(text)
    out = tmp_path / "out.toml"
    args = [a.format(out=out) for a in command]
    res = CliRunner().invoke(app, [args[0], str(log), *args[1:]])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {log}: "), res.output
    assert not out.exists()


def test_one_cuzk_line_is_read(tmp_path: Path):
    log = tmp_path / "daemon.log"
    log.write_text(NOT_A_LOG + A_LOG)
    res = CliRunner().invoke(app, ["logs", str(log)])
    assert res.exit_code == 0, res.output
    assert "1 known" in res.output
