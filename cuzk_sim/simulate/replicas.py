"""Replicas: the same scenario run R times under independent timing jitter.

A prediction that depends on two workers meeting at one instant is a probability, not
a verdict: `run_replicas` runs replicas 0..R-1 (each its own seeded noise stream, see
model/jitter.py) and reports how often an OOM happened, which buffers failed in each
replica, and the spread of seconds per proof. A frequency from R replicas is an estimate:
it comes with its 95 % Wilson score interval (`wilson_interval`), so 0 of 50 reads as
"below 7.1 %", not as "never".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cuzk_sim.io.errors import InputError
from cuzk_sim.model.jitter import MAX_JITTER, MeasuredJitter
from cuzk_sim.results.sim_result import SimResult
from cuzk_sim.scenario import Scenario
from cuzk_sim.simulate.runner import simulate

MAX_REPLICAS = 100_000
Z95 = 1.959963984540054  # the standard normal's 97.5 % quantile: a two-sided 95 % interval


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95 % by default): the p whose
    normal test against successes / trials does not reject at z. Unlike p +- z*sqrt(p(1-p)/n)
    it is not empty at 0 or n: 0 of n gives [0, z^2 / (n + z^2)]."""
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"wilson_interval: {successes} of {trials}")
    n, p, z2 = trials, successes / trials, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = 0.0 if successes == 0 else max(centre - half, 0.0)
    high = 1.0 if successes == trials else min(centre + half, 1.0)
    return low, high


def format_probability(successes: int, trials: int) -> str:
    """'0.350 (35 of 100; 95 % interval 0.264-0.447)': a frequency never shown without
    its count and its Wilson interval."""
    low, high = wilson_interval(successes, trials)
    return f"{successes / trials:.3f} ({successes} of {trials}; 95 % interval {low:.3f}-{high:.3f})"


def percentile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) with linear interpolation between order statistics (numpy's
    default method); None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def failed_buffers(result: SimResult) -> list[str]:
    """Buffers whose allocation failed fatally (the worker panicked), first failure first,
    each named once."""
    return list(dict.fromkeys(e.buffer for e in result.fatal_ooms))


@dataclass
class ReplicaReport:
    replicas: int
    jitter: float
    results: list[SimResult] = field(repr=False)
    # the profile's warnings, as `cuzk-sim run` prints them (cuzk_sim.api.describe)
    warnings: list[str] = field(default_factory=list)
    profile: str | None = None  # the profile that priced the replicas
    card: str | None = None  # the hardware.card preset, if any
    # which noise: "profile <name> [jitter] (measured)", "--jitter X% (uniform)" or "none"
    jitter_source: str = "none"

    @property
    def ooms(self) -> int:
        """Replicas with any fatal OOM."""
        return sum(r.oom for r in self.results)

    @property
    def oom_probability(self) -> float:
        """Fraction of replicas with any fatal OOM (an estimate: see oom_interval)."""
        return self.ooms / len(self.results)

    @property
    def oom_interval(self) -> tuple[float, float]:
        """The 95 % Wilson interval of the OOM probability."""
        return wilson_interval(self.ooms, len(self.results))

    @property
    def stall_probability(self) -> float:
        return sum(r.stalled for r in self.results) / len(self.results)

    @property
    def failed_buffers(self) -> list[list[str]]:
        """Per replica, the buffers whose allocation failed (empty: no OOM)."""
        return [failed_buffers(r) for r in self.results]

    @property
    def buffer_counts(self) -> dict[str, int]:
        """In how many replicas each buffer failed, most often first."""
        counts: dict[str, int] = {}
        for bufs in self.failed_buffers:
            for b in bufs:
                counts[b] = counts.get(b, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def _spp(self) -> list[float]:
        return [r.seconds_per_proof for r in self.results if r.seconds_per_proof is not None]

    @property
    def seconds_per_proof_p50(self) -> float | None:
        return percentile(self._spp(), 0.50)

    @property
    def seconds_per_proof_p95(self) -> float | None:
        return percentile(self._spp(), 0.95)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (per-replica detail kept short: OOM, buffers, s/proof)."""
        vram = self.results[0].vram_total_bytes if self.results else {}
        return {
            "replicas": self.replicas,
            "jitter": self.jitter,
            "jitter_source": self.jitter_source,
            "profile": self.profile,
            "card": self.card,
            "vram_total_bytes": {str(d): b for d, b in sorted(vram.items())},
            "oom_probability": self.oom_probability,
            "oom_probability_ci95": list(self.oom_interval),
            "stall_probability": self.stall_probability,
            "failed_buffer_counts": self.buffer_counts,
            "seconds_per_proof_p50": self.seconds_per_proof_p50,
            "seconds_per_proof_p95": self.seconds_per_proof_p95,
            "per_replica": [
                {
                    "replica": i,
                    "oom": r.oom,
                    "failed_buffers": failed_buffers(r),
                    "seconds_per_proof": r.seconds_per_proof,
                    "proofs_completed": r.proofs_completed,
                }
                for i, r in enumerate(self.results)
            ],
            "warnings": list(self.warnings),
        }


def jitter_choice(
    scenario: Scenario, jitter: float | None
) -> tuple[float, MeasuredJitter | None, str]:
    """(uniform fraction, measured jitter, what was used): an explicit `--jitter` wins;
    without it the profile's `[jitter]` table when it has one; else none."""
    if jitter is not None:
        return jitter, None, f"--jitter {jitter * 100:g}% (uniform, explicit)"
    mj = scenario.profile.jitter
    if mj is not None:
        return 0.0, mj, f"profile {scenario.profile.name} [jitter] (measured)"
    return 0.0, None, f"none (profile {scenario.profile.name} has no [jitter]; give --jitter)"


def run_replicas(
    scenario: Scenario,
    replicas: int,
    jitter: float | None,
    progress: Callable[[float, float], None] | None = None,
) -> ReplicaReport:
    """Replicas 0..replicas-1 of `scenario` under `jitter` (a fraction: 0.05 = 5 %, the
    uniform noise, an explicit choice); jitter None: the profile's measured `[jitter]`
    when it has one, else none (`jitter_choice`; the report's `jitter_source` says which).
    progress: called with (replicas done, replicas) after each one."""
    if not 1 <= replicas <= MAX_REPLICAS:
        raise InputError(f"--replicas must be between 1 and {MAX_REPLICAS}, got {replicas}")
    if jitter is not None and not 0.0 <= jitter <= MAX_JITTER:
        raise InputError(
            f"--jitter must be between 0 % and {MAX_JITTER:.0%}, got {jitter * 100:g} %"
        )
    from cuzk_sim.profiles.profile import profile_warnings

    fraction, measured, used = jitter_choice(scenario, jitter)
    results = []
    for i in range(replicas):
        results.append(simulate(scenario, jitter=fraction, replica=i, measured=measured))
        if progress is not None:
            progress(i + 1, replicas)
    return ReplicaReport(
        replicas,
        fraction,
        results,
        profile_warnings(scenario),
        scenario.profile.name,
        scenario.spec.hardware.card,
        used,
    )


def parse_fraction(text: str, option: str = "--jitter") -> float:
    """'5%', '5 %' or '0.05' -> 0.05; anything else an InputError naming the option."""
    t = text.strip()
    try:
        value = float(t[:-1].strip()) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise InputError(
            f"{option} {text!r}: expected a percentage like '5%' or a fraction like 0.05"
        ) from None
    if not (math.isfinite(value) and 0.0 <= value <= MAX_JITTER):
        raise InputError(f"{option} {text!r}: must lie between 0 % and {MAX_JITTER:.0%}")
    return value
