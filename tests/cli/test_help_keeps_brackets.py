"""Every `[table]` an option's help names survives `--help` (the new-user review of
2026-12-03): Typer renders help as Rich markup, so `[jitter]` and `[plan]` vanished
("under the profile's measured  (or --jitter)", "Scenario TOML file ( gpu_prover)")."""

from __future__ import annotations

import re

import click
import typer
from typer.testing import CliRunner

from cuzk_sim.cli import app

TABLE = re.compile(r"\[[a-z_.]+\]")


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


def test_bracketed_names_in_option_help_are_printed():
    root = typer.main.get_command(app)
    checked = 0
    for path, cmd in _commands(root):
        wanted = {
            m
            for p in cmd.params
            for m in TABLE.findall((getattr(p, "help", None) or "").replace("\\[", "["))
        }
        if not wanted:
            continue
        out = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "400"}).output
        for name in wanted:
            assert name in out, (path, name)
            checked += 1
    assert checked >= 3  # run ([jitter]), gpu-run SCENARIO ([plan]), scenario-from-log ([plan])
