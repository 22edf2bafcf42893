"""The docs promise commands and code; these tests keep the promises true."""

from __future__ import annotations

import json
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


# --- current-state docs (issue 25, item 9): figures checked against what produced them ---

DOCS = ROOT / "docs"
RAW = DOCS / "validation"


def section(text: str, title: str) -> str:
    """From the `## title` heading to the next `## ` heading."""
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def table_rows(text: str) -> list[list[str]]:
    """Cells of the markdown table rows in `text` (header and rule lines dropped)."""
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|") and not line.startswith("|---")
    ]
    return rows[1:] if rows else rows


def pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def test_validation_current_figures_match_the_raw_grid_summaries():
    current = section((DOCS / "validation.md").read_text(), "Current figures")
    rows = [r for r in table_rows(current) if "summary.json" in r[0]]
    assert len(rows) >= 2
    for name, criteria, runs, verdicts, buffers, peaks, spp in rows:
        link = re.search(r"\]\((validation/[^)]+/(?:grid-)?summary\.json)\)", name).group(1)
        s = json.loads((DOCS / link).read_text())["summary"]  # what validate wrote
        # the criteria it applied (issue 9's in a summary written before specs had them)
        applied = s.get("criteria_applied") or {
            "oom_agreement": 0.98,
            "peak_tolerance": 0.02,
            "seconds_tolerance": 0.10,
        }
        said = " / ".join(
            f"{100 * applied[k]:g} %"
            for k in ("oom_agreement", "peak_tolerance", "seconds_tolerance")
        )
        assert criteria == said, name
        assert runs == str(s["runs"]), name
        assert verdicts == f"{s['agreeing']} / {s['decided']}", name
        assert buffers == f"{s['first_buffer_agrees']} / {s['both_oom']}", name
        assert peaks == f"{s['peak_within']} / {s['peak_runs']} ({pct(s['peak_max_abs_error'])})"
        assert spp == f"{s['spp_within']} / {s['spp_runs']} ({pct(s['spp_max_abs_error'])})"


STAMP = re.compile(r"(\d{4}-\d\d-\d\d)(?:,? (?:~)?(\d\d:\d\d))?")


def stamps(text: str) -> list[tuple[str, str]]:
    return [(d, t or "") for d, t in STAMP.findall(text)]


def test_validation_current_section_is_the_newest_named_current_and_says_how():
    text = (DOCS / "validation.md").read_text()
    current = section(text, "Current figures")
    entries = re.findall(r"^### (\d{4}-\d\d-\d\d \d\d:\d\d)[^,]*, commit ([0-9a-f]{7,}): (.*)$",
                         current, flags=re.M)  # fmt: skip
    assert entries, "no `### date time UTC, commit X: what` entry under Current figures"
    times = [t for t, _, _ in entries]
    assert times == sorted(times, reverse=True), "entries not newest first"
    assert entries[0][2].endswith("(current)")  # the newest is named current
    for block in re.split(r"^### ", current, flags=re.M)[1:]:
        assert "Command:" in block and "docs/validation/" in block, block[:80]
    # no section heading elsewhere on the page is dated later than the current entry
    headings = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    dated = [s for s in stamps(headings) if s[1]]
    assert not dated or max(dated) <= (times[0][:10], times[0][11:16])


def test_benchmarks_current_figures_name_command_commit_date_newest_first():
    rows = table_rows(section((DOCS / "benchmarks.md").read_text(), "Current figures"))
    assert len(rows) >= 8
    dates = []
    for part, _figure, command, commit, date in rows:
        assert command.startswith("`") and command.endswith("`"), part
        assert re.fullmatch(r"[0-9a-f]{7,40}", commit) or commit.startswith("not recorded"), part
        assert re.fullmatch(r"\d{4}-\d\d-\d\d( \d\d:\d\d)?", date), part
        dates.append(date)
    assert dates == sorted(dates, reverse=True)


def test_benchmarks_gpu_figures_match_the_raw_device_records():
    text = (DOCS / "benchmarks.md").read_text()
    rows = [r for r in table_rows(section(text, "GPU prover (H200)")) if ".json`" in r[1]]
    assert len(rows) >= 8
    for _figure, record, ms in rows:
        path, key = re.fullmatch(r"`([^`]+)`, (.+)", record).groups()
        what, variant, log2 = (k.strip() for k in key.split(" / "))
        found = [
            r["ms"]
            for r in json.loads((RAW / path).read_text())["rows"]
            if (r["what"], r.get("variant"), r["log2"]) == (what, variant, int(log2))
        ]
        assert len(found) == 1, record
        assert ms == f"{found[0]:.2f}", record
        assert ms in text.replace(record, ""), f"{ms} ms is not stated in the prose"


def test_simulator_gate_figures_are_what_the_gate_prints_now():
    rows = re.findall(
        r"^\| gate/([\w-]+) \|.*the gate prints ([\d.]+) s/proof now",
        (DOCS / "simulator.md").read_text(),
        re.M,
    )
    assert len(rows) == 2
    gate_dir = ROOT / "scenarios" / "gate"
    result = CliRunner().invoke(
        app, ["gate", str(gate_dir), "--baseline", str(gate_dir / "baseline.json"), "--json"]
    )
    assert result.exit_code == 0, result.output
    now = {r["scenario"]: r["seconds_per_proof"] for r in json.loads(result.output)["rows"]}
    for name, figure in rows:
        assert f"{now['gate-' + name]:.1f}" == figure, name


def test_readme_context_figure_is_the_bundled_h200_profile():
    import tomllib

    profile = tomllib.loads((ROOT / "cuzk_sim" / "profiles" / "h200.toml").read_text())
    context = profile["gpu"]["context_overhead"]
    assert context.endswith(" B")
    gib = int(context.split()[0]) / 2**30
    said = re.search(
        r"CUDA context with our\s+kernels is ([\d.]+) GiB", (ROOT / "README.md").read_text()
    )
    assert said and said.group(1) == f"{gib:.2f}"


def test_benchmarks_gpu_test_count_is_what_the_device_logs_say():
    rows = table_rows(section((DOCS / "benchmarks.md").read_text(), "Current figures"))
    (figure,) = [r[1] for r in rows if r[0] == "GPU tests on the H200"]
    total, parts = re.search(r"passed: (\d+) \(([\d + ]+)\)", figure).groups()
    logs = sorted((RAW / "h200-2026-12-01-99d692d").glob("gputests*.log"))
    passed = [int(re.findall(r"(\d+) passed", log.read_text())[-1]) for log in logs]
    assert sorted(int(p) for p in parts.split("+")) == sorted(passed)
    assert int(total) == sum(passed)
