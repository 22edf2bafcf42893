"""`copy`: a host<->device copy on a copy engine (or the one in-order queue)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import simpy

from cuzk_sim.model.fast_state import FastRun
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import Worker, join, meet
from cuzk_sim.results.sim_result import Span
from cuzk_sim.steps.base import Bytes, Direction, Name, Seconds, StepIn, StepKind
from cuzk_sim.steps.kernel import LAUNCH_S, already_filled, queues_in_order


@dataclass(frozen=True)
class Copy:
    """A host<->device copy. stream: copies on a stream other than `compute` are issued
    asynchronously (they overlap the worker's kernels) until a `sync` on that stream.
    fills: the persistent per-device buffer (an earlier `alloc`, persistent and per_device)
    this HtoD copy fills, e.g. a proving key kept on the device across partitions: it is
    charged only while that buffer has not been filled on this device yet (the first copy
    after the buffer is created); later partitions find it filled and skip the copy.
    Several steps may fill one buffer (a copy, then a `kernel` with `fills` that builds
    on it): the partition that reaches the first of them runs them all.
    seconds: measured duration (a captured trace): it overrides the profile's price."""

    name: str
    bytes: int
    direction: Direction = "HtoD"
    pinned: bool = False
    stream: str = "compute"
    fills: str | None = None
    seconds: float | None = None
    op: Literal["copy"] = "copy"


class CopyIn(StepIn):
    op: Literal["copy"]
    name: Name
    bytes: Bytes
    direction: Direction = "HtoD"
    pinned: bool = False
    stream: Name = "compute"
    fills: Name | None = None
    seconds: Seconds | None = None


def price(s: Copy, profile: Any, where: str) -> float:
    """A measured `seconds` (a captured plan) overrides the profile's price."""
    if s.seconds is not None:
        return s.seconds
    return profile.copy_seconds(s.bytes, s.pinned)


def returns_at_once(s: Copy) -> bool:
    """A copy the host does not wait for: page-locked to device, or device to device."""
    return s.direction == "DtoD" or (s.direction == "HtoD" and s.pinned)


def copy(m: Machine, w: Worker, s: Copy, seconds: float, parts: Any = None) -> None:
    """Queue the copy on its engine from the worker's clock (no yield); see kernel.py for
    the one in-order queue. A copy beside the queue (a stream of its own: one of the
    device's `concurrent_streams`, or any stream of a device without the shared queue)
    starts after the work its worker queued before it, and one from pageable memory
    holds its host until it ends (the real pipeline's streamed scalars: their uploads do
    not overlap the MSMs, docs/validation.md)."""
    dev = w.device
    if s.fills is not None and already_filled(w, s.fills):
        return  # the data is on the device since an earlier partition: no copy
    if s.stream == "compute":
        start, end = dev.run_copy(s.direction, w.t_ready, seconds)
        if dev.shared_stream:
            w.queued_until = end
        if not dev.shared_stream or s.direction == "DtoH":
            w.t_ready = end
        elif returns_at_once(s):
            w.t_ready += LAUNCH_S
        else:  # pageable: the host stages it while the queue drains, then goes on
            w.t_ready += seconds
    else:
        ready = max(w.t_ready, w.streams.get(s.stream, 0.0))
        beside = not dev.shared_stream or s.stream in dev.concurrent_streams
        if dev.shared_stream and beside and w.queued_until > ready:
            # our prover issues it on its own stream after an event on the in-order queue
            # (gpu/device.py `_issue_htod`: side.wait_event(current.record())): it starts
            # once the work this worker queued before it has ended
            ready = w.queued_until
        start, end = dev.run_copy(s.direction, ready, seconds, s.stream)
        w.streams[s.stream] = end
        if beside and s.direction == "HtoD" and not s.pinned:
            # from pageable memory the driver stages it through its own page-locked
            # buffers: cudaMemcpyAsync returns once the last piece is staged, so the
            # host issues nothing else until then (CUDA's API sync behaviour)
            w.t_ready = end
    if m.recorder.record:
        m.recorder.spans.append(Span(w.name, dev.index, s.name, "copy", start, end))


def step_copy(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from join(m, w, s.stream)
    if queues_in_order(w.device, s):
        yield from meet(m, w)
    copy(m, w, s, seconds)
    return pc + 1


# --- the fast handlers ---


def _timed(x: FastRun, pc: int) -> int:
    copy(x.m, x.w, x.steps[pc], x.seconds[pc])
    return pc + 1


def _waiting(x: FastRun, pc: int) -> Any:
    """The plain handler when it has something to wait for, else the time step alone."""
    w, s = x.w, x.steps[pc]
    if isinstance(w.streams.get(s.stream), simpy.Event) or (
        queues_in_order(x.dev, s) and w.t_ready > x.env.now
    ):
        return step_copy(x.m, w, x.cp, pc, x.seconds[pc], x.part)
    return _timed(x, pc)


def fast(s: Copy, pc: int, x: FastRun) -> Any:
    """A time step that never yields unless a helper thread may hold its stream or it
    queues in order behind the other workers."""
    if (x.shared_cores and x.host_touching[pc]) or queues_in_order(x.dev, s):
        return _waiting
    return _timed


def jitter_kind(s: Copy) -> str:
    if s.direction != "HtoD":
        return "copy.dtoh"
    return "copy.pinned" if s.pinned else "copy.pageable"


KIND = StepKind(
    op="copy",
    step=Copy,
    schema=CopyIn,
    plain=step_copy,
    fast=fast,
    price=price,
    jitter_kind=jitter_kind,
    fills=lambda s: s.fills,
    touches_host=lambda s: s.stream != "compute",
)
