"""A GPU worker's state and the moves every step handler shares.

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

Each step kind's handlers live in its own module (cuzk_sim/steps/); this module holds
what they share: meeting the others, settling deferred frees, joining a helper thread's
stream, releasing a mutex, a sync buffer's driver call, and the unwinding of a panic.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

import simpy

from cuzk_sim.model.gpu import Device
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.mutex import Mutex
from cuzk_sim.result import Span

PANIC = -1  # what a handler returns instead of the next step when the worker panicked


@dataclass
class Worker:
    name: str
    device: Device  # where its GPU work runs (the routing policy's choice)
    assigned: int = 0  # the GPU the engine assigned it to: its per-device mutex
    # a separate process (engine.gpus.separate_processes): its name, which owns its
    # per-device buffers, persistent pinned buffers and mutexes; "" = the daemon's thread
    process: str = ""
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

    def device_owner(self) -> str:
        """Who owns its per-device buffers (cuzk's per-GPU caches): the device's daemon
        process, or its own process when it is a separate one."""
        where = f"gpu{self.device.index}"
        return f"{self.process}/{where}" if self.process else where

    def host_owner(self, shared: str) -> str:
        """Who owns its persistent pinned host buffers: the daemon process (`shared`), or
        its own process when it is a separate one."""
        return f"{self.process}/{shared}" if self.process else shared

    def drain(self) -> None:
        """Wait (on the worker's clock) for the work it queued (a sync, the partition end)."""
        if self.queued_until > self.t_ready:
            self.t_ready = self.queued_until


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


def join(m: Machine, w: Worker, stream: str) -> Generator[simpy.Event, object, None]:
    """Wait for a helper-thread CPU step still running on `stream`, if any."""
    if isinstance(w.streams.get(stream), simpy.Event):
        yield from stream_end(m, w, stream)


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
