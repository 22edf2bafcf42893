"""The console script works on a machine without a GPU and never imports CuPy."""

import subprocess
import sys

from typer.testing import CliRunner

from cuzk_sim.cli import app

runner = CliRunner()


def test_version_matches_distribution_metadata():
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"cuzk-sim {version('cuzk-sim')}"


def test_help_lists_usage():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "Usage" in result.output


def test_importing_package_and_cli_does_not_import_cupy():
    code = "import sys, cuzk_sim, cuzk_sim.cli; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
