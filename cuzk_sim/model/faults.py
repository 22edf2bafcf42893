"""Faults a run can be given: daemon restarts and lost devices.

A daemon restart (cuzk-daemon is one process): everything in flight is lost —
synthesis, queued and running partitions, device buffers (persistent caches too), pinned
buffers, host reservations, mutexes, the in-memory PCE. Proofs in flight fail; arrivals
go on into the restarted daemon, which starts empty (peaks and counters carried).

A lost device (a GPU falls off the bus): the workers whose work runs on it stop; the
partition each was proving fails with its proof; what they held (mutexes, pinned host
buffers) is released; the other workers go on. Queued partitions wait for them.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

from cuzk_sim.model.allocator import DeviceMemory
from cuzk_sim.model.context import RunContext
from cuzk_sim.model.cores import HostCores
from cuzk_sim.model.gpu_loop import GpuLoop
from cuzk_sim.model.host import HostMemory
from cuzk_sim.model.queues import Queues
from cuzk_sim.model.runtime import panic


def restart(ctx: RunContext, at: float, start_daemon: Callable[[], None]) -> Generator:
    """At `at`, the daemon restarts; `start_daemon` starts the new process's work."""
    yield ctx.env.timeout(at)
    env, cfg, m = ctx.env, ctx.config, ctx.machine
    for proc in ctx.daemon:
        if proc.is_alive:
            proc.interrupt("daemon restart")
    lost = [p for p in ctx.counters.proofs if not p.finished]
    for proof in lost:
        proof.failed = proof.finished = True
        ctx.counters.unfinished -= 1
        ctx.log(f"proof {proof.id} failed: lost in a daemon restart")
    # a new process: empty queues, memories, mutexes (peaks and counters carried)
    old_ram, old_cores = m.ram, m.cores
    m.ram = HostMemory(env, cfg.host_ram_budget, samples=old_ram.samples)
    m.ram.peak_used = old_ram.peak_used
    m.cores = HostCores(env, cfg.host_cores, samples=old_cores.samples)
    m.cores.peak_demand, m.cores.work_s = old_cores.peak_demand, old_cores.work_s
    for mx in m.mutexes.values():
        mx.reset(env.now)
    timeline = m.recorder.timeline
    for dev in ctx.devices:
        old = dev.memory
        dev.memory = DeviceMemory(
            old.device,
            old.total,
            context=old.context,
            release_threshold=old.release_threshold,
            granularity=old.granularity,
        )
        for owners in _owners_by_process(old):
            dev.memory.add_process(*owners)
        dev.memory.peak_used = old.peak_used
        dev.compute_free_at = min(dev.compute_free_at, env.now)  # its queued work died
        for direction, t in dev.copy_free_at.items():
            dev.copy_free_at[direction] = min(t, env.now)
        if timeline is not None:
            timeline.resync(env.now, dev.memory)
    for w in ctx.workers:
        w.held.clear()
        w.begin(env.now)
    ctx.queues = Queues.fresh(env, cfg)
    ctx.pce.restart()
    ctx.pce.pending.clear()  # an extraction in flight died with the process
    ctx.host_side.restart()  # SRS and PCE no longer resident
    ctx.layer.sections.clear()  # learnt sections keyed by the old memories' states
    lost_text = f"; {len(lost)} proofs in flight lost" if lost else ""
    ctx.log(f"daemon restart: in-memory PCE dropped{lost_text}")
    start_daemon()
    ctx.maybe_finish()


def lose_device(ctx: RunContext, loop: GpuLoop, at: float, device: int) -> Generator:
    """At `at`, GPU `device` is lost."""
    yield ctx.env.timeout(at)
    ctx.lost_devices.add(device)
    gone = [w for w in ctx.workers if w.device.index == device]
    for w in gone:
        proc = loop.procs.pop(w.name, None)
        if proc is None or not proc.is_alive:
            continue
        proc.interrupt("device lost")
        get = loop.waiting_get.pop(w.name, None)
        if get is not None and not get.triggered:
            get.cancel()  # else the queue would hand the next partition to no one
        elif get is not None and w.name not in loop.current:
            ctx.queues.partitions.put(get.value)  # handed over but not yet taken: requeue
        for mx in ctx.machine.mutexes.values():  # a worker waiting on a mutex leaves
            mx.leave(w.name)
        panic(ctx.machine, w)  # release its mutexes, free its buffers, unpin
        job = loop.current.pop(w.name, None)
        if job is not None:
            proof, _ = job
            ctx.counters.partitions_failed += 1
            proof.failed = True
            ctx.partition_back(proof)
    ctx.log(f"gpu{device} lost: {len(gone)} workers stopped")


def _owners_by_process(mem: DeviceMemory) -> list[tuple[str, ...]]:
    """The owners of each separate process's allocators (DeviceMemory.add_process), so a
    restarted daemon's memory keeps one allocator set per process."""
    groups: dict[int, list[str]] = {}
    for owner, allocs in mem.process_allocators.items():
        groups.setdefault(id(allocs), []).append(owner)
    return [tuple(g) for g in groups.values()]
