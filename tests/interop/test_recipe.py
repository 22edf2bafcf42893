"""docs/interop.md's recipe for one's own circuit, run as written (circom --prime
bls12381, snarkjs setup, cuzk-sim check/prove/verify, snarkjs verify), except its powers
of tau, which is the suite's cached 2^8 one (same commands, a beacon as the contribution,
made once per machine).

Oracle: public.json is the circuit's outputs by hand (3 * 11 = 33, 3 + 11 = 14), and
snarkjs itself verifies our proof."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from snarkjs_toolchain import CIRCOM2, SNARKJS

pytestmark = pytest.mark.interop
DOC = Path(__file__).resolve().parents[2] / "docs" / "interop.md"


def recipe() -> tuple[str, str, list[str]]:
    """The circom source, the input JSON and the shell lines of the recipe section."""
    text = DOC.read_text()
    section = text[text.index("## Your own circuit") :]
    section = section[: section.index("\n## ", 1)]
    blocks = dict(re.findall(r"```(\w+)\n(.*?)```", section, re.S))
    lines = [x.strip() for x in blocks["sh"].splitlines()]
    return blocks["circom"], blocks["json"], [x for x in lines if x and not x.startswith("#")]


def argv(line: str) -> list[str]:
    words = shlex.split(line)
    if words[:2] == ["npx", "circom2"]:
        return ["node", str(CIRCOM2), *words[2:]]
    if words[:2] == ["npx", "snarkjs"]:
        return ["node", str(SNARKJS), *words[2:]]
    if words[0] == "cuzk-sim":
        return [sys.executable, "-m", "cuzk_sim", *words[1:]]
    raise AssertionError(f"the recipe runs something the test does not know: {line}")


def test_the_recipe_in_docs_interop_proves_and_both_verifiers_accept(
    ptau: Path, tmp_path: Path
) -> None:
    circom, input_json, lines = recipe()
    (tmp_path / "multiply.circom").write_text(circom)
    (tmp_path / "input.json").write_text(input_json)
    outputs = []
    for line in lines:
        if line.startswith("npm install"):
            continue  # the suite's pinned node_modules (tests/interop/package.json)
        if "powersoftau" in line:
            if "prepare phase2" in line:  # the cached file stands for the three steps
                shutil.copyfile(ptau, tmp_path / line.split()[-1])
            continue
        done = subprocess.run(argv(line), cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        outputs.append((line, done.stdout))
    assert json.loads((tmp_path / "public.json").read_text()) == ["33", "14"]
    said = {line: out for line, out in outputs}
    assert "WITNESS IS CORRECT" in said["cuzk-sim groth16 check multiply.r1cs witness.wtns"]
    verify = "groth16 verify verification_key.json public.json proof.json"
    assert said[f"cuzk-sim {verify}"].strip() == "OK!"
    assert "OK!" in said[f"npx snarkjs {verify}"]
