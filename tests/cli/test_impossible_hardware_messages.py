"""An impossible card or host says which figures collide (the new-user review of
2026-12-03): `vram = "100 MiB"` said only "must exceed the CUDA context" (not its size nor
where it came from), and a host RAM below the safety margin was reported as a proof's
shortfall against a negative budget ("the budget (engine.memory) is -5.0 GiB")."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cuzk_sim.cli import app

SCENARIO = """
name = "impossible"
profile = "rtx5070ti"
[hardware]
gpus = 1
vram = "{vram}"
host_ram = "{host}"
{context}
[[workload]]
kind = "porep"
count = 1
"""


def _run(tmp_path: Path, vram="16 GiB", host="512 GiB", context=""):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(vram=vram, host=host, context=context))
    res = CliRunner().invoke(app, ["run", str(path)])
    assert res.exit_code == 2, res.output
    return path, res.output.strip()


def test_a_card_below_the_context_names_the_context(tmp_path: Path):
    path, out = _run(tmp_path, vram="900 MiB", context='context_overhead = "1 GiB"')
    assert out == (
        f"error: {path}: impossible hardware: hardware.vram (900 MiB) must exceed the CUDA "
        "context (1.00 GiB, hardware.context_overhead)"
    )
    path, out = _run(tmp_path, vram="100 MiB")
    assert out.startswith(f"error: {path}: impossible hardware: hardware.vram (100 MiB)")
    assert "profile rtx5070ti's gpu.context_overhead" in out


def test_host_ram_below_the_safety_margin_is_named(tmp_path: Path):
    # the default safety margin is 5 GiB (docs/simulator.md); 4 GiB of host RAM leaves none
    path, out = _run(tmp_path, host="4 GiB")
    assert out == (
        f"error: {path}: impossible hardware: hardware.host_ram (4 GiB) must exceed "
        'engine.memory.safety_margin (5 GiB): the budget (total_budget = "auto") is host RAM '
        "less the margin"
    )
