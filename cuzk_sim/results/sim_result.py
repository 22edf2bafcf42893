"""What a simulation run produces: OOM post-mortems, fallbacks, throughput, peaks.

Plain frozen data, serialisable to JSON; the model fills it, reports read it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cuzk_sim.results.metrics import RunMetrics
from cuzk_sim.results.recording import Timeline
from cuzk_sim.results.throughput import per_hour as per_hour
from cuzk_sim.results.throughput import seconds_per_proof as seconds_per_proof

# The one throughput of a run, printed by `run --help`, `gpu-run --help`, `sweep --help`
# and in docs/simulator.md: seconds per proof and proofs per hour are the same quantity
# in two units.
THROUGHPUT_DEFINITION = (
    "Throughput: s/proof = (last completion - first completion) / (completed - 1), the "
    "mean gap between completed proofs (one proof: its latency); proofs/h = 3600 / "
    "s/proof. Failed proofs are not counted (their number is shown beside it)."
)

# what a dry run (gpu-run --device dry-run: no GPU, the model's allocator ledger) cannot
# say: every figure that is a time; its JSON carries them as null
DRY_RUN_NULL_KEYS = (
    "seconds_per_proof",
    "setup_s",
    "proofs_per_hour",
    "sim_time_s",
    "mutex_wait_s",
    "mutex_waits",
    "host_core_utilization",
    "synthesis_busy",
    "host_ram_wait",
    "gpu_starved",
    "cpu_pool_busy",
    "bottleneck",
)
DRY_RUN_NULL_KIND_KEYS = (
    "seconds_per_proof",
    "proofs_per_hour",
    "latency_p50_s",
    "latency_p95_s",
    "latency_max_s",
)
DRY_RUN_NULL_DEVICE_KEYS = ("compute_utilization", "copy_utilization", "mutex_held", "mutex_wait_s")
DRY_RUN_NOTE = "no GPU: memory from the model's allocator ledger, no timings"
# what gpu-run's pipeline (either device) does not measure: the host side (the model's
# host RAM budget and RSS, CPU threads, synthesis, the CPU pool) and the copy engines'
# busy share (copies are timed per step with --details, not as engine occupancy); its
# JSON carries them as null, its table says "not measured"
PIPELINE_NULL_KEYS = (
    "peak_host_bytes",
    "peak_host_rss_bytes",
    "peak_core_demand",
    "host_core_utilization",
    "synthesis_busy",
    "host_ram_wait",
    "gpu_starved",
    "cpu_pool_busy",
)
PIPELINE_NULL_DEVICE_KEYS = ("copy_utilization",)


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
    # the process's resident host memory at its peak (SRS, PCE, partitions by stage:
    # model/host_side.py), what RSS measures; peak_host_bytes is the budget's ledger
    peak_host_rss_bytes: int = 0
    # cuzk-bench's "prove time": the mean over completed proofs of the seconds their
    # partitions spent on GPU workers (cuzk's gpu_compute_ms); None: none completed
    prove_seconds: float | None = None
    # cuzk-bench `batch`'s throughput: (last completion - first submission) / completed,
    # the pipeline's fill included (its `batch_elapsed / completed`); None: none completed
    bench_seconds_per_proof: float | None = None
    peak_core_demand: float = 0.0  # most CPU threads asked for at once (0: never counted)
    # the setup phase before the first proof (not in s/proof): the seconds the process
    # spent page-locking its persistent host buffers (the proving key, pinned once)
    setup_s: float = 0.0
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
    # throughput, utilization and the bottleneck (cuzk_sim/results/metrics.py); None only for a
    # result built by hand
    metrics: RunMetrics | None = None
    # the bounded recording for plots and traces (cuzk_sim/results/recording.py), when asked for
    timeline: Timeline | None = None
    # one line each: the profile does not price this card or this plan's prover
    warnings: list[str] = field(default_factory=list)
    # who produced it: None the model; "real" or "dry-run" gpu-run's pipeline (a dry run
    # has no timings: its JSON says so and carries them as null)
    device: str | None = None
    # the profile that priced the timings and the hardware.card preset (None: none given),
    # as the scenario resolved them; set by the API and the CLI (`describe`)
    profile: str | None = None
    card: str | None = None

    @property
    def fatal_ooms(self) -> list[OomEvent]:
        return [e for e in self.oom_events if e.fatal]

    @property
    def stalled(self) -> bool:
        return self.stall is not None

    @property
    def oom(self) -> bool:
        return bool(self.fatal_ooms)

    @property
    def dry_run(self) -> bool:
        return self.device == "dry-run"

    @property
    def proofs_per_hour(self) -> float | None:
        """3600 / seconds_per_proof (THROUGHPUT_DEFINITION); None in a dry run."""
        return None if self.dry_run else per_hour(self.seconds_per_proof)

    def to_dict(self, log_lines: int = 200) -> dict[str, Any]:
        first = self.fatal_ooms[0] if self.fatal_ooms else None
        head: dict[str, Any] = {"scenario": self.scenario, "seed": self.seed}
        if self.device is not None:
            head["device"] = self.device
        out = {
            **head,
            "profile": self.profile,
            "card": self.card,
            "oom": self.oom,
            "first_oom_buffer": first.buffer if first else None,
            "first_oom_where": first.where if first else None,
            "oom_events": [asdict(e) for e in self.oom_events],
            "peak_vram_bytes": {str(d): b for d, b in sorted(self.peak_vram_bytes.items())},
            "vram_total_bytes": {str(d): b for d, b in sorted(self.vram_total_bytes.items())},
            "peak_host_bytes": self.peak_host_bytes,
            "peak_host_rss_bytes": self.peak_host_rss_bytes,
            "host_budget_bytes": self.host_budget_bytes,
            "peak_core_demand": self.peak_core_demand,
            "seconds_per_proof": self.seconds_per_proof,
            "setup_s": self.setup_s,
            "proofs_per_hour": per_hour(self.seconds_per_proof),
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
        if self.device is not None:  # gpu-run's pipeline: what it does not measure is null
            out = without(out, PIPELINE_NULL_KEYS, (), PIPELINE_NULL_DEVICE_KEYS)
        return without_timings(out) if self.dry_run else out


def without(
    d: dict[str, Any], keys: tuple[str, ...], kind_keys: tuple[str, ...], device_keys: tuple
) -> dict[str, Any]:
    """A result dict with these keys null (top level, per kind, per device): the same
    keys, so it still diffs key by key against `run --json`."""
    out = {k: (None if k in keys else v) for k, v in d.items()}
    for part, nulls in (("kinds", kind_keys), ("devices", device_keys)):
        if isinstance(out.get(part), dict):
            out[part] = {
                k: {f: (None if f in nulls else v) for f, v in fig.items()}
                for k, fig in out[part].items()
            }
    return out


def without_timings(d: dict[str, Any]) -> dict[str, Any]:
    """A result dict with every timing figure null (a dry run measured none): the same
    keys, so it still diffs key by key against `run --json`."""
    out = without(d, DRY_RUN_NULL_KEYS, DRY_RUN_NULL_KIND_KEYS, DRY_RUN_NULL_DEVICE_KEYS)
    if "bottleneck_evidence" in out:
        out["bottleneck_evidence"] = f"dry run ({DRY_RUN_NOTE})"
    return out
