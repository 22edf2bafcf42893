"""Card and VRAM, one rule: a card sets the VRAM and the profile of a run.

`hardware.card` names a preset (cuzk_sim/profiles/cards.py) whose VRAM and own profile (measured
on it, or derived for it) the run uses. Scenarios are built in layers: the file, then
override layers (`run --set`, a sweep's axes, `api.load(..., overrides)`). The rule:

- a layer that sets `hardware.card` replaces the earlier layers' `hardware.vram` and
  `profile` (a sweep over cards on a base that states `vram = "16 GiB"` and
  `profile = "rtx5070ti"` gives each card its own VRAM and its own profile);
- where one layer sets both the card and `hardware.vram` (or `profile`), that layer's
  explicit key is a stated override: the run uses it and prints one line saying it
  overrides the card's (cuzk_sim/profiles/profile.py, `profile_warnings`).

So a card never loses silently to a key written somewhere else, and a key written next
to the card always says that it wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _sets(overrides: Mapping[str, Any], key: str) -> bool:
    """Does this override layer set hardware.<key> (by path, or in a whole table)?"""
    if f"hardware.{key}" in overrides:
        return True
    table = overrides.get("hardware")
    return isinstance(table, Mapping) and key in table


def apply_card_rule(out: dict[str, Any], overrides: Mapping[str, Any]) -> None:
    """After an override layer was applied to `out` (in place): a card set by the layer
    drops the VRAM and the profile that only earlier layers set."""
    if not _sets(overrides, "card"):
        return
    hw = out.get("hardware")
    if isinstance(hw, dict) and not _sets(overrides, "vram"):
        hw.pop("vram", None)
    if "profile" not in overrides:
        out.pop("profile", None)


def plan_prover_of(spec: Any) -> str:
    """The prover whose timings the plan needs, from the scenario's keys alone: our prover
    for a live `[plan] gpu_prover`, else cuzk (the plan builder, or a plan file)."""
    plan = spec.plan
    return "cuzk_sim.gpu" if plan is not None and plan.gpu_prover is not None else "cuzk"


def profile_name(spec: Any) -> str:
    """The profile a run is priced by: `profile` when given; else the card's own profile
    for the plan's prover (cards.card_profile); else rtx5070ti (the measured cuzk one)."""
    if spec.profile is not None:
        return spec.profile
    if spec.hardware.card:
        from cuzk_sim.profiles.cards import card_profile

        return card_profile(spec.hardware.card, plan_prover_of(spec))
    return "rtx5070ti"


def vram_source(spec: Any, profile: Any) -> str:
    """Where the run's VRAM comes from, in words (for results and sweep rows)."""
    hw = spec.hardware
    if hw.vram:
        if hw.card:
            return f"hardware.vram ({hw.vram}), overriding hardware.card ({hw.card})"
        return f"hardware.vram ({hw.vram})"
    if hw.card:
        return f"hardware.card ({hw.card})"
    return f"the profile's card ({profile.name}: {profile.gpu_model})"
