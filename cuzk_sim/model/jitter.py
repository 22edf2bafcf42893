"""Timing jitter: seeded multiplicative noise on the model's durations.

The calibrated profile gives one duration per kernel, copy and CPU task; a real machine
never repeats them exactly, and a verdict that hangs on two workers meeting at the same
instant (two pre-stages, a memory-aware check racing another worker's allocation) is
only honest as a probability. Each replica of a run draws, for every duration the model
applies (each kernel, copy and CPU step as it executes, each synthesis round, each gap
between arrivals and each workload's start offset), an independent factor

    f = 1 + jitter * u,   u ~ Uniform(-1, 1)

so a duration d becomes d * f: bounded (never below d * (1 - jitter)), mean d, no long
tail. The factors come from one `random.Random` per replica, seeded from the scenario's
seed and the replica number, and are drawn in the simulation's own (deterministic) event
order: same scenario, jitter and replica, same numbers. jitter 0 draws nothing and
changes nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

MAX_JITTER = 0.9  # a factor must stay positive: d * (1 - jitter) > 0


def replica_seed(seed: int, replica: int) -> str:
    """The seed of a replica's noise stream (a string: `random` hashes it with SHA-512,
    so nearby seeds and replicas give unrelated streams)."""
    return f"cuzk-sim jitter seed={seed} replica={replica}"


@dataclass
class Jitter:
    """The noise of one replica. `scale(d)` is d with a fresh factor (d itself at 0)."""

    fraction: float = 0.0
    seed: int = 0
    replica: int = 0
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.fraction <= MAX_JITTER:
            raise ValueError(f"jitter must lie in [0, {MAX_JITTER}], got {self.fraction}")
        self.rng = random.Random(replica_seed(self.seed, self.replica))

    def __bool__(self) -> bool:
        return self.fraction > 0.0

    def scale(self, seconds: float) -> float:
        if self.fraction == 0.0:
            return seconds
        return seconds * (1.0 + self.fraction * (2.0 * self.rng.random() - 1.0))
