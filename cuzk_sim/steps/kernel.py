"""`kernel`: device work, queued on the device's compute engine.

Issuing into one in-order queue (a device with `shared_stream`: our prover on CUDA's
legacy default stream). A kernel launch, and a copy from page-locked memory
(cudaMemcpyAsync), return to the host at once: the worker goes on after the host time of
issuing them (ISSUE_S: an MSM is ~20 launches and a scan, 0.25-0.35 ms of idle stream
before each MSM in the 1-worker logs, docs/validation.md; one launch ~20 us) while the
work waits its turn. A copy from pageable memory returns once the host has staged it
(its own duration from the moment it is issued, while the queue drains); a copy to the
host (CuPy's get() synchronizes the stream) returns when it is done. The worker meets the
others before it queues anything (`queues_in_order`), so the queue takes work in the
order it was issued: two workers issuing at once interleave, and each one's result copy
waits behind the other's kernels -- why two workers without a mutex fall into phase.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import simpy

from cuzk_sim.model.device import SimDevice
from cuzk_sim.model.fast_state import FastRun
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import Worker, join, meet
from cuzk_sim.results.sim_result import Span
from cuzk_sim.steps.base import Name, PlanError, Seconds, StepIn, StepKind, WorkSize

ISSUE_S = {"msm_g1": 3.0e-4, "msm_g2": 3.0e-4}
LAUNCH_S = 2.0e-5  # any other kernel step, a page-locked upload

Parts = tuple[tuple[str, float], ...]  # a merged kernel run: (kernel name, seconds) each


@dataclass(frozen=True)
class Kernel:
    """Device work. kind selects the cost model of the calibration profile (`ntt`,
    `msm_g1`, `msm_g2`, `batch_add_g1`, `pointwise`, ...); size is elements or points.
    fills: as `Copy.fills`, the persistent per-device buffer this kernel fills (e.g. the
    precomputed tables built from a resident key): charged by the partition that fills
    the buffer on its device, skipped by the later ones there.
    seconds: measured duration (a captured trace): it overrides the profile's price, so
    `kind` need not be one the profile prices.
    zeros / ones: of an MSM's `size` scalars, how many the plan expects to be 0 and 1 (the
    rest random): the witness shape (gpu/witness_shape.py) as our prover's dry run records
    it; the profile prices each part (`zero_share` / `one_share` of the kind, profiles
    docs). None (every plan of the cuzk builder, our prover's dense shape): all random."""

    name: str
    kind: str
    size: int
    stream: str = "compute"
    fills: str | None = None
    seconds: float | None = None
    zeros: int | None = None
    ones: int | None = None
    op: Literal["kernel"] = "kernel"

    def __post_init__(self) -> None:
        if (self.zeros is None) != (self.ones is None):
            raise PlanError(
                f"kernel {self.name!r}: zeros and ones are given together or not at all"
            )
        if self.zeros is not None and self.zeros + self.ones > self.size:  # type: ignore[operator]
            raise PlanError(
                f"kernel {self.name!r}: zeros + ones ({self.zeros} + {self.ones}) exceed its "
                f"size {self.size}"
            )


class KernelIn(StepIn):
    op: Literal["kernel"]
    name: Name
    kind: Name
    size: WorkSize
    stream: Name = "compute"
    fills: Name | None = None
    seconds: Seconds | None = None
    zeros: WorkSize | None = None
    ones: WorkSize | None = None


def price(s: Kernel, profile: Any, where: str) -> float:
    """A measured `seconds` (a captured plan) overrides the profile's price."""
    if s.seconds is not None:
        return s.seconds
    if s.zeros is not None:
        return profile.kernel_seconds(s.kind, s.size, where, (s.zeros, s.ones))
    return profile.kernel_seconds(s.kind, s.size, where)


def queues_in_order(dev: SimDevice, s: Any) -> bool:
    """Whether step `s` goes into `dev`'s one in-order queue (the worker meets the others
    first, so that the queue sees the workers' work in the order it was issued)."""
    if not dev.shared_stream:
        return False
    return s.op == "kernel" or (s.op == "copy" and s.stream not in dev.concurrent_streams)


def already_filled(w: Worker, buffer: str) -> bool:
    """Whether persistent per-device `buffer` of the worker's device was filled by an
    earlier partition (so a `copy` or `kernel` with `fills` is skipped); if not, this
    partition fills it now, and its later steps that fill the same buffer run too (a copy,
    then the kernel that builds on it). A buffer that is not live (its allocation fell
    back) is not filled: the step is charged."""
    dev = w.device
    buf = dev.memory.live.get((w.device_owner(), buffer))
    if buf is None:
        return False
    by = (w.name, w.partitions)
    if buf.filled_by is None:
        buf.filled_by = by
    return buf.filled_by != by


def kernel(m: Machine, w: Worker, s: Kernel, seconds: float, parts: Parts | None = None) -> None:
    """Queue the kernel on the compute engine from the worker's clock (no yield)."""
    dev = w.device
    if s.fills is not None and already_filled(w, s.fills):
        return  # built on the device by an earlier partition: not run again
    if s.stream == "compute":
        start, end = dev.run_compute(w.t_ready, seconds)
        if dev.shared_stream:
            w.queued_until = end
            w.t_ready += ISSUE_S.get(s.kind, LAUNCH_S)
        else:
            w.t_ready = end
    else:
        ready = max(w.t_ready, w.streams.get(s.stream, 0.0))
        start, end = dev.run_compute(ready, seconds)
        w.streams[s.stream] = end
    if m.recorder.record:
        _spans(m, w, s, start, end, seconds, parts)


def _spans(
    m: Machine, w: Worker, s: Kernel, start: float, end: float, seconds: float, parts: Parts | None
) -> None:
    """One span per kernel, also of a merged run (its kernels back to back)."""
    spans, dev = m.recorder.spans, w.device.index
    if parts is None:
        spans.append(Span(w.name, dev, s.name, "kernel", start, end))
        return
    total = sum(t for _, t in parts)
    factor = seconds / total if total else 1.0  # jitter scaled the run as a whole here
    t = start
    for i, (name, part) in enumerate(parts):
        t_end = end if i == len(parts) - 1 else t + part * factor
        spans.append(Span(w.name, dev, name, "kernel", t, t_end))
        t = t_end


def step_kernel(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from join(m, w, s.stream)
    if queues_in_order(w.device, s):
        yield from meet(m, w)
    kernel(m, w, s, seconds, cp.parts[pc] if cp.parts else None)
    return pc + 1


# --- the fast handlers ---


def _inline(x: FastRun, pc: int) -> int:
    """`kernel` on the compute stream of a device with its own engines, inlined."""
    w, dev, t = x.w, x.dev, x.seconds[pc]
    start = w.t_ready if w.t_ready > dev.compute_free_at else dev.compute_free_at
    w.t_ready = dev.compute_free_at = start + t
    dev.compute_busy_s += t  # utilization (results/metrics.py), as SimDevice.run_compute
    return pc + 1


def _timed(x: FastRun, pc: int) -> int:
    kernel(x.m, x.w, x.steps[pc], x.seconds[pc], x.parts[pc])
    return pc + 1


def _waiting(x: FastRun, pc: int) -> Any:
    """The plain handler when it has something to wait for (a helper thread on its
    stream; the other workers, before it queues in order), else the time step alone."""
    w, s = x.w, x.steps[pc]
    if isinstance(w.streams.get(s.stream), simpy.Event) or (
        queues_in_order(x.dev, s) and w.t_ready > x.env.now
    ):
        return step_kernel(x.m, w, x.cp, pc, x.seconds[pc], x.part)
    return _timed(x, pc)


def fast(s: Kernel, pc: int, x: FastRun) -> Any:
    """Inlined when nothing can be waited for and the step needs no recording, no fill
    check and no in-order queue (exact: the same arithmetic as `kernel`)."""
    if (x.shared_cores and x.host_touching[pc]) or queues_in_order(x.dev, s):
        return _waiting
    if x.inline and s.stream == "compute" and s.fills is None:
        return _inline
    return _timed


def jitter_kind(s: Kernel) -> str:
    return f"kernel.{s.kind}"


KIND = StepKind(
    op="kernel",
    step=Kernel,
    schema=KernelIn,
    plain=step_kernel,
    fast=fast,
    price=price,
    jitter_kind=jitter_kind,
    fills=lambda s: s.fills,
    touches_host=lambda s: s.stream != "compute",
    merges_with=lambda prev, s: (
        prev.op == "kernel"
        and s.stream == "compute"
        and prev.stream == "compute"
        and s.fills is None
        and prev.fills is None
    ),
)
