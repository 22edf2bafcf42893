"""MSM steps priced by the shape of their scalars (issue 24): the dry run records the
witness shape's zeros and ones on each witness MSM, the profile prices each part, and the
h200 figures come from issue 23's microbenchmarks (their raw files)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from cuzk_sim.gpu.flags import ProverFlags
from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.inputs import parse_toml
from cuzk_sim.plan.builders.circuits import SHAPES
from cuzk_sim.plan.builders.cuzk import CuzkVariant, build_partition_plan
from cuzk_sim.plan.contract import Kernel, Plan
from cuzk_sim.profiles.profile import load_profile, profile_from_raw
from cuzk_sim.steps.base import PlanError
from cuzk_sim.steps.kernel import price

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "docs" / "validation"


def _msm_steps(plan: Plan) -> dict[str, Kernel]:
    return {s.name: s for s in plan.steps if s.op == "kernel" and s.kind.startswith("msm_")}


def test_the_dry_run_records_the_porep_shape_on_the_witness_msms():
    # 2^10 porep by hand: 1024 variables, 1 input, aux 1022; A holds 2 + round(0.5791 x
    # 1022 = 591.84) = 594 points, B 2 + round(0.2581 x 1022 = 263.78) = 266, L 1022.
    # zeros = round(0.5159 n), ones = round(0.4841 n):
    #   A: 0.5159 x 594 = 306.44 -> 306, 0.4841 x 594 = 287.56 -> 288
    #   B: 0.5159 x 266 = 137.23 -> 137, 0.4841 x 266 = 128.77 -> 129
    #   L: 0.5159 x 1022 = 527.25 -> 527, 0.4841 x 1022 = 494.75 -> 495
    steps = _msm_steps(dry_run_plan(PartitionShape.synthetic(10, witness="porep")))
    got = {k: (s.size, s.zeros, s.ones) for k, s in steps.items()}
    assert got == {
        "msm_h": (1023, None, None),  # the quotient's coefficients: random
        "msm_a": (594, 306, 288),
        "msm_b_g1": (266, 137, 129),
        "msm_b_g2": (266, 137, 129),
        "msm_l": (1022, 527, 495),
    }


def test_chunks_carry_their_own_counts_and_the_dense_shape_none():
    plan = dry_run_plan(PartitionShape.synthetic(10, witness="porep"), ProverFlags(msm_chunk=512))
    l_chunks = [s for s in plan.steps if s.op == "kernel" and s.name == "msm_l"]
    # 1022 = 512 + 510: 0.5159 x 512 = 264.14 -> 264, 0.4841 x 512 = 247.86 -> 248;
    # 0.5159 x 510 = 263.11 -> 263, 0.4841 x 510 = 246.89 -> 247
    assert [(s.size, s.zeros, s.ones) for s in l_chunks] == [(512, 264, 248), (510, 263, 247)]
    dense = _msm_steps(dry_run_plan(PartitionShape.synthetic(10)))
    assert all(s.zeros is None and s.ones is None for s in dense.values())


def test_the_shape_survives_json_and_dense_plans_read_as_before():
    plan = dry_run_plan(PartitionShape.synthetic(10, witness="porep"))
    back = Plan.from_json(plan.to_json())
    assert _msm_steps(back)["msm_l"].zeros == 527 and _msm_steps(back)["msm_l"].ones == 495
    for p in (
        dry_run_plan(PartitionShape.synthetic(10)),
        build_partition_plan(SHAPES["porep"], CuzkVariant(), 16 << 30),
    ):
        text = p.to_json()
        assert '"zeros"' not in text and '"ones"' not in text


def _profile(kind: str, **shares: float):
    raw = parse_toml((ROOT / "cuzk_sim/profiles/h200.toml").read_text(), "h200.toml")
    raw = copy.deepcopy(raw)
    raw["kernel"][kind] = {"time": "1 ms", "size": 1000, "basis": "assumed", **shares}
    return profile_from_raw(raw, "test")


def test_a_shaped_msm_is_priced_part_by_part():
    prof = _profile("msm_g1", zero_share=0.1, one_share=0.25)
    step = Kernel("m", "msm_g1", 1000, zeros=500, ones=300)
    # 1 ms for 1000 random scalars; 200 random + 500 x 0.1 + 300 x 0.25 = 325 of them
    assert price(step, prof, "m") == pytest.approx(0.325e-3)
    assert price(Kernel("m", "msm_g1", 1000), prof, "m") == pytest.approx(1e-3)
    # a profile without shares prices every scalar as random (what it measured)
    plain = _profile("msm_g1")
    assert price(step, plain, "m") == pytest.approx(1e-3)


def test_the_h200_profile_prices_the_2_27_porep_msm_l_by_hand():
    prof = load_profile("h200")
    step = _msm_steps(dry_run_plan(PartitionShape.synthetic(27, witness="porep")))["msm_l"]
    dense = prof.kernel_seconds("msm_g1", step.size, "msm_l")
    n, z, o = step.size, step.zeros, step.ones
    assert (n, z, o) == (134217726, 69242925, 64974801)  # round(0.5159 n), round(0.4841 n)
    kept = 1.056e-3  # shape_fixed: what its 0s and 1s do not shrink (the 2^18 race call)
    want = kept + (dense - kept) * (0 + 0.0962 * z + 0.2638 * o) / n
    assert price(step, prof, "msm_l") == pytest.approx(want)
    assert price(step, prof, "msm_l") < 0.2 * dense


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"zeros": 3}, "zeros and ones are given together"),
        ({"zeros": 6, "ones": 5}, "exceed its size 10"),
    ],
)
def test_bad_kernel_shapes_are_refused(kw, says):
    with pytest.raises(PlanError, match=says):
        Kernel("m", "msm_g1", 10, **kw)


def test_a_plan_file_with_a_negative_count_is_one_line():
    raw = {"steps": [{"op": "kernel", "name": "m", "kind": "msm_g1", "size": 4, "zeros": -1}]}
    with pytest.raises(PlanError, match=r"steps\[0\] \(kernel\)\.zeros"):
        Plan.from_dict(raw)


@pytest.mark.parametrize(
    ("shares", "says"),
    [
        ({"zero_share": 0.1}, "given together"),
        ({"zero_share": 1.5, "one_share": 0.2}, "between 0 and 1"),
    ],
)
def test_bad_shares_in_a_profile_are_refused(shares, says):
    with pytest.raises(InputError, match=says):
        _profile("msm_g1", **shares)


def _call(n: int) -> list[dict]:
    return json.loads((RAW / f"h200-2026-12-03-issue23-call{n}" / "production.json").read_text())


def test_the_h200_g1_shares_are_the_microbenchmarks_solved_by_hand():
    c1, c2 = _call(1), _call(2)
    resident = [next(r for r in c if r.get("config") == "resident")["traced_ms"] for c in (c1, c2)]
    split = [{r["case"]: r["ms"] for r in c if r["what"] == "split_msm"} for c in (c1, c2)]
    # call 1's msm_h: 2^20 random scalars among 2^27 - 1, the rest zero; call 2's random
    h, rest = 2**27 - 1, 2**20
    r0 = resident[0]["msm_h"] / resident[1]["msm_h"]
    zero = (r0 - rest / h) / ((h - rest) / h)
    r1 = sum(s["pippenger, same scalars"] / s["pippenger, random scalars"] for s in split) / 2
    one = (r1 - 0.5159 * zero) / 0.4841
    prof = load_profile("h200")
    assert prof.kernels["msm_g1"].shares == (round(zero, 4), round(one, 4))
    g2_zero, g2_one = prof.kernels["msm_g2"].shares
    assert g2_zero < zero and g2_one < one  # a G2 point's random-scalar price is higher
    rows = {f.key: f for f in prof.figures}
    assert rows["kernel.msm_g1.scalars"].basis == "measured"
    assert rows["kernel.msm_g2.scalars"].basis == "derived"
    assert "issue23-call1" in rows["kernel.msm_g1.scalars"].source


def test_the_split_msms_sum_of_ones_is_the_measured_batch_add():
    c1, c2 = _call(1), _call(2)
    resident = [next(r for r in c if r.get("config") == "resident")["traced_ms"] for c in (c1, c2)]
    prof = load_profile("h200")
    pw = prof.kernels["pointwise"]
    # msm_l at 2^27: 134217726 scalars, round(0.4841 x that) = 64974801 ones
    mean_l = (resident[0]["msm_l"] + resident[1]["msm_l"]) / 2
    want = mean_l * 1e-3 - pw.seconds(134217726)
    assert prof.kernel_seconds("batch_add_g1", 64974801, "x") == pytest.approx(want, rel=1e-4)
    plan = dry_run_plan(PartitionShape.synthetic(27, witness="porep"), ProverFlags(split_msm=True))
    ones = next(s for s in plan.steps if s.op == "kernel" and s.name == "msm_l.ones")
    assert (ones.kind, ones.size) == ("batch_add_g1", 64974801)


def test_derived_card_profiles_keep_the_shares():
    base, derived = load_profile("h200"), load_profile("rtx4090+ours")
    assert derived.kernels["msm_g1"].shares == base.kernels["msm_g1"].shares
    step = Kernel("m", "msm_g1", 1 << 24, zeros=1 << 23, ones=1 << 22)
    ratio_base = price(step, base, "m") / base.kernel_seconds("msm_g1", 1 << 24, "m")
    ratio_derived = price(step, derived, "m") / derived.kernel_seconds("msm_g1", 1 << 24, "m")
    assert ratio_derived == pytest.approx(ratio_base)
    row = next(f for f in derived.figures if f.key == "kernel.msm_g1.scalars")
    assert row.basis == "derived" and row.source.startswith("kept from the base card")
