"""`run` and `gpu-run --device dry-run` over every bundled scenario (scenarios/**/*.toml):
they refuse the same files (exit 2), gpu-run refuses on top only what the real pipeline
cannot run (REFUSED_BY_GPU_RUN, each with its reason), and where both run a scenario they
agree on its verdict: OOM or not, the first OOM's buffer, proofs submitted, completed and
failed, a stall; and so with each scenario feature added (a lost GPU, a restart, a far
start, a duration) by `--set`. Issue 30, item 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner
from validation_fixtures import ROOT

from cuzk_sim.cli import app
from cuzk_sim.io.errors import InputError
from cuzk_sim.scenario import load_scenario

runner = CliRunner()
SCENARIOS = sorted((ROOT / "scenarios").rglob("*.toml"))

# what gpu-run refuses among the files `run` accepts, and why (one-line error fragments)
REFUSED_BY_GPU_RUN = {
    # cuzk's own plans (the cuzk builder's) and Plan JSON files describe cuzk's prover or a
    # hand-written plan, not ours: there is no code of ours whose run they would predict
    "is not our GPU prover's dry run": "the plan is not our prover's (cuzk's or a Plan JSON)",
}
# the scenarios gpu-run runs today (a new one must be added here, or to the refusals)
RUN_BY_BOTH = {
    "gate/ours-16gib-incident-card.toml",
    "gate/ours-16gib-msm-chunks.toml",
    "gate/ours-h200-2workers.toml",
    "gate/ours-h200-prestage-pinned.toml",
    "validation/base.toml",
    "validation/faults.toml",
}
VERDICT = (
    "oom",
    "first_oom_buffer",
    "proofs_submitted",
    "proofs_completed",
    "proofs_failed",
    "stalled",
    "stopped_at_oom",
)
FEATURES = {
    "plain": [],
    "only-gpu-lost": ["--set", 'lost_devices=[{at="0 s", gpu=0}]'],
    "restart-at-0": ["--set", 'restarts=["0 s"]'],
    "restart-later": ["--set", 'restarts=["100 h"]'],
    "far-start": ["--set", "workload[0].start=1e9 s"],
    "duration": ["--set", "duration=1e6 s"],
}


def _name(p: Path) -> str:
    return p.relative_to(ROOT / "scenarios").as_posix()


def _invoke(cmd: list[str], path: Path, extra: list[str]) -> tuple[int, object]:
    r = runner.invoke(app, [*cmd, str(path), "--json", *extra])
    if r.exit_code in (0, 1):
        return r.exit_code, json.loads(r.stdout)
    return r.exit_code, r.output


def _loads(path: Path) -> bool:
    try:
        load_scenario(path)
    except InputError:
        return False
    return True


@pytest.mark.parametrize("path", SCENARIOS, ids=_name)
def test_refusals_agree(path):
    gpu = _invoke(["gpu-run", "--device", "dry-run"], path, [])
    if not _loads(path):  # not a scenario (a sweep or validation spec): both refuse it
        model = _invoke(["run"], path, [])
        assert model[0] == gpu[0] == 2, (model, gpu)
        assert "\n" not in str(gpu[1]).strip() and "Traceback" not in str(gpu[1])
        return
    if _name(path) in RUN_BY_BOTH:
        assert gpu[0] in (0, 1), gpu
        return
    assert gpu[0] == 2, f"{_name(path)}: gpu-run accepts it: add it to RUN_BY_BOTH"
    text = str(gpu[1]).strip()
    assert "\n" not in text and "Traceback" not in text
    assert any(k in text for k in REFUSED_BY_GPU_RUN), text


@pytest.mark.parametrize("feature", sorted(FEATURES))
@pytest.mark.parametrize("name", sorted(RUN_BY_BOTH))
def test_verdicts_agree(name, feature):
    path = ROOT / "scenarios" / name
    extra = FEATURES[feature]
    model = _invoke(["run"], path, extra)
    gpu = _invoke(["gpu-run", "--device", "dry-run"], path, extra)
    assert model[0] == gpu[0], (model, gpu)
    assert model[0] in (0, 1), model
    m, g = model[1], gpu[1]
    assert {k: m[k] for k in VERDICT} == {k: g[k] for k in VERDICT}
    if feature == "only-gpu-lost":  # hand reasoning: no GPU, nothing runs, nothing fails
        assert g["proofs_completed"] == g["proofs_failed"] == 0 and g["stalled"]
    if feature == "restart-at-0":  # every proof arrives at 0 s and is lost in the restart
        assert g["proofs_failed"] == g["proofs_submitted"]
