"""`free`: release a device buffer, or unpin a host one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cuzk_sim.model.fast_state import FastRun, at_instant, plain_adapter
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import Worker, meet, settle
from cuzk_sim.steps.base import Memory, Name, StepIn, StepKind


@dataclass(frozen=True)
class Free:
    """Free a buffer. Freeing a buffer that is not live is a no-op (like cudaFree(nullptr)),
    so a fallback path may free what its failed branch may or may not have allocated;
    freeing a persistent buffer is a no-op too. memory: where the buffer lives, as in its
    `alloc` (`host_pinned`: cudaFreeHost / cudaHostUnregister)."""

    buffer: str
    memory: Memory = "device"
    op: Literal["free"] = "free"


class FreeIn(StepIn):
    op: Literal["free"]
    buffer: Name
    memory: Memory = "device"


def driver(s: Free, profile: Any, sync_live: dict[str, int]) -> float:
    """The host seconds of cudaFree of a sync buffer (priced by its size)."""
    if s.buffer in sync_live:
        return profile.driver_seconds("free", sync_live[s.buffer])
    return 0.0


def free_device(m: Machine, w: Worker, s: Any, now: float, pc: int = -1) -> None:
    """Release a live non-persistent buffer at `now` (else a no-op: cudaFree(nullptr), or
    a persistent buffer, never freed)."""
    mem = w.device.memory
    buf = mem.live.get((w.name, s.buffer))
    if buf is not None and not buf.persistent:
        mem.release(w.name, s.buffer)
        tl = m.recorder.timeline
        if tl is not None:
            tl.vram_change(now, w.device.index, mem.used, s.buffer, -buf.bytes, pc)
        if m.recorder.record:
            m.recorder.samples.append((now, w.device.index, mem.used))


def step_free(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    if s.memory == "host_pinned":
        yield from meet(m, w)
        m.ram.unpin(w.name, s.buffer)
        return pc + 1
    if w.t_ready >= m.env.now:  # queued at the worker's time: no wake-up needed
        w.device.memory.free_at(w.t_ready, w.name, s.buffer)
        return pc + 1
    settle(m, w, m.env.now)
    free_device(m, w, s, m.env.now, pc)
    return pc + 1


# --- the fast handlers ---


def _unpin(x: FastRun, pc: int, now: float) -> int:
    x.m.ram.unpin(x.w.name, x.steps[pc].buffer)
    return pc + 1


def _fast_host(x: FastRun, pc: int) -> Any:
    """The plain handler, inlined: meet, then unpin."""
    return at_instant(x, pc, _unpin, stamp=False)


def _fast_device(x: FastRun, pc: int) -> int:
    """Skipped in a replayed section; in a critical section freed at once at the worker's
    clock (no one else can touch the device's memory before it); else the plain handler
    (which never waits: a worker behind the clock frees at the clock)."""
    if x.replay is not None:
        peak = x.replay_peak
        return pc + 1 if peak is None or pc != peak[0] else x.replayed(pc)
    w, s = x.w, x.steps[pc]
    if x.in_section:
        x.settle(w.t_ready)
        free_device(x.m, w, s, w.t_ready, pc)
        return pc + 1
    if w.t_ready >= x.env.now:
        x.mem.free_at(w.t_ready, w.name, s.buffer)  # no wake-up needed
        return pc + 1
    now = x.env.now
    x.settle(now)
    free_device(x.m, w, s, now, pc)
    return pc + 1


def fast(s: Free, pc: int, x: FastRun) -> Any:
    if s.memory == "host_pinned":
        return _fast_host if x.inline else plain_adapter(step_free)
    return _fast_device


KIND = StepKind(
    op="free",
    step=Free,
    schema=FreeIn,
    plain=step_free,
    fast=fast,
    driver=driver,
    memory=lambda s: "host" if s.memory == "host_pinned" else "device",
    touches_host=lambda s: s.memory == "host_pinned",
)
