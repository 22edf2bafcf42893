"""Timing jitter: seeded multiplicative noise on the model's durations.

The calibrated profile gives one duration per kernel, copy and CPU task; a real machine
never repeats them exactly, and a verdict that hangs on two workers meeting at the same
instant (two pre-stages, a memory-aware check racing another worker's allocation) is
only honest as a probability. Each replica of a run draws, for every duration the model
applies (each kernel, copy and CPU step as it executes, each synthesis round, each gap
between arrivals and each workload's start offset), a factor f, and a duration d
becomes d * f. Two sources of f:

- **uniform** (`--jitter X%`, `fraction`): f = 1 + X * u, u ~ Uniform(-1, 1), drawn
  independently for every duration: bounded, mean 1, no long tail, no correlation.
- **measured** (`measured`, a profile's `[jitter]` table fitted by `calibrate` from
  CUZK_SIM_STEP lines, cuzk_sim/logs/jitter_fit.py): per step kind (`kernel.ntt`,
  `copy.pinned`, `cpu.assemble`, ...; a kind not measured uses its prefix's entry, then
  `default`), f = r * p * s, each of mean 1: r drawn once per replica and kind (the
  between-run component: one process is fast or slow throughout), p drawn once per
  partition execution and kind (`partition()`), s drawn per step from the fitted family
  (lognormal, normal or gamma) with the fitted relative standard deviation. r and p are
  lognormal.

The factors come from `random.Random` streams seeded from the scenario's seed and the
replica number, drawn in the simulation's own (deterministic) event order: same scenario,
jitter and replica, same numbers. No jitter draws nothing and changes nothing.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

MAX_JITTER = 0.9  # a factor must stay positive: d * (1 - jitter) > 0
FAMILIES = ("lognormal", "normal", "gamma")
MIN_FACTOR = 0.05  # a normal draw is clamped here: a duration never turns negative


def replica_seed(seed: int, replica: int) -> str:
    """The seed of a replica's noise stream (a string: `random` hashes it with SHA-512,
    so nearby seeds and replicas give unrelated streams)."""
    return f"cuzk-sim jitter seed={seed} replica={replica}"


@dataclass(frozen=True)
class Component:
    """The noise of one step kind: relative standard deviations (0.05 = 5 %) of the
    per-step factor (drawn from `family`), the per-partition and the per-run factor."""

    family: str = "lognormal"
    step: float = 0.0
    partition: float = 0.0
    run: float = 0.0

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"jitter family must be one of {', '.join(FAMILIES)}")
        for k in ("step", "partition", "run"):
            v = getattr(self, k)
            if not (math.isfinite(v) and 0.0 <= v <= MAX_JITTER):
                raise ValueError(f"jitter {k} must lie in [0, {MAX_JITTER}], got {v}")


@dataclass(frozen=True)
class MeasuredJitter:
    """A profile's fitted jitter: a Component per step kind, `default` for the rest."""

    components: dict[str, Component]
    source: str = ""

    def component(self, kind: str) -> Component:
        while True:
            c = self.components.get(kind)
            if c is not None:
                return c
            if "." not in kind:
                return self.components.get("default", Component())
            kind = kind.rsplit(".", 1)[0]


def _lognormal(rng: random.Random, rel_sd: float) -> float:
    """A lognormal factor of mean 1 and relative standard deviation rel_sd."""
    if rel_sd == 0.0:
        return 1.0
    s2 = math.log1p(rel_sd * rel_sd)
    return rng.lognormvariate(-s2 / 2, math.sqrt(s2))


def draw(rng: random.Random, family: str, rel_sd: float) -> float:
    """One factor of mean 1 and relative standard deviation rel_sd from `family`."""
    if rel_sd == 0.0:
        return 1.0
    if family == "lognormal":
        return _lognormal(rng, rel_sd)
    if family == "gamma":
        k = 1.0 / (rel_sd * rel_sd)
        return rng.gammavariate(k, 1.0 / k)
    return max(rng.gauss(1.0, rel_sd), MIN_FACTOR)


@dataclass
class Jitter:
    """The noise of one replica. `scale(d, kind)` is d with a fresh factor (d itself
    without jitter); `partition()` starts a new partition execution (measured jitter
    redraws its per-partition factors; uniform jitter ignores it)."""

    fraction: float = 0.0
    seed: int = 0
    replica: int = 0
    measured: MeasuredJitter | None = None
    rng: random.Random = field(init=False, repr=False)
    _run: dict[str, float] = field(init=False, repr=False, default_factory=dict)
    _part: dict[str, float] = field(init=False, repr=False, default_factory=dict)
    _run_rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.fraction <= MAX_JITTER:
            raise ValueError(f"jitter must lie in [0, {MAX_JITTER}], got {self.fraction}")
        self.rng = random.Random(replica_seed(self.seed, self.replica))
        self._run_rng = random.Random(replica_seed(self.seed, self.replica) + " run")

    def __bool__(self) -> bool:
        return self.fraction > 0.0 or self.measured is not None

    def partition(self) -> None:
        self._part.clear()

    def scale(self, seconds: float, kind: str = "default") -> float:
        if self.measured is not None:
            return seconds * self._factor(kind)
        if self.fraction == 0.0:
            return seconds
        return seconds * (1.0 + self.fraction * (2.0 * self.rng.random() - 1.0))

    def _factor(self, kind: str) -> float:
        assert self.measured is not None
        c = self.measured.component(kind)
        r = self._run.get(kind)
        if r is None:
            r = self._run[kind] = _lognormal(self._run_rng, c.run)
        p = self._part.get(kind)
        if p is None:
            p = self._part[kind] = _lognormal(self.rng, c.partition)
        return r * p * draw(self.rng, c.family, c.step)
