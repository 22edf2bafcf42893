"""Measured jitter (a profile's [jitter] table): per-kind families, shared run and
partition factors, and `run --replicas` saying which jitter it used."""

import json
import math
import random
import statistics

import pytest
from sim_toys import toy_scenario
from test_jitter import RACE
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.io.errors import InputError
from cuzk_sim.model.jitter import Component, Jitter, MeasuredJitter, draw
from cuzk_sim.profiles.jitter_table import measured_jitter
from cuzk_sim.profiles.profile import load_profile
from cuzk_sim.simulate.replicas import run_replicas

RACE_TOML = "scenarios/race-two-workers-prestage-at-once.toml"


def _scenario_with(components: dict[str, Component]):
    scn = toy_scenario(RACE)
    from dataclasses import replace

    return replace(scn, profile=replace(scn.profile, jitter=MeasuredJitter(components)))


@pytest.mark.parametrize("family", ["lognormal", "normal", "gamma"])
def test_each_family_draws_mean_one_and_the_relative_sd_asked(family):
    rng = random.Random(7)
    xs = [draw(rng, family, 0.2) for _ in range(40_000)]
    # sample mean of 40k draws with sd 0.2: standard error 0.001
    assert statistics.fmean(xs) == pytest.approx(1.0, abs=0.005)
    assert statistics.stdev(xs) == pytest.approx(0.2, rel=0.03)


def test_a_kind_not_named_uses_its_prefix_then_default():
    k, d = Component("normal", 0.1), Component("gamma", 0.2)
    mj = MeasuredJitter({"kernel": k, "default": d})
    assert mj.component("kernel.msm_g1") is k
    assert mj.component("copy.pinned") is d
    assert MeasuredJitter({}).component("x").step == 0.0


def test_the_run_factor_is_shared_by_a_replica_and_redrawn_by_the_next():
    mj = MeasuredJitter({"default": Component("lognormal", 0.0, 0.0, 0.3)})
    a = Jitter(0.0, 1, 0, mj)
    first = a.scale(1.0, "kernel.ntt")
    a.partition()
    assert a.scale(1.0, "kernel.ntt") == first  # same kind, same replica: same factor
    assert a.scale(1.0, "copy.pinned") != first  # another kind: its own run factor
    assert Jitter(0.0, 1, 1, mj).scale(1.0, "kernel.ntt") != first
    assert Jitter(0.0, 1, 0, mj).scale(1.0, "kernel.ntt") == first  # seeded: reproducible


def test_the_partition_factor_is_shared_within_a_partition_only():
    mj = MeasuredJitter({"default": Component("lognormal", 0.0, 0.3, 0.0)})
    j = Jitter(0.0, 1, 0, mj)
    j.partition()
    one = [j.scale(2.0, "kernel.ntt") for _ in range(3)]
    assert one[0] == one[1] == one[2] != 2.0
    j.partition()
    assert j.scale(2.0, "kernel.ntt") != one[0]


def test_a_run_factor_alone_cannot_break_a_tie_both_workers_share_it():
    # both workers' 100 s stages are scaled by the one run factor of cpu.prep_msm: they
    # still end at the same instant, so the second allocation fails in every replica
    scn = _scenario_with({"default": Component("lognormal", 0.0, 0.0, 0.2)})
    report = run_replicas(scn, 20, None)
    assert report.ooms == 20
    assert report.jitter_source.startswith("profile toy [jitter]")


def test_per_step_noise_gives_the_hand_computed_race_probability():
    # stages 100 f_A and 100 f_B, f ~ N(1, 0.05): their difference ~ N(0, 7.07 s); the
    # second allocation fails iff it lands in the first's ~1 s hold:
    # P = 2 Phi(1 / 7.07) - 1 = 2 x 0.5562 - 1 = 0.112 (the hold's own noise is ~0.05 s)
    scn = _scenario_with({"default": Component("normal", 0.05)})
    report = run_replicas(scn, 400, None)
    # binomial(400, 0.112): mean 45, sd 6.3; 22..70 is beyond 3.5 sd either side
    assert 22 <= report.ooms <= 70


def test_an_explicit_jitter_overrides_the_profiles():
    scn = _scenario_with({"default": Component("lognormal", 0.0, 0.0, 0.2)})
    report = run_replicas(scn, 50, 0.05)
    assert report.jitter_source == "--jitter 5% (uniform, explicit)"
    assert report.ooms < 50  # the uniform noise breaks the tie the run factor kept


def test_the_bundled_h200_profile_has_a_fitted_jitter_table():
    p = load_profile("h200")
    assert p.jitter is not None
    assert "CUZK_SIM_STEP" in p.jitter.source
    for kind in ("kernel.ntt", "kernel.msm_g1", "copy.pinned", "copy.pageable", "cpu"):
        assert kind in p.jitter.components
    assert load_profile("rtx5070ti").jitter is None


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ({"kind": {"kernel": {"step": 2.0}}}, "step"),
        ({"kind": {"kernel": {"step": 0.1, "family": "cauchy"}}}, "family"),
        ({"kind": {}}, "names no kind"),
        ({"kind": {"kernel": {"step": 0.1, "sigma": 1}}}, "sigma"),
    ],
)
def test_a_bad_jitter_table_is_a_one_line_error_naming_it(table, needle):
    with pytest.raises(InputError) as e:
        measured_jitter(table, "p.toml")
    msg = str(e.value)
    assert "p.toml" in msg and "[jitter]" in msg and needle in msg


def _run_json(*args: str) -> dict:
    r = CliRunner().invoke(app, ["run", RACE_TOML, "--replicas", "4", "--json", *args])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout[r.stdout.index("{") :])


def test_run_replicas_says_which_jitter_it_used():
    assert _run_json("--set", "profile=h200")["jitter_source"] == (
        "profile h200 [jitter] (measured)"
    )
    assert _run_json("--set", "profile=h200", "--jitter", "5%")["jitter_source"] == (
        "--jitter 5% (uniform, explicit)"
    )
    none = _run_json()["jitter_source"]  # rtx5070ti has no [jitter]
    assert none.startswith("none")
    assert math.isfinite(_run_json()["oom_probability"])


def test_a_derived_profile_keeps_its_bases_jitter_and_says_it_is_assumed():
    p = load_profile("rtx4090+ours")  # scaled from h200 (cuzk_sim/profiles/derive.py)
    assert p.jitter is not None
    assert p.jitter.source.startswith("kept from h200")
    assert p.jitter.components == load_profile("h200").jitter.components
    assert load_profile("rtx4090").jitter is None  # scaled from rtx5070ti, which has none


def test_profile_show_lists_the_jitter_of_each_kind_with_its_basis():
    r = CliRunner().invoke(app, ["profile", "show", "h200"], terminal_width=300)
    assert r.exit_code == 0, r.output
    row = next(line for line in r.output.splitlines() if "jitter.kernel.msm_g1" in line)
    c = load_profile("h200").jitter.components["kernel.msm_g1"]
    assert f"step {c.step:.1%}" in row and "fitted" in row
