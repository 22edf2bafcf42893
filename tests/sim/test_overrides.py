"""Key-path overrides (`run --set`, sweep axes): parsing, schema check, application."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cuzk_sim.io.errors import InputError
from cuzk_sim.scenario import load_scenario
from cuzk_sim.scenario.overrides import (
    apply_overrides,
    check_key_path,
    parse_assignment,
    parse_key_path,
)

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
THREE_PART_FIX = SCENARIOS / "phase9-dual-worker-three-part-fix.toml"


def test_key_path_parts():
    assert parse_key_path("workload[0].count") == ("workload", 0, "count")
    assert parse_key_path("hardware.vram") == ("hardware", "vram")
    for bad in ("", "a..b", "a.[0]", "a b", "0abc"):
        with pytest.raises(InputError):
            parse_key_path(bad)


def test_assignment_values_are_toml_or_plain_text():
    assert parse_assignment("engine.gpus.gpu_workers_per_device=3") == (
        "engine.gpus.gpu_workers_per_device",
        3,
    )
    assert parse_assignment("hardware.vram=16 GiB") == ("hardware.vram", "16 GiB")
    assert parse_assignment('hardware.vram="20 GiB"') == ("hardware.vram", "20 GiB")
    assert parse_assignment("variant.free_d_bc_after_ntt=false") == (
        "variant.free_d_bc_after_ntt",
        False,
    )
    assert parse_assignment("variant.prestage=off") == ("variant.prestage", "off")
    with pytest.raises(InputError, match="KEY=VALUE"):
        parse_assignment("hardware.vram")


def test_unknown_key_is_refused_with_the_nearest_names():
    with pytest.raises(InputError, match=r"did you mean gpu_workers_per_device"):
        check_key_path("engine.gpus.gpu_worker_per_device")
    with pytest.raises(InputError, match="is a value"):
        check_key_path("hardware.vram.size")
    with pytest.raises(InputError, match="not a list"):
        check_key_path("hardware[0]")
    check_key_path("workload[3].count")  # the schema allows it; the file decides the length
    check_key_path("plan.gpu_prover.msm_chunk")


def test_apply_is_a_deep_copy_and_sets_nested_keys():
    raw = tomllib.loads(THREE_PART_FIX.read_text())
    out = apply_overrides(
        raw,
        {
            "hardware.vram": "20 GiB",
            "workload[0].count": 5,
            "engine.pipeline.synthesis_lookahead": 2,
        },
    )
    assert out["hardware"]["vram"] == "20 GiB" and raw["hardware"]["vram"] == "16 GiB"
    assert out["workload"][0]["count"] == 5 and raw["workload"][0]["count"] == 3
    assert out["engine"]["pipeline"] == {"synthesis_lookahead": 2}  # table created
    with pytest.raises(InputError, match=r"index \[1\] is out of range"):
        apply_overrides(raw, {"workload[1].count": 1})


def test_load_scenario_with_overrides_validates_like_a_file():
    s = load_scenario(THREE_PART_FIX, {"engine.gpus.gpu_workers_per_device": 3})
    assert s.config.gpu_workers_per_device == 3
    assert s.config.vram == 16 * 2**30
    with pytest.raises(InputError, match=r"three-part-fix.toml: .*gpu_workers_per_device"):
        load_scenario(THREE_PART_FIX, {"engine.gpus.gpu_workers_per_device": 0})


@pytest.mark.parametrize("value", ["yes", 1, "true"])
def test_a_boolean_flag_takes_true_or_false_only(value):
    """A prover or variant flag stated as "yes" or 1 is refused, naming the key (pydantic's
    lax mode would have read it as true)."""
    base = Path(__file__).parents[2] / "scenarios" / "validation" / "base.toml"
    for key in ("plan.gpu_prover.key_pinned", "plan.gpu_prover.prestage"):
        with pytest.raises(InputError, match=key.replace(".", r"\.")):
            load_scenario(base, {key: value})
    assert load_scenario(base, {"plan.gpu_prover.prestage": True}) is not None
