"""What `calibrate` prints about the profile it wrote (the new-user review of 2026-12-03):
the `[jitter]` line keeps its label (Rich read `[jitter]` as a markup tag and printed the
line as `: per kind, ...`), and the table's "from" column says where each figure came from
without cutting a parenthesised count in half (it cut at 48 characters: `(12 copies o`)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.cli.logs import _source_head

LOG = (
    Path(__file__).parents[2] / "docs/validation/h200-2026-12-03-production/grid-v2/runs/w2-26.log"
)


def test_jitter_line_keeps_its_label(tmp_path: Path) -> None:
    out = tmp_path / "mine.toml"
    r = CliRunner().invoke(app, ["calibrate", str(LOG), "--base", "h200", "-o", str(out)])
    assert r.exit_code == 0, r.output
    # the log times every step twice or more in one run, so a [jitter] table is fitted
    assert "[jitter]" in out.read_text()
    lines = r.output.splitlines()
    assert any(line.startswith("[jitter]: per kind") for line in lines), r.output
    assert not any(line.startswith(": ") for line in lines), r.output


def test_source_head_keeps_parentheses_whole() -> None:
    prov = (
        "pageable fitted from a.log: CUZK_SIM_STEP host-to-device copies (12 copies of 5 "
        "sizes, lines 18, 19, 20): latency 0.2262 ms + bytes at 6.885 GiB/s; largest residual"
    )
    assert _source_head(prov) == (
        "CUZK_SIM_STEP host-to-device copies (12 copies of 5 sizes, lines 18, 19, 20)"
    )
    prov = "fitted from a.log: CUZK_SIM_STEP lines (14 steps at sizes 2^26, lines 22), one size"
    assert _source_head(prov) == "CUZK_SIM_STEP lines (14 steps at sizes 2^26, lines 22)"
    assert _source_head("measured, no file") == "measured"


def test_the_change_at_the_measured_size_is_printed(tmp_path: Path) -> None:
    """The table reads kernel.ntt at the profile's size (2^24), where a fit from 2^26
    lines changes nothing (+0.0 %); the lines under it give the time at 2^26, the mean of
    the log's own NTT steps there (read here with a regular expression)."""
    import re
    from statistics import mean

    us = [
        int(m.group(1))
        for m in re.finditer(
            r"kind=ntt size=67108864 bytes=\d+ pinned=\d us=(\d+)", LOG.read_text()
        )
    ]
    assert len(us) == 14  # the premise: the log times 14 NTTs at 2^26
    r = CliRunner().invoke(
        app, ["calibrate", str(LOG), "--base", "h200", "-o", str(tmp_path / "p.toml")]
    )
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.strip().startswith("kernel.ntt at "))
    assert line.strip().startswith("kernel.ntt at 67,108,864: ")
    assert f"-> {mean(us) / 1e3:.3f} ms" in line, line
