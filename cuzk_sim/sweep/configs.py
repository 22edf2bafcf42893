"""The configurations of a sweep: the grid of its axes (or a seeded sample of it), each
resolved to a scenario dict and keyed by a hash of that dict.

The key is what makes a sweep resumable: a row already in the output folder with the same
key was computed from the same resolved scenario (and the same replicas and jitter) by
the same model code, so it need not run again. Editing the base scenario changes the
dict, and editing the model its fingerprint: either changes every key.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from typing import Any

from cuzk_sim.scenario.overrides import apply_overrides
from cuzk_sim.sweep.spec import SweepSpec


@dataclass(frozen=True)
class Configuration:
    index: int  # position in the full grid (mixed radix over the axes): the row order
    values: tuple[Any, ...]  # one per axis, as written in the spec
    raw: dict[str, Any]  # the base scenario with the axis values set
    key: str  # hash of raw + replicas + jitter

    def overrides(self, spec: SweepSpec) -> dict[str, Any]:
        return {a.path: v for a, v in zip(spec.axes, self.values, strict=True)}


def config_key(raw: dict[str, Any], replicas: int, jitter: float) -> str:
    """16 hex digits of SHA-256 over the canonical JSON of what determines a row: the
    resolved scenario, replicas, jitter, and the model's code (sweep.fingerprint)."""
    from cuzk_sim.sweep.fingerprint import code_fingerprint

    blob = json.dumps(
        {"scenario": raw, "replicas": replicas, "jitter": jitter, "code": code_fingerprint()},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def grid_indices(spec: SweepSpec) -> list[int]:
    """Every grid index, or `sample.count` of them drawn without replacement (sorted, so
    rows keep grid order)."""
    size = spec.grid_size
    if spec.sample is None or spec.sample.count >= size:
        return list(range(size))
    return sorted(random.Random(spec.sample.seed).sample(range(size), spec.sample.count))


def values_at(spec: SweepSpec, index: int) -> tuple[Any, ...]:
    """Grid index -> one value per axis; the last axis varies fastest."""
    out = []
    for a in reversed(spec.axes):
        index, i = divmod(index, len(a.values))
        out.append(a.values[i])
    return tuple(reversed(out))


def expand(spec: SweepSpec, replicas: int = 1, jitter: float = 0.0) -> list[Configuration]:
    configs = []
    for index in grid_indices(spec):
        values = values_at(spec, index)
        raw = apply_overrides(
            spec.base_raw, {a.path: v for a, v in zip(spec.axes, values, strict=True)}
        )
        configs.append(Configuration(index, values, raw, config_key(raw, replicas, jitter)))
    return configs
