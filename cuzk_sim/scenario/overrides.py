"""Change scenario keys by their path, before validation: `run --set`, sweep axes, the API.

A key path is the scenario file's own key names joined by dots, with list items by
index: `hardware.vram`, `engine.gpus.gpu_workers_per_device`, `workload[0].count`,
`plan.gpu_prover.msm_chunk`. Overrides apply to the raw TOML dict (a deep copy), so the
result is validated exactly like a file a user wrote: an override can never produce a
scenario that the file format could not. A path the scenario format does not have is
refused before anything runs, with the nearest real key names. The machinery, generic
over the format's model, is cuzk_sim/scenario/key_paths.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cuzk_sim.scenario import key_paths
from cuzk_sim.scenario.card_rule import apply_card_rule
from cuzk_sim.scenario.key_paths import MAX_OVERRIDES, parse_key_path, parse_value
from cuzk_sim.scenario.schema import ScenarioFile

__all__ = [
    "MAX_OVERRIDES",
    "apply_overrides",
    "check_key_path",
    "parse_assignment",
    "parse_key_path",
    "parse_value",
]


def parse_assignment(text: str) -> tuple[str, Any]:
    """'key.path=value' -> (key path, value); see key_paths.parse_assignment."""
    return key_paths.parse_assignment(text, ScenarioFile)


def check_key_path(path: str) -> None:
    """Refuse a path the scenario format does not have, naming the nearest key names."""
    key_paths.check_key_path(path, ScenarioFile)


def apply_overrides(raw: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of `raw` with each `path: value` set. Missing tables are created;
    a list index must exist (`workload[1]` needs two workload entries). A
    `hardware.card` set here replaces the VRAM and profile of `raw` unless set here too
    (cuzk_sim/scenario/card_rule.py)."""
    out = key_paths.apply_overrides(raw, overrides, ScenarioFile)
    apply_card_rule(out, overrides)  # a card set here replaces earlier vram/profile
    return out
