"""The fast layer: speed-ups over the plain interpreter, each exact under its stated
precondition and each switchable off (`FastPaths`).

The plain interpreter (model/interpreter.py) is the reference; this layer runs the same
handlers and skips work it can prove changes nothing observable:

1. `merge_kernels` — a run of consecutive compute-stream kernels with no label between
   is priced as one step (model/compiled.py). Precondition: none beyond the run's shape
   (a blocking kernel starts where the previous ended; no step of the run yields).
   Equal to the plain run up to float rounding (the run's seconds are summed first).
2. `inline_steps` — the hottest step (a compute-stream kernel) is executed in the loop
   instead of through its handler. Always exact.
3. `section_stamping` — a worker holding a critical section runs its steps at its own
   clock without waking up. Precondition (checked once per run, `FastLayer.for_run`):
   every device alloc/free of every plan, on every path, runs under a mutex and no
   host-memory step does (plan_analysis), every plan's sections take the same one
   mutex, and each device's workers are exactly the ones assigned to it. Then no other
   worker can touch this device's memory before the section ends, so nothing can act
   between the stamped steps. Exact.
4. `section_replay` — such a section's memory outcome depends only on the device's
   memory state at entry: the first time a (plan, lock step, device, memory state) is
   seen, the section runs and its end state is learnt, if it logged nothing and left
   the same live buffers; later it is replayed — time steps still run, allocations and
   frees are skipped and the end state is restored at the unlock (peaks need no update:
   the learnt run set them). Precondition: stamping applies, and no trace is recorded (a
   replayed section has no VRAM samples). Exact.
5. `helper_without_process` — a helper-thread CPU step whose stream's previous work has
   a known end joins the shared cores by a timer, not a SimPy process. Exact.
6. `arithmetic_cpu` — when the worst-case CPU demand fits the host's cores, CPU steps
   are priced arithmetically instead of through the processor-sharing model (decided by
   the engine). Equal up to float rounding.

Recording a trace switches off only (4), which changes no number.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from dataclasses import dataclass, field, fields

import simpy

from cuzk_sim.model import interpreter as it
from cuzk_sim.model.compiled import CompiledPlan
from cuzk_sim.model.interpreter import PANIC, STEPS, TIME_STEPS, Worker
from cuzk_sim.model.machine import Machine


@dataclass(frozen=True)
class FastPaths:
    """Which speed-ups may be used (each still only where its precondition holds)."""

    merge_kernels: bool = True
    inline_steps: bool = True
    section_stamping: bool = True
    section_replay: bool = True
    helper_without_process: bool = True
    arithmetic_cpu: bool = True

    @classmethod
    def none(cls) -> FastPaths:
        """Every speed-up off: the plain interpreter."""
        return cls(**{f.name: False for f in fields(cls)})

    @property
    def any(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


@dataclass
class FastLayer:
    """The speed-ups that apply to one run, and what section replay has learnt."""

    paths: FastPaths
    plain: bool = False  # every speed-up off: the plain interpreter runs
    stamping: bool = False
    replay: bool = False
    sections: dict[tuple, tuple] = field(default_factory=dict)

    @classmethod
    def for_run(
        cls,
        paths: FastPaths,
        plans: Iterable[CompiledPlan],
        workers: Iterable[Worker],
        record: bool,
        sections: dict[tuple, tuple] | None = None,
    ) -> FastLayer:
        plans, workers = list(plans), list(workers)
        # a per-device mutex excludes a device's others only if each device's workers are
        # exactly the workers assigned to it (not so when routing sends all to device 0);
        # under two mutexes two workers can be in sections at once, and a worker must
        # yield at a lock to see another's hold
        one_to_one = all(w.assigned == w.device.index for w in workers)
        section_mutexes = set().union(
            *(cp.analysis.section_mutexes for cp in plans if cp.analysis is not None)
        )
        stamping = (
            paths.section_stamping
            and one_to_one
            and len(section_mutexes) <= 1
            and all(cp.exclusive for cp in plans)
        )
        return cls(
            paths,
            plain=not paths.any,
            stamping=stamping,
            replay=stamping and paths.section_replay and not record,
            sections={} if sections is None else sections,
        )


def execute(
    m: Machine,
    w: Worker,
    cp: CompiledPlan,
    part: str,
    seconds: tuple[float, ...],
    layer: FastLayer,
) -> Generator[object, object, bool]:
    """Run one partition's plan with the speed-ups of `layer`; True when it completed,
    False when the worker panicked. Every step's semantics is the interpreter's."""
    env = m.env
    w.begin(env.now)
    steps, labels, parts = cp.steps, cp.labels, cp.parts
    pc, n = 0, len(steps)
    in_section = False  # holding a mutex that makes this worker alone on its device's memory
    replay: tuple | None = None  # the memory state this critical section is known to end in
    learning: tuple | None = None  # (key, oom events, log lines) when learning a section
    dev = w.device
    mem = dev.memory
    rec = m.recorder
    record = rec.record
    tl = rec.timeline  # the bounded recording (cuzk_sim/recording.py), usually None
    replay_peak: tuple | None = None  # a replayed section's learnt peak (pc, used, parts)
    name = w.name
    shared_cores = m.cores_shared
    host_touching = cp.host_touching
    inline = layer.paths.inline_steps and not record
    without_process = layer.paths.helper_without_process
    driver = cp.driver_s  # sync buffers' cudaMalloc/cudaFree times (None: none priced)
    while pc < n:
        s = steps[pc]
        op = s.op
        if driver is not None and driver[pc]:
            if (op == "free" or dev.shared_stream) and w.t_ready > env.now:  # sees others' work
                m.events += 1
                yield env.timeout(w.t_ready - env.now)
            it.driver_call(m, w, op, driver[pc])
        if not host_touching[pc]:
            pass
        elif op == "alloc" or op == "free":  # host memory: shared with the synthesizers
            if not inline:
                pc = yield from STEPS[op](m, w, cp, pc, seconds[pc], part)
                if pc == PANIC:
                    it.panic(m, w)
                    return False
                continue
            if w.t_ready > env.now:  # the handlers, inlined: meet, then act
                m.events += 1
                yield env.timeout(w.t_ready - env.now)
            if op == "free":
                m.ram.unpin(name, s.buffer)
                pc += 1
                continue
            pc = it.alloc_host(m, w, s, pc, cp, part, seconds[pc])
            if pc == PANIC:
                it.panic(m, w)
                return False
            continue
        elif shared_cores:
            if op == "cpu":
                if inline and without_process and s.stream != "host":
                    prev = w.streams.get(s.stream, 0.0)
                    if not isinstance(prev, simpy.Event):  # cpu_shared, inlined
                        m.events += 1
                        start = prev if prev > w.t_ready else w.t_ready
                        w.streams[s.stream] = m.cores.run(seconds[pc], s.threads, start)
                        pc += 1
                        continue
                yield from it.cpu_shared(m, w, s, seconds[pc], without_process)
                pc += 1
                continue
            if isinstance(w.streams.get(s.stream), simpy.Event):
                yield from it.stream_end(m, w, s.stream)
        if replay is not None and (op == "alloc" or op == "free"):
            if replay_peak is not None and pc == replay_peak[0]:
                tl.replayed_peak(w.t_ready, dev.index, replay_peak)  # type: ignore[union-attr]
            pc += 1  # a known section: its memory outcome is applied at the unlock
            continue
        if in_section and op == "free":  # alone on the device's memory: free at once
            if mem.pending_frees:
                mem.settle(w.t_ready, it.settle_sink(m, mem))
            it.free_device(m, w, s, w.t_ready, pc)
            pc += 1
            continue
        if dev.shared_stream and it.queues_in_order(dev, s):
            if w.t_ready > env.now:  # into the one queue in the order of issue
                m.events += 1
                yield env.timeout(w.t_ready - env.now)
        elif inline and op == "kernel" and s.stream == "compute" and s.fills is None:
            start = w.t_ready if w.t_ready > dev.compute_free_at else dev.compute_free_at
            w.t_ready = dev.compute_free_at = start + seconds[pc]
            dev.compute_busy_s += seconds[pc]  # utilization (metrics.py), as run_compute
            pc += 1
            continue
        timed = TIME_STEPS.get(op)
        if timed is not None:
            timed(m, w, s, seconds[pc], parts[pc])
            pc += 1
            continue
        if op == "goto":
            pc = labels[s.label]
            continue
        if op == "sync":
            ready = w.streams.get(s.stream, 0.0)
            if ready > w.t_ready:
                w.t_ready = ready
            if s.stream == "compute":
                w.drain()
            if not mem.syncs_matter:
                pc += 1
                continue
        if in_section and op != "unlock":
            # this worker holds the only way to touch its device's memory: no one else
            # can act on it before t_ready, so the step runs now, stamped t_ready
            now = w.t_ready
        else:
            if op == "free" and w.t_ready >= env.now:
                mem.free_at(w.t_ready, name, s.buffer)  # no wake-up needed
                pc += 1
                continue
            if w.t_ready > env.now:  # meet the other workers at this worker's time
                m.events += 1
                yield env.timeout(w.t_ready - env.now)
            now = env.now
        if mem.pending_frees:
            mem.settle(now, it.settle_sink(m, mem))
        if op == "alloc":
            pc = it.alloc_device(m, w, s, pc, cp, part, now)
            if pc == PANIC:
                yield from it.meet(m, w)  # a panic is seen by others at its own time
                it.panic(m, w)
                return False
        elif op == "free":
            it.free_device(m, w, s, now, pc)
            pc += 1
        elif op == "lock":
            if s.scope != "none":
                if record:
                    yield from it.acquire(m, w, s)
                else:  # acquire, inlined
                    mx = m.mutex(s.mutex, s.scope, w.assigned)
                    ev = mx.acquire(env, name)
                    if ev is not None:
                        m.events += 1
                        yield ev
                    w.held.append((s.mutex, mx, env.now))
                    w.t_ready = env.now
                if layer.stamping and not in_section:
                    in_section = True
                    if layer.replay:
                        # alone on the device, the section's memory steps depend only on
                        # the device's memory state: seen before from this state, replay it
                        key = (id(cp), pc, dev.index, mem.snapshot())
                        replay = layer.sections.get(key)
                        if replay is None:
                            learning = (key, len(rec.oom_events), len(rec.lines))
                        if tl is not None:  # follow the section's peak (learnt or replayed)
                            tl.section_begin(dev.index, mem.used)
                            replay_peak = tl.learnt.get(key) if replay is not None else None
            pc += 1
        elif op == "unlock":
            if s.scope != "none":
                learnt = None
                if replay is not None:
                    mem.restore(replay)
                    if tl is not None:  # live buffers as at entry: only the pools moved
                        tl.vram_change(env.now, dev.index, mem.used, None, 0)
                elif learning is not None:
                    key, ooms, lines = learning
                    end = mem.snapshot()
                    clean = len(rec.oom_events) == ooms and len(rec.lines) == lines
                    if clean and end[-1] == key[-1][-1]:  # no event, same live buffers
                        layer.sections[key] = end
                        learnt = key
                if tl is not None and (replay is not None or learning is not None):
                    tl.section_end(dev.index, learnt)
                replay = learning = replay_peak = None
                it.release(m, w, s.mutex)
                in_section = False
            pc += 1
        elif op == "sync":  # a pool with a finite release threshold gives bytes back here
            if replay is None and mem.on_sync() and tl is not None:
                tl.vram_change(now, dev.index, mem.used, None, 0, pc)
            pc += 1
        else:  # pragma: no cover - Plan.from_dict rejects unknown ops
            raise RuntimeError(f"unknown step op {op!r}")
    w.drain()  # the partition is done when its queued GPU work is
    if w.t_ready > env.now:
        m.events += 1
        yield env.timeout(w.t_ready - env.now)
    return True
