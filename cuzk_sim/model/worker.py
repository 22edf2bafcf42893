"""A GPU worker executing a plan, one small handler per step kind.

Time-only steps (kernel, copy, cpu, sync without a pool trim) advance the worker's own
clock `t_ready` arithmetically against the device's engine clocks; they cannot interact
with other workers except through those FIFO engines. Only steps that touch shared state
(alloc, free, lock, unlock, a trimming sync) first bring the SimPy clock up to the
worker's clock with one timeout — so consecutive kernels cost one event, not one each.

Out of memory: an `alloc` with a `fallback` jumps to its label and logs like cuzk
(`prestage_setup=fallback err=2`, or `=skip_vram` when the memory-aware check said no);
without one the worker panics: its partition fails, its non-persistent buffers are
freed (unwinding), its mutexes released. Host-pinned allocations (`memory =
"host_pinned"`) do the same against the host RAM budget, which synthesizers share: they
always run at SimPy time (the worker meets the others first) and cost the profile's
page-locking time.

CPU steps: when the host's cores can never be oversubscribed (checked when the engine
starts), a CPU step takes its calibrated time, arithmetically. Otherwise each one runs
through the processor-sharing model (model/cores.py): a `host` step at the worker's time,
a helper-thread step as a small SimPy process whose end a later `sync` waits for.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import simpy

from cuzk_sim.calibration import Profile
from cuzk_sim.input_errors import InputError
from cuzk_sim.model.allocator import NEVER
from cuzk_sim.model.gpu import Device
from cuzk_sim.model.mutex import Mutex
from cuzk_sim.plan import Alloc, Copy, Cpu, Free, Kernel, Label, Plan, Step
from cuzk_sim.result import OomEvent, Span
from cuzk_sim.units import format_size

if TYPE_CHECKING:
    from cuzk_sim.model.engine import Simulation


@dataclass(frozen=True)
class CompiledPlan:
    """A plan with every step priced by the profile and every label resolved."""

    plan: Plan
    steps: tuple[Step, ...]
    seconds: tuple[float, ...]
    labels: dict[str, int]
    exclusive: bool  # every device alloc/free runs under a mutex that excludes the others
    # per step: may it meet the host (a host memory step, a CPU step, or a step that reads
    # a stream a helper-thread CPU step may still hold)? The hot loop tests only this.
    host_touching: tuple[bool, ...] = ()


EXCLUSIVE_SCOPES = ("device", "global", "process")
JITTERED_OPS = ("kernel", "copy", "cpu")  # the durations timing jitter perturbs


def is_host_memory(s: Step) -> bool:
    return isinstance(s, (Alloc, Free)) and s.memory == "host_pinned"


def memory_steps_all_locked(steps: tuple[Step, ...], labels: dict[str, int]) -> bool:
    """Does every device alloc and free, on every path (fallbacks and gotos included), run
    while a device-, process- or global-scope mutex is held? Then, while a worker holds it,
    no other worker of that device can touch device memory. Host memory is shared with
    the synthesizers, whom no GPU mutex excludes: a host step inside a held mutex makes
    the answer no (its critical section could not be replayed from device state)."""
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        pc, held = todo.pop()
        while pc < len(steps) and (pc, held) not in seen:
            seen.add((pc, held))
            s = steps[pc]
            if is_host_memory(s):
                if held:
                    return False
            elif s.op in ("alloc", "free") and held == 0:
                return False
            if s.op == "lock" and s.scope in EXCLUSIVE_SCOPES:
                held += 1
            elif s.op == "unlock" and s.scope in EXCLUSIVE_SCOPES:
                held = max(held - 1, 0)
            if s.op == "alloc" and s.fallback is not None:
                todo.append((labels[s.fallback], held))
            pc = labels[s.label] if s.op == "goto" else pc + 1
    return True


def compile_plan(plan: Plan, profile: Profile, merge: bool = True) -> CompiledPlan:
    """Price every step and resolve labels to indices.

    merge: fold runs of consecutive compute-stream kernels into one step with the summed
    time — exact, because a blocking kernel starts where the previous one ended and no
    other worker can issue in between (there is no yield); off when a trace wants each
    kernel. Labels are dropped (a jump goes to the step after the label).
    """
    steps: list[Step] = []
    seconds: list[float] = []
    labels: dict[str, int] = {}
    for i, s in enumerate(plan.steps):
        where = f"plan {plan.name}: steps[{i}] ({s.op} {getattr(s, 'name', '')})"
        if isinstance(s, Label):
            labels[s.name] = len(steps)
            continue
        if isinstance(s, Kernel):
            t = profile.kernel_seconds(s.kind, s.size, where)
            prev = steps[-1] if steps else None
            if (
                merge
                and s.stream == "compute"
                and isinstance(prev, Kernel)
                and prev.stream == "compute"
                and len(steps) not in labels.values()
            ):
                seconds[-1] += t
                steps[-1] = Kernel(f"{prev.name}+{s.name}", prev.kind, prev.size)
                continue
        elif isinstance(s, Cpu):
            t = profile.cpu_seconds(s.kind, s.size, where)
        elif isinstance(s, Copy):
            t = profile.copy_seconds(s.bytes, s.pinned)
        elif isinstance(s, Alloc) and s.memory == "host_pinned":
            t = profile.pin_seconds(s.bytes)  # page-locking: paid when the pin succeeds
        else:
            t = 0.0
        steps.append(s)
        seconds.append(t)
    for s in steps:
        target = getattr(s, "fallback", None) or getattr(s, "label", None)
        if s.op in ("alloc", "goto") and target is not None and target not in labels:
            raise InputError(f"plan {plan.name}: jump to undefined label {target!r}")
    exclusive = memory_steps_all_locked(tuple(steps), labels)
    host_touching = tuple(
        is_host_memory(s)
        or s.op in ("cpu", "sync")
        or (s.op in ("kernel", "copy") and s.stream != "compute")
        for s in steps
    )
    return CompiledPlan(plan, tuple(steps), tuple(seconds), labels, exclusive, host_touching)


@dataclass
class Worker:
    name: str
    device: Device  # where its GPU work runs (the routing policy's choice)
    assigned: int = 0  # the GPU the engine assigned it to: its per-device mutex
    t_ready: float = 0.0
    streams: dict[str, float] = field(default_factory=dict)
    held: list[tuple[str, Mutex, float]] = field(default_factory=list)


# --- time-only steps: (sim, worker, step, seconds) -> None ---


def _kernel(sim: Simulation, w: Worker, s: Kernel, seconds: float) -> None:
    dev = w.device
    if s.stream == "compute":
        start, end = dev.run_compute(w.t_ready, seconds)
        w.t_ready = end
    else:
        ready = max(w.t_ready, w.streams.get(s.stream, 0.0))
        start, end = dev.run_compute(ready, seconds)
        w.streams[s.stream] = end
    if sim.record:
        sim.spans.append(Span(w.name, dev.index, s.name, "kernel", start, end))


def _copy(sim: Simulation, w: Worker, s: Copy, seconds: float) -> None:
    dev = w.device
    if s.stream == "compute":
        start, end = dev.run_copy(s.direction, w.t_ready, seconds)
        w.t_ready = end
    else:
        ready = max(w.t_ready, w.streams.get(s.stream, 0.0))
        start, end = dev.run_copy(s.direction, ready, seconds)
        w.streams[s.stream] = end
    if sim.record:
        sim.spans.append(Span(w.name, dev.index, s.name, "copy", start, end))


def _cpu(sim: Simulation, w: Worker, s: Cpu, seconds: float) -> None:
    if s.stream == "host":
        start = w.t_ready
        w.t_ready = end = start + seconds
    else:
        start = max(w.t_ready, w.streams.get(s.stream, 0.0))
        w.streams[s.stream] = end = start + seconds
    sim.cores.work_s += seconds * s.threads  # host-core utilization (metrics.py)
    if sim.record:
        sim.spans.append(Span(w.name, -1, s.name, "cpu", start, end))


TIME_STEPS: dict[str, Callable] = {"kernel": _kernel, "copy": _copy, "cpu": _cpu}


# --- shared-state steps, run at SimPy time == the worker's time ---


def _alloc(
    sim: Simulation, w: Worker, s: Alloc, pc: int, cp: CompiledPlan, part: str, now: float
) -> int:
    """Next step index, or -1 when the worker must panic. `now`: the step's time."""
    mem = w.device.memory
    owner = f"gpu{w.device.index}" if s.per_device else w.name
    key = (owner, s.buffer)
    if key in mem.live:
        if s.persistent:
            return pc + 1  # the cache hit of a persistent buffer
        sim.leaks += 1  # allocated again while still live: the old one is leaked
        mem.rename(owner, s.buffer, f"{s.buffer}#leak{sim.leaks}")
    reason = ""
    got = None
    if s.margin is not None and mem.free < s.bytes + s.margin:
        reason = "skip_vram"
    else:
        got = mem.try_alloc(owner, s.buffer, s.bytes, s.allocator, s.persistent)
        if got is None:
            reason = "alloc"
    if not reason:
        if sim.timeline is not None and got is not None:  # the bounded recording
            sim.timeline.vram_change(now, w.device.index, mem.used, s.buffer, got.bytes, pc)
        if sim.record:
            sim.samples.append((now, w.device.index, mem.used))
        if s.per_device and s.persistent:  # a per-GPU cache, allocated once: say so, like cuzk
            name = s.note or s.buffer
            sim.log(f"{name} allocated {s.bytes >> 20} MiB on gpu {w.device.index}", now)
        return pc + 1
    panic = (
        f"CUDA error 2: out of memory allocating {s.buffer} "
        f"({format_size(s.bytes)}, free {format_size(mem.free)})"
    )
    return _alloc_failed(
        sim, w, s, cp, part, now, reason, mem.free, s.allocator, mem.ledger(), "device", panic
    )


def _alloc_host(
    sim: Simulation, w: Worker, s: Alloc, pc: int, cp: CompiledPlan, part: str, seconds: float
) -> int:
    """A pinned host allocation at SimPy time: next step index, or -1 (panic)."""
    ram, now = sim.ram, sim.env.now
    if (w.name, s.buffer) in ram.live:
        if s.persistent:
            return pc + 1
        sim.leaks += 1
        nbytes, persistent = ram.live.pop((w.name, s.buffer))
        ram.live[(w.name, f"{s.buffer}#leak{sim.leaks}")] = (nbytes, persistent)
    reason = ""
    if s.margin is not None and ram.free < s.bytes + s.margin:
        reason = "skip_ram"
    elif not ram.try_pin(w.name, s.buffer, s.bytes, s.persistent):
        reason = "alloc"
    if not reason:
        w.t_ready = now + seconds  # page-locking the buffer
        return pc + 1
    panic = (
        f"out of host memory pinning {s.buffer} "
        f"({format_size(s.bytes)}, budget free {format_size(ram.free)})"
    )
    return _alloc_failed(
        sim, w, s, cp, part, now, reason, ram.free, "pinned", ram.ledger(), "host", panic
    )


def _alloc_failed(
    sim: Simulation,
    w: Worker,
    s: Alloc,
    cp: CompiledPlan,
    part: str,
    now: float,
    reason: str,
    free: int,
    allocator: str,
    ledger: dict,
    where: str,
    panic: str,
) -> int:
    """Record the OOM event, then take the step's fallback (logged like cuzk:
    `<note>=fallback err=2`, or `=skip_vram` / `=skip_ram` when the memory-aware check said
    no) or panic (-1) when it has none. Shared by device and pinned-host allocations."""
    fatal = s.fallback is None
    sim.oom_events.append(
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
            ledger=ledger,
            where=where,
        )
    )
    if fatal:
        sim.log(f"worker {w.name} panicked: {panic} partition {part}", now)
        return -1
    tag = s.note or f"alloc_{s.buffer}"
    outcome = reason if reason.startswith("skip_") else "fallback err=2"
    sim.log(f"CUZK_TIMING: {tag}={outcome}", now)
    return cp.labels[s.fallback]


def _cpu_helper(
    sim: Simulation, w: Worker, s: Cpu, prev: float | simpy.Event, ready: float, seconds: float
) -> Generator[simpy.Event, object, float]:
    """A helper-thread CPU step under core sharing: after the stream's previous work and
    the worker's issue time, run on the shared cores; returns its end time."""
    env = sim.env
    if isinstance(prev, simpy.Event):
        prev = prev.value if prev.processed else (yield prev)
    start = max(ready, prev)
    if start > env.now:
        yield env.timeout(start - env.now)
    yield sim.cores.run(seconds, s.threads)
    if sim.record:
        sim.spans.append(Span(w.name, -1, s.name, "cpu", start, env.now))
    return env.now


def _stream_end(sim: Simulation, w: Worker, stream: str) -> Generator[simpy.Event, object, None]:
    """Make `w.streams[stream]` a time: wait (from the worker's time) for a helper-thread
    CPU step still running on it (an event whose value is its end time)."""
    proc = w.streams.get(stream)
    if isinstance(proc, simpy.Event):
        env = sim.env
        if not proc.processed and w.t_ready > env.now:
            sim.events += 1
            yield env.timeout(w.t_ready - env.now)
        end = proc.value if proc.processed else (yield proc)
        w.streams[stream] = end


def _unlock(sim: Simulation, w: Worker, name: str) -> None:
    for i, (held_name, m, since) in enumerate(w.held):
        if held_name == name:
            del w.held[i]
            m.release(w.name)
            if sim.record:
                sim.spans.append(
                    Span(w.name, w.device.index, f"hold {name}", "lock", since, sim.env.now)
                )
            return
    raise RuntimeError(f"worker {w.name} unlocks {name!r} which it does not hold")


def _settle_samples(sim: Simulation, mem, record: bool):
    """Where DeviceMemory.settle reports deferred frees: the full recording's samples,
    the bounded recording (which re-reads the ledger), both, or nowhere."""
    samples = sim.samples if record else None
    if sim.timeline is None:
        return samples
    return sim.timeline.settle_sink(mem, samples)


def panic(sim: Simulation, w: Worker) -> None:
    """Unwind: free the worker's non-persistent buffers (device and pinned host), release
    its mutexes."""
    mem = w.device.memory
    for owner, buffer in [k for k, b in mem.live.items() if k[0] == w.name and not b.persistent]:
        mem.release(owner, buffer)
    for owner, buffer in [k for k in sim.ram.live if k[0] == w.name]:
        sim.ram.unpin(owner, buffer)
    for name, _, _ in list(w.held):
        _unlock(sim, w, name)
    if sim.timeline is not None:
        sim.timeline.resync(sim.env.now, mem)
    if sim.record:
        sim.samples.append((sim.env.now, w.device.index, mem.used))


def execute_plan(
    sim: Simulation, w: Worker, cp: CompiledPlan, part: str
) -> Generator[object, object, bool]:
    """Run one partition's plan; True when it completed, False when the worker panicked."""
    env = sim.env
    w.t_ready = env.now
    w.streams = {}
    steps, seconds, labels = cp.steps, cp.seconds, cp.labels
    if sim.jitter:  # this execution's durations: each kernel, copy and CPU step perturbed
        scale = sim.jitter.scale
        seconds = tuple(
            scale(t) if s.op in JITTERED_OPS else t for s, t in zip(steps, seconds, strict=True)
        )
    pc, n = 0, len(steps)
    exclusive = False  # holding a mutex that makes this worker alone on its device's memory
    replay: tuple | None = None  # the memory state this critical section is known to end in
    recording: tuple | None = None  # (key, oom events, log lines) when learning a section
    dev = w.device
    record = sim.record
    mem = dev.memory
    name = w.name
    shared_cores = sim.cores_shared
    host_touching = cp.host_touching
    tl = sim.timeline  # the bounded recording (cuzk_sim/recording.py), usually None
    replay_peak: tuple | None = None  # a replayed section's learnt peak (pc, used, parts)
    while pc < n:
        s = steps[pc]
        op = s.op
        if not host_touching[pc]:
            pass
        elif op == "alloc" or op == "free":  # host memory: shared with the synthesizers
            if w.t_ready > env.now:
                sim.events += 1
                yield env.timeout(w.t_ready - env.now)
            if op == "free":
                sim.ram.unpin(name, s.buffer)
                pc += 1
                continue
            pc = _alloc_host(sim, w, s, pc, cp, part, seconds[pc])
            if pc < 0:
                panic(sim, w)
                return False
            continue
        elif shared_cores:
            if op == "cpu":
                if s.stream == "host":
                    start = w.t_ready
                    sim.events += 1
                    w.t_ready = yield sim.cores.run(seconds[pc], s.threads, start)
                    if record:
                        sim.spans.append(Span(name, -1, s.name, "cpu", start, w.t_ready))
                else:
                    prev = w.streams.get(s.stream, 0.0)
                    sim.events += 1
                    if not record and not isinstance(prev, simpy.Event):
                        # no helper process needed: joins the shared cores when it starts
                        start = max(prev, w.t_ready)
                        w.streams[s.stream] = sim.cores.run(seconds[pc], s.threads, start)
                    else:
                        w.streams[s.stream] = env.process(
                            _cpu_helper(sim, w, s, prev, w.t_ready, seconds[pc])
                        )
                pc += 1
                continue
            if isinstance(w.streams.get(s.stream), simpy.Event):
                yield from _stream_end(sim, w, s.stream)
        if replay is not None and (op == "alloc" or op == "free"):
            if replay_peak is not None and pc == replay_peak[0]:
                tl.replayed_peak(w.t_ready, dev.index, replay_peak)  # type: ignore[union-attr]
            pc += 1  # a known section: its memory outcome is applied at the unlock
            continue
        if exclusive and op == "free":  # hot path inside a critical section, inlined
            if mem.pending_frees:
                mem.settle(w.t_ready, _settle_samples(sim, mem, record))
            buf = mem.live.get((name, s.buffer))
            if buf is not None and not buf.persistent:
                mem.release(name, s.buffer)
                if tl is not None:
                    tl.vram_change(w.t_ready, dev.index, mem.used, s.buffer, -buf.bytes, pc)
            pc += 1
            continue
        if op == "kernel" and s.stream == "compute" and not record:  # the hot path, inlined
            start = w.t_ready if w.t_ready > dev.compute_free_at else dev.compute_free_at
            w.t_ready = dev.compute_free_at = start + seconds[pc]
            dev.compute_busy_s += seconds[pc]  # utilization (metrics.py), as run_compute
            pc += 1
            continue
        timed = TIME_STEPS.get(op)
        if timed is not None:
            timed(sim, w, s, seconds[pc])
            pc += 1
            continue
        if op == "goto":
            pc = labels[s.label]
            continue
        if op == "sync":
            ready = w.streams.get(s.stream, 0.0)
            if ready > w.t_ready:
                w.t_ready = ready
            if w.device.memory.release_threshold == NEVER:
                pc += 1
                continue
        if exclusive and op != "unlock":
            # this worker holds the only way to touch its device's memory: no one else
            # can act on it before t_ready, so the step runs now, stamped t_ready
            now = w.t_ready
        else:
            if op == "free" and w.t_ready >= env.now:
                w.device.memory.free_at(w.t_ready, w.name, s.buffer)  # no wake-up needed
                pc += 1
                continue
            if w.t_ready > env.now:  # meet the other workers at this worker's time
                sim.events += 1
                yield env.timeout(w.t_ready - env.now)
            now = env.now
        mem = w.device.memory
        if mem.pending_frees:
            mem.settle(now, _settle_samples(sim, mem, record))
        if op == "alloc":
            pc = _alloc(sim, w, s, pc, cp, part, now)
            if pc < 0:
                if w.t_ready > env.now:  # a panic is seen by others at its own time
                    sim.events += 1
                    yield env.timeout(w.t_ready - env.now)
                panic(sim, w)
                return False
        elif op == "free":
            buf = mem.live.get((w.name, s.buffer))
            if buf is not None and not buf.persistent:  # else cudaFree(nullptr) / never freed
                mem.release(w.name, s.buffer)
                if tl is not None:
                    tl.vram_change(now, w.device.index, mem.used, s.buffer, -buf.bytes, pc)
                if sim.record:
                    sim.samples.append((now, w.device.index, mem.used))
            pc += 1
        elif op == "lock":
            if s.scope != "none":
                m = sim.mutex(s.mutex, s.scope, w.assigned)
                asked = env.now
                ev = m.acquire(env, w.name)
                if ev is not None:
                    sim.events += 1
                    yield ev
                    if sim.record:
                        sim.spans.append(
                            Span(w.name, w.device.index, f"wait {s.mutex}", "lock", asked, env.now)
                        )
                w.held.append((s.mutex, m, env.now))
                w.t_ready = env.now
                if sim.exclusive and not exclusive:
                    exclusive = True
                    # alone on the device, the section's memory steps depend only on the
                    # device's memory state: seen before from this state, replay it
                    key = (id(cp), pc, dev.index, mem.snapshot())
                    replay = sim.sections.get(key)
                    if replay is None:
                        recording = (key, len(sim.oom_events), len(sim.lines))
                    if tl is not None:  # follow the section's peak (learnt or replayed)
                        tl.section_begin(dev.index, mem.used)
                        replay_peak = tl.learnt.get(key) if replay is not None else None
            pc += 1
        elif op == "unlock":
            if s.scope != "none":
                learnt = None
                if replay is not None:
                    mem.restore(replay)
                    if tl is not None:
                        tl.resync(env.now, mem)
                elif recording is not None:
                    key, ooms, lines = recording
                    end = mem.snapshot()
                    clean = len(sim.oom_events) == ooms and len(sim.lines) == lines
                    if clean and end[-1] == key[-1][-1]:  # no event, same live buffers
                        sim.sections[key] = end
                        learnt = key
                if tl is not None and (replay is not None or recording is not None):
                    tl.section_end(dev.index, learnt)
                replay = recording = replay_peak = None
                _unlock(sim, w, s.mutex)
                exclusive = False
            pc += 1
        elif op == "sync":  # a pool with a finite release threshold gives bytes back here
            if replay is None and mem.trim_async_pool() and tl is not None:
                tl.vram_change(now, dev.index, mem.used, None, 0, pc)
            pc += 1
        else:  # pragma: no cover - Plan.from_dict rejects unknown ops
            raise RuntimeError(f"unknown step op {op!r}")
    if w.t_ready > env.now:
        sim.events += 1
        yield env.timeout(w.t_ready - env.now)
    return True
