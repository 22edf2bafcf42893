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


def _scenario(tmp_path: Path, witness: str) -> Path:
    """base.toml with the witness the log ran: the 13:22 call's logs (w2-27.log, w1-24.log)
    the dense one, the 16:33 re-run (rerun/w2-27.log) the PoRep shape (base.toml's default
    since issue 23)."""
    scn = tmp_path / f"base-{witness}.toml"
    text = BASE.read_text().replace(
        "key_pinned = true }", f'key_pinned = true, witness = "{witness}" }}'
    )
    assert text != BASE.read_text()
    scn.write_text(text)
    return scn


def _calibrate(tmp_path: Path, log: Path, *more: Path, witness: str = "dense"):
    out = tmp_path / f"{log.stem}.toml"
    scn = _scenario(tmp_path, witness)
    argv = ["calibrate", str(log), *map(str, more), "--base", "h200", "--scenario", str(scn)]
    r = runner.invoke(app, [*argv, "-o", str(out)])
    assert r.exit_code == 0, r.output
    return load_profile(str(out)), out.read_text(), r.output


@pytest.mark.parametrize("name, witness", [("w2-27", "dense"), ("w1-24", "dense")])
def test_calibrate_reads_the_production_logs_copy_sizes(tmp_path, name, witness):
    # (not rerun/w2-27: its key uploads of 6343 and 7116 MiB, 12 % apart, are one size by
    # step_fit's SAME_SIZE, each read 4-6 % off its own mean; docs/logs.md)
    log = RAW / f"{name}.log"
    steps = _steps(log)
    assert steps, f"{log}: no CUZK_SIM_STEP lines"
    profile, _, _ = _calibrate(tmp_path, log, witness=witness)
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
    profile, text, _ = _calibrate(tmp_path, log)
    n = 1 << 27
    for kind in ("msm_g1", "msm_g2", "ntt"):
        times = [t for _, k, s, _, _, t in steps if k == kind and s == n]
        lines = [1 for _, k, *_ in steps if k == kind]
        assert times, kind
        section = text.split(f"[kernel.{kind}]")[1].split("\n[")[0]
        assert f"fitted from {log}" in section and f"({len(lines)} steps" in section
        assert profile.kernel_seconds(kind, n, kind) == pytest.approx(mean(times), rel=0.01)


def test_the_porep_rerun_log_fits_random_scalar_msms_from_msm_h_alone(tmp_path):
    # the 16:33 re-run's log predates the step lines' zeros= / ones=: its msm_a, msm_b_g1,
    # msm_b_g2 and msm_l ran over PoRep-shaped scalars (4-9 times faster than random).
    # Fitted as random-scalar prices they made msm_g1 77 % cheaper; the scenario's plan
    # (porep witness) names them shaped, so msm_g1 comes from msm_h's two lines alone and
    # msm_g2 (measured only over shaped scalars) is kept from the base
    log = RAW / "rerun" / "w2-27.log"
    steps = _steps(log)
    msm_h = [t for name, *_, t in steps if name == "msm_h"]
    assert len(msm_h) == 2
    base = load_profile("h200")
    profile, text, out = _calibrate(tmp_path, log, witness="porep")
    n = 134217727  # msm_h's size in the log
    assert profile.kernel_seconds("msm_g1", n, "msm_h") == pytest.approx(mean(msm_h), rel=1e-3)
    section = text.split("[kernel.msm_g1]")[1].split("\n[")[0]
    assert "(2 steps" in section
    assert "msm_a (2), msm_b_g1 (2), msm_b_g2 (2), msm_l (2)" in " ".join(out.split())
    g2 = text.split("[kernel.msm_g2]")[1].split("\n[")[0]
    assert "kept from base" in g2
    assert profile.kernel_seconds("msm_g2", 1 << 20, "x") == base.kernel_seconds(
        "msm_g2", 1 << 20, "x"
    )


def test_a_2_27_log_keeps_the_base_below_its_sizes(tmp_path):
    # the log times copies of 11 MiB - 12 GiB and kernels at 2^27 only: it says nothing of
    # a 2 MiB copy, a 2^16 NTT or an MSM's 2304-byte result. Those keep the base's prices
    # (before: the copies' intercept, 5.8 ms from one cold 11 MiB copy, priced every small
    # copy at ~6 ms against the base's 0.13-0.53 ms), and the copy latency the base's
    log = RAW / "rerun" / "w2-27.log"
    base = load_profile("h200")
    profile, text, _ = _calibrate(tmp_path, log, witness="porep")
    for nbytes in (2304, 73824, 2 << 20):
        assert profile.copy_seconds(nbytes, False) == base.copy_seconds(nbytes, False)
    assert profile.copy_latency == base.copy_latency
    for kind, size in (("ntt", 1 << 16), ("ntt", 1 << 24), ("msm_g1", 1 << 20)):
        assert profile.kernel_seconds(kind, size, kind) == base.kernel_seconds(kind, size, kind)
    # and the sizes measured are the log's own (the oracle: its lines, by regex)
    steps = _steps(log)
    ntt = [t for _, k, s, _, _, t in steps if k == "ntt"]
    assert profile.kernel_seconds("ntt", 1 << 27, "ntt") == pytest.approx(mean(ntt), rel=1e-3)
    four_gib = [t for _, k, _, b, p, t in steps if k == "copy_htod" and b == 1 << 32 and not p]
    assert profile.copy_seconds(1 << 32, False) == pytest.approx(mean(four_gib), rel=1e-3)


def test_a_log_of_another_card_does_not_borrow_the_bases_small_sizes(tmp_path):
    # the same log said to come from another card: the base's (H200) points are not that
    # card's, so below the sizes measured each figure's own line prices it, and calibrate
    # says so
    text = (RAW / "rerun" / "w2-27.log").read_text()
    assert "name=NVIDIA H200" in text
    log = tmp_path / "other.log"
    log.write_text(text.replace("name=NVIDIA H200", "name=NVIDIA GeForce RTX 5090"))
    base = load_profile("h200")
    profile, _, out = _calibrate(tmp_path, log, witness="porep")
    assert "another card" in " ".join(out.split())
    assert profile.copy_seconds(2 << 20, False) != base.copy_seconds(2 << 20, False)
