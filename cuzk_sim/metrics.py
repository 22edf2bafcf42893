"""What a run says about throughput and where its time goes: the figures a user acts on.

Computed from the counters the engine hands over after a run (`RunCounts`: no
recording needed, so the fast path has them): per proof kind completed / failed, seconds
per proof and proofs per hour, latency percentiles; per device the compute and
copy-engine utilization and the mutex; the host's cores; and a bottleneck verdict with
the figures it rests on.

Definitions (T = simulated time of the run, `sim_time_s`):
- throughput (per kind as for the run, cuzk_sim.result.THROUGHPUT_DEFINITION): seconds
  per proof = the mean gap between completed proofs; proofs per hour = 3600 / that. One
  quantity in two units; failed proofs are not counted (a failing configuration cannot
  look fast), their number is reported beside it.
- latency of a completed proof = its completion − its arrival; percentiles are
  nearest-rank (p-th: the ceil(p/100 · n)-th smallest).
- utilization of an engine = seconds of work issued to it / T, counting only work that
  ended by the end of the run (work queued beyond it is cut off at T).
- mutex held = seconds the mutex was held / T; mutex wait = seconds workers waited for it.
- host cores = thread-seconds of CPU work (synthesis, plan CPU steps) / (cores · T).
- synthesis busy = seconds synthesizers spent synthesizing / (synthesizers · T); host-RAM
  wait = seconds they waited for the RAM budget / (synthesizers · T).
- GPU workers starved = seconds GPU workers waited for a synthesized partition, after
  their first (the pipeline's fill), / (GPU workers · T).
- CPU pool busy = seconds the GPU workers' CPU pool (groth16_pool, per device) had a job
  running / the time from its first job to T (the pipeline's fill left out), mean over
  the devices whose pool runs whole-pool jobs (B_G2 MSM on the CPU: its jobs queue behind
  each other); 0 when none does (one-thread jobs side by side).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from cuzk_sim.model.counters import Proof, RunCounters
from cuzk_sim.throughput import per_hour, seconds_per_proof

Bottleneck = Literal["synthesis", "gpu", "copy", "mutex", "host-ram", "cpu-pool", "none"]

# a resource busier than this share of the run is a candidate for the bottleneck; below
# it, nothing is saturated and the arrivals (the workload) set the throughput
SATURATED = 0.5
# the mutex is the bottleneck (not an engine) when the engines work less than this share
# of the time it is held: the lock serialises CPU work or waits, not GPU work
ENGINE_SHARE_OF_LOCK = 0.8
# the host side (synthesis, host RAM) sets the pace only if the GPU workers waited for
# partitions at least this share of their time: synthesizers busy while the channel to
# the GPUs is full (they hold their permits) are not the bound
STARVED = 0.05


@dataclass(frozen=True)
class KindMetrics:
    kind: str
    submitted: int
    completed: int
    failed: int
    seconds_per_proof: float | None  # mean gap between completed proofs of the kind
    proofs_per_hour: float | None  # 3600 / seconds_per_proof
    latency_p50_s: float | None  # of completed proofs; None when none completed
    latency_p95_s: float | None
    latency_max_s: float | None


@dataclass(frozen=True)
class DeviceMetrics:
    device: int
    compute_utilization: float
    copy_utilization: dict[str, float]  # HtoD, DtoH
    mutex_held: float  # share of the run its per-device mutex was held (0: none)
    mutex_wait_s: float


@dataclass(frozen=True)
class RunMetrics:
    time_s: float
    kinds: tuple[KindMetrics, ...]
    devices: tuple[DeviceMetrics, ...]
    mutex_wait_s: float  # summed over every mutex and waiter
    mutex_waits: int  # acquisitions that had to wait
    host_core_utilization: float
    synthesis_busy: float
    host_ram_wait: float  # share of synthesizer time spent waiting on the RAM budget
    fallbacks_taken: int
    bottleneck: Bottleneck
    evidence: str
    gpu_starved: float = 0.0  # share of GPU worker time spent waiting for a partition
    cpu_pool_busy: float = 0.0  # share of its time the serial CPU pool had a job (device mean)

    def to_dict(self) -> dict[str, Any]:
        """The --json keys (documented in docs/simulator.md, "Metrics")."""
        kinds = {k.kind: {f: v for f, v in asdict(k).items() if f != "kind"} for k in self.kinds}
        devices = {
            str(x.device): {f: v for f, v in asdict(x).items() if f != "device"}
            for x in self.devices
        }
        return {
            "kinds": kinds,
            "devices": devices,
            "mutex_wait_s": self.mutex_wait_s,
            "mutex_waits": self.mutex_waits,
            "host_core_utilization": self.host_core_utilization,
            "synthesis_busy": self.synthesis_busy,
            "host_ram_wait": self.host_ram_wait,
            "gpu_starved": self.gpu_starved,
            "cpu_pool_busy": self.cpu_pool_busy,
            "fallbacks_taken": self.fallbacks_taken,
            "bottleneck": self.bottleneck,
            "bottleneck_evidence": self.evidence,
        }


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile of ascending values; None for no values."""
    if not sorted_values:
        return None
    rank = max(math.ceil(p / 100 * len(sorted_values)), 1)
    return sorted_values[rank - 1]


def _share(x: float, of: float) -> float:
    return min(max(x / of, 0.0), 1.0) if of > 0 else 0.0


def _busy_until_end(busy: float, free_at: float, end: float) -> float:
    """Work issued to a FIFO engine, less what is still queued beyond `end`."""
    return max(busy - max(free_at - end, 0.0), 0.0)


@dataclass(frozen=True)
class EngineUse:
    """One device's engines: seconds of work issued to each, and when each is free."""

    device: int
    compute_busy_s: float
    compute_free_at: float
    copy_busy_s: dict[str, float]
    copy_free_at: dict[str, float]


@dataclass(frozen=True)
class MutexUse:
    device: int | None  # the GPU of a per-device mutex; None: one per process or global
    held_s: float  # by the end of the run (a hold still open counted up to it)
    wait_s: float
    waits: int


@dataclass(frozen=True)
class RunCounts:
    """What a finished run counted: all `measure` reads."""

    time_s: float
    counters: RunCounters  # proofs, completions, synthesizer busy and RAM-wait seconds
    engines: tuple[EngineUse, ...]  # the devices workers ran on, by index
    mutexes: tuple[MutexUse, ...]  # in the order they were first taken
    synthesizers: int
    in_flight: int  # proofs the farm holds at once: synthesizers' lookahead + workers
    open_stream: bool  # some arrivals keep coming (every_s)
    host_cores: int
    core_work_s: float  # thread-seconds of CPU work
    fallbacks_taken: int
    gpu_workers: int = 0
    # per device, of the pools whose jobs queue (serial): seconds busy, first job's start
    pool_busy: tuple[tuple[float, float], ...] = ()


def _kind_metrics(kind: str, proofs: list[Proof], done_at: dict) -> KindMetrics:
    completed = [p for p in proofs if p.id in done_at]
    failed = sum(p.failed for p in proofs)
    lat = sorted(done_at[p.id] - p.submitted_s for p in completed)
    spp = seconds_per_proof([done_at[p.id] for p in completed], min(p.submitted_s for p in proofs))
    return KindMetrics(
        kind=kind,
        submitted=len(proofs),
        completed=len(completed),
        failed=failed,
        seconds_per_proof=spp,
        proofs_per_hour=per_hour(spp),
        latency_p50_s=percentile(lat, 50),
        latency_p95_s=percentile(lat, 95),
        latency_max_s=lat[-1] if lat else None,
    )


def _device_metrics(e: EngineUse, mutexes: tuple[MutexUse, ...], t: float) -> DeviceMetrics:
    compute = _busy_until_end(e.compute_busy_s, e.compute_free_at, t)
    copies = {
        k: _share(_busy_until_end(e.copy_busy_s[k], e.copy_free_at[k], t), t)
        for k in ("HtoD", "DtoH")
    }
    held, wait = 0.0, 0.0
    for m in mutexes:
        if m.device == e.device:
            held += m.held_s
            wait += m.wait_s
    return DeviceMetrics(e.device, _share(compute, t), copies, _share(held, t), wait)


def measure(run: RunCounts) -> RunMetrics:
    """The metrics of a finished run, from its counters."""
    t = run.time_s
    c = run.counters
    done_at = {pid: at for pid, _, at in c.done_times}
    kinds = [
        _kind_metrics(kind, [p for p in c.proofs if p.kind == kind], done_at)
        for kind in sorted({p.kind for p in c.proofs})
    ]
    devices = [_device_metrics(e, run.mutexes, t) for e in run.engines]
    global_held = max((m.held_s for m in run.mutexes if m.device is None), default=0.0)
    synths = run.synthesizers
    synthesis_busy = _share(c.synth_busy_s, synths * t)
    host_ram_wait = _share(c.ram_wait_s, synths * t)
    host_cores = _share(run.core_work_s, run.host_cores * t)
    starved = _share(c.starved_s, run.gpu_workers * t)
    pools = run.pool_busy
    pool = sum(_share(b, t - first) for b, first in pools) / len(pools) if pools else 0.0
    # an open stream of arrivals that the farm keeps up with (no backlog at the end beyond
    # what is in flight) is limited by its arrivals, however busy a stage is
    backlog = sum(not p.finished for p in c.proofs)
    keeps_up = run.open_stream and backlog <= max(run.in_flight, 0.01 * len(c.proofs))
    verdict, evidence = bottleneck(
        gpu=sum(x.compute_utilization for x in devices) / len(devices) if devices else 0.0,
        copy=sum(max(x.copy_utilization.values()) for x in devices) / len(devices)
        if devices
        else 0.0,
        mutex=max(
            sum(x.mutex_held for x in devices) / len(devices) if devices else 0.0,
            _share(global_held, t),
        ),
        synthesis=synthesis_busy,
        host_ram=host_ram_wait,
        host_cores=host_cores,
        pool=pool,
        starved=starved if run.gpu_workers else None,
        keeps_up=f"{backlog} of {len(c.proofs)} proofs unfinished at the end" if keeps_up else "",
    )
    return RunMetrics(
        time_s=t,
        kinds=tuple(kinds),
        devices=tuple(devices),
        mutex_wait_s=sum(m.wait_s for m in run.mutexes),
        mutex_waits=sum(m.waits for m in run.mutexes),
        host_core_utilization=host_cores,
        synthesis_busy=synthesis_busy,
        host_ram_wait=host_ram_wait,
        gpu_starved=starved,
        cpu_pool_busy=pool,
        fallbacks_taken=run.fallbacks_taken,
        bottleneck=verdict,
        evidence=evidence,
    )


def bottleneck(
    gpu: float,
    copy: float,
    mutex: float,
    synthesis: float,
    host_ram: float,
    host_cores: float,
    keeps_up: str = "",
    pool: float = 0.0,
    starved: float | None = None,
) -> tuple[Bottleneck, str]:
    """The stage that sets the throughput, and the figures that say so.

    Shares of the run: GPU compute and copy engines busy (mean over devices), mutex held,
    synthesizers synthesizing, synthesizers waiting on the host RAM budget, the serial CPU
    pool busy, GPU workers starved of partitions (None: not counted). The largest wins if
    it reaches SATURATED; else nothing is saturated ("none": the arrivals set the pace).
    The host side (synthesis, host RAM) wins only while the GPU workers waited for
    partitions at least STARVED of their time: else synthesizers kept busy behind a full
    channel are not the bound, the GPU side is. On the GPU side the CPU pool wins when it
    is the busiest of its figures (the GPU section waits on its jobs: the batch additions
    need prep_msm's bit vectors inside the mutex); the mutex wins over the engines only when they
    work less than ENGINE_SHARE_OF_LOCK of the time it is held (the lock serialises other
    work); between the engines, the busier. Synthesizers slowed by too few cores count as synthesis
    (host-core utilization is part of the evidence). keeps_up: set (a sentence on the
    backlog) when an open arrival stream is kept up with: then "none" too."""
    engines = max(gpu, copy)
    device_side = max(gpu, copy, mutex, pool)
    candidates = {"synthesis": synthesis, "host-ram": host_ram, "device": device_side}
    top = max(candidates, key=lambda k: candidates[k])
    evidence = (
        f"synthesizers busy {synthesis:.0%}, waiting on host RAM {host_ram:.0%}; "
        f"GPU compute {gpu:.0%}, copy engines {copy:.0%}, mutex held {mutex:.0%}"
        + (f", CPU pool busy {pool:.0%}" if pool else "")
        + (f", GPU workers waiting for partitions {starved:.0%}" if starved is not None else "")
        + f"; host cores {host_cores:.0%}"
    )
    if keeps_up:
        return "none", f"keeps up with its arrivals ({keeps_up}): {evidence}"
    fed = starved is not None and starved < STARVED and device_side >= SATURATED
    if top != "device" and fed:
        top = "device"  # the GPU side never waited for the host: the host is not the bound
    if candidates[top] < SATURATED:
        return "none", f"nothing saturated (under capacity): {evidence}"
    if top != "device":
        return top, evidence  # type: ignore[return-value]
    if pool >= max(engines, mutex):
        return "cpu-pool", evidence
    if mutex > 0 and engines < ENGINE_SHARE_OF_LOCK * mutex:
        return "mutex", evidence
    return ("gpu" if gpu >= copy else "copy"), evidence
