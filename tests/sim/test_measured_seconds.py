"""A measured duration on a kernel or copy step (`seconds`, from a captured trace)
overrides the profile's price; without it the profile prices the step as before."""

import pytest

from cuzk_sim.io.errors import InputError
from cuzk_sim.model.compiled import compile_plan
from cuzk_sim.plan.contract import Copy, Kernel, Plan, PlanError
from cuzk_sim.profiles.profile import load_profile


def test_measured_seconds_override_the_profile():
    profile = load_profile("h200")
    plan = Plan(
        "captured",
        (
            Kernel("k0", "captured", 0, seconds=0.25),
            Copy("c0", 1 << 30, seconds=0.5),
            Kernel("k1", "ntt", 1 << 20),  # priced by the profile, as before
            Copy("c1", 1 << 30),
        ),
    )
    cp = compile_plan(plan, profile, merge=False)
    assert cp.seconds[0] == 0.25 and cp.seconds[1] == 0.5
    assert cp.seconds[2] == profile.kernel_seconds("ntt", 1 << 20, "t")
    assert cp.seconds[3] == profile.copy_seconds(1 << 30, False)


def test_merged_run_sums_measured_kernels():
    plan = Plan("p", (Kernel("a", "captured", 0, seconds=0.25), Kernel("b", "x", 0, seconds=0.5)))
    cp = compile_plan(plan, load_profile("h200"), merge=True)
    assert cp.seconds == (0.75,)  # 0.25 + 0.5: one run of two kernels


def test_unpriced_kind_without_seconds_still_refused():
    plan = Plan("p", (Kernel("a", "captured", 0),))
    with pytest.raises(InputError, match="kernel kind 'captured' is not priced"):
        compile_plan(plan, load_profile("h200"))


def test_seconds_in_json_only_when_set_and_validated():
    plan = Plan("p", (Kernel("a", "ntt", 4), Copy("c", 8, seconds=1.5)))
    steps = plan.to_dict()["steps"]
    assert "seconds" not in steps[0] and steps[1]["seconds"] == 1.5
    assert Plan.from_json(plan.to_json()) == plan
    for bad, what in ((-1, "greater than or equal"), ("2", "valid number"), (1e6, "less than")):
        raw = {"steps": [{"op": "copy", "name": "c", "bytes": 1, "seconds": bad}]}
        with pytest.raises(PlanError, match=rf"steps\[0\] \(copy\)\.seconds: .*{what}"):
            Plan.from_dict(raw)
