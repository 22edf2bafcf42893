"""One tree per process: a checkout's cuzk_sim uses that checkout's gpu/ and reference/.

The venv has THIS checkout installed editable; a copy of it elsewhere plays "checkout B".
Before the fix, `python3 -m cuzk_sim` run inside B loaded cuzk_sim from B but cuzk_sim.gpu
and cuzk_sim.reference from this checkout (the editable finder's mapping).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WHERE = (
    "import cuzk_sim, cuzk_sim.gpu, cuzk_sim.reference, cuzk_sim.reference.formats\n"
    "for m in (cuzk_sim, cuzk_sim.gpu, cuzk_sim.reference, cuzk_sim.reference.formats):\n"
    "    print(m.__file__)\n"
)


def python(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def make_checkout(where: Path, folders: tuple[str, ...]) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in folders:
        shutil.copytree(ROOT / folder, where / folder, ignore=ignore)
    shutil.copyfile(ROOT / "pyproject.toml", where / "pyproject.toml")
    return where


@pytest.fixture(scope="module")
def installed_here() -> None:
    found = python("-c", "import cuzk_sim; print(cuzk_sim.__file__)", cwd=Path("/"))
    if found.returncode != 0 or not found.stdout.startswith(str(ROOT)):
        pytest.skip(f"this checkout is not the installed one here: {found.stdout.strip()}")


def test_another_checkout_uses_its_own_gpu_and_reference(installed_here, tmp_path: Path) -> None:
    other = make_checkout(tmp_path / "b", ("cuzk_sim", "gpu", "reference"))
    done = python("-c", WHERE, cwd=other)
    assert done.returncode == 0, done.stderr
    files = done.stdout.split()
    assert len(files) == 4
    for f in files:
        assert Path(f).resolve().is_relative_to(other.resolve()), files


def test_the_cli_in_another_checkout_runs_on_its_own_tree(installed_here, tmp_path: Path) -> None:
    other = make_checkout(tmp_path / "b", ("cuzk_sim", "gpu", "reference"))
    done = python("-m", "cuzk_sim", "gpu-plan", "--domain-log2", "10", "--json", cwd=other)
    assert done.returncode == 0, done.stderr
    # a change in B's prover shows: B's plan, not the installed checkout's
    prover = other / "gpu" / "__init__.py"
    prover.write_text(prover.read_text() + "\nraise ImportError('checkout B gpu/ was loaded')\n")
    done = python("-m", "cuzk_sim", "gpu-plan", "--domain-log2", "10", "--json", cwd=other)
    assert done.returncode != 0
    assert "checkout B gpu/ was loaded" in done.stdout + done.stderr


def test_a_partial_checkout_is_refused_in_one_line_naming_both_trees(
    installed_here, tmp_path: Path
) -> None:
    other = make_checkout(tmp_path / "b", ("cuzk_sim", "reference"))  # no gpu/
    done = python("-m", "cuzk_sim", "check", str(ROOT / "scenarios"), cwd=other)
    assert done.returncode == 2
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert str(other / "cuzk_sim") in lines[0] and str(ROOT / "gpu") in lines[0], lines[0]
    assert "Traceback" not in lines[0]


def test_this_checkout_passes_the_check() -> None:
    done = python("-m", "cuzk_sim", "--version", cwd=ROOT)
    assert done.returncode == 0 and done.stdout.startswith("cuzk-sim "), done.stderr
