"""What a run says about throughput and where its time goes: the figures a user acts on.

Read from the model's own accumulators after a run (no recording needed, so the fast
path has them): per proof kind completed / failed, seconds per proof and proofs per hour,
latency percentiles; per device the compute and copy-engine utilization and the mutex; the
host's cores; and a bottleneck verdict with the figures it rests on.

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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from cuzk_sim.result import per_hour, seconds_per_proof

if TYPE_CHECKING:
    from cuzk_sim.model.engine import Simulation

Bottleneck = Literal["synthesis", "gpu", "copy", "mutex", "host-ram", "none"]

# a resource busier than this share of the run is a candidate for the bottleneck; below
# it, nothing is saturated and the arrivals (the workload) set the throughput
SATURATED = 0.5
# the mutex is the bottleneck (not an engine) when the engines work less than this share
# of the time it is held: the lock serialises CPU work or waits, not GPU work
ENGINE_SHARE_OF_LOCK = 0.8


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


def measure(sim: Simulation) -> RunMetrics:
    """The metrics of a finished run, from the model's accumulators."""
    t = sim.env.now
    done_at = {pid: at for pid, _, at in sim.done_times}
    kinds = []
    for kind in sorted({p.kind for p in sim.proofs}):
        proofs = [p for p in sim.proofs if p.kind == kind]
        completed = [p for p in proofs if p.id in done_at]
        failed = sum(p.failed for p in proofs)
        lat = sorted(done_at[p.id] - p.submitted_s for p in completed)
        spp = seconds_per_proof(
            [done_at[p.id] for p in completed], min(p.submitted_s for p in proofs)
        )
        kinds.append(
            KindMetrics(
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
        )
    used = sorted({w.device.index for w in sim.workers})
    devices = []
    for d in used:
        dev = sim.devices[d]
        compute = _busy_until_end(dev.compute_busy_s, dev.compute_free_at, t)
        copies = {
            k: _share(_busy_until_end(dev.copy_busy_s[k], dev.copy_free_at[k], t), t)
            for k in ("HtoD", "DtoH")
        }
        held, wait = 0.0, 0.0
        for m in sim.mutexes.values():
            if m.name.endswith(f"@gpu{d}"):
                held += m.held_s + (t - m._since if m.owner is not None else 0.0)
                wait += m.wait_s
        devices.append(DeviceMetrics(d, _share(compute, t), copies, _share(held, t), wait))
    global_held = max(
        (
            m.held_s + (t - m._since if m.owner is not None else 0.0)
            for m in sim.mutexes.values()
            if "@gpu" not in m.name
        ),
        default=0.0,
    )
    synths = sim.config.synthesis_concurrency
    synthesis_busy = _share(sim.synth_busy_s, synths * t)
    host_ram_wait = _share(sim.ram_wait_s, synths * t)
    host_cores = _share(sim.cores.work_s, sim.config.host_cores * t)
    # an open stream of arrivals that the farm keeps up with (no backlog at the end beyond
    # what is in flight) is limited by its arrivals, however busy a stage is
    cfg = sim.config
    in_flight = synths * (cfg.synthesis_lookahead + 1) + len(sim.workers)
    open_stream = any(a.every_s for a in cfg.arrivals)
    backlog = sum(not p.finished for p in sim.proofs)
    keeps_up = open_stream and backlog <= max(in_flight, 0.01 * len(sim.proofs))
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
        keeps_up=f"{backlog} of {len(sim.proofs)} proofs unfinished at the end" if keeps_up else "",
    )
    return RunMetrics(
        time_s=t,
        kinds=tuple(kinds),
        devices=tuple(devices),
        mutex_wait_s=sum(m.wait_s for m in sim.mutexes.values()),
        mutex_waits=sum(m.waits for m in sim.mutexes.values()),
        host_core_utilization=host_cores,
        synthesis_busy=synthesis_busy,
        host_ram_wait=host_ram_wait,
        fallbacks_taken=sum(not e.fatal for e in sim.oom_events),
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
) -> tuple[Bottleneck, str]:
    """The stage that sets the throughput, and the figures that say so.

    Shares of the run: GPU compute and copy engines busy (mean over devices), mutex held,
    synthesizers synthesizing, synthesizers waiting on the host RAM budget. The largest
    wins if it reaches SATURATED; else nothing is saturated ("none": the arrivals set the
    pace). On the device side the mutex wins over the engines only when the engines work
    less than ENGINE_SHARE_OF_LOCK of the time it is held (the lock serialises other
    work); between the engines, the busier. Synthesizers slowed by too few cores count as
    synthesis (host-core utilization is part of the evidence). keeps_up: set (a sentence
    on the backlog) when an open arrival stream is kept up with: then "none" too."""
    device_side = max(gpu, copy, mutex)
    candidates = {"synthesis": synthesis, "host-ram": host_ram, "device": device_side}
    top = max(candidates, key=lambda k: candidates[k])
    evidence = (
        f"synthesizers busy {synthesis:.0%}, waiting on host RAM {host_ram:.0%}; "
        f"GPU compute {gpu:.0%}, copy engines {copy:.0%}, mutex held {mutex:.0%}; "
        f"host cores {host_cores:.0%}"
    )
    if keeps_up:
        return "none", f"keeps up with its arrivals ({keeps_up}): {evidence}"
    if candidates[top] < SATURATED:
        return "none", f"nothing saturated (under capacity): {evidence}"
    if top != "device":
        return top, evidence  # type: ignore[return-value]
    engines = max(gpu, copy)
    if mutex > 0 and engines < ENGINE_SHARE_OF_LOCK * mutex:
        return "mutex", evidence
    return ("gpu" if gpu >= copy else "copy"), evidence
