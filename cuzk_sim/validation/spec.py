"""Validation specs (TOML): a base scenario and configurations that change it.

```toml
name = "h200-grid"
base = "base.toml"            # a scenario file, relative to the spec
caps = [-10, -3, -1, 1, 3, 10]  # real runs at the model's boundary +- these percents
generous = true               # and one at the profile's whole card
tolerance = 0.001             # bisection stops when the bracket is this fraction wide
repeats = 2                   # extra real runs of a run whose verdict disagrees

[[config]]
name = "w2-async"
set = { "engine.gpus.gpu_workers_per_device" = 2, "plan.gpu_prover.allocator" = "async" }
kinds = { snapdeals = { domain_log2 = 16 } }   # optional: another shape for one kind
caps = [-3, 3]                                 # optional: this configuration's caps
race = true                                    # optional: run its race caps (below)
race_repeats = 10                              # optional: this configuration's own
```

Criteria (what `validate` judges the runs by, printed in its report; issue 9's by default):
`oom_agreement` (share of the OOM verdicts, of runs not timing-dependent, that must agree;
default 0.98), `peak_tolerance` (largest |relative error| of peak VRAM; 0.02) and
`seconds_tolerance` (of s/proof; 0.10), each a fraction: `peak_tolerance = 0.01` is 1 %.

Races (docs/validation.md, "Races"): a configuration whose model P(OOM), over
`race_scan` replicas under the profile's measured jitter, lies strictly between 0 and 1
at any of `race_caps` (percents around the boundary, within +-5 %), or that says
`race = true`, also runs at each race cap `race_repeats` times (>= 10, at >= 5 caps);
the model's P(OOM) there comes from `race_replicas` replicas. Spec keys `race_caps`,
`race_repeats`, `race_replicas`, `race_scan` set these (defaults below); a configuration's
own `race_repeats` overrides the spec's (e.g. fewer for a control).

`set` keys are dotted paths into the base scenario (any key a scenario has). `kinds`
gives a kind its own `[plan] gpu_prover` (merged over the base's), so one workload can
mix partitions of different sizes. Every problem is an `InputError` naming the key.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cuzk_sim.io.errors import InputError, validate_input
from cuzk_sim.io.inputs import load_toml
from cuzk_sim.scenario import Scenario, scenario_from_dict
from cuzk_sim.scenario.overrides import apply_overrides
from cuzk_sim.validation.compare import AGREEMENT_MIN, PEAK_TOLERANCE, SPP_TOLERANCE, Criteria

DEFAULT_CAPS = (-10.0, -3.0, -1.0, 1.0, 3.0, 10.0)
RACE_CAPS = (-5.0, -2.5, -1.0, 0.0, 1.0, 2.5, 5.0)
MIN_RACE_REPEATS = 10
MIN_RACE_CAPS = 5
CAP_RANGE = (-90.0, 1000.0)  # percent around the boundary: a card of 10 % .. 11x of it
MAX_CAPS = 32  # caps per configuration (each is a real run, repeats extra)
MAX_CONFIGS = 256


def _check_caps(v: list[float] | None) -> list[float] | None:
    """The same rule for the spec's caps and each configuration's own."""
    if v is None:
        return v
    if len(v) > MAX_CAPS:
        raise ValueError(f"{len(v)} caps (at most {MAX_CAPS}: each is a real run)")
    lo, hi = CAP_RANGE
    if any(not lo <= c <= hi for c in v):
        raise ValueError(f"cap percents must lie in [{lo:g}, {hi:g}]")
    return v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ConfigIn(_Strict):
    name: str = Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_.+-]+$")
    set: dict[str, Any] = Field({}, max_length=256)
    kinds: dict[str, dict[str, Any]] = Field({}, max_length=16)
    caps: list[float] | None = None
    generous: bool | None = None
    race: bool = False
    race_repeats: int | None = Field(None, ge=MIN_RACE_REPEATS, le=1000)

    _caps = field_validator("caps")(_check_caps)


class SpecIn(_Strict):
    name: str = Field("validation", min_length=1, max_length=256)
    description: str = Field("", max_length=100_000)
    base: str = Field(min_length=1, max_length=4096)
    caps: list[float] = list(DEFAULT_CAPS)
    generous: bool = True
    tolerance: float = Field(0.001, gt=0, lt=0.5)
    repeats: int = Field(2, ge=0, le=10)
    race_caps: list[float] = Field(list(RACE_CAPS), max_length=MAX_CAPS)
    race_repeats: int = Field(MIN_RACE_REPEATS, ge=MIN_RACE_REPEATS, le=1000)
    race_replicas: int = Field(200, ge=10, le=10_000)
    race_scan: int = Field(20, ge=2, le=10_000)
    # fractions, not percents: 0.01 is 1 % (a 1 here would be 100 %: refused)
    oom_agreement: float = Field(AGREEMENT_MIN, gt=0, le=1)
    peak_tolerance: float = Field(PEAK_TOLERANCE, gt=0, lt=0.5)
    seconds_tolerance: float = Field(SPP_TOLERANCE, gt=0, lt=0.5)
    config: list[ConfigIn] = Field(min_length=1, max_length=MAX_CONFIGS)

    _caps = field_validator("caps")(_check_caps)

    @field_validator("race_caps")
    @classmethod
    def _race_caps(cls, v: list[float]) -> list[float]:
        if len(set(v)) < MIN_RACE_CAPS:
            raise ValueError(f"at least {MIN_RACE_CAPS} distinct race caps")
        if any(not -5 <= c <= 5 for c in v):
            raise ValueError("race cap percents must lie in [-5, 5] (around the boundary)")
        return sorted(set(v))


@dataclass(frozen=True)
class Configuration:
    """One configuration: its model scenario (built, validated) and its caps."""

    name: str
    scenario: Scenario
    caps: tuple[float, ...]
    generous: bool
    race: bool = False  # marked racing by the spec (race caps run whatever the model says)
    race_repeats: int | None = None  # its own real runs per race cap (else the spec's)


@dataclass(frozen=True)
class ValidationSpec:
    name: str
    source: str
    tolerance: float
    repeats: int
    configs: tuple[Configuration, ...]
    race_caps: tuple[float, ...] = RACE_CAPS
    race_repeats: int = MIN_RACE_REPEATS
    race_replicas: int = 200
    race_scan: int = 20
    criteria: Criteria = Criteria()


def build_scenario(base_raw: dict, base_dir: Path, cfg: ConfigIn, where: str) -> Scenario:
    try:
        raw = apply_overrides(base_raw, cfg.set)
    except InputError as e:
        raise InputError(f"{where}: set.{e}") from None
    raw["name"] = cfg.name
    scn = scenario_from_dict(raw, where, base_dir)
    if cfg.kinds:
        plan = raw.get("plan") or {}
        if plan.get("gpu_prover") is None:
            raise InputError(f"{where}: kinds: the base scenario has no [plan] gpu_prover")
        plans, shapes = dict(scn.plans), dict(scn.shapes)
        for kind, over in cfg.kinds.items():
            if kind not in plans:
                raise InputError(f"{where}: kinds.{kind}: no such kind in the workload")
            # the kind's own [plan]: resolved as a scenario of its own, so its plan and its
            # host side come from the same code as any scenario's
            one = copy.deepcopy(raw)
            one["plan"] = {**plan, "gpu_prover": {**plan["gpu_prover"], **over}, "kinds": [kind]}
            alone = scenario_from_dict(one, f"{where}: kinds.{kind}", base_dir)
            plans[kind], shapes[kind] = alone.plans[kind], alone.shapes[kind]
        scn = dataclasses.replace(scn, plans=plans, shapes=shapes)
    return scn


def load_spec(path: str | Path, profile: str | None = None) -> ValidationSpec:
    """The spec at `path`; `profile` (a bundled name or a TOML path) replaces the base
    scenario's profile in every configuration (e.g. one `calibrate` fitted on this card)."""
    path = Path(path)
    source = str(path)
    raw = load_toml(path, "validation spec")  # a regular file, bounded, numbers in range
    spec = validate_input(SpecIn, raw, source)  # strict: `generous = "yes"` is refused
    base_path = path.parent / spec.base
    try:
        base_raw = load_toml(base_path, "scenario file")
    except InputError as e:
        raise InputError(f"{source}: base: {e}") from None
    if profile is not None:
        from cuzk_sim.profiles.profile import BUNDLED

        base_raw["profile"] = profile if profile in BUNDLED else str(Path(profile).resolve())
    names = [c.name for c in spec.config]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"{source}: config: names must be unique, repeated: {', '.join(dup)}")
    configs = []
    for i, c in enumerate(spec.config):
        where = f"{source}: config[{i}] ({c.name})"
        scn = build_scenario(base_raw, base_path.parent, c, where)
        caps = tuple(c.caps if c.caps is not None else spec.caps)
        generous = spec.generous if c.generous is None else c.generous
        configs.append(Configuration(c.name, scn, caps, generous, c.race, c.race_repeats))
    return ValidationSpec(
        spec.name,
        source,
        spec.tolerance,
        spec.repeats,
        tuple(configs),
        tuple(spec.race_caps),
        spec.race_repeats,
        spec.race_replicas,
        spec.race_scan,
        spec_criteria(spec, source),
    )


def spec_criteria(spec: SpecIn, source: str) -> Criteria:
    """The spec's criteria, labelled with where they came from: the spec's keys, or issue
    9's defaults where the spec states none."""
    keys = {"oom_agreement", "peak_tolerance", "seconds_tolerance"}
    said = f"spec {source}" if keys & spec.model_fields_set else f"issue 9's: {source} states none"
    return Criteria(spec.oom_agreement, spec.peak_tolerance, spec.seconds_tolerance, said)


def load_criteria(path: str | Path) -> tuple[str, Criteria]:
    """(spec name, criteria) of the spec at `path`, without building its scenarios (the
    report of an output folder needs only these)."""
    raw = load_toml(Path(path), "validation spec")
    spec = validate_input(SpecIn, raw, str(path))
    return spec.name, spec_criteria(spec, str(path))
