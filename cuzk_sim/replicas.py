"""Replicas: the same scenario run R times under independent timing jitter.

A prediction that depends on two workers meeting at one instant is a probability, not
a verdict: `run_replicas` runs replicas 0..R-1 (each its own seeded noise stream, see
model/jitter.py) and reports how often an OOM happened, which buffers failed in each
replica, and the spread of seconds per proof.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cuzk_sim.input_errors import InputError
from cuzk_sim.model.jitter import MAX_JITTER
from cuzk_sim.result import SimResult
from cuzk_sim.runner import simulate
from cuzk_sim.scenario import Scenario

MAX_REPLICAS = 100_000


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

    @property
    def oom_probability(self) -> float:
        """Fraction of replicas with any fatal OOM."""
        return sum(r.oom for r in self.results) / len(self.results)

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
        return {
            "replicas": self.replicas,
            "jitter": self.jitter,
            "oom_probability": self.oom_probability,
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
        }


def run_replicas(
    scenario: Scenario,
    replicas: int,
    jitter: float,
    progress: Callable[[float, float], None] | None = None,
) -> ReplicaReport:
    """Replicas 0..replicas-1 of `scenario` under `jitter` (a fraction: 0.05 = 5 %).
    progress: called with (replicas done, replicas) after each one."""
    if not 1 <= replicas <= MAX_REPLICAS:
        raise InputError(f"--replicas must be between 1 and {MAX_REPLICAS}, got {replicas}")
    if not 0.0 <= jitter <= MAX_JITTER:
        raise InputError(
            f"--jitter must be between 0 % and {MAX_JITTER:.0%}, got {jitter * 100:g} %"
        )
    results = []
    for i in range(replicas):
        results.append(simulate(scenario, jitter=jitter, replica=i))
        if progress is not None:
            progress(i + 1, replicas)
    return ReplicaReport(replicas, jitter, results)


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
