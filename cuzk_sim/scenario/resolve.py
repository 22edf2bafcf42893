"""Read a scenario file and resolve it into what the model runs: validate the keys
(schema.py), bound the work (bounds.py), load the profile, build the variant flags
(flags.py), the plans (plan_sources.py) and the engine config (config.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuzk_sim.io.errors import InputError, validate_input
from cuzk_sim.io.inputs import load_toml
from cuzk_sim.model.config import EngineConfig
from cuzk_sim.plan.builders.circuits import CircuitShape
from cuzk_sim.plan.builders.cuzk import CuzkVariant
from cuzk_sim.plan.contract import Plan
from cuzk_sim.profiles.cards import pricing_kind
from cuzk_sim.profiles.profile import Profile, load_profile
from cuzk_sim.scenario import card_rule, config, key_paths
from cuzk_sim.scenario.bounds import check_run_bounds
from cuzk_sim.scenario.files import refuse_other_kind
from cuzk_sim.scenario.flags import build_flags
from cuzk_sim.scenario.plan_sources import partition_plans
from cuzk_sim.scenario.schema import VARIANT_EXCLUDED, ScenarioFile


@dataclass(frozen=True)
class Scenario:
    """A validated scenario, ready to simulate."""

    name: str
    source: str
    spec: ScenarioFile
    config: EngineConfig
    profile: Profile
    plans: dict[str, Plan]
    shapes: dict[str, CircuitShape]
    # what priced and sized the run, for results and rows (scenario/card_rule.py):
    # where the VRAM came from, and whether the profile was measured on the card, derived
    # for it by the scaling rules, or assumed (another card's profile standing in)
    vram_source: str = ""
    profile_kind: str = "measured"
    host_bound: str = ""  # which reservation bounds the partitions held (config.host_bound)


def load_scenario(path: str | Path, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Read, validate and resolve one scenario file; `overrides` (key path -> value, see
    cuzk_sim.scenario.overrides) change keys of the file before validation."""
    path = Path(path)
    source = str(path)
    raw = load_toml(path, "scenario file")  # a regular file, bounded, numbers in range
    refuse_other_kind(raw, source, "scenario")
    if overrides:
        try:
            raw = key_paths.apply_overrides(raw, overrides, ScenarioFile)
            card_rule.apply_card_rule(raw, overrides)  # a card set here replaces vram/profile
        except InputError as e:
            raise InputError(f"{source}: {e}") from None
    return scenario_from_dict(raw, source, path.parent)


def scenario_from_dict(raw: dict, source: str, base: Path | None = None) -> Scenario:
    """Resolve a scenario's TOML table; `base` is the folder relative paths start from."""
    spec = validate_input(ScenarioFile, raw, source)  # strict types: no `true` as a count
    check_run_bounds(spec, source)
    name = card_rule.profile_name(spec)
    try:
        profile = load_profile(name, base)
    except InputError as e:
        where = ""
        if "no such file" in str(e) and base is not None and not Path(name).is_absolute():
            where = f"; a path is read from the scenario's folder: {base / name} does not exist"
        raise InputError(f"{source}: profile: {e}{where}") from None
    vram = config.vram_bytes(spec, profile, source)
    config.check_devices(spec, source)
    budget = config.host_budget(spec, source)
    cores = config.host_cores(spec, profile)
    variant = build_flags(
        CuzkVariant,
        spec.variant,
        f"{source}: variant",
        VARIANT_EXCLUDED,
        b_g2_threads=min(spec.engine.gpus.gpu_threads or cores, cores),
    )
    parts = partition_plans(spec, variant, vram, source, base)
    if not spec.engine.pce.enabled:
        parts = without_pce(parts, profile)
    config.check_host_fits(spec, parts.shapes, profile, budget, source)
    engine = config.engine_config(spec, profile, vram, budget, source)
    measured = config.captured_context(spec, parts.plans)
    if measured is not None:  # one process's context, as the capture measured it
        if vram <= measured:
            raise config.impossible(source, "the VRAM must exceed the captured CUDA context")
        engine = dataclasses.replace(engine, context_overhead=measured)
    name = spec.name or (Path(source).stem if source else "scenario")
    return Scenario(
        name,
        source,
        spec,
        engine,
        profile,
        parts.plans,
        parts.shapes,
        vram_source=card_rule.vram_source(spec, profile),
        profile_kind=pricing_kind(spec.hardware.card, profile),
        host_bound=config.host_bound(spec, parts.shapes, budget),
    )


def without_pce(parts, profile: Profile):
    """engine.pce.enabled = false: no kind uses a PCE; synthesis takes the profile's time
    x its `without_pce` factor (the old path), unless [plan.host] states it."""
    shapes = {}
    for k, shape in parts.shapes.items():
        secs = shape.synthesis_s
        if secs is None:
            secs = profile.cpu_seconds("synthesis", shape.constraints, f"synthesis of {k}")
            secs *= profile.synthesis_without_pce
        shapes[k] = dataclasses.replace(shape, pce=False, synthesis_s=secs)
    return dataclasses.replace(parts, shapes=shapes)
