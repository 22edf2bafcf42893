"""Read a scenario file and resolve it into what the model runs: validate the keys
(schema.py), bound the work (bounds.py), load the profile, build the variant flags
(flags.py), the plans (plan_sources.py) and the engine config (config.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cuzk_sim.calibration import Profile, load_profile
from cuzk_sim.input_errors import InputError, from_validation
from cuzk_sim.input_files import load_toml
from cuzk_sim.model.config import EngineConfig
from cuzk_sim.plan import Plan
from cuzk_sim.plans.circuits import CircuitShape
from cuzk_sim.plans.cuzk import CuzkVariant
from cuzk_sim.scenario import config, key_paths
from cuzk_sim.scenario.bounds import check_run_bounds
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


def load_scenario(path: str | Path, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Read, validate and resolve one scenario file; `overrides` (key path -> value, see
    cuzk_sim.overrides) change keys of the file before validation."""
    path = Path(path)
    source = str(path)
    raw = load_toml(path, "scenario file")  # a regular file, bounded, numbers in range
    if overrides:
        try:
            raw = key_paths.apply_overrides(raw, overrides, ScenarioFile)
        except InputError as e:
            raise InputError(f"{source}: {e}") from None
    return scenario_from_dict(raw, source, path.parent)


def scenario_from_dict(raw: dict, source: str, base: Path | None = None) -> Scenario:
    """Resolve a scenario's TOML table; `base` is the folder relative paths start from."""
    try:
        spec = ScenarioFile.model_validate(raw)
    except ValidationError as e:
        raise from_validation(source, e) from None
    check_run_bounds(spec, source)
    try:
        profile = load_profile(spec.profile, base)
    except InputError as e:
        raise InputError(f"{source}: profile: {e}") from None
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
    config.check_host_fits(spec, parts.shapes, profile, budget, source)
    engine = config.engine_config(spec, profile, vram, budget, source)
    name = spec.name or (Path(source).stem if source else "scenario")
    return Scenario(name, source, spec, engine, profile, parts.plans, parts.shapes)
