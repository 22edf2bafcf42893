"""`calibrate` reads gpu-run logs at production scale (issue 24 item 2): the committed
2^27 two-worker log of the H200 (docs/validation/h200-2026-12-03-production/w2-27.log,
gpu-run --log, one proof of two partitions) and the 2^24 one beside it.

The oracle is the log's own CUZK_SIM_STEP lines, read here with a regular expression
(not cuzk_sim's parser): the calibrated profile must give each copy size measured the
mean of that size's readings (sizes a few words apart, n - 1 and n points, are one), and
each kernel kind its mean time at 2^27."""

from __future__ import annotations

import re
from pathlib import Path
from statistics import mean

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.profiles.profile import load_profile

runner = CliRunner()
RAW = Path(__file__).parents[2] / "docs" / "validation" / "h200-2026-12-03-production"
BASE = Path(__file__).parents[2] / "scenarios" / "validation" / "base.toml"
STEP = re.compile(r"CUZK_SIM_STEP: (\S+) kind=(\S+) size=(\d+) bytes=(\d+) pinned=([01]) us=(\d+)")


def _steps(log: Path) -> list[tuple[str, str, int, int, bool, float]]:
    out = []
    for line in log.read_text().splitlines():
        m = STEP.search(line)
        if m:
            name, kind, size, nbytes, pinned, us = m.groups()
            out.append((name, kind, int(size), int(nbytes), pinned == "1", int(us) * 1e-6))
    return out


def _calibrate(tmp_path: Path, log: Path):
    out = tmp_path / f"{log.stem}.toml"
    r = runner.invoke(
        app,
        ["calibrate", str(log), "--base", "h200", "--scenario", str(BASE), "-o", str(out)],
    )
    assert r.exit_code == 0, r.output
    return load_profile(str(out)), out.read_text()


@pytest.mark.parametrize("name", ["w2-27", "w1-24"])
def test_calibrate_reads_the_production_logs_copy_sizes(tmp_path, name):
    log = RAW / f"{name}.log"
    steps = _steps(log)
    assert steps, f"{log}: no CUZK_SIM_STEP lines"
    profile, _ = _calibrate(tmp_path, log)
    for pinned in (False, True):
        sizes = {b for _, k, _, b, p, _ in steps if k == "copy_htod" and p == pinned and b}
        assert sizes
        for nbytes in sizes:  # sizes a few words apart (n - 1 and n points) are one size
            want = mean(
                t
                for _, k, _, b, p, t in steps
                if k == "copy_htod" and p == pinned and abs(b - nbytes) <= nbytes * 1e-6
            )
            assert profile.copy_seconds(nbytes, pinned) == pytest.approx(want, rel=1e-3)


def test_calibrate_reads_the_2_27_kernels(tmp_path):
    # each kernel kind measured only at 2^27 (one size: the base's fixed cost kept, the
    # slope fitted): fitted from this log's lines of that kind (its source says how many),
    # the profile gives back the mean time at 2^27 within 1 %
    log = RAW / "w2-27.log"
    steps = _steps(log)
    profile, text = _calibrate(tmp_path, log)
    n = 1 << 27
    for kind in ("msm_g1", "msm_g2", "ntt"):
        times = [t for _, k, s, _, _, t in steps if k == kind and s == n]
        lines = [1 for _, k, *_ in steps if k == kind]
        assert times, kind
        section = text.split(f"[kernel.{kind}]")[1].split("\n[")[0]
        assert f"fitted from {log}" in section and f"({len(lines)} steps" in section
        assert profile.kernel_seconds(kind, n, kind) == pytest.approx(mean(times), rel=0.01)
