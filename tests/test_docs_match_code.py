"""The docs promise commands and code; these tests keep the promises true."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(doc: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)


def readme_commands() -> list[list[str]]:
    """`python3 -m cuzk_sim ...` lines of the README's shell blocks, as argv after the
    program name."""
    text = (ROOT / "README.md").read_text()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("#", 1)[0].split("&&")[-1].strip()
            if line.startswith("python3 -m cuzk_sim "):
                commands.append(shlex.split(line)[3:])
    return commands


def test_readme_quick_start_is_two_commands_and_ci_runs_the_test_one():
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [ln for ln in quick.splitlines() if ln.strip()]
    assert len(lines) == 2
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert lines[1] in [ln.strip() for ln in ci]


@pytest.mark.parametrize("argv", readme_commands(), ids=lambda a: " ".join(a[:2]))
def test_every_readme_command_exists(argv):
    # The command path (words before the first option or file argument) must answer --help.
    path = []
    for word in argv:
        if word.startswith(("-", "[")) or "." in word or "/" in word or word.isupper():
            break
        path.append(word)
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output


def test_reference_guide_example_runs():
    (block,) = python_blocks(ROOT / "docs" / "reference.md")[:1]
    exec(compile(block, "docs/reference.md", "exec"), {})
