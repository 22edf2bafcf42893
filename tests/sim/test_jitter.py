"""Timing jitter and replicas: a verdict that hangs on timing becomes a probability."""

import json

import pytest
from sim_toys import MIB, toy_scenario

from cuzk_sim.io.errors import InputError
from cuzk_sim.model.jitter import Jitter
from cuzk_sim.plan.contract import Alloc, Cpu, Free, Lock, Plan, Unlock
from cuzk_sim.simulate.replicas import parse_fraction, percentile, run_replicas
from cuzk_sim.simulate.runner import simulate

# Two workers, each handed one partition at the same instant (both partitions of one
# proof come out of one synthesis round). Each does 100 s of host work (toy profile: a
# cpu step costs `size` seconds), then holds a 60 MiB buffer for 1 s on a 100 MiB card.
# Without noise both allocate at t = 100 s: the second fails. With 5 % noise each stage
# lasts 100·f, f ~ U(0.95, 1.05), so the stages end at two independent uniform times on
# a 10 s window, and the second allocation fails iff it lands inside the first
# worker's ~1 s hold: P = 1 − (1 − 1/10)² = 0.19 (hand arithmetic; the hold's own
# 5 % noise moves it by under 0.01).
RACE = Plan(
    "race",
    (
        Cpu("stage", "prep_msm", 100),
        Alloc("big", 60 * MIB),
        Cpu("hold", "prep_msm", 1),
        Free("big"),
    ),
)
# the same with the buffer under the device mutex: never two at once, safe by construction
SAFE = Plan("safe", (Cpu("stage", "prep_msm", 100), Lock("gpu"), *RACE.steps[1:], Unlock("gpu")))
# a buffer larger than the card: fails in every replica, whatever the timing
UNSAFE = Plan("unsafe", (Cpu("stage", "prep_msm", 100), Alloc("huge", 101 * MIB), Free("huge")))


def test_a_race_reports_a_probability_strictly_between_0_and_1():
    report = run_replicas(toy_scenario(RACE), 100, 0.05)
    assert 0.0 < report.oom_probability < 1.0
    # binomial(100, 0.19): mean 19, sd 3.9; 5..40 is beyond 3.5 sd either side
    assert 5 <= round(report.oom_probability * 100) <= 40
    for bufs, r in zip(report.failed_buffers, report.results, strict=True):
        assert bufs == (["big"] if r.oom else [])


def test_safe_and_unsafe_by_construction_report_exactly_0_and_1():
    assert run_replicas(toy_scenario(SAFE), 100, 0.05).oom_probability == 0.0
    unsafe = run_replicas(toy_scenario(UNSAFE), 100, 0.05)
    assert unsafe.oom_probability == 1.0
    assert unsafe.failed_buffers == [["huge"]] * 100
    assert unsafe.seconds_per_proof_p50 is None and unsafe.seconds_per_proof_p95 is None


def test_without_noise_the_race_always_meets():
    report = run_replicas(toy_scenario(RACE), 5, 0.0)
    assert report.oom_probability == 1.0  # both allocate at t = 100 s exactly


def test_replica_0_without_jitter_is_the_plain_run_and_replicas_are_deterministic():
    scn = toy_scenario(RACE)
    assert json.dumps(simulate(scn).to_dict()) == json.dumps(
        simulate(scn, jitter=0.0, replica=0).to_dict()
    )
    a = simulate(scn, jitter=0.05, replica=7).to_dict()
    b = simulate(scn, jitter=0.05, replica=7).to_dict()
    assert json.dumps(a) == json.dumps(b)
    c = simulate(scn, jitter=0.05, replica=8).to_dict()
    assert a["sim_time_s"] != c["sim_time_s"]


def test_safe_seconds_per_proof_spread_follows_the_noise():
    # SAFE, one proof of 2 partitions: w0 done at 100·f0 + 1·g0, w1 waits for the mutex;
    # the proof's time is the later end: between 95 + 0.95 and 105 + 2·1.05 s
    report = run_replicas(toy_scenario(SAFE), 50, 0.05)
    spp = [r.seconds_per_proof for r in report.results]
    # a single proof: s/proof = done − submitted, submitted at 0, synthesis 10 s (toy)
    assert all(10 + 95 + 0.95 <= s <= 10 + 105 + 2 * 1.05 for s in spp)
    assert report.seconds_per_proof_p50 <= report.seconds_per_proof_p95
    assert len(set(spp)) == 50


def test_jitter_factors_are_bounded_and_centred():
    j = Jitter(0.1, seed=3, replica=1)
    xs = [j.scale(1.0) for _ in range(20_000)]
    assert min(xs) >= 0.9 and max(xs) <= 1.1
    assert sum(xs) / len(xs) == pytest.approx(1.0, abs=0.002)  # U(0.9, 1.1): sd 0.058/√n
    assert Jitter(0.0).scale(2.5) == 2.5


def test_percentile_is_linear_between_order_statistics():
    assert percentile([], 0.5) is None
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([0.0, 10.0], 0.95) == pytest.approx(9.5)


@pytest.mark.parametrize("text", ["5x", "-1%", "95%", "nan", ""])
def test_bad_jitter_is_refused(text):
    with pytest.raises(InputError, match="--jitter"):
        parse_fraction(text)


def test_jitter_text_forms():
    assert parse_fraction("5%") == pytest.approx(0.05)
    assert parse_fraction("5 %") == pytest.approx(0.05)
    assert parse_fraction("0.05") == 0.05


def test_the_bundled_race_scenario_is_a_probability():
    from pathlib import Path

    from cuzk_sim.scenario import load_scenario

    path = Path(__file__).resolve().parents[2] / "scenarios/race-two-workers-prestage-at-once.toml"
    scn = load_scenario(path)
    assert simulate(scn).oom  # without noise both stages start at the same instant
    report = run_replicas(scn, 100, 0.05)
    # by hand (the scenario's description): 1 - (1 - 0.2)^2 = 0.36; binomial(100, 0.36)
    # has sd 4.8, so 19..53 lies beyond 3.5 sd either side
    assert 19 <= round(report.oom_probability * 100) <= 53
    assert set(report.buffer_counts) == {"d_stage"}


def test_run_replicas_applies_set_to_every_replica(tmp_path):
    """`run --set KEY=VALUE --replicas R` prices the changed scenario (the set used to be
    dropped silently with --replicas). The bundled fitting scenario of our prover at a
    card 1 MiB above the CUDA context must OOM in every replica."""
    from pathlib import Path

    from typer.testing import CliRunner

    from cuzk_sim.cli import app
    from cuzk_sim.profiles.profile import load_profile

    base = Path(__file__).resolve().parents[2] / "scenarios/validation/base.toml"
    ctx_mib = load_profile("h200").context_overhead / 2**20
    cli = CliRunner()
    fits = json.loads(cli.invoke(app, ["run", str(base), "--replicas", "3", "--jitter", "5%",
                                       "--json"]).stdout)  # fmt: skip
    assert fits["oom_probability"] == 0.0
    small = cli.invoke(
        app,
        ["run", str(base), "--replicas", "3", "--jitter", "5%", "--json",
         "--set", f"hardware.vram={ctx_mib + 1:.1f} MiB"],
    )  # fmt: skip
    assert json.loads(small.stdout)["oom_probability"] == 1.0
    log = cli.invoke(app, ["run", str(base), "--jitter", "5%", "--log", str(tmp_path / "l")])
    assert log.exit_code == 2 and "--log" in log.output
