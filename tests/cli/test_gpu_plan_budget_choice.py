"""`gpu-plan --vram-budget` says which MSM chunk (and ring) the budget chose (the new-user
review of 2026-12-03): the text printed only the peak, and the plan's meta records the
flags as given (`msm_chunk: null`), so what the budget set was nowhere."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from cuzk_sim.cli import app

BUDGET = 300 << 20  # 300 MiB at 2^20: above the NTT phase (3 x 2^20 x 32 B = 96 MiB)


def _plan(*args: str) -> str:
    res = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "20", *args])
    assert res.exit_code == 0, res.output
    return res.output


def _peak(text: str) -> int:
    return int(re.search(r"peak device bytes: (\d+)", text).group(1))


def test_the_chosen_chunk_is_printed_and_is_the_largest_that_fits():
    out = _plan("--vram-budget", str(BUDGET))
    m = re.search(r"--vram-budget: MSM chunks of (\d+) points \(2\^(\d+)\)", out)
    assert m, out
    chunk = int(m.group(1))
    assert chunk == 1 << int(m.group(2))
    # the rule the docs state: the largest power of two whose plan peaks within the budget
    assert _peak(_plan("--msm-chunk", str(chunk))) <= BUDGET
    assert _peak(_plan("--msm-chunk", str(2 * chunk))) > BUDGET


def test_a_budget_the_whole_msms_fit_says_so():
    out = _plan("--vram-budget", "14 GiB")
    assert "--vram-budget: the whole MSMs fit within it (no chunks)" in out


def test_the_ring_is_named_when_the_chunks_stream():
    out = _plan("--key-pinned", "--overlap-uploads", "--vram-budget", str(BUDGET))
    assert re.search(r"streamed through a ring of \d+ slots", out), out
