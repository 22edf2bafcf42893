"""Validation specs, the model's VRAM boundary by bisection and the caps around it."""

from __future__ import annotations

from pathlib import Path

import pytest
from validation_fixtures import DATA, VALIDATION

from cuzk_sim.io.errors import InputError
from cuzk_sim.scenario import load_scenario
from cuzk_sim.scenario.plan_sources import with_lock_scope
from cuzk_sim.validation.boundary import Boundary, caps_around, vram_boundary
from cuzk_sim.validation.spec import load_spec

MIB = 1 << 20


def test_bundled_grid_covers_what_the_issue_asks():
    spec = load_spec(VALIDATION / "h200-grid.toml")
    by = {c.name: c.scenario for c in spec.configs}
    workers = {s.config.gpu_workers_per_device for s in by.values()}
    flags = [p.meta["flags"] for s in by.values() for p in s.plans.values()]
    domains = {p.meta["domain_size"] for s in by.values() for p in s.plans.values()}
    assert workers == {1, 2, 3}
    assert {f["allocator"] for f in flags} == {"caching", "async", "sync"}
    assert {f["prestage"] for f in flags} == {True, False}
    assert {f["free_bc_early"] for f in flags} == {True, False}
    assert any(f["memory_aware"] for f in flags) and any(f["msm_chunk"] for f in flags)
    assert {s.spec.variant.mutex_scope for s in by.values()} == {"device", "none"}
    assert max(domains) >= 1 << 24 and len(domains) >= 2
    mixed = by["w2-mixed-18-16"]
    assert {p.meta["domain_size"] for p in mixed.plans.values()} >= {1 << 16, 1 << 18}
    # the model sees the real pipeline's lock: mutex_scope none reaches the plan's steps
    nomutex = by["w2-nomutex-18"].plans["porep"]
    assert {s.scope for s in nomutex.steps if s.op in ("lock", "unlock")} == {"none"}


def test_lock_scope_rewrite_leaves_device_plans_alone():
    scn = load_scenario(VALIDATION / "base.toml")
    plan = scn.plans["porep"]
    assert with_lock_scope(plan, "device") is plan
    glob = with_lock_scope(plan, "global")
    assert [s.scope for s in glob.steps if s.op == "lock"] == ["global"]


@pytest.mark.parametrize(
    "body, key",
    [
        ('base = "base.toml"\n', "config"),
        ('base = "base.toml"\n[[config]]\nname = "a"\nbogus = 1\n', "config[0].bogus"),
        ('base = "base.toml"\ncaps = [-95]\n[[config]]\nname = "a"\n', "caps"),
        ('base = "nope.toml"\n[[config]]\nname = "a"\n', "base"),
        ('base = "base.toml"\n[[config]]\nname = "a"\n[[config]]\nname = "a"\n', "unique"),
        (
            'base = "base.toml"\n[[config]]\nname = "a"\nset = { "hardware.gpus" = 0 }\n',
            "hardware.gpus",
        ),
        (
            'base = "base.toml"\n[[config]]\nname = "a"\n'
            "kinds = { snapdeals = { domain_log2 = 12 } }\n",
            "kinds.snapdeals",
        ),
    ],
)
def test_bad_specs_name_the_key(tmp_path: Path, body: str, key: str):
    (tmp_path / "base.toml").write_text((VALIDATION / "base.toml").read_text())
    spec = tmp_path / "spec.toml"
    spec.write_text(body)
    with pytest.raises(InputError, match=key.replace("[", r"\[").replace("]", r"\]")):
        load_spec(spec)


def test_boundary_of_one_100_mib_allocation_is_context_plus_100_mib():
    # by hand: 400 MiB context + one 100 MiB cudaMalloc (a 2 MiB multiple) + the one 2 MiB
    # granule a cudaMalloc needs free beyond its size = 502 MiB
    scn = load_scenario(DATA / "one-alloc.toml")
    b = vram_boundary(scn, tolerance=0.001)
    assert b.vram is not None
    assert 502 * MIB <= b.vram <= 502 * MIB * 1.001
    assert b.unsafe_below < 502 * MIB
    assert b.vram - b.unsafe_below <= 0.001 * b.card + 1


def test_boundary_none_when_even_the_card_is_too_small(tmp_path: Path):
    plan = (DATA / "one-alloc-plan.json").read_text().replace("104857600", str(200 << 30))
    (tmp_path / "one-alloc-plan.json").write_text(plan)
    (tmp_path / "s.toml").write_text((DATA / "one-alloc.toml").read_text())
    b = vram_boundary(load_scenario(tmp_path / "s.toml"))
    assert b.vram is None


def test_caps_are_percentages_of_the_boundary_within_the_card():
    b = Boundary(vram=1000 * MIB, unsafe_below=999 * MIB, card=1050 * MIB, model_runs=1)
    caps = caps_around(b, (-10, -1, 1, 10), generous=True, floor=400 * MIB)
    assert caps == [
        ("-10%", 900 * MIB),
        ("-1%", 990 * MIB),
        ("+1%", 1010 * MIB),
        ("card", 1050 * MIB),  # +10 % (1100 MiB) exceeds the card: dropped
    ]


def test_bundled_production_grid_covers_what_issue_24_asks():
    # issue 24 item 3: 2^26 and 2^27; 1 and 2 workers; streamed plans whose VRAM budgets
    # give 12-24 GiB plans and today's msm_chunk plans; caps -3, -1, +1, +3 %
    from cuzk_sim.gpu.streaming import plan_peak

    spec = load_spec(VALIDATION / "h200-production.toml")
    by = {c.name: c.scenario for c in spec.configs}
    plans = {n: s.plans["porep"] for n, s in by.items()}
    assert {p.meta["domain_size"] for p in plans.values()} == {1 << 26, 1 << 27}
    assert {s.config.gpu_workers_per_device for s in by.values()} == {1, 2}
    assert {c.caps for c in spec.configs} == {(-3.0, -1.0, 1.0, 3.0)}
    assert not any(c.generous for c in spec.configs)
    streamed = {n for n, p in plans.items() if p.meta["flags"]["overlap_uploads"]}
    chunked = {n for n, p in plans.items() if p.meta["flags"]["msm_chunk"] == 1 << 24}
    assert streamed and chunked and streamed | chunked == set(plans)
    gib = 2**30
    for n in streamed:  # a budget of 14 or 24 GiB, the plan's peak within it, 12-24 GiB
        budget = plans[n].meta["flags"]["vram_budget_bytes"]
        assert plans[n].meta["flags"]["pinned"]  # a/b/c pinned: issue 23's production shape
        assert budget in (14 * gib, 24 * gib)
        assert 12 * gib <= plan_peak(plans[n]) <= budget
    for n in chunked:  # today's plans: no overlap of the chunks' uploads, no split MSM
        f = plans[n].meta["flags"]
        assert not f["overlap_uploads"] and not f["split_msm"] and f["key_pinned"]
        assert not f["pinned"]  # today's default: a/b/c from pageable memory
    # every plan is PoRep-shaped (the base's default for porep) and 4 proofs of 2
    # partitions: s/proof is the mean of three completion gaps (compare.py needs >= 4
    # partitions)
    assert {p.meta["witness"] for p in plans.values()} == {"porep"}
    assert {sum(a.count for a in s.config.arrivals) for s in by.values()} == {4}
    assert {sum(a.count * a.partitions for a in s.config.arrivals) for s in by.values()} == {8}
