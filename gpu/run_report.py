"""What a finished real-pipeline run reports (gpu/pipeline.py RealRun): its SimResult (the
same JSON as `run`), the model's metrics from what a real run measures, and the details
only a real run has. RealRun inherits these methods; they read the run's own records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cuzk_sim.results.sim_result import SimResult, per_hour, seconds_per_proof


@dataclass
class ProofState:
    id: str
    kind: str
    partitions: int
    submitted_s: float
    done: int = 0
    returned: int = 0
    failed: bool = False


@dataclass
class Job:
    """How one partition ended: proved, failed (reason), dropped (its proof had failed)
    or stopped (the run stopped first)."""

    partition: str
    worker: str
    status: Literal["proved", "failed", "dropped", "stopped"]
    reason: str = ""
    valid: bool | None = None  # verify mode: equal to the reference's proof


class RunReport:
    """The reporting half of RealRun (its records: proofs, jobs, spans, peaks, OOMs)."""

    def _result(self, wall: float) -> SimResult:
        times = [t for _, _, t in self.done_times]
        spp = seconds_per_proof(times, min((p.submitted_s for p in self.proofs), default=0.0))
        used = self._devices_used()
        return SimResult(
            scenario=self.spec.name,
            seed=self.spec.seed,
            sim_time_s=wall,
            proofs_submitted=len(self.proofs),
            proofs_completed=len(times),
            proofs_failed=sum(p.failed for p in self.proofs),
            partitions_completed=sum(j.status == "proved" for j in self.jobs),
            partitions_failed=sum(j.status == "failed" for j in self.jobs),
            seconds_per_proof=spp,
            # the setup before the clock started, as the model's setup phase: the page-
            # locking of the key's pinned host memory (made before the run, hostdata.py)
            setup_s=float(getattr(self, "host_start", {}).get("key_alloc_seconds", 0.0)),
            peak_vram_bytes={
                g: self.peak.get(g, 0) if g in used else 0 for g in range(self.spec.gpus)
            },
            vram_total_bytes={g: self.spec.vram for g in range(self.spec.gpus)},
            oom_events=list(self.oom_events),
            log=sorted(self.lines, key=lambda x: x[0]),
            stopped_at_oom=self.stopped_at_oom,
            host_budget_bytes=self.spec.host_budget,
            proof_done_times=list(self.done_times),
            spans=list(self.spans),
            metrics=self._metrics(wall),
            stall=getattr(self, "stall", None),
        )

    def _metrics(self, wall: float) -> Any:
        """The model's metrics, from what a real run measures: proofs and latencies per
        kind, and per device the share of the run inside GPU sections (lock holds; also
        reported as compute utilization: an upper bound, kernels are not timed) and the
        time workers waited for the lock. Host-side figures and the copy engines' shares
        are 0 here, not measured: the result's JSON carries them as null
        (sim_result.PIPELINE_NULL_KEYS) and its table says so."""
        from cuzk_sim.results.metrics import (
            DeviceMetrics,
            KindMetrics,
            RunMetrics,
            bottleneck,
            percentile,
        )

        done = {pid: at for pid, _, at in self.done_times}
        kinds = []
        for kind in sorted({p.kind for p in self.proofs}):
            proofs = [p for p in self.proofs if p.kind == kind]
            lat = sorted(done[p.id] - p.submitted_s for p in proofs if p.id in done)
            failed = sum(p.failed for p in proofs)
            spp = seconds_per_proof(
                [done[p.id] for p in proofs if p.id in done], min(p.submitted_s for p in proofs)
            )
            kinds.append(
                KindMetrics(
                    kind, len(proofs), len(lat), failed, spp, per_hour(spp),
                    percentile(lat, 50), percentile(lat, 95), lat[-1] if lat else None,
                )
            )  # fmt: skip
        devices = []
        waits = 0
        wait_total = 0.0
        for g in self._devices_used():
            held = sum(s.end_s - s.start_s for s in self.spans if s.cat == "lock" and s.device == g
                       and s.name.startswith("hold"))  # fmt: skip
            wait = [s.end_s - s.start_s for s in self.spans if s.cat == "lock" and s.device == g
                    and s.name.startswith("wait")]  # fmt: skip
            waits += sum(w > 1e-4 for w in wait)
            wait_total += sum(wait)
            share = min(held / wall, 1.0) if wall > 0 else 0.0
            devices.append(DeviceMetrics(g, share, {"HtoD": 0.0, "DtoH": 0.0}, share, sum(wait)))
        gpu = sum(d.compute_utilization for d in devices) / len(devices) if devices else 0.0
        # the verdict from the one figure measured (copies, synthesis, host RAM and cores
        # enter as 0: none is a stage of this pipeline's bound it could name); the evidence
        # states only what was measured
        verdict, _ = bottleneck(gpu, 0.0, gpu, 0.0, 0.0, 0.0)
        evidence = (
            f"of what gpu-run measures: GPU sections {gpu:.0%} of the run (mean over "
            "GPUs; compute at most that, kernels not timed); copy engines, synthesis, "
            "host RAM and cores not measured"
        )
        return RunMetrics(
            time_s=wall,
            kinds=tuple(kinds),
            devices=tuple(devices),
            mutex_wait_s=wait_total,
            mutex_waits=waits,
            host_core_utilization=0.0,
            synthesis_busy=0.0,
            host_ram_wait=0.0,
            fallbacks_taken=sum(not e.fatal for e in self.oom_events),
            bottleneck=verdict,
            evidence=evidence,
        )

    def _room_taken(self, gpu: int) -> int:
        """Of the room left for the context to grow back, the bytes it took by the end."""
        room = self.context_room.get(gpu, 0)
        end = self.context_end.get(gpu)
        if not room or end is None:
            return room
        return min(room, max(0, end - self.context_real.get(gpu, end)))

    def details(self) -> dict[str, Any]:
        """What only a real run has: per-job outcomes, the context and ballast measured,
        the leak check and the faults injected."""
        counts: dict[str, int] = {}
        for j in self.jobs:
            counts[j.status] = counts.get(j.status, 0) + 1
        return {
            "device": self.backend.kind,
            "context_bytes": {str(g): b for g, b in self.context_real.items()},
            "model_context_bytes": {str(g): self.spec.context for g in self._devices_used()},
            "context_room_bytes": {str(g): b for g, b in self.context_room.items()},
            "context_end_bytes": {str(g): b for g, b in self.context_end.items()},
            "ballast_bytes": {str(g): b for g, b in self.ballast_placed.items()},
            "shrunk_bytes": {str(g): b for g, b in self.shrunk_bytes.items()},
            "start_free_bytes": {str(g): b for g, b in self.start_free.items()},
            # the card the run really had: free at start + the model's context (the ballast
            # sets free memory in 2 MiB steps, so this is the scenario's vram + < 2 MiB),
            # less the room left for the context to grow back (gpu/card.py _CONTEXT_SEEN)
            # as far as it did grow back by the end (room it never took was the prover's)
            "achieved_vram_bytes": {
                str(g): b + self.spec.context - self._room_taken(g)
                for g, b in self.start_free.items()
            },
            "leaked_bytes": {str(g): b for g, b in getattr(self, "leaks", {}).items()},
            "faults_injected": dict(self.faults.injected),
            "jobs": counts,
            "jobs_total": len(self.jobs),
            "jobs_lost": self.dispatched - len(self.jobs),
            "proofs_verified": sum(j.valid is True for j in self.jobs),
            "proofs_invalid": sum(j.valid is False for j in self.jobs),
            "failed_reasons": sorted({j.reason for j in self.jobs if j.status == "failed"}),
            "unexplained_jobs": [
                j.partition for j in self.jobs if j.status == "failed" and not j.reason
            ],
            "tune": sorted(self.tune),
            "host": self.host_report(),
            # step timing (--trace/--log): per GPU step, mean ms on the GPU and mean ms the
            # stream idled before it (host work: launches, allocations, copies' staging)
            "steps": {
                name: {"n": int(n), "gpu_ms": 1000 * t / n, "idle_before_ms": 1000 * g / n}
                for name, (n, t, g) in sorted(self.step_totals.items())
            },
            "host_alloc_ms_per_partition": (
                1000 * sum(self.host_alloc_s) / len(self.host_alloc_s) if self.host_alloc_s else 0.0
            ),
        }
