"""The run's proofs and counters: what happened to each proof, and the tallies the
result and the metrics are computed from (cuzk_sim/metrics.py reads only these, the
devices' engine clocks and the mutexes' counters, handed to it by the engine)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Proof:
    id: str
    kind: str
    partitions: int
    submitted_s: float
    picked: int = 0
    done: int = 0
    returned: int = 0  # partitions back from the GPU workers: done, failed or dropped
    failed: bool = False
    finished: bool = False
    # seconds its partitions spent on GPU workers, pickup to finalize, summed: cuzk's
    # gpu_compute_ms (engine.rs total_gpu_duration), cuzk-bench's "prove time"
    gpu_s: float = 0.0


@dataclass
class RunCounters:
    proofs: list[Proof] = field(default_factory=list)
    unfinished: int = 0  # proofs submitted and neither completed nor failed yet
    done_times: list[tuple[str, str, float]] = field(default_factory=list)  # id, kind, t
    partitions_ok: int = 0
    partitions_failed: int = 0
    synth_busy_s: float = 0.0  # seconds synthesizers spent synthesizing
    ram_wait_s: float = 0.0  # seconds synthesizers waited on the host RAM budget
    # seconds GPU workers waited for a synthesized partition, after their first one
    starved_s: float = 0.0
    stopped_at_oom: bool = False
