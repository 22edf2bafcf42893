"""What a simulation run produces: OOM post-mortems, fallbacks, throughput, peaks.

Plain frozen data, serialisable to JSON; the model fills it, reports read it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cuzk_sim.metrics import RunMetrics
from cuzk_sim.recording import Timeline


def seconds_per_proof(completions: list[float], first_submitted: float) -> float | None:
    """The steady-state seconds per proof of a run, the same for the model and the real
    pipeline: the mean gap between proof completions (times in seconds); with one proof,
    its latency from the first submission; None when no proof completed."""
    times = sorted(completions)
    if len(times) >= 2:
        return (times[-1] - times[0]) / (len(times) - 1)
    if times:
        return times[0] - first_submitted
    return None


@dataclass(frozen=True)
class OomEvent:
    """An allocation that did not fit, with the ledger of live buffers at that instant."""

    time_s: float
    device: int
    worker: str
    partition: str  # "<proof id>/<partition index>"
    buffer: str
    requested_bytes: int
    free_bytes: int
    allocator: str
    fatal: bool  # False: the step had a fallback and took it
    reason: str  # "alloc" (the allocator refused) or "skip_vram" (memory-aware check)
    ledger: dict[str, dict[str, int]]  # owner -> buffer -> bytes
    where: str = "device"  # "device" (VRAM of `device`) or "host" (the host RAM budget)


@dataclass(frozen=True)
class Span:
    """One interval on the timeline (Chrome trace 'X' event)."""

    track: str  # worker or synthesizer name
    device: int  # -1 for host-side tracks
    name: str
    cat: str  # kernel, copy, cpu, lock, partition, synthesis, ...
    start_s: float
    end_s: float


@dataclass
class SimResult:
    scenario: str
    seed: int
    sim_time_s: float
    proofs_submitted: int
    proofs_completed: int
    proofs_failed: int
    partitions_completed: int
    partitions_failed: int
    seconds_per_proof: float | None
    peak_vram_bytes: dict[int, int]
    vram_total_bytes: dict[int, int]
    oom_events: list[OomEvent]
    log: list[tuple[float, str]]
    stopped_at_oom: bool = False
    peak_host_bytes: int = 0  # host RAM budget in use at its peak (reservations + pinned)
    host_budget_bytes: int = 0
    peak_core_demand: float = 0.0  # most CPU threads asked for at once (0: never counted)
    events: int = 0  # scheduler wake-ups processed (for benchmarks)
    pce_extractions: int = 0
    # set when the run ran out of events with proofs neither completed nor failed (a
    # deadlock, or work that can never run): who is stuck and on what
    stall: str | None = None
    proof_done_times: list[tuple[str, str, float]] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    vram_samples: list[tuple[float, int, int]] = field(default_factory=list)  # t, dev, used
    host_samples: list[tuple[float, int, int]] = field(default_factory=list)  # t, used, pinned
    core_samples: list[tuple[float, float]] = field(default_factory=list)  # t, threads
    # throughput, utilization and the bottleneck (cuzk_sim/metrics.py); None only for a
    # result built by hand
    metrics: RunMetrics | None = None
    # the bounded recording for plots and traces (cuzk_sim/recording.py), when asked for
    timeline: Timeline | None = None
    # one line each: the profile does not price this card or this plan's prover
    warnings: list[str] = field(default_factory=list)

    @property
    def fatal_ooms(self) -> list[OomEvent]:
        return [e for e in self.oom_events if e.fatal]

    @property
    def stalled(self) -> bool:
        return self.stall is not None

    @property
    def oom(self) -> bool:
        return bool(self.fatal_ooms)

    def to_dict(self, log_lines: int = 200) -> dict[str, Any]:
        first = self.fatal_ooms[0] if self.fatal_ooms else None
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "oom": self.oom,
            "first_oom_buffer": first.buffer if first else None,
            "first_oom_where": first.where if first else None,
            "oom_events": [asdict(e) for e in self.oom_events],
            "peak_vram_bytes": {str(d): b for d, b in sorted(self.peak_vram_bytes.items())},
            "vram_total_bytes": {str(d): b for d, b in sorted(self.vram_total_bytes.items())},
            "peak_host_bytes": self.peak_host_bytes,
            "host_budget_bytes": self.host_budget_bytes,
            "peak_core_demand": self.peak_core_demand,
            "seconds_per_proof": self.seconds_per_proof,
            "proofs_submitted": self.proofs_submitted,
            "proofs_completed": self.proofs_completed,
            "proofs_failed": self.proofs_failed,
            "partitions_completed": self.partitions_completed,
            "partitions_failed": self.partitions_failed,
            "sim_time_s": self.sim_time_s,
            "stopped_at_oom": self.stopped_at_oom,
            "pce_extractions": self.pce_extractions,
            "stalled": self.stalled,
            "stall": self.stall,
            **(self.metrics.to_dict() if self.metrics is not None else {}),
            "warnings": list(self.warnings),
            "log": [f"{t:.3f} {line}" for t, line in self.log[:log_lines]],
        }
