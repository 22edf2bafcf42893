"""`alloc`: allocate a named device buffer, or pin a host one.

Out of memory: an `alloc` with a `fallback` jumps to its label and logs like cuzk
(`<note>=fallback err=2`, or `=skip_vram` / `=skip_ram` when the memory-aware check said
no); without one the worker panics: its partition fails, its non-persistent buffers are
freed (unwinding), its mutexes released.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from cuzk_sim.io.units import format_size
from cuzk_sim.model.fast_state import MEET, FastRun, at_instant, plain_adapter
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import PANIC, Worker, meet, settle
from cuzk_sim.results.sim_result import OomEvent
from cuzk_sim.steps.base import Allocator, Bytes, Memory, Name, StepIn, StepKind, Text

PROCESS_OWNER = "(process)"  # the owner of persistent pinned host buffers (alloc_host)
FALLBACK_LEDGERS = 16  # fallback OOM events that keep a copy of the ledger (see alloc_failed)


@dataclass(frozen=True)
class Alloc:
    """Allocate a named device buffer.

    allocator: `sync` (cudaMalloc: fails at once), `async` (cudaMallocAsync pool),
    `caching` (CuPy/PyTorch-style pool). persistent: never freed by the plan (e.g. the
    per-GPU `d_a` cache); with `per_device` it is allocated once per device and shared by
    every worker there. margin: memory-aware allocation — succeed only if the free bytes
    (cudaMemGetInfo) are at least bytes + margin. fallback: label to continue at on
    failure instead of panicking. note: a cuzk-style log tag for this step.
    memory: `device` (VRAM, the default) or `host_pinned` (page-locked host memory,
    cudaHostAlloc / cudaHostRegister): charged to the host RAM budget, fails at once when
    the budget cannot hold it, and costs the profile's registration time; `allocator`
    and `per_device` do not apply to it; `margin` is checked against the host's free bytes;
    a persistent one belongs to the process: pinned once, shared by every worker (the
    proving key, pinned once per key).
    """

    buffer: str
    bytes: int
    allocator: Allocator = "sync"
    persistent: bool = False
    per_device: bool = False
    margin: int | None = None
    fallback: str | None = None
    note: str = ""
    memory: Memory = "device"
    op: Literal["alloc"] = "alloc"


class AllocIn(StepIn):
    op: Literal["alloc"]
    buffer: Name
    bytes: Bytes
    allocator: Literal["sync", "async", "caching"] = "sync"
    persistent: bool = False
    per_device: bool = False
    margin: Bytes | None = None
    fallback: Name | None = None
    note: Text = ""
    memory: Memory = "device"


# --- pricing ---


def price(s: Alloc, profile: Any, where: str) -> float:
    """Page-locking a host buffer (paid when the pin succeeds); a device buffer's driver
    call is priced by `driver`."""
    return profile.pin_seconds(s.bytes) if s.memory == "host_pinned" else 0.0


def driver(s: Alloc, profile: Any, sync_live: dict[str, int]) -> float:
    """The host seconds of a sync device buffer's cudaMalloc; remembers its size for the
    cudaFree that releases it (`free.driver`)."""
    if s.memory != "host_pinned" and s.allocator == "sync" and not s.persistent:
        sync_live[s.buffer] = s.bytes
        return profile.driver_seconds("alloc", s.bytes)
    return 0.0


# --- acting, at the instant `now` the caller has reached ---


def alloc_device(m: Machine, w: Worker, s: Alloc, pc: int, cp: Any, part: str, now: float) -> int:
    """A device allocation at `now`: the next step's index, or PANIC."""
    mem = w.device.memory
    owner = w.device_owner() if s.per_device else w.name
    if (owner, s.buffer) in mem.live:
        if s.persistent:
            return pc + 1  # the cache hit of a persistent buffer
        m.leaks += 1  # allocated again while still live: the old one is leaked
        mem.rename(owner, s.buffer, f"{s.buffer}#leak{m.leaks}")
    reason = ""
    got = None
    if s.margin is not None and mem.free < s.bytes + s.margin:
        reason = "skip_vram"
    else:
        got = mem.try_alloc(owner, s.buffer, s.bytes, s.allocator, s.persistent)
        if got is None:
            reason = "alloc"
    if not reason:
        tl = m.recorder.timeline
        if tl is not None and got is not None:  # the bounded recording
            tl.vram_change(now, w.device.index, mem.used, s.buffer, got.bytes, pc)
        if m.recorder.record:
            m.recorder.samples.append((now, w.device.index, mem.used))
        if s.per_device and s.persistent:  # a per-GPU cache, allocated once: say so, like cuzk
            tag = s.note or s.buffer
            m.log(f"{tag} allocated {s.bytes >> 20} MiB on gpu {w.device.index}", now)
        return pc + 1
    panic = (
        f"CUDA error 2: out of memory allocating {s.buffer} "
        f"({format_size(s.bytes)}, free {format_size(mem.free)})"
    )
    return alloc_failed(
        m, w, s, cp, part, now, reason, mem.free, s.allocator, mem.ledger, "device", panic
    )


def alloc_host(m: Machine, w: Worker, s: Alloc, pc: int, cp: Any, part: str, seconds: float) -> int:
    """A pinned host allocation at SimPy time: next step index, or PANIC. A persistent one
    belongs to the process (PROCESS_OWNER): pinned once, the hit of every worker after (host
    memory is the process's: a key pinned once per key serves all its workers)."""
    ram, now = m.ram, m.env.now
    owner = w.host_owner(PROCESS_OWNER) if s.persistent else w.name
    if (owner, s.buffer) in ram.live:
        if s.persistent:  # the process's: usable once its pinning has ended
            ready = m.pinned_at.get(w.host_owner(s.buffer), now)
            w.t_ready = ready if ready > now else now
            return pc + 1
        m.leaks += 1
        ram.rename(owner, s.buffer, f"{s.buffer}#leak{m.leaks}")
    reason = ""
    if s.margin is not None and ram.free < s.bytes + s.margin:
        reason = "skip_ram"
    elif not ram.try_pin(owner, s.buffer, s.bytes, s.persistent):
        reason = "alloc"
    if not reason:
        w.t_ready = now + seconds  # page-locking the buffer
        if s.persistent:
            m.pinned_at[w.host_owner(s.buffer)] = w.t_ready
        return pc + 1
    panic = (
        f"out of host memory pinning {s.buffer} "
        f"({format_size(s.bytes)}, budget free {format_size(ram.free)})"
    )
    return alloc_failed(
        m, w, s, cp, part, now, reason, ram.free, "pinned", ram.ledger, "host", panic
    )


def pin_before_run(m: Machine, cp: Any, workers: list[Worker]) -> float:
    """The setup phase of a run: page-lock the plan's persistent pinned host buffers (the
    process's: the proving key, pinned once per key and process) before the first proof,
    as the real pipeline does (gpu-run makes and pins its key before its clock starts)
    and as a cuzk daemon loads its SRS once at start. One daemon pins them once for all
    its workers; workers that are separate processes pin one copy each (their
    `host_owner`). Their `alloc` steps then find them live and ready (alloc_host's hit),
    so the page-locking is not in any partition and not in s/proof. Returns the seconds
    it took (the run reports them as its setup, `setup_s`; the processes pin one after
    another). A buffer the host budget cannot hold (or whose margin it cannot give) is
    left to its step, which fails there as before."""
    ram, seconds = m.ram, 0.0
    owners = {w.host_owner(PROCESS_OWNER): w for w in workers}.values()
    for s, t in zip(cp.steps, cp.seconds, strict=True):
        if s.op != "alloc" or s.memory != "host_pinned" or not s.persistent:
            continue
        for w in owners:
            owner = w.host_owner(PROCESS_OWNER)
            if (owner, s.buffer) in ram.live:
                continue  # another kind's plan pinned the same key
            if s.margin is not None and ram.free < s.bytes + s.margin:
                continue
            if ram.try_pin(owner, s.buffer, s.bytes, True):
                m.pinned_at[w.host_owner(s.buffer)] = m.env.now
                seconds += t
    return seconds


def alloc_failed(
    m: Machine,
    w: Worker,
    s: Alloc,
    cp: Any,
    part: str,
    now: float,
    reason: str,
    free: int,
    allocator: str,
    ledger: Callable[[], dict],
    where: str,
    panic: str,
) -> int:
    """Record the OOM event, then take the step's fallback (logged like cuzk:
    `<note>=fallback err=2`, or `=skip_vram` / `=skip_ram` when the memory-aware check said
    no) or panic when it has none. Shared by device and pinned-host allocations.

    The event keeps a copy of the ledger (live buffers by owner) for every panic and for
    the first FALLBACK_LEDGERS fallbacks of the run; later fallbacks record `{}`, so a plan
    that falls back at every partition cannot grow memory by a ledger copy each time."""
    fatal = s.fallback is None
    keep = fatal or m.fallback_ledgers < FALLBACK_LEDGERS
    if not fatal and keep:
        m.fallback_ledgers += 1
    m.recorder.oom_events.append(
        OomEvent(
            time_s=now,
            device=w.device.index,
            worker=w.name,
            partition=part,
            buffer=s.buffer,
            requested_bytes=s.bytes,
            free_bytes=free,
            allocator=allocator,
            fatal=fatal,
            reason=reason,
            ledger=ledger() if keep else {},
            where=where,
        )
    )
    if fatal:
        m.log(f"worker {w.name} panicked: {panic} partition {part}", now)
        return PANIC
    tag = s.note or f"alloc_{s.buffer}"
    outcome = reason if reason.startswith("skip_") else "fallback err=2"
    m.log(f"CUZK_TIMING: {tag}={outcome}", now)
    return cp.labels[s.fallback]


# --- the plain handler ---


def step_alloc(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from meet(m, w)
    if s.memory == "host_pinned":  # host memory: shared with the synthesizers
        return alloc_host(m, w, s, pc, cp, part, seconds)
    settle(m, w, m.env.now)
    return alloc_device(m, w, s, pc, cp, part, m.env.now)


# --- the fast handlers ---


def _host_now(x: FastRun, pc: int, now: float) -> int:
    return alloc_host(x.m, x.w, x.steps[pc], pc, x.cp, x.part, x.seconds[pc])


def _fast_host(x: FastRun, pc: int) -> Any:
    """The plain handler, inlined: meet, then pin (never stamped: host memory is shared
    with the synthesizers)."""
    return at_instant(x, pc, _host_now, stamp=False)


def _device_at(x: FastRun, pc: int, now: float) -> int:
    x.settle(now)
    return alloc_device(x.m, x.w, x.steps[pc], pc, x.cp, x.part, now)


def _fast_device(x: FastRun, pc: int) -> Any:
    """Skipped in a replayed section; stamped at the worker's clock in a critical section;
    else the plain handler."""
    if x.replay is not None:
        peak = x.replay_peak
        return pc + 1 if peak is None or pc != peak[0] else x.replayed(pc)
    w = x.w  # at_instant(x, pc, _device_at), inlined: the hottest shared-state step
    if x.in_section:
        return _device_at(x, pc, w.t_ready)
    if w.t_ready > x.env.now:
        x.act = _device_at
        return MEET
    return _device_at(x, pc, x.env.now)


def fast(s: Alloc, pc: int, x: FastRun) -> Any:
    if s.memory == "host_pinned":
        return _fast_host if x.inline else plain_adapter(step_alloc)
    return _fast_device


def _cache(s: Alloc) -> str | None:
    return s.buffer if s.persistent and s.per_device and s.memory == "device" else None


KIND = StepKind(
    op="alloc",
    step=Alloc,
    schema=AllocIn,
    plain=step_alloc,
    fast=fast,
    price=price,
    driver=driver,
    jump=lambda s: s.fallback,
    memory=lambda s: "host" if s.memory == "host_pinned" else "device",
    makes_cache=_cache,
    touches_host=lambda s: s.memory == "host_pinned",
)
