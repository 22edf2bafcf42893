"""The plain plan interpreter: one small handler per step kind, over a `Machine`.

A worker keeps its own clock `t_ready` (when its next step may issue) and one per
stream. Steps fall in three groups:

- time steps (`kernel`, `copy`, `cpu` while the host's cores cannot be oversubscribed)
  advance those clocks arithmetically against the device's FIFO engines; they cannot
  interact with other workers except through the engines, so they never yield;
- shared-state steps (`alloc`, `lock`, `unlock`, a `sync` whose pool gives bytes back,
  host-memory steps) first *meet* the others: one SimPy timeout brings the simulation
  clock up to the worker's, then they act at that instant. A device `free` is queued on
  the device at the worker's time and applied before anyone next reads the ledger
  (`DeviceMemory.settle`): so at equal times frees come before allocations, whatever
  order the workers wake in (a model rule, not a shortcut);
- under shared cores, a `cpu` step goes through the processor-sharing model
  (model/cores.py): a `host` step waits from the worker's time; a helper-thread step runs
  as a small SimPy process whose end a later step on its stream waits for.

Out of memory: an `alloc` with a `fallback` jumps to its label and logs like cuzk
(`<note>=fallback err=2`, or `=skip_vram` / `=skip_ram` when the memory-aware check
said no); without one the worker panics: its partition fails, its non-persistent
buffers are freed (unwinding), its mutexes released.

`run_plain` runs a partition with these handlers alone — the reference every speed-up of
model/fast.py is checked against. The fast layer calls the same functions.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import simpy

from cuzk_sim.model.compiled import CompiledPlan, Parts
from cuzk_sim.model.gpu import Device
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.mutex import Mutex
from cuzk_sim.plan import Alloc, Copy, Cpu, Kernel, Step
from cuzk_sim.result import OomEvent, Span
from cuzk_sim.units import format_size

PROCESS_OWNER = "(process)"  # the owner of persistent pinned host buffers (alloc_host)
FALLBACK_LEDGERS = 16  # fallback OOM events that keep a copy of the ledger (see alloc_failed)
PANIC = -1  # what a handler returns instead of the next step when the worker panics

Handler = Callable[..., Generator[object, object, int]]


@dataclass
class Worker:
    name: str
    device: Device  # where its GPU work runs (the routing policy's choice)
    assigned: int = 0  # the GPU the engine assigned it to: its per-device mutex
    t_ready: float = 0.0
    streams: dict[str, float | simpy.Event] = field(default_factory=dict)
    held: list[tuple[str, Mutex, float]] = field(default_factory=list)
    partitions: int = 0  # partitions begun (tells this partition from the worker's others)
    # on a device with one in-order queue: when the last work this worker queued ends (its
    # host runs ahead of it; a sync on its stream, or the partition's end, waits for it)
    queued_until: float = 0.0

    def begin(self, now: float) -> None:
        """A new partition: the worker's clock is now; its streams are idle."""
        self.t_ready = now
        self.streams = {}
        self.partitions += 1
        self.queued_until = now

    def drain(self) -> None:
        """Wait (on the worker's clock) for the work it queued (a sync, the partition end)."""
        if self.queued_until > self.t_ready:
            self.t_ready = self.queued_until


# --- time steps: (machine, worker, step, seconds, parts) -> None, no yield ---


# Issuing into one in-order queue (a device with `shared_stream`: our prover on CUDA's
# legacy default stream). A kernel launch, and a copy from page-locked memory
# (cudaMemcpyAsync), return to the host at once: the worker goes on after the host time of
# issuing them (ISSUE_S: an MSM is ~20 launches and a scan, 0.25-0.35 ms of idle stream
# before each MSM in the 1-worker logs, docs/validation.md; one launch ~20 us) while the
# work waits its turn. A copy from pageable memory returns once the host has staged it
# (its own duration from the moment it is issued, while the queue drains); a copy to the
# host (CuPy's get() synchronizes the stream) returns when it is done. The worker meets the
# others before it queues anything (`queues_in_order`), so the queue takes work in the
# order it was issued: two workers issuing at once interleave, and each one's result copy
# waits behind the other's kernels -- why two workers without a mutex fall into phase.
ISSUE_S = {"msm_g1": 3.0e-4, "msm_g2": 3.0e-4}
LAUNCH_S = 2.0e-5  # any other kernel step, a page-locked upload


def queues_in_order(dev: Device, s: Step) -> bool:
    """Whether step `s` goes into `dev`'s one in-order queue (the worker meets the others
    first, so that the queue sees the workers' work in the order it was issued)."""
    if not dev.shared_stream:
        return False
    return s.op == "kernel" or (s.op == "copy" and s.stream not in dev.concurrent_streams)


def returns_at_once(s: Copy) -> bool:
    """A copy the host does not wait for: page-locked to device, or device to device."""
    return s.direction == "DtoD" or (s.direction == "HtoD" and s.pinned)


def kernel(m: Machine, w: Worker, s: Kernel, seconds: float, parts: Parts | None = None) -> None:
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
        _kernel_spans(m, w, s, start, end, seconds, parts)


def _kernel_spans(
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


def copy(m: Machine, w: Worker, s: Copy, seconds: float, parts: Parts | None = None) -> None:
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
        start, end = dev.run_copy(s.direction, ready, seconds, s.stream)
        w.streams[s.stream] = end
    if m.recorder.record:
        m.recorder.spans.append(Span(w.name, dev.index, s.name, "copy", start, end))


def already_filled(w: Worker, buffer: str) -> bool:
    """Whether persistent per-device `buffer` of the worker's device was filled by an
    earlier partition (so a `copy` or `kernel` with `fills` is skipped); if not, this
    partition fills it now, and its later steps that fill the same buffer run too (a copy,
    then the kernel that builds on it). A buffer that is not live (its allocation fell
    back) is not filled: the step is charged."""
    dev = w.device
    buf = dev.memory.live.get((f"gpu{dev.index}", buffer))
    if buf is None:
        return False
    by = (w.name, w.partitions)
    if buf.filled_by is None:
        buf.filled_by = by
    return buf.filled_by != by


def cpu(m: Machine, w: Worker, s: Cpu, seconds: float, parts: Parts | None = None) -> None:
    """A CPU step at full speed (the host's cores cannot be oversubscribed)."""
    if s.stream == "host":
        start = w.t_ready
        w.t_ready = end = start + seconds
    else:
        start = max(w.t_ready, w.streams.get(s.stream, 0.0))
        w.streams[s.stream] = end = start + seconds
    m.cores.work_s += seconds * s.threads  # host-core utilization (metrics.py)
    if m.recorder.record:
        m.recorder.spans.append(Span(w.name, -1, s.name, "cpu", start, end))


TIME_STEPS: dict[str, Callable[..., None]] = {"kernel": kernel, "copy": copy, "cpu": cpu}


# --- meeting the other workers ---


def meet(m: Machine, w: Worker) -> Generator[simpy.Event, object, None]:
    """Bring the simulation clock up to the worker's (one timeout, if it is ahead)."""
    env = m.env
    if w.t_ready > env.now:
        m.events += 1
        yield env.timeout(w.t_ready - env.now)


def settle(m: Machine, w: Worker, now: float) -> None:
    """Apply the device's frees due by `now` before its ledger is read."""
    mem = w.device.memory
    if mem.pending_frees:
        mem.settle(now, settle_sink(m, mem))


def settle_sink(m: Machine, mem) -> list | None:
    """Where DeviceMemory.settle reports deferred frees: the full recording's samples,
    the bounded recording (which re-reads the ledger), both, or nowhere."""
    rec = m.recorder
    samples = rec.samples if rec.record else None
    if rec.timeline is None:
        return samples
    return rec.timeline.settle_sink(mem, samples)


def stream_end(m: Machine, w: Worker, stream: str) -> Generator[simpy.Event, object, None]:
    """Make `w.streams[stream]` a time: wait (from the worker's time) for a helper-thread
    CPU step still running on it (an event whose value is its end time)."""
    proc = w.streams.get(stream)
    if isinstance(proc, simpy.Event):
        env = m.env
        if not proc.processed and w.t_ready > env.now:
            m.events += 1
            yield env.timeout(w.t_ready - env.now)
        end = proc.value if proc.processed else (yield proc)
        w.streams[stream] = end


# --- CPU work on shared cores ---


def cpu_shared(
    m: Machine, w: Worker, s: Cpu, seconds: float, without_process: bool = False
) -> Generator[simpy.Event, object, None]:
    """A CPU step through the processor-sharing model. A `host` step waits from the
    worker's time; a helper-thread step runs beside it until a later step on its stream
    joins it. without_process (a fast-layer switch): when the stream's previous work has
    a known end, the step joins the cores at its start by a timer, without a process."""
    env, rec = m.env, m.recorder
    m.events += 1
    if s.stream == "host":
        start = w.t_ready
        w.t_ready = yield m.cores.run(seconds, s.threads, start)
        if rec.record:
            rec.spans.append(Span(w.name, -1, s.name, "cpu", start, w.t_ready))
        return
    prev = w.streams.get(s.stream, 0.0)
    if without_process and not isinstance(prev, simpy.Event):
        start = max(prev, w.t_ready)
        ev = m.cores.run(seconds, s.threads, start)
        if rec.record:
            name, track = s.name, w.name
            ev.callbacks.append(
                lambda e: rec.spans.append(Span(track, -1, name, "cpu", start, e.value))
            )
        w.streams[s.stream] = ev
    else:
        w.streams[s.stream] = env.process(_cpu_helper(m, w, s, prev, w.t_ready, seconds))


def _cpu_helper(
    m: Machine, w: Worker, s: Cpu, prev: float | simpy.Event, ready: float, seconds: float
) -> Generator[simpy.Event, object, float]:
    """After the stream's previous work and the worker's issue time, run on the shared
    cores; returns its end time."""
    env, cores = m.env, m.cores  # the cores of its issue (a daemon restart brings new ones)
    if isinstance(prev, simpy.Event):
        prev = prev.value if prev.processed else (yield prev)
    start = max(ready, prev)
    if start > env.now:
        yield env.timeout(start - env.now)
    yield cores.run(seconds, s.threads)
    if m.recorder.record:
        m.recorder.spans.append(Span(w.name, -1, s.name, "cpu", start, env.now))
    return env.now


# --- memory, at the instant `now` the caller has reached ---


def alloc_device(
    m: Machine, w: Worker, s: Alloc, pc: int, cp: CompiledPlan, part: str, now: float
) -> int:
    """A device allocation at `now`: the next step's index, or PANIC."""
    mem = w.device.memory
    owner = f"gpu{w.device.index}" if s.per_device else w.name
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


def free_device(m: Machine, w: Worker, s: Step, now: float, pc: int = -1) -> None:
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


def alloc_host(
    m: Machine, w: Worker, s: Alloc, pc: int, cp: CompiledPlan, part: str, seconds: float
) -> int:
    """A pinned host allocation at SimPy time: next step index, or PANIC. A persistent one
    belongs to the process (PROCESS_OWNER): pinned once, the hit of every worker after (host
    memory is the process's: a key pinned once per key serves all its workers)."""
    ram, now = m.ram, m.env.now
    owner = PROCESS_OWNER if s.persistent else w.name
    if (owner, s.buffer) in ram.live:
        if s.persistent:  # the process's: usable once its pinning has ended
            ready = m.pinned_at.get(s.buffer, now)
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
            m.pinned_at[s.buffer] = w.t_ready
        return pc + 1
    panic = (
        f"out of host memory pinning {s.buffer} "
        f"({format_size(s.bytes)}, budget free {format_size(ram.free)})"
    )
    return alloc_failed(
        m, w, s, cp, part, now, reason, ram.free, "pinned", ram.ledger, "host", panic
    )


def alloc_failed(
    m: Machine,
    w: Worker,
    s: Alloc,
    cp: CompiledPlan,
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


# --- mutexes ---


def acquire(m: Machine, w: Worker, s: Step) -> Generator[simpy.Event, object, None]:
    """Take the step's mutex (FIFO), waiting if another worker holds it."""
    env = m.env
    mx = m.mutex(s.mutex, s.scope, w.assigned)
    asked = env.now
    ev = mx.acquire(env, w.name)
    if ev is not None:
        m.events += 1
        yield ev
        if m.recorder.record:
            m.recorder.spans.append(
                Span(w.name, w.device.index, f"wait {s.mutex}", "lock", asked, env.now)
            )
    w.held.append((s.mutex, mx, env.now))
    w.t_ready = env.now


def release(m: Machine, w: Worker, name: str) -> None:
    for i, (held_name, mx, since) in enumerate(w.held):
        if held_name == name:
            del w.held[i]
            mx.release(w.name)
            if m.recorder.record:
                m.recorder.spans.append(
                    Span(w.name, w.device.index, f"hold {name}", "lock", since, m.env.now)
                )
            return
    raise RuntimeError(f"worker {w.name} unlocks {name!r} which it does not hold")


def panic(m: Machine, w: Worker) -> None:
    """Unwind: free the worker's non-persistent buffers (device and pinned host), release
    its mutexes."""
    mem = w.device.memory
    for owner, buffer in [k for k, b in mem.live.items() if k[0] == w.name and not b.persistent]:
        mem.release(owner, buffer)
    for owner, buffer in [k for k in m.ram.live if k[0] == w.name]:
        m.ram.unpin(owner, buffer)
    for name, _, _ in list(w.held):
        release(m, w, name)
    if m.recorder.timeline is not None:
        m.recorder.timeline.resync(m.env.now, mem)
    if m.recorder.record:
        m.recorder.samples.append((m.env.now, w.device.index, mem.used))


# --- one handler per step kind: (m, w, cp, pc, seconds, part) -> next pc (or PANIC) ---


def _join(m: Machine, w: Worker, stream: str) -> Generator[simpy.Event, object, None]:
    if isinstance(w.streams.get(stream), simpy.Event):
        yield from stream_end(m, w, stream)


def step_kernel(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from _join(m, w, s.stream)
    if queues_in_order(w.device, s):
        yield from meet(m, w)
    kernel(m, w, s, seconds, cp.parts[pc] if cp.parts else None)
    return pc + 1


def step_copy(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from _join(m, w, s.stream)
    if queues_in_order(w.device, s):
        yield from meet(m, w)
    copy(m, w, s, seconds)
    return pc + 1


def step_cpu(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    if m.cores_shared:
        yield from cpu_shared(m, w, s, seconds)
    else:
        cpu(m, w, s, seconds)
    return pc + 1


def step_sync(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from _join(m, w, s.stream)
    ready = w.streams.get(s.stream, 0.0)
    if ready > w.t_ready:
        w.t_ready = ready
    if s.stream == "compute":
        w.drain()
    mem = w.device.memory
    if mem.syncs_matter:  # a pool that gives bytes back at a sync point: meet the others
        yield from meet(m, w)
        settle(m, w, m.env.now)
        if mem.on_sync() and m.recorder.timeline is not None:
            m.recorder.timeline.vram_change(m.env.now, w.device.index, mem.used, None, 0, pc)
    return pc + 1


def step_alloc(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from meet(m, w)
    if s.memory == "host_pinned":  # host memory: shared with the synthesizers
        return alloc_host(m, w, s, pc, cp, part, seconds)
    settle(m, w, m.env.now)
    return alloc_device(m, w, s, pc, cp, part, m.env.now)


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


def step_lock(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from meet(m, w)
    settle(m, w, m.env.now)
    if s.scope != "none":
        yield from acquire(m, w, s)
    return pc + 1


def step_unlock(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from meet(m, w)
    settle(m, w, m.env.now)
    if s.scope != "none":
        release(m, w, s.mutex)
    return pc + 1


def step_goto(m, w, cp, pc, seconds, part):
    return cp.labels[cp.steps[pc].label]
    yield  # a generator like the others


STEPS: dict[str, Handler] = {
    "kernel": step_kernel,
    "copy": step_copy,
    "cpu": step_cpu,
    "sync": step_sync,
    "alloc": step_alloc,
    "free": step_free,
    "lock": step_lock,
    "unlock": step_unlock,
    "goto": step_goto,
}


def driver_call(m: Machine, w: Worker, op: str, seconds: float) -> None:
    """The host time of a sync buffer's cudaMalloc (alloc) or cudaFree (free: it first
    waits for the device to be idle), before the step acts on memory. On a device whose
    kernels run asynchronously to the host (`shared_stream`) cudaMalloc waits for the
    device too: a device memory allocation is one of CUDA's implicit synchronizations (the
    programming guide's list), which the host's own kernels reach nowhere else."""
    t = w.t_ready if w.t_ready > m.env.now else m.env.now
    if op == "free" or w.device.shared_stream:
        idle = w.device.idle_at()
        t = idle if idle > t else t
    w.t_ready = t + seconds


def run_plain(
    m: Machine, w: Worker, cp: CompiledPlan, part: str, seconds: tuple[float, ...]
) -> Generator[object, object, bool]:
    """Run one partition's plan, step by step through the handlers; True when it
    completed, False when the worker panicked."""
    w.begin(m.env.now)
    steps, pc, n = cp.steps, 0, len(cp.steps)
    driver = cp.driver_s
    while pc < n:
        if driver is not None and driver[pc]:
            if steps[pc].op == "free" or w.device.shared_stream:  # sees what others queued
                yield from meet(m, w)
            driver_call(m, w, steps[pc].op, driver[pc])
        pc = yield from STEPS[steps[pc].op](m, w, cp, pc, seconds[pc], part)
        if pc == PANIC:
            yield from meet(m, w)  # a panic is seen by the others at its own time
            panic(m, w)
            return False
    w.drain()  # the partition is done when its queued GPU work is
    yield from meet(m, w)
    return True
