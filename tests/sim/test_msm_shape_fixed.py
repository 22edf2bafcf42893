"""The part of a shaped MSM that its 0 and 1 scalars do not shrink (`shape_fixed`, issue
27): priced by hand, recovered from samples of a known law, read again from the H200 race
call's raw runs, and the OOM state it lets the model reach, byte for byte, on that card."""

from __future__ import annotations

import copy
import gzip
import json
import random
import statistics
from pathlib import Path

import pytest

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.inputs import parse_toml
from cuzk_sim.plan.contract import Kernel
from cuzk_sim.profiles.cost import Cost, solve_shape_fixed
from cuzk_sim.profiles.profile import load_profile, profile_from_raw
from cuzk_sim.steps.kernel import price

ROOT = Path(__file__).resolve().parents[2]
CALL = ROOT / "docs/validation/h200-2026-12-03-races/call/real.jsonl.gz"


def _runs() -> list[dict]:
    with gzip.open(CALL, "rt") as f:
        return [json.loads(line) for line in f]


def test_a_shaped_msm_keeps_its_fixed_part_whole():
    c = Cost(0.0, 1e-6, "linear", (), (0.1, 0.25), shape_fixed=0.2e-3)
    # 1000 random scalars take 1 ms; 200 random + 500 x 0.1 + 300 x 0.25 = 325 of them
    # weigh 0.325: 0.2 ms kept + 0.8 ms x 0.325 = 0.46 ms
    assert c.shaped_seconds(1000, 500, 300) == pytest.approx(0.46e-3)
    assert c.shaped_seconds(1000, 0, 0) == pytest.approx(1e-3)  # random scalars: all of it
    # a fixed part above the whole price is the whole price, never more
    big = Cost(0.0, 1e-6, "linear", (), (0.1, 0.25), shape_fixed=5e-3)
    assert big.shaped_seconds(1000, 500, 300) == pytest.approx(1e-3)
    # without a fixed part: the shares alone, as before
    assert Cost(0.0, 1e-6, "linear", (), (0.1, 0.25)).shaped_seconds(1000, 500, 300) == (
        pytest.approx(0.325e-3)
    )


def test_the_fixed_part_is_recovered_from_samples_of_a_known_law():
    rng = random.Random(27)
    true_f, weight = 1.0e-3, 0.1773
    found = []
    for random_s in (3.2e-3, 4.2e-3, 5.4e-3):  # three sizes' random-scalar prices
        # measured times: the law's value, times a lognormal factor of mean 1 (sd ~4 %)
        law = true_f + (random_s - true_f) * weight
        samples = [law * rng.lognormvariate(-(0.04**2) / 2, 0.04) for _ in range(400)]
        found.append(solve_shape_fixed(random_s, weight, statistics.mean(samples)))
    assert statistics.mean(found) == pytest.approx(true_f, rel=0.03)
    # exact: the law's own value gives the fixed part back
    assert solve_shape_fixed(5e-3, 0.25, 1e-3 + 4e-3 * 0.25) == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="weight"):
        solve_shape_fixed(5e-3, 1.0, 5e-3)


def test_the_h200_figures_are_the_race_calls_control_solved_by_hand():
    # the mutex control's runs that fit: one worker's GPU section at a time, CUDA events
    ms: dict[str, list[float]] = {}
    for d in _runs():
        if d["config"] == "w2-caching-18-control" and not d["real"]["oom"]:
            for name in ("msm_a", "msm_b_g1", "msm_b_g2", "msm_l"):
                ms.setdefault(name, []).append(d["details"]["steps"][name]["gpu_ms"])
    prof = load_profile("h200")
    g1, g2 = prof.kernels["msm_g1"], prof.kernels["msm_g2"]
    # (size, zeros, ones) of the 2^18 PoRep-shape MSMs (the dry run's, docs/gpu.md)
    shape = {
        "msm_a": (151808, 78318, 73490),
        "msm_b_g1": (67661, 34906, 32755),
        "msm_l": (262142, 135239, 126903),
    }
    fs = []
    for name, (n, z, o) in shape.items():
        w = (n - z - o + 0.0962 * z + 0.2638 * o) / n
        t = g1.seconds(n)
        fs.append((statistics.mean(ms[name]) / 1e3 - t * w) / (1 - w))
    assert g1.shape_fixed == pytest.approx(round(statistics.mean(fs), 6), abs=1e-9)
    n, z, o = 67661, 34906, 32755
    w2 = (n - z - o + 0.0277 * z + 0.1219 * o) / n
    f2 = (statistics.mean(ms["msm_b_g2"]) / 1e3 - g2.seconds(n) * w2) / (1 - w2)
    assert g2.shape_fixed == pytest.approx(round(f2, 6), abs=1e-9)
    # priced so, each shaped MSM lands within 10 % of its measured time
    for name, (n, z, o) in shape.items():
        got = price(Kernel(name, "msm_g1", n, zeros=z, ones=o), prof, name)
        assert got == pytest.approx(statistics.mean(ms[name]) / 1e3, rel=0.10)


def test_shape_fixed_without_shares_is_refused():
    raw = copy.deepcopy(parse_toml((ROOT / "cuzk_sim/profiles/h200.toml").read_text(), "h"))
    raw["kernel"]["msm_g1"] = {"time": "1 ms", "size": 1000, "shape_fixed": "0.1 ms"}
    with pytest.raises(InputError, match="shape_fixed needs zero_share and one_share"):
        profile_from_raw(raw, "test")


def test_the_model_reaches_the_cards_oom_state_to_the_byte():
    """At the race call's -1 % card of w2-nomutex-18, 5 of the 12 real runs failed on
    msm_l.slots with the same free bytes and idle pool bytes; the model, pricing the
    shaped MSMs with their fixed part, reaches that very state in most replicas."""
    from cuzk_sim.simulate.runner import simulate
    from cuzk_sim.validation.boundary import at_vram
    from cuzk_sim.validation.spec import load_spec

    real = [d for d in _runs() if d["config"] == "w2-nomutex-18" and d["cap"] == "race-1%"]
    states = [
        (e["free_bytes"], e["ledger"]["(device)"]["caching_pool_idle"])
        for e in (d["real"]["oom_events"][0] for d in real)
    ]
    common, count = max(((s, states.count(s)) for s in set(states)), key=lambda x: x[1])
    assert count >= 5  # the card's own most frequent state
    spec = load_spec(str(ROOT / "scenarios/validation/h200-races.toml"))
    scn = next(c.scenario for c in spec.configs if c.name == "w2-nomutex-18")
    at = at_vram(scn, real[0]["achieved_vram"])
    hits = 0
    for i in range(20):
        r = simulate(at, replica=i, measured=at.profile.jitter)
        e = r.oom_events[0]
        hits += (e.free_bytes, e.ledger["(device)"]["caching_pool_idle"]) == common
    assert hits >= 10


def test_the_race_replicas_are_the_same_numbers_twice():
    from cuzk_sim.simulate.replicas import run_replicas
    from cuzk_sim.validation.boundary import at_vram
    from cuzk_sim.validation.spec import load_spec

    spec = load_spec(str(ROOT / "scenarios/validation/h200-races.toml"))
    scn = next(c.scenario for c in spec.configs if c.name == "w2-nomutex-18")
    at = at_vram(scn, 1854865408)  # the race call's +1 % card

    def outcome():
        rep = run_replicas(at, 30, None)
        return [(r.oom, r.sim_time_s, r.peak_vram_bytes) for r in rep.results]

    first = outcome()
    assert first == outcome()
    # a race: some replicas fail and some fit at this card
    assert 0 < sum(o for o, _, _ in first) < len(first)
