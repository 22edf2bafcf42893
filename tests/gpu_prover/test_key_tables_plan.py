"""ProverFlags.key_tables without a GPU: the flag's validation, the dry-run plan (one
resident `<stage>.table` per MSM in place of its points, filled by the points' upload and
the build kernel; no points buffer), the table bytes by hand at a small size and at 2^27,
the OOM it predicts at 2^27 even on the H200, the scenario and CLI
errors, gpu-run's refusal and the gpu-plan lines."""

from __future__ import annotations

import pytest
from cuzk_sim.gpu.flags import ProverFlags
from cuzk_sim.gpu.msm_tables import TABLE_BUILD_MSM_POINTS
from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan
from test_key_resident_plan import _scenario
from typer.testing import CliRunner

from cuzk_sim.api import load_scenario, simulate
from cuzk_sim.cli import app
from cuzk_sim.io.errors import InputError
from cuzk_sim.plan.contract import Alloc, Copy, Kernel

GIB = 2**30
STAGES = ("msm_h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l")
TABLES = {f"{s}.table" for s in STAGES}
TABLES_ON = ProverFlags(key_resident=True, key_tables=True)


def _points_by_hand(n: int) -> dict[str, int]:
    """Points per MSM of a synthetic 2^k domain: h n - 1, a and b n, l n - 2 (one public
    input and the one wire), b_g2 n; and the bytes of one affine point (G1 96, G2 192)."""
    return {"msm_h": n - 1, "msm_a": n, "msm_b_g1": n, "msm_b_g2": n, "msm_l": n - 2}


POINT_BYTES = {"msm_h": 96, "msm_a": 96, "msm_b_g1": 96, "msm_b_g2": 192, "msm_l": 96}


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_a_key_tables_that_is_not_a_bool_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match="ProverFlags.key_tables must be true or false"):
        ProverFlags(key_resident=True, key_tables=bad)


def test_tables_need_the_key_resident():
    with pytest.raises(ValueError, match="key_tables needs key_resident=True"):
        ProverFlags(key_tables=True)


def test_tables_need_the_signed_msm():
    with pytest.raises(ValueError, match="key_tables needs msm_algo='signed'"):
        ProverFlags(key_resident=True, key_tables=True, msm_algo="unsigned")


def test_at_2_10_each_msm_keeps_26_tables_in_place_of_its_points():
    n = 1 << 10
    plan = dry_run_plan(PartitionShape.synthetic(10), TABLES_ON)
    allocs = {s.buffer: s for s in plan.steps if isinstance(s, Alloc)}
    assert set(allocs) >= TABLES
    assert not {f"{s}.points" for s in STAGES} & set(allocs)  # table 0 is the points
    # 1022..1024 points: windows of c = 10 bits (ceil(log2 n)), 26 of them (260 >= 256 bits)
    for stage, count in _points_by_hand(n).items():
        a = allocs[f"{stage}.table"]
        assert (a.allocator, a.persistent, a.per_device) == ("sync", True, True)
        assert a.note == f"key_tables.{stage}"
        assert a.bytes == 26 * POINT_BYTES[stage] * count
    assert sum(allocs[t].bytes for t in TABLES) == 26 * (96 * (4 * n - 3) + 192 * n)
    steps = list(plan.steps)
    for stage, count in _points_by_hand(n).items():
        # the points go to table 0, the build fills the rest, then the MSM reads the tables
        up = next(
            i for i, s in enumerate(steps) if getattr(s, "name", "") == f"upload_{stage}_points"
        )
        copy, build, run = steps[up], steps[up + 1], steps[up + 2 :]
        assert isinstance(copy, Copy) and copy.fills == f"{stage}.table"
        assert copy.bytes == POINT_BYTES[stage] * count
        assert isinstance(build, Kernel) and build.name == f"{stage}.table.build"
        assert build.fills == f"{stage}.table"
        group = "g2" if stage == "msm_b_g2" else "g1"
        assert (build.kind, build.size) == (f"msm_{group}", TABLE_BUILD_MSM_POINTS[group] * count)
        msm = next(s for s in run if isinstance(s, Kernel))
        assert (msm.name, msm.kind, msm.size) == (stage, f"msm_{group}", count)
    assert plan.meta["flags"]["key_tables"] is True


def test_the_precomputed_msm_has_one_bucket_set():
    # c = 10: one set of 2^9 buckets (Jacobian G1 144 B) instead of 26 windows' sets of the
    # plain signed MSM (c = log2 n - 3 = 7 at 2^10: 37 windows of 2^6 buckets)
    on = {
        s.buffer: s.bytes
        for s in dry_run_plan(PartitionShape.synthetic(10), TABLES_ON).steps
        if isinstance(s, Alloc)
    }
    off = {
        s.buffer: s.bytes
        for s in dry_run_plan(PartitionShape.synthetic(10)).steps
        if isinstance(s, Alloc)
    }
    assert on["msm_a.buckets"] == 4 * (1 << 9) * 36
    assert off["msm_a.buckets"] == 4 * 37 * (1 << 6) * 36


def test_at_2_27_the_tables_are_13_times_the_key():
    n = 1 << 27
    plan = dry_run_plan(PartitionShape.synthetic(27), TABLES_ON)
    allocs = {s.buffer: s.bytes for s in plan.steps if isinstance(s, Alloc)}
    # c = 20 bits, 13 windows (260 >= 256): 13 x 12 GiB per G1 MSM, 13 x 24 GiB for G2
    for stage, count in _points_by_hand(n).items():
        assert allocs[f"{stage}.table"] == 13 * POINT_BYTES[stage] * count
    assert allocs["msm_a.table"] == 156 * GIB and allocs["msm_b_g2.table"] == 312 * GIB
    kept = sum(allocs[t] for t in TABLES)
    assert kept == 13 * (72 * GIB - 96 * 3) == 936 * GIB - 3744


@pytest.mark.parametrize("vram", [None, "80 GiB"])
def test_at_2_27_the_tables_fit_no_card(tmp_path, vram):
    spec = "domain_log2 = 27, key_resident = true, key_tables = true"
    r = simulate(load_scenario(_scenario(tmp_path, spec, vram)))
    assert r.proofs_failed == 1 and r.oom_events
    first = r.oom_events[0]
    # the first table asked for (156 GiB) is more than the H200's 140 GiB
    assert first.fatal and first.buffer == "msm_h.table" and first.allocator == "sync"
    assert first.requested_bytes == 13 * 96 * (2**27 - 1)


def test_at_2_20_the_tables_fit_the_h200(tmp_path):
    spec = "domain_log2 = 20, key_resident = true, key_tables = true"
    r = simulate(load_scenario(_scenario(tmp_path, spec)))
    assert not r.oom_events and r.proofs_completed == 1
    n = 1 << 20
    tables = 13 * sum(POINT_BYTES[s] * c for s, c in _points_by_hand(n).items())
    assert tables == 13 * 603_979_488  # 7.31 GiB
    assert tables < r.peak_vram_bytes[0] < r.vram_total_bytes[0]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("key_tables = true", "key_tables needs key_resident=True"),
        ('key_resident = true, key_tables = "yes"', "plan.gpu_prover.key_tables"),
        (
            'key_resident = true, key_tables = true, msm_algo = "unsigned"',
            "key_tables needs msm_algo='signed'",
        ),
    ],
)
def test_a_bad_key_tables_in_a_scenario_is_one_line_naming_it(tmp_path, value, says):
    with pytest.raises(InputError) as e:
        load_scenario(_scenario(tmp_path, f"domain_log2 = 10, {value}"))
    assert says in str(e.value) and "\n" not in str(e.value)


def test_gpu_run_refuses_key_tables_in_one_line(tmp_path):
    path = _scenario(tmp_path, "domain_log2 = 10, key_resident = true, key_tables = true")
    out = CliRunner().invoke(app, ["gpu-run", str(path), "--device", "dry-run"])
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "plan.gpu_prover.key_tables = true" in lines[0]


def test_gpu_plan_shows_the_tables_at_2_27():
    args = ["gpu-plan", "--domain-log2", "27", "--key-resident", "--key-tables"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    kept = 936 * GIB - 3744  # 13 x (72 GiB less 3 G1 points)
    assert f"kept on the device across partitions (persistent, per device): {kept} " in out.output
    assert "(936.00 GiB)" in out.output
    g1 = 13 * 96 * 2**27
    assert f"precomputed tables msm_a.table: 13 x its points (12.00 GiB) = {g1} (156.00 GiB)" in (
        out.output
    )
    assert "precomputed tables msm_b_g2.table: 13 x its points (24.00 GiB)" in out.output


def test_gpu_plan_names_key_tables_without_key_resident():
    out = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "12", "--key-tables"])
    assert out.exit_code == 2
    text = " ".join(out.output.replace("│", " ").split())
    assert "--key-tables" in text and "needs key_resident=True" in text
