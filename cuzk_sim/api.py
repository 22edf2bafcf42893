"""The Python API: load a scenario, override keys, simulate, sweep.

For notebooks and other tools; the `cuzk-sim run` and `cuzk-sim sweep` commands are thin
layers over these functions. Every function raises `cuzk_sim.io.errors.InputError`
(a ValueError whose text is the one-line message the CLI prints) on unusable input.

    from cuzk_sim import api

    scn = api.load("scenarios/phase9-dual-worker-three-part-fix.toml",
                   {"engine.gpus.gpu_workers_per_device": 3, "hardware.vram": "20 GiB"})
    result = api.simulate(scn)              # a SimResult
    result.oom, result.seconds_per_proof, result.peak_vram_bytes, result.to_dict()
    result.warnings, result.profile        # what `cuzk-sim run` prints on stderr; who priced it

    report = api.simulate(scn, replicas=20, jitter=0.05)   # a ReplicaReport
    report.oom_probability, report.oom_interval, report.seconds_per_proof_p95, report.warnings

    spec = api.load_sweep("scenarios/sweeps/phase9-workers-vram-prestage.toml")
    # or in code: api.make_sweep("scenarios/x.toml", {"hardware.vram": ["16 GiB", "20 GiB"]})
    outcome = api.sweep(spec, out="out/phase9", jobs=2)     # out=None: nothing written
    outcome.rows[0]["safe"], outcome.summary["max_safe_workers"]

Key paths are the scenario file's own key names joined by dots, list items by index
(`workload[0].count`); see docs/simulator.md and docs/capacity-planning.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cuzk_sim.io.inputs import load_toml
from cuzk_sim.profiles.cards import CARDS, Card
from cuzk_sim.results.sim_result import SimResult
from cuzk_sim.scenario import Scenario, load_scenario, scenario_from_dict
from cuzk_sim.sweep.run import SweepOutcome, run_sweep
from cuzk_sim.sweep.spec import SweepSpec, sweep_from_dict
from cuzk_sim.sweep.spec import load_sweep as _load_sweep

__all__ = [
    "cards",
    "describe",
    "from_dict",
    "load",
    "load_sweep",
    "make_sweep",
    "override",
    "read",
    "simulate",
    "sweep",
]


def read(path: str | Path) -> dict[str, Any]:
    """The scenario file's TOML as a dict, unvalidated (for `override` and `from_dict`)."""
    return load_toml(Path(path), "scenario file")  # bounded, numbers in range


def override(raw: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a scenario dict with `key.path: value` set (cuzk_sim.scenario.overrides)."""
    from cuzk_sim.scenario.overrides import apply_overrides

    return apply_overrides(raw, overrides)


def load(path: str | Path, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Read, override, validate and resolve a scenario file."""
    return load_scenario(path, overrides)


def from_dict(
    raw: Mapping[str, Any],
    overrides: Mapping[str, Any] | None = None,
    *,
    source: str = "<scenario>",
    folder: str | Path | None = None,
) -> Scenario:
    """A scenario from a dict (the TOML's shape); `folder` is where its relative paths
    (plan.file, a profile file) point; messages name `source`."""
    data = override(raw, overrides) if overrides else dict(raw)
    return scenario_from_dict(data, source, Path(folder) if folder is not None else None)


def describe(result: SimResult, scenario: Scenario) -> SimResult:
    """Set on a result what the scenario says about it, as `cuzk-sim run` shows it: the
    profile's warnings (another card, another prover), the profile that priced it and the
    card preset. Returns the same result."""
    from cuzk_sim.profiles.profile import profile_warnings

    result.warnings = profile_warnings(scenario)
    result.profile = scenario.profile.name
    result.card = scenario.spec.hardware.card
    return result


def simulate(
    scenario: Scenario,
    *,
    replicas: int = 1,
    jitter: float = 0.0,
    record: bool = False,
    progress: Callable[[float, float], None] | None = None,
):
    """One run (a SimResult, the same as `cuzk-sim run --json`, with the warnings the CLI
    prints in `.warnings`), or with replicas > 1 that many seeded runs with timings
    perturbed by up to `jitter` (a fraction: 0.05 = 5 %), as a ReplicaReport
    (oom_probability with its 95 % Wilson interval `oom_interval`,
    seconds_per_proof_p50/p95, results, warnings)."""
    from cuzk_sim.sweep.run import check_replicas

    check_replicas(replicas, jitter)
    if replicas == 1:
        from cuzk_sim.simulate.runner import simulate as run_once

        result: SimResult = run_once(scenario, record=record, progress=progress)
        return describe(result, scenario)
    from cuzk_sim.simulate.replicas import run_replicas

    return run_replicas(scenario, replicas, jitter)


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and validate a sweep spec TOML (docs/capacity-planning.md)."""
    return _load_sweep(path)


def make_sweep(
    base: str | Path,
    axes: Mapping[str, Any],
    *,
    sample: Mapping[str, Any] | None = None,
    search: Mapping[str, Any] | None = None,
    plot: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> SweepSpec:
    """A sweep spec built in code, validated like the TOML (`base` relative to the
    current folder); e.g. make_sweep(path, {"engine.gpus.gpu_workers_per_device": "1..4"},
    search={"min_vram": True})."""
    raw: dict[str, Any] = {"base": str(base), "axes": dict(axes)}
    for key, value in (("sample", sample), ("search", search), ("plot", plot), ("name", name)):
        if value is not None:
            raw[key] = dict(value) if isinstance(value, Mapping) else value
    return sweep_from_dict(raw, "<sweep>", Path.cwd())


def sweep(
    spec: SweepSpec | str | Path,
    out: str | Path | None = None,
    *,
    jobs: int | None = None,
    scheduler: Any = None,
    replicas: int = 1,
    jitter: float = 0.0,
    progress: Callable[[int, int], None] | None = None,
    plots: bool = True,
) -> SweepOutcome:
    """Run a sweep (a spec or its file): every configuration on a process pool of `jobs`
    processes (default: all cores) or on a Dask cluster (`scheduler`: an address such as
    tcp://host:8786 or a distributed.Client). With `out`, rows are written there as they
    finish and a rerun skips the rows already there. Returns rows, boundaries, summary."""
    if not isinstance(spec, SweepSpec):
        spec = _load_sweep(spec)
    return run_sweep(
        spec,
        Path(out) if out is not None else None,
        jobs=jobs,
        scheduler=scheduler,
        replicas=replicas,
        jitter=jitter,
        progress=progress,
        plots=plots,
    )


def cards() -> dict[str, Card]:
    """The hardware presets (`hardware.card`), by name: VRAM and the profile measured on
    each (cuzk_sim.profiles.cards)."""
    return dict(CARDS)
