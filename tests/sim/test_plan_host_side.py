"""The host side of a replayed plan's partitions (issue 9): synthesis, host RAM and PCE
follow the plan's domain, or `[plan.host]` states them.

Oracles: the published PoRep figures of cuzk-facts.md (130,278,541 constraints, 14 GiB of
host memory per partition, domain 2^27; the h200 profile's 32 s of synthesis per
130,278,541 constraints and 10 s PCE load), scaled by hand.
"""

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from cuzk_sim.io.errors import InputError
from cuzk_sim.plan.builders.circuits import SHAPES
from cuzk_sim.scenario import load_scenario
from cuzk_sim.simulate.runner import simulate

GIB = 2**30
POREP_CONSTRAINTS, POREP_HOST = 130_278_541, 14 * GIB
SYNTHESIS_S, PCE_LOAD_S = 32.0, 10.0  # the h200 profile: per 130,278,541 constraints; load


def scenario(tmp_path: Path, plan: str, host: str = "", extra: str = "") -> Path:
    path = tmp_path / "s.toml"
    path.write_text(
        textwrap.dedent(f"""
        profile = "h200"
        [engine.gpus]
        gpu_workers_per_device = 1
        [engine.pce]
        cached = ["porep"]
        {extra}
        [plan]
        {plan}
        [plan.host]
        {host}
        [[workload]]
        kind = "porep"
        count = 1
        partitions = 2
        """)
    )
    return path


def test_a_small_plan_is_not_priced_as_a_production_partition(tmp_path):
    scn = load_scenario(scenario(tmp_path, "gpu_prover = { domain_log2 = 10 }"))
    shape = scn.shapes["porep"]
    # 2^10 / 2^27 = 2^-17 of the PoRep partition
    assert shape.constraints == round(POREP_CONSTRAINTS / 2**17) == 994
    assert shape.host_bytes == POREP_HOST // 2**17 == 114_688
    result = simulate(scn)
    assert result.peak_host_bytes == 2 * 114_688  # two partitions reserved, nothing pinned


def test_the_production_domain_keeps_the_published_figures(tmp_path):
    scn = load_scenario(scenario(tmp_path, "gpu_prover = { domain_log2 = 27 }"))
    # a replayed plan holds its own key: no cuzk SRS/PCE residency (plan_sources.py)
    assert scn.shapes["porep"] == dataclasses.replace(SHAPES["porep"], srs_bytes=0, pce_bytes=0)


def test_stated_host_side_replaces_the_derived_one(tmp_path):
    plan = "gpu_prover = { domain_log2 = 10 }"
    derived = simulate(load_scenario(scenario(tmp_path, plan)))
    stated = simulate(
        load_scenario(
            scenario(tmp_path, plan, 'synthesis = "0 s"\npce = false\npartition_bytes = "1 MiB"')
        )
    )
    assert stated.peak_host_bytes == 2 * 2**20
    assert not any("PCE" in line for _, line in stated.log)
    assert any("PCE loaded" in line for _, line in derived.log)
    # one proof: its latency; the GPU work is the same plan, so the difference is the PCE
    # load and one round of synthesis (both partitions in parallel) of 994 constraints
    synthesis = SYNTHESIS_S * 994 / POREP_CONSTRAINTS
    assert derived.seconds_per_proof - stated.seconds_per_proof == pytest.approx(
        PCE_LOAD_S + synthesis, abs=1e-9
    )


def test_a_stated_synthesis_time_is_per_partition_round(tmp_path):
    plan = "gpu_prover = { domain_log2 = 10 }"
    zero = simulate(load_scenario(scenario(tmp_path, plan, 'synthesis = "0 s"')))
    five = simulate(load_scenario(scenario(tmp_path, plan, 'synthesis = "5 s"')))
    # both partitions synthesize in one parallel round (max_parallel_synthesis = 18)
    assert five.seconds_per_proof - zero.seconds_per_proof == pytest.approx(5.0, abs=1e-9)


def test_pce_off_never_extracts(tmp_path):
    no_cache = "[engine.pce]\ncached = []"
    text = scenario(tmp_path, "gpu_prover = { domain_log2 = 10 }").read_text()
    path = tmp_path / "x.toml"
    path.write_text(text.replace('[engine.pce]\ncached = ["porep"]', no_cache))
    assert simulate(load_scenario(path)).pce_extractions == 1
    path.write_text(path.read_text().replace("[plan.host]\n", "[plan.host]\npce = false\n"))
    assert simulate(load_scenario(path)).pce_extractions == 0


def test_a_small_plan_fits_a_host_budget_a_production_proof_does_not(tmp_path):
    budget = '[engine.memory]\ntotal_budget = "16 GiB"'
    small = scenario(tmp_path, "gpu_prover = { domain_log2 = 10 }", extra=budget)
    assert simulate(load_scenario(small)).proofs_completed == 1
    big = scenario(tmp_path, "gpu_prover = { domain_log2 = 27 }", extra=budget)
    with pytest.raises(InputError, match="one porep proof needs 28.0 GiB"):  # 2 x 14 GiB
        load_scenario(big)


def test_a_plan_file_with_a_domain_is_scaled_and_one_without_is_not(tmp_path):
    steps = [{"op": "kernel", "name": "k", "kind": "ntt", "size": 1024}]
    (tmp_path / "p.json").write_text(json.dumps({"meta": {"domain_size": 2**20}, "steps": steps}))
    (tmp_path / "q.json").write_text(json.dumps({"steps": steps}))
    scaled = load_scenario(scenario(tmp_path, 'file = "p.json"')).shapes["porep"]
    assert scaled.host_bytes == POREP_HOST // 2**7  # 2^20 / 2^27
    got = load_scenario(scenario(tmp_path, 'file = "q.json"')).shapes["porep"]
    assert got == dataclasses.replace(SHAPES["porep"], srs_bytes=0, pce_bytes=0)


def test_only_the_replaced_kinds_change(tmp_path):
    text = scenario(tmp_path, 'gpu_prover = { domain_log2 = 10 }\nkinds = ["porep"]').read_text()
    path = tmp_path / "two.toml"
    path.write_text(text + '[[workload]]\nkind = "winning_post"\ncount = 1\n')
    shapes = load_scenario(path).shapes
    assert shapes["winning_post"] == SHAPES["winning_post"]  # not replayed: cuzk's
    assert shapes["porep"].host_bytes == 114_688


@pytest.mark.parametrize(
    "host, message",
    [
        ('synthesis = "fast"', "plan.host.synthesis"),
        ('partition_bytes = "-1 MiB"', "plan.host.partition_bytes"),
        ("pce = 3", "plan.host.pce"),
        ("bogus = 1", "plan.host.bogus: unknown key"),
    ],
)
def test_bad_host_keys_name_the_key(tmp_path, host, message):
    path = scenario(tmp_path, "gpu_prover = { domain_log2 = 10 }", host)
    with pytest.raises(InputError) as e:
        load_scenario(path)
    assert str(path) in str(e.value) and message in str(e.value)


def test_variant_mutex_scope_reaches_our_provers_replayed_plan(tmp_path):
    """`run` replays our prover's plan with the lock gpu-run takes for variant.mutex_scope
    (gpu/pipeline.py: one lock per GPU, one for all, or none), so both executors of one
    scenario lock alike."""
    from cuzk_sim.plan.contract import Lock, Unlock
    from cuzk_sim.scenario import scenario_from_dict

    raw = {
        "profile": "h200",
        "plan": {"gpu_prover": {"domain_log2": 10}},
        "workload": [{"kind": "porep", "count": 1, "partitions": 1}],
    }
    scopes = {}
    for scope in ("device", "global", "none"):
        scn = scenario_from_dict({**raw, "variant": {"mutex_scope": scope}}, "t.toml")
        locks = [s for s in scn.plans["porep"].steps if isinstance(s, (Lock, Unlock))]
        assert locks, "our prover's plan takes its device lock"
        scopes[scope] = {s.scope for s in locks}
    assert scopes == {"device": {"device"}, "global": {"global"}, "none": {"none"}}
