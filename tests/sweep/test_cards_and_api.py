"""Card presets (vendor VRAM, which profile prices each) and the Python API."""

from __future__ import annotations

import pytest
from sweep_fixtures import BASE

from cuzk_sim import api
from cuzk_sim.io.errors import InputError
from cuzk_sim.profiles.cards import CARDS, card, pricing_note
from cuzk_sim.profiles.profile import load_profile
from cuzk_sim.scenario import load_scenario
from cuzk_sim.simulate.runner import simulate

GiB = 2**30

# The vendors' datasheet figures ("GB" of GPU memory are binary GiB), typed in here from
# the product pages cited in cuzk_sim/profiles/cards.py.
VENDOR_GB = {
    "rtx4000ada": 20,
    "rtx4090": 24,
    "rtx5070ti": 16,
    "rtx5090": 32,
    "l40s": 48,
    "a100-40gb": 40,
    "a100-80gb": 80,
    "h100-80gb": 80,
    "h200": 141,
}


def test_presets_hold_the_vendor_figures():
    assert {n: c.vram_bytes for n, c in CARDS.items()} == {
        n: gb * GiB for n, gb in VENDOR_GB.items()
    }
    for c in CARDS.values():
        assert c.source.startswith("https://www.nvidia.com/")


def test_only_measured_cards_name_a_profile():
    from cuzk_sim.profiles.profile import BUNDLED

    assert {n: c.profile for n, c in CARDS.items() if c.profile} == {
        "rtx5070ti": "rtx5070ti",
        "h200": "h200",
    }
    assert all(c.profile in BUNDLED for c in CARDS.values() if c.profile)


def test_unknown_card_suggests_names():
    with pytest.raises(InputError, match="did you mean rtx4090"):
        card("rtx4009")


def test_pricing_notes_say_whose_figures():
    # the card rule (card_rule.py): another card's profile is "assumed"; the card's own
    # derived profile "derived"; the one measured on it "measured"
    assert "assumed" in pricing_note("rtx4000ada", load_profile("rtx5070ti"))
    assert "own profile is rtx4000ada" in pricing_note("rtx4000ada", load_profile("rtx5070ti"))
    assert "derived from rtx5070ti" in pricing_note("rtx4000ada", load_profile("rtx4000ada"))
    assert "measured on this card" in pricing_note("rtx5070ti", load_profile("rtx5070ti"))
    assert "own profile is h200+cuzk" in pricing_note("h200", load_profile("rtx5070ti"))
    assert "measured on this card" in pricing_note(None, load_profile("rtx5070ti"))


def test_api_load_with_overrides_is_load_scenario():
    over = {"engine.gpus.gpu_workers_per_device": 3, "hardware.vram": "20 GiB"}
    a, b = api.load(BASE, over), load_scenario(BASE, over)
    assert a.config == b.config
    assert a.config.gpu_workers_per_device == 3 and a.config.vram == 20 * GiB
    # the API's result is the runner's, with what the CLI shows beside it (warnings,
    # profile, card: api.describe)
    assert api.simulate(a).to_dict() == api.describe(simulate(b), b).to_dict()


def test_api_from_dict_and_override():
    raw = api.read(BASE)
    changed = api.override(raw, {"workload[0].count": 5})
    assert raw["workload"][0]["count"] == 3 and changed["workload"][0]["count"] == 5
    result = api.simulate(api.from_dict(raw, {"workload[0].count": 5}, source="x"))
    assert result.proofs_submitted == 5


def test_api_make_sweep_matches_the_toml(small_outcome):
    spec = api.make_sweep(
        BASE,
        {
            "engine.gpus.gpu_workers_per_device": "1..3",
            "hardware.vram": ["12 GiB", "16 GiB", "20 GiB"],
            "variant.prestage": ["off", "outside_mutex"],
        },
        name="small",
    )
    assert api.sweep(spec, jobs=1, plots=False).rows == small_outcome.rows


def test_api_errors_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such scenario file"):
        api.load(tmp_path / "missing.toml")
    with pytest.raises(InputError, match="gpu_workers_per_devce"):
        api.make_sweep(BASE, {"engine.gpus.gpu_workers_per_devce": [1]})


def test_scenario_card_sets_vram_unless_vram_given():
    raw = api.read(BASE)
    del raw["hardware"]["vram"]
    assert api.from_dict(raw, {"hardware.card": "l40s"}).config.vram == 48 * GiB
    both = api.from_dict(raw, {"hardware.card": "l40s", "hardware.vram": "20 GiB"})
    assert both.config.vram == 20 * GiB
    with pytest.raises(InputError) as e:
        api.from_dict(raw, {"hardware.card": "l40"}, source="s.toml")
    assert str(e.value).startswith("s.toml: hardware.card: unknown card 'l40'")
    assert "l40s" in str(e.value) and "\n" not in str(e.value)
