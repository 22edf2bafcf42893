"""The sweep spec (TOML): a base scenario, axes of scenario keys, optional sampling,
boundary searches and plot axes.

Everything is checked before anything runs: the spec's own keys (pydantic, unknown keys
refused), every axis key path (`cuzk_sim.scenario.overrides.check_key_path`: the scenario format
must have it) and every axis value on its own (the base scenario with that one value must
pass the scenario schema). A value that is only unusable in combination with others
(VRAM below the CUDA context of another axis's profile, say) is a row with an `error`,
not a failed sweep.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cuzk_sim.io.errors import InputError, key_path, validate_input, validate_strict
from cuzk_sim.io.inputs import load_toml
from cuzk_sim.io.units import SizeText, parse_size

WORKERS_KEY = "engine.gpus.gpu_workers_per_device"
VRAM_KEY = "hardware.vram"
CARD_KEY = "hardware.card"
MAX_CONFIGURATIONS = 200_000  # a full grid beyond this needs [sample]
MAX_AXES = 32
MAX_AXIS_VALUES = 4096  # values of one axis (a range "lo..hi" counts hi - lo + 1)
MAX_SEARCH_GROUPS = 10_000  # combinations of the other axes one [search] runs over

_RANGE = re.compile(r"^\s*(-?\d{1,19})\s*\.\.\s*(-?\d{1,19})\s*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SampleSection(_Strict):
    """Random configurations of the grid, without replacement, seeded."""

    count: int = Field(ge=1, le=MAX_CONFIGURATIONS)
    seed: int = 0


class SearchSection(_Strict):
    """Boundaries per combination of the other axes (see cuzk_sim.sweep.search)."""

    min_vram: bool = False  # smallest safe hardware.vram, by bisection
    max_workers: bool = False  # largest safe gpu_workers_per_device, counting up from 1
    vram_range: tuple[SizeText, SizeText] = ("1 GiB", "192 GiB")  # bisection bracket
    workers_limit: int = Field(16, ge=1, le=64)  # the count stops here

    @model_validator(mode="after")
    def _bracket(self) -> SearchSection:
        lo, hi = (parse_size(v) for v in self.vram_range)
        if lo >= hi:
            raise ValueError(
                f"vram_range: expected [lo, hi] with lo < hi, got {list(self.vram_range)}"
            )
        return self


class PlotSection(_Strict):
    x: str | None = Field(None, max_length=256)  # heatmap columns: an axis key path
    y: str | None = Field(None, max_length=256)  # heatmap rows (default: the next axis)


class SweepFile(_Strict):
    name: str | None = Field(None, min_length=1, max_length=256)
    description: str = Field("", max_length=100_000)
    base: str = Field(min_length=1, max_length=4096)  # the scenario swept, relative to the spec
    axes: dict[str, Any] = {}
    sample: SampleSection | None = None
    search: SearchSection = SearchSection()
    plot: PlotSection = PlotSection()


@dataclass(frozen=True)
class Axis:
    path: str  # scenario key path, e.g. engine.gpus.gpu_workers_per_device
    values: tuple[Any, ...]  # as written in the spec (ranges expanded)


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: what the executors expand and run."""

    name: str
    source: str  # the spec file, for messages
    base_path: Path  # the base scenario file
    base_raw: dict[str, Any]  # its TOML, unvalidated (overrides apply to this)
    axes: tuple[Axis, ...]
    sample: SampleSection | None
    search: SearchSection
    plot_x: str | None
    plot_y: str | None

    @property
    def grid_size(self) -> int:
        n = 1
        for a in self.axes:
            n *= len(a.values)
        return n

    def axis(self, path: str) -> Axis | None:
        return next((a for a in self.axes if a.path == path), None)


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and validate a sweep spec; every problem is one InputError line naming the
    spec file and key path (or the base scenario file and its key path)."""
    path = Path(path)
    source = str(path)
    raw = load_toml(path, "sweep spec")  # a regular file, bounded, numbers in range
    return sweep_from_dict(raw, source, path.parent)


def sweep_from_dict(raw: dict[str, Any], source: str, folder: Path) -> SweepSpec:
    spec = validate_input(SweepFile, raw, source)  # strict: `count = true` is refused
    if len(spec.axes) > MAX_AXES:
        raise InputError(f"{source}: axes: {len(spec.axes)} axes (at most {MAX_AXES})")
    base_path = Path(spec.base)
    if not base_path.is_absolute():
        base_path = folder / base_path
    try:
        base_raw = load_toml(base_path, "scenario file")
    except InputError as e:
        raise InputError(f"{source}: base: {e}") from None
    _check_scenario(base_raw, str(base_path))
    # counts first (ranges, values, search groups), then each value against the schema
    axes = tuple(_axis(source, p, v) for p, v in spec.axes.items())
    _check_search_groups(source, spec.search, axes)
    if not axes and not (spec.search.min_vram or spec.search.max_workers):
        raise InputError(f"{source}: axes: give at least one axis (or a [search])")
    size = 1
    for a in axes:
        size *= len(a.values)
    if spec.sample is None and size > MAX_CONFIGURATIONS:
        raise InputError(
            f"{source}: axes: the grid has {size} configurations (more than "
            f"{MAX_CONFIGURATIONS}); add [sample] count = N to draw N of them"
        )
    for a in axes:
        for i, v in enumerate(a.values):
            _check_value(f'{source}: axes."{a.path}"[{i}] = {_shown(v)}', a.path, v, base_raw)
    paths = [a.path for a in axes]
    for key in ("x", "y"):
        chosen = getattr(spec.plot, key)
        if chosen is not None and chosen not in paths:
            raise InputError(
                f"{source}: plot.{key}: {chosen!r} is not an axis; axes: {', '.join(paths)}"
            )
    plot_x, plot_y = _plot_axes(axes, spec.plot.x, spec.plot.y)
    return SweepSpec(
        name=spec.name or Path(source).stem,
        source=source,
        base_path=base_path,
        base_raw=base_raw,
        axes=axes,
        sample=spec.sample,
        search=spec.search,
        plot_x=plot_x,
        plot_y=plot_y,
    )


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:80] + "..."


def _axis(source: str, path: str, values: Any) -> Axis:
    """The axis's values (a range expanded), bounded and without repeats; each value is
    checked against the scenario schema later (`_check_value`)."""
    from cuzk_sim.scenario.overrides import check_key_path

    where = f'{source}: axes."{path}"'
    try:
        check_key_path(path)
    except InputError as e:
        raise InputError(f"{source}: axes: {e}") from None
    if isinstance(values, str) and (m := _RANGE.match(values)):
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo > hi:
            raise InputError(f"{where}: range {values!r}: expected lo..hi with lo <= hi")
        if hi - lo + 1 > MAX_AXIS_VALUES:  # before the list is built
            raise InputError(
                f"{where}: range {values!r} has {hi - lo + 1} values (at most {MAX_AXIS_VALUES})"
            )
        values = list(range(lo, hi + 1))
    if not isinstance(values, list) or not values:
        raise InputError(
            f"{where}: expected a non-empty list of values or an integer range such as "
            f'"1..4", got {_shown(values)}'
        )
    if len(values) > MAX_AXIS_VALUES:
        raise InputError(f"{where}: {len(values)} values (at most {MAX_AXIS_VALUES})")
    seen: set[str] = set()
    for i, v in enumerate(values):
        canon = json.dumps(v, sort_keys=True, default=str)  # 1 and true and 1.0 differ
        if canon in seen:
            raise InputError(f"{where}[{i}]: {_shown(v)} is listed twice")
        seen.add(canon)
    return Axis(path, tuple(values))


def _check_value(where: str, path: str, value: Any, base_raw: dict) -> None:
    """The base scenario with this one value must pass the scenario schema."""
    from cuzk_sim.scenario import ScenarioFile
    from cuzk_sim.scenario.overrides import apply_overrides

    try:
        raw = apply_overrides(base_raw, {path: value})
    except InputError as e:
        raise InputError(f"{where}: {e}") from None
    try:
        validate_strict(ScenarioFile, raw, where)
    except ValidationError as e:
        msgs = []
        for err in e.errors():
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key"
            loc = key_path(err["loc"])
            msgs.append(msg if loc == path else f"{loc}: {msg}")
        raise InputError(f"{where}: {'; '.join(msgs)}") from None


def _check_scenario(raw: dict, source: str) -> None:
    from cuzk_sim.scenario import ScenarioFile

    validate_input(ScenarioFile, raw, source)


def _check_search_groups(source: str, search: SearchSection, axes: tuple[Axis, ...]) -> None:
    """A [search] runs once per combination of the other axes: bounded before any is
    built (three axes of 1,024 values would be a million groups)."""
    for kind, enabled, drop in (
        ("min_vram", search.min_vram, {VRAM_KEY, CARD_KEY}),
        ("max_workers", search.max_workers, {WORKERS_KEY}),
    ):
        if not enabled:
            continue
        groups = 1
        for a in axes:
            if a.path not in drop:
                groups *= len(a.values)
        if groups > MAX_SEARCH_GROUPS:
            raise InputError(
                f"{source}: search.{kind}: one search per combination of the other axes is "
                f"{groups} searches (at most {MAX_SEARCH_GROUPS}); give those axes fewer values"
            )


def _plot_axes(
    axes: tuple[Axis, ...], x: str | None, y: str | None
) -> tuple[str | None, str | None]:
    """Default heatmap axes: the first axis with several values, then the next one."""
    varied = [a.path for a in axes if len(a.values) > 1] or [a.path for a in axes]
    if x is None:
        x = next((p for p in varied if p != y), None)
    if y is None:
        y = next((p for p in varied if p != x), None)
    return x, y
