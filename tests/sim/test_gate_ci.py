"""`cuzk-sim gate` for CI: the per-buffer plan diff, the peak-VRAM threshold, JUnit XML,
GitHub annotations, outputs never lost, a failing run never erasing a good baseline.

Oracle: the toy plan and profile of test_gate.py (one MSM of N points at 10 ms per point,
one partition per proof: N x 10 ms per proof, hand arithmetic); plan changes are made by
hand, so the expected diff lines are written from the edit itself.
"""

from __future__ import annotations

import json
import resource
import signal
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_gate import GIB, SCENARIOS, gate, one_kernel_plan, runner, setup

from cuzk_sim.cli import app
from cuzk_sim.plan.contract import Alloc, Free, Kernel, Lock, Plan, Unlock


def _record(tmp_path: Path, plan: Plan) -> dict:
    """Record `plan` as the baseline (a passing run) and return the written document."""
    baseline = setup(tmp_path, plan)
    baseline.unlink()
    result = gate(tmp_path, "--update-baseline")
    assert result.exit_code == 0, result.output
    return json.loads(baseline.read_text())


def _replay(tmp_path: Path, plan: Plan, *args: str):
    (tmp_path / "plan.json").write_text(plan.to_json())
    return gate(tmp_path, *args)


def test_the_baseline_records_each_buffers_life(tmp_path):
    doc = _record(tmp_path, one_kernel_plan(100))
    lives = doc["scenarios"]["toy-gate"]["plans"]["porep"]
    assert lives == [
        {
            "buffer": "d_points",
            "bytes": GIB,
            "memory": "device",
            "allocated_after": "(start)",
            "freed_after": "msm",
            "locks_at_alloc": ["gpu"],
            "locks_at_free": ["gpu"],
        }
    ]


def test_a_failure_prints_which_buffer_grew_moved_across_a_lock_or_outlives(tmp_path):
    before = Plan(
        "toy",
        (
            Alloc("d_early", GIB),
            Lock("gpu"),
            Alloc("d_points", GIB),
            Kernel("msm", "msm_g1", 100),
            Free("d_points"),
            Kernel("tail", "msm_g1", 0),
            Unlock("gpu"),
            Free("d_early"),
        ),
    )
    _record(tmp_path, before)
    after = Plan(  # d_points 2 GiB; d_early allocated under the lock; d_points freed later;
        "toy",  # and 300 points: 3 s per proof against 1 s, so the run fails
        (
            Lock("gpu"),
            Alloc("d_early", GIB),
            Alloc("d_points", 2 * GIB),
            Kernel("msm", "msm_g1", 300),
            Kernel("tail", "msm_g1", 0),
            Free("d_points"),
            Unlock("gpu"),
            Free("d_early"),
        ),
    )
    result = _replay(tmp_path, after)
    assert result.exit_code == 1, result.output
    out = result.output
    assert "plan changes against the baseline:" in out
    assert "porep: d_points grew 1.00 GiB -> 2.00 GiB (+100.0%)" in out
    assert "porep: d_early moved across a lock: allocated under gpu (was outside any mutex)" in out
    assert "porep: d_points now outlives msm: freed after tail (was after msm)" in out
    row = json.loads(_replay(tmp_path, after, "--json").output)["rows"][0]
    assert len(row["plan_diff"]) == 3


def test_an_unchanged_plan_has_no_diff(tmp_path):
    _record(tmp_path, one_kernel_plan(100))
    row = json.loads(_replay(tmp_path, one_kernel_plan(100), "--json").output)["rows"][0]
    assert row["verdict"] == "PASS" and row["plan_diff"] == []


def test_max_vram_growth_turns_more_peak_vram_into_a_failure(tmp_path):
    _record(tmp_path, one_kernel_plan(100))  # peak: 400 MiB context + 1 GiB
    grown = one_kernel_plan(100, extra_alloc=GIB // 2)  # + 0.5 GiB: +35.7 % (hand)
    growth = (400 * 2**20 + 1.5 * GIB) / (400 * 2**20 + GIB) - 1
    # d_extra is a new 512 MiB buffer: a buffer finding by default (test_gate_buffers.py);
    # above --min-buffer-growth's reach here, so the peak alone decides
    big = ("--min-buffer-growth", "1 GiB")
    assert _replay(tmp_path, grown, *big).exit_code == 0  # a note by default
    result = _replay(tmp_path, grown, "--max-vram-growth", "10%", "--json", *big)
    assert result.exit_code == 1, result.output
    (reason,) = json.loads(result.output)["rows"][0]["reasons"]
    assert f"is {growth:+.1%} against the baseline" in reason and "--max-vram-growth" in reason
    assert _replay(tmp_path, grown, "--max-vram-growth", "40%", *big).exit_code == 0
    bad = _replay(tmp_path, grown, "--max-vram-growth", "lots")
    assert bad.exit_code == 2 and "--max-vram-growth" in bad.output


def test_junit_has_one_testcase_per_scenario_with_the_failure_text(tmp_path):
    setup(tmp_path, one_kernel_plan(250))  # 2.5 s per proof against the baseline's 1 s
    ok = tmp_path / "ok"
    ok.mkdir()
    setup(ok, one_kernel_plan(100))
    (tmp_path / "ok.toml").write_text((ok / "toy.toml").read_text().replace("toy-gate", "ok"))
    doc = json.loads((tmp_path / "baseline.json").read_text())
    doc["scenarios"]["ok"] = {"seconds_per_proof": 2.5, "oom": False}
    (tmp_path / "baseline.json").write_text(json.dumps(doc))
    junit = tmp_path / "gate.xml"
    result = runner.invoke(
        app,
        ["gate", str(tmp_path / "toy.toml"), str(tmp_path / "ok.toml")]
        + ["--baseline", str(tmp_path / "baseline.json"), "--junit", str(junit)],
    )
    assert result.exit_code == 1, result.output
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"toy-gate", "ok"}
    failure = cases["toy-gate"].find("failure")
    assert failure is not None and "+150.0%" in failure.get("message")  # 2.5 / 1 - 1
    assert cases["ok"].find("failure") is None and cases["ok"].find("error") is None


def test_junit_marks_an_unloadable_scenario_as_an_error(tmp_path):
    setup(tmp_path, one_kernel_plan(100))
    (tmp_path / "broken.toml").write_text("[[workload]]\nkind = 'nope'\n")
    junit = tmp_path / "gate.xml"
    result = runner.invoke(
        app,
        ["gate", str(tmp_path), "--baseline", str(tmp_path / "baseline.json")]
        + ["--junit", str(junit)],
    )
    assert result.exit_code == 2
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["broken"].find("error") is not None


def test_github_annotations_name_the_scenario_file(tmp_path, monkeypatch):
    setup(tmp_path, one_kernel_plan(250))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = gate(tmp_path)
    assert result.exit_code == 1
    (line,) = [x for x in result.output.splitlines() if x.startswith("::error ")]
    assert line.startswith(f"::error file={tmp_path / 'toy.toml'},title=cuzk-sim gate%3A toy-gate")
    assert "throughput regression" in line
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert "::error" not in gate(tmp_path).output
    assert "::error" in gate(tmp_path, "--annotations").output


def test_junit_and_baseline_on_one_path_are_refused_before_work(tmp_path):
    baseline = setup(tmp_path, one_kernel_plan(100))
    before = baseline.read_text()
    result = gate(tmp_path, "--update-baseline", "--junit", str(tmp_path / "." / "baseline.json"))
    assert result.exit_code == 2
    assert "both name" in result.output and "toy-gate" not in result.output  # nothing ran
    assert baseline.read_text() == before


def test_update_baseline_keeps_the_last_good_figure_after_an_unexpected_oom(tmp_path):
    """Before: the OOMing run recorded seconds_per_proof null, erasing 1.0 s."""
    baseline = setup(tmp_path, one_kernel_plan(100))
    result = _replay(tmp_path, one_kernel_plan(100, extra_alloc=15 * GIB), "--update-baseline")
    assert result.exit_code == 1
    assert "kept the previous entry (1.0 s/proof)" in result.output
    entry = json.loads(baseline.read_text())["scenarios"]["toy-gate"]
    assert entry["seconds_per_proof"] == 1.0 and entry["oom"] is False


@pytest.fixture
def file_size_limit():
    """Writes beyond `limit` bytes fail with EFBIG, as on a full disk (RLIMIT_FSIZE)."""
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    def limit(n: int) -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (n, old_limit[1]))

    try:
        yield limit
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)


def test_update_baseline_under_a_failing_write_leaves_the_old_baseline_whole(
    tmp_path, file_size_limit
):
    """Before: the baseline was truncated by a write that failed half-way."""
    baseline = setup(tmp_path, one_kernel_plan(100))
    before = baseline.read_text()
    (tmp_path / "plan.json").write_text(one_kernel_plan(90).to_json())  # passes: 0.9 s
    file_size_limit(300)  # the new baseline (with its plan record) is longer than this
    result = gate(tmp_path, "--update-baseline")
    file_size_limit(resource.RLIM_INFINITY)
    assert result.exit_code == 2, result.output
    assert "cannot write" in result.output and str(baseline) in result.output
    assert baseline.read_text() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_an_unexpected_host_oom_is_named_as_the_post_mortem_names_it(tmp_path):
    """Before: the gate said "on gpu0" for an OOM of the host RAM budget."""
    text = (SCENARIOS / "host-pinned-prestage-two-workers-small-ram.toml").read_text()
    assert "oom = true" in text
    scenario = tmp_path / "host.toml"
    scenario.write_text(text.replace("oom = true", "oom = false"))
    (tmp_path / "baseline.json").write_text('{"scenarios": {}}')
    result = runner.invoke(
        app, ["gate", str(scenario), "--baseline", str(tmp_path / "baseline.json"), "--json"]
    )
    assert result.exit_code == 1
    reasons = json.loads(result.output)["rows"][0]["reasons"]
    (oom,) = [r for r in reasons if r.startswith("unexpected OOM")]
    assert "on host RAM budget" in oom and "pinned_bc" in oom and "on gpu0" not in oom


@pytest.mark.parametrize(
    "spp",
    ["Infinity", "NaN", "1e999", "-Infinity", "1" + "0" * 5000, '"fast"', "true"],
)
def test_a_baseline_figure_that_is_not_a_finite_positive_number_is_bad_input(tmp_path, spp):
    """Before: Infinity made the scenario pass forever (or an OverflowError)."""
    baseline = setup(tmp_path, one_kernel_plan(100))
    baseline.write_text(
        '{"scenarios": {"toy-gate": {"seconds_per_proof": ' + spp + ', "oom": false}}}'
    )
    result = gate(tmp_path)
    assert result.exit_code == 2, result.output
    assert str(baseline) in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_deeply_nested_baseline_is_one_line_of_bad_input(tmp_path):
    baseline = setup(tmp_path, one_kernel_plan(100))
    baseline.write_text('{"scenarios": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = gate(tmp_path)
    assert result.exit_code == 2 and "nested deeper" in result.output
