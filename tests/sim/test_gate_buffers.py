"""`cuzk-sim gate` per buffer: a buffer that grows past both thresholds fails the gate in
the table, the JUnit file and the GitHub annotations even when the peak holds; the plan
diff is one line per change, grouped by buffer family and capped with a count; a buffer of
our prover's live plan is annotated on the prover line that allocates it.

Oracle: the toy plan and profile of test_gate.py; plan edits by hand, so every expected
size and share is hand arithmetic on the edit (72 -> 144 MiB is +100 %, +72 MiB); the
allocating line is found by reading the prover's source text, not from the gate.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from test_gate import GIB
from test_gate_ci import _record, _replay

from cuzk_sim.plan.contract import Alloc, Free, Kernel, Lock, Plan, Unlock

MIB = 2**20
DOUBLED = "porep: buffer scratch grew 72.00 MiB -> 144.00 MiB"  # 144 / 72 - 1 = +100 %
ROOT = Path(__file__).resolve().parents[2]


def two_phase_plan(small: int, chunks: int = 1, big: int = 8 * GIB) -> Plan:
    """A small scratch buffer (in `chunks` allocs of one name) used and freed before an
    8 GiB one: the peak is the big buffer's, whatever the small one does."""
    steps: list = [Lock("gpu")]
    for _ in range(chunks):
        steps += [Alloc("scratch", small), Kernel("prep", "msm_g1", 1), Free("scratch")]
    steps += [Alloc("d_big", big), Kernel("msm", "msm_g1", 100), Free("d_big"), Unlock("gpu")]
    return Plan("toy", tuple(steps))


def test_a_buffer_that_doubled_fails_though_the_peak_holds(tmp_path):
    _record(tmp_path, two_phase_plan(72 * MIB))
    doubled = two_phase_plan(144 * MIB)
    r = _replay(tmp_path, doubled, "--max-vram-growth", "2%", "--json")
    assert r.exit_code == 1, r.output
    row = json.loads(r.output)["rows"][0]
    # the peak did not move (8 GiB + context both times): only the buffer fails it
    assert not any("peak VRAM" in x for x in row["reasons"])
    (reason,) = row["reasons"]
    assert reason.startswith(
        "porep: buffer scratch grew 72.00 MiB -> 144.00 MiB (+100.0%), +72.00 MiB"
    )
    assert "(allowed: +10.0% and 16.00 MiB" in reason
    assert row["buffer_findings"] == [
        {
            "kind": "porep",
            "buffer": "scratch",
            "count": 1,
            "old_bytes": 72 * MIB,
            "new_bytes": 144 * MIB,
            "site": None,  # a plan file: no prover line known
        }
    ]
    table = _replay(tmp_path, doubled).output
    assert "1 grew" in table and "FAIL" in table


def test_the_finding_reaches_junit_and_annotations(tmp_path, monkeypatch):
    _record(tmp_path, two_phase_plan(72 * MIB))
    junit = tmp_path / "gate.xml"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    r = _replay(tmp_path, two_phase_plan(144 * MIB), "--junit", str(junit))
    assert r.exit_code == 1
    failure = ET.parse(junit).getroot().find("testcase/failure")
    assert failure is not None
    assert failure.get("message", "").startswith(
        "porep: buffer scratch grew 72.00 MiB -> 144.00 MiB"
    )
    (line,) = [x for x in r.output.splitlines() if x.startswith("::error")]
    assert DOUBLED + " (+100.0%25)" in line  # % escaped as GitHub wants


def test_the_thresholds_are_options(tmp_path):
    _record(tmp_path, two_phase_plan(72 * MIB))
    doubled = two_phase_plan(144 * MIB)
    assert _replay(tmp_path, doubled, "--max-buffer-growth", "150%").exit_code == 0
    assert _replay(tmp_path, doubled, "--min-buffer-growth", "100 MiB").exit_code == 0
    # +4 MiB (+5.6 %): under both defaults; with both lowered it fails
    nudged = two_phase_plan(76 * MIB)
    assert _replay(tmp_path, nudged).exit_code == 0
    lowered = ("--max-buffer-growth", "5%", "--min-buffer-growth", "1 MiB")
    assert _replay(tmp_path, nudged, *lowered).exit_code == 1
    bad = _replay(tmp_path, doubled, "--min-buffer-growth", "lots")
    assert bad.exit_code == 2 and "--min-buffer-growth" in bad.output


def test_a_new_buffer_larger_than_the_size_threshold_is_a_finding(tmp_path):
    _record(tmp_path, two_phase_plan(72 * MIB))
    steps = list(two_phase_plan(72 * MIB).steps)
    steps[1:1] = [Alloc("d_new", 64 * MIB), Free("d_new")]
    r = _replay(tmp_path, Plan("toy", tuple(steps)), "--json")
    assert r.exit_code == 1
    (reason,) = json.loads(r.output)["rows"][0]["reasons"]
    assert reason.startswith("porep: new buffer d_new of 64.00 MiB")


def test_the_plan_diff_is_one_line_per_change_grouped_by_family(tmp_path):
    """Eight chunks of one name that all doubled: one line, with their count."""
    _record(tmp_path, two_phase_plan(72 * MIB, chunks=8))
    r = _replay(tmp_path, two_phase_plan(144 * MIB, chunks=8), "--json")
    row = json.loads(r.output)["rows"][0]
    assert row["plan_diff"] == ["porep: scratch x8 grew 72.00 MiB -> 144.00 MiB (+100.0%)"]
    assert [(b["buffer"], b["count"]) for b in row["buffer_findings"]] == [("scratch", 8)]


def test_a_long_plan_diff_is_capped_with_a_count(tmp_path):
    """30 buffers that each grew by a different size: 30 changes; the table shows 19 and
    says how many more (20 lines), --json keeps all 30."""

    def plan(extra: int) -> Plan:
        steps: list = [Lock("gpu")]
        for i in range(30):
            steps += [Alloc(f"b{i}", (i + 1) * MIB + extra * (i + 1) * MIB), Free(f"b{i}")]
        steps += [Kernel("msm", "msm_g1", 100), Unlock("gpu")]
        return Plan("toy", tuple(steps))

    _record(tmp_path, plan(0))
    grown = plan(1)
    rows = json.loads(_replay(tmp_path, grown, "--json").output)["rows"]
    assert len(rows[0]["plan_diff"]) == 30
    out = _replay(tmp_path, grown).output
    listed = [x for x in out.splitlines() if re.match(r"\s+porep: b\d+ grew", x)]
    assert len(listed) == 19
    assert "... and 11 more changes (--json lists all)" in out


def _alloc_lines(path: Path, needle: str) -> list[int]:
    """The lines of `path` whose text holds `needle` (the oracle: the source itself)."""
    return [i for i, t in enumerate(path.read_text().splitlines(), 1) if needle in t]


def test_a_live_plan_buffer_is_annotated_on_the_prover_line_that_allocates_it(
    tmp_path, monkeypatch
):
    """Our prover's dry run records where each buffer is allocated: the finding's
    annotation points at gpu/msm.py's scratch allocation for an MSM buffer."""
    scn = tmp_path / "live.toml"
    scn.write_text(
        'name = "live"\nprofile = "h200"\non_oom = "continue"\n[hardware]\ngpus = 1\n'
        '[engine.pce]\ncached = ["porep"]\n[plan]\ngpu_prover = { domain_log2 = 16 }\n'
        '[plan.host]\nsynthesis = "0 s"\npce = false\n'
        '[[workload]]\nkind = "porep"\ncount = 2\npartitions = 1\n'
    )
    baseline = tmp_path / "baseline.json"
    from typer.testing import CliRunner

    from cuzk_sim.cli import app

    runner = CliRunner()
    args = ["gate", str(scn), "--baseline", str(baseline)]
    assert runner.invoke(app, [*args, "--update-baseline"]).exit_code == 0
    doc = json.loads(baseline.read_text())
    lives = doc["scenarios"]["live"]["plans"]["porep"]
    life = next(b for b in lives if b["buffer"] == "msm_h.order")
    life["bytes"] = life["bytes"] // 4  # the baseline's buffer was a quarter: +300 %
    baseline.write_text(json.dumps(doc))
    monkeypatch.chdir(ROOT)  # annotations name files relative to the checkout, as in CI
    r = runner.invoke(app, [*args, "--min-buffer-growth", "0 B", "--annotations", "--json"])
    assert r.exit_code == 1, r.output
    row = json.loads(r.stdout)["rows"][0]
    (finding,) = [b for b in row["buffer_findings"] if b["buffer"] == "msm_h.order"]
    # the site names the prover's file (relative to the working folder when under it, as
    # in CI) and a line of it that allocates the MSM's scratch buffers by name
    path, line = finding["site"].rsplit(":", 1)
    assert Path(path).name == "msm.py"
    needle = 'dev.alloc(f"{stage}.{k}", v)'
    assert int(line) in _alloc_lines(ROOT / path, needle)
    notes = [x for x in r.stderr.splitlines() if x.startswith(f"::error file={path},")]
    assert notes and f"line={line}," in notes[0] and "msm_h.order" in notes[0]


def test_streaming_in_smaller_chunks_is_a_few_grouped_lines_and_no_finding(tmp_path):
    """Halving our prover's msm_chunk doubles the chunks of every MSM buffer family and
    halves their sizes: the diff says so in a handful of lines (it listed every chunk of
    every family, one line each, before), and nothing grew, so the gate passes."""
    from typer.testing import CliRunner

    from cuzk_sim.cli import app

    def scenario(chunk: int) -> Path:
        path = tmp_path / "chunks.toml"
        path.write_text(
            'name = "chunks"\nprofile = "h200"\non_oom = "continue"\n[hardware]\ngpus = 1\n'
            f'[engine.pce]\ncached = ["porep"]\n[plan]\n'
            f'gpu_prover = {{ domain_log2 = 18, witness = "dense", msm_chunk = {chunk} }}\n'
            '[plan.host]\nsynthesis = "0 s"\npce = false\n'
            '[[workload]]\nkind = "porep"\ncount = 2\npartitions = 1\n'
        )
        return path

    runner = CliRunner()
    baseline = tmp_path / "baseline.json"
    base = ["gate", "--baseline", str(baseline)]
    r = runner.invoke(app, [*base, str(scenario(2**16)), "--update-baseline"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, [*base, str(scenario(2**15)), "--json"])
    row = json.loads(r.stdout)["rows"][0]
    assert row["buffer_findings"] == []
    lives = json.loads(baseline.read_text())["scenarios"]["chunks"]["plans"]["porep"]
    families = {b["buffer"].split("#")[0] for b in lives}
    # at most a size line and a count line per family, far fewer than one per alloc
    assert 1 <= len(row["plan_diff"]) <= 2 * len(families), row["plan_diff"]
    assert len(row["plan_diff"]) < len(lives) / 8  # one line per alloc, before
    # 2^18 points in chunks of 2^16 then 2^15: every chunked family 4 -> 8 allocs
    assert any("allocated 8 times (was 4)" in line for line in row["plan_diff"])
