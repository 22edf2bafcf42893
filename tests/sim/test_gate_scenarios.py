"""The bundled gate scenarios' `[expect]` come from hand arithmetic written in their
descriptions, never from the model: no seconds-per-proof window (the model's figure for it
lives in the baseline), and the byte arithmetic the descriptions state agrees with the
buffer sizes of the plan our prover's dry run records today.

Oracle: the sums written in each description (MiB of the plan's buffers, by hand); the
test walks the replayed plan's Alloc/Free steps and checks the stated peak of one worker.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from cuzk_sim.plan.contract import Alloc, Free
from cuzk_sim.scenario import load_scenario

GATE = Path(__file__).resolve().parents[2] / "scenarios" / "gate"
SCENARIOS = sorted(GATE.glob("*.toml"))
MIB = 2**20


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_no_gate_scenario_expects_a_model_figure(path):
    raw = tomllib.loads(path.read_text())
    assert "seconds_per_proof" not in raw.get("expect", {}), (
        "a seconds-per-proof window in a gate scenario can only be the model's own figure; "
        "it belongs in scenarios/gate/baseline.json"
    )
    assert "around the model's figure" not in path.read_text()


def one_worker_peak_mib(path: Path) -> float:
    """The most device bytes one partition's plan holds at once (MiB), walking its steps."""
    plan = load_scenario(path).plans["porep"]
    live: dict[str, int] = {}
    peak = 0
    for s in plan.steps:
        if isinstance(s, Alloc) and s.memory == "device":
            live[s.buffer] = s.bytes
        elif isinstance(s, Free):
            live.pop(s.buffer, None)
        peak = max(peak, sum(live.values()))
    return peak / MIB


@pytest.mark.parametrize("name", ["ours-h200-2workers.toml", "ours-16gib-msm-chunks.toml"])
def test_the_stated_peak_of_one_worker_is_the_plans(name):
    """`... = 41288 MiB = 40.32 GiB` in the description is the largest stage of the plan
    (the hand sum leaves out buffers of a few KiB: windows, result)."""
    path = GATE / name
    desc = tomllib.loads(path.read_text())["description"]
    (stated,) = re.findall(r"= (\d+) MiB =", desc)
    assert abs(one_worker_peak_mib(path) - int(stated)) < 1


def test_the_incident_cards_sum_is_the_plans():
    """d_a + d_witness + msm_h.points: 4 + 4 + 12 GiB (the description's arithmetic)."""
    plan = load_scenario(GATE / "ours-16gib-incident-card.toml").plans["porep"]
    sizes = {s.buffer: s.bytes for s in plan.steps if isinstance(s, Alloc)}
    gib = 2**30
    assert (sizes["d_a"], sizes["d_witness"]) == (4 * gib, 4 * gib)
    assert abs(sizes["msm_h.points"] - 12 * gib) < MIB  # (2^27 - 1) x 96 B
