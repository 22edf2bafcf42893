"""`cpu`: host work (synthesis, prep_msm, B_G2 MSM on the CPU).

While the host's cores cannot be oversubscribed a CPU step is a time step (priced
arithmetically, exact: the rate is always 1); under shared cores it goes through the
processor-sharing model (model/cores.py): a `host` step waits from the worker's time; a
helper-thread step runs as a small SimPy process whose end a later step on its stream
waits for.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import simpy
from pydantic import StringConstraints

from cuzk_sim.model.fast_state import FastRun, then
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import Worker
from cuzk_sim.results.sim_result import Span
from cuzk_sim.steps.base import Name, StepIn, StepKind, Threads, WorkSize


@dataclass(frozen=True)
class Cpu:
    """Host work (synthesis, prep_msm, B_G2 MSM on the CPU); threads: cores it occupies.

    stream: `host` work blocks the worker; work on any other stream runs in a helper
    thread (cuzk's prep_msm and B_G2 threads) until a `sync` on that stream joins it."""

    name: str
    kind: str
    size: int
    threads: int = 1
    stream: str = "host"
    # a helper-thread step run by a thread pool (cuzk's groth16_pool), per device (FIFO):
    # a job of many threads (a Pippenger over the pool) starts after every job issued
    # before it; a one-thread job after the last many-thread job issued before it, beside
    # other one-thread jobs (PoolChain)
    pool: str = ""
    op: Literal["cpu"] = "cpu"


class CpuIn(StepIn):
    op: Literal["cpu"]
    name: Name
    kind: Name
    size: WorkSize
    threads: Threads = 1
    stream: Name = "host"
    pool: Annotated[str, StringConstraints(max_length=256)] = ""


@dataclass
class PoolChain:
    """A thread pool's FIFO queue as the model keeps it, per device: the end of the last
    job that took the whole pool (`barrier`) and the ends of the one-thread jobs issued
    since (`since`). A float is a known end, an Event one still to come (shared cores)."""

    barrier: float | simpy.Event = 0.0
    since: list[float | simpy.Event] = field(default_factory=list)
    covered_to: float = 0.0  # the union of its jobs' intervals so far ends here

    def after(self, s: Cpu) -> list[float | simpy.Event]:
        """What a job issued now waits for: a whole-pool job for everything before it."""
        return [self.barrier, *self.since] if s.threads > 1 else [self.barrier]

    def issued(self, s: Cpu, end: float | simpy.Event) -> None:
        if s.threads > 1:
            self.barrier, self.since = end, []
            return
        # bounded: the known ends folded into their latest, the pending events kept
        since: list[float | simpy.Event] = []
        latest = None
        for x in self.since:
            if isinstance(x, simpy.Event):
                if not x.processed:
                    since.append(x)
                    continue
                x = x.value
            if latest is None or x > latest:
                latest = x
        if latest is not None:
            since.append(latest)
        since.append(end)
        self.since = since


def _busy(m: Machine, w: Worker, s: Cpu, chain: PoolChain, start: float, end: float) -> None:
    """The pool's busy time (the union of its jobs' intervals, results/metrics.py); a pool that
    ran a whole-pool job is `serial`: its jobs queue behind each other."""
    key = _pool(w, s)
    m.pool_busy_s[key] = m.pool_busy_s.get(key, 0.0) + max(end - max(start, chain.covered_to), 0)
    m.pool_first_s[key] = min(m.pool_first_s.get(key, start), start)
    chain.covered_to = max(chain.covered_to, end)
    if s.threads > 1:
        m.serial_pools.add(key)


def _known(x: float | simpy.Event) -> bool:
    return not isinstance(x, simpy.Event) or x.processed


def _chain(m: Machine, w: Worker, s: Cpu) -> PoolChain:
    key = _pool(w, s)
    chain = m.pools.get(key)
    if chain is None:
        chain = m.pools[key] = PoolChain()
    return chain


def _pool(w: Worker, s: Cpu) -> str:
    """The chain a pooled step joins: the pool's, per device the worker runs on. cuzk's
    groth16_pool is one per process; the published runs that show its jobs in series
    are single-GPU, and across GPUs its one-thread prep_msm jobs can run side by side on
    its threads, so the model keeps one chain per device (docs/simulator.md)."""
    return f"{s.pool}@gpu{w.device.index}"


def price(s: Cpu, profile: Any, where: str) -> float:
    return profile.cpu_seconds(s.kind, s.size, where)


def cpu(m: Machine, w: Worker, s: Cpu, seconds: float, parts: Any = None) -> None:
    """A CPU step at full speed (the host's cores cannot be oversubscribed)."""
    if s.stream == "host":
        start = w.t_ready
        w.t_ready = end = start + seconds
    else:
        start = max(w.t_ready, w.streams.get(s.stream, 0.0))
        chain = _chain(m, w, s) if s.pool else None
        if chain is not None:
            start = max(start, *chain.after(s))  # type: ignore[type-var]
            seconds *= m.cpu_slowdown(s.kind)
        w.streams[s.stream] = end = start + seconds
        if chain is not None:
            _busy(m, w, s, chain, start, end)
            chain.issued(s, end)
    m.cores.work_s += seconds * s.threads  # host-core utilization (results/metrics.py)
    if m.recorder.record:
        m.recorder.spans.append(Span(w.name, -1, s.name, "cpu", start, end))


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
    if s.pool:
        chain = _chain(m, w, s)
        seconds *= m.cpu_slowdown(s.kind)
        proc = env.process(_helper(m, w, s, prev, w.t_ready, seconds, chain.after(s), chain))
        w.streams[s.stream] = proc
        chain.issued(s, proc)
    elif without_process and not isinstance(prev, simpy.Event):
        start = max(prev, w.t_ready)
        ev = m.cores.run(seconds, s.threads, start)
        if rec.record:
            name, track = s.name, w.name
            ev.callbacks.append(
                lambda e: rec.spans.append(Span(track, -1, name, "cpu", start, e.value))
            )
        w.streams[s.stream] = ev
    else:
        w.streams[s.stream] = env.process(_helper(m, w, s, prev, w.t_ready, seconds))


def _helper(
    m: Machine, w: Worker, s: Cpu, prev: float | simpy.Event, ready: float, seconds: float,
    after: tuple[float | simpy.Event, ...] | list[float | simpy.Event] = (),
    chain: PoolChain | None = None,
) -> Generator[simpy.Event, object, float]:  # fmt: skip
    """After the stream's previous work, the pool's jobs it queues behind (`after`) and
    the worker's issue time, run on the shared cores; returns its end time."""
    env, cores = m.env, m.cores  # the cores of its issue (a daemon restart brings new ones)
    if isinstance(prev, simpy.Event):
        prev = prev.value if prev.processed else (yield prev)
    start = max(ready, prev)
    for job in after:
        if isinstance(job, simpy.Event):
            job = job.value if job.processed else (yield job)
        start = max(start, job)
    if start > env.now:
        yield env.timeout(start - env.now)
    yield cores.run(seconds, s.threads)
    if chain is not None:
        _busy(m, w, s, chain, start, env.now)
    if m.recorder.record:
        m.recorder.spans.append(Span(w.name, -1, s.name, "cpu", start, env.now))
    return env.now


def step_cpu(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    if m.cores_shared:
        yield from cpu_shared(m, w, s, seconds)
    else:
        cpu(m, w, s, seconds)
    return pc + 1


# --- the fast handlers ---


def _timed(x: FastRun, pc: int) -> int:
    cpu(x.m, x.w, x.steps[pc], x.seconds[pc])
    return pc + 1


def _shared(x: FastRun, pc: int) -> Any:
    return then(cpu_shared(x.m, x.w, x.steps[pc], x.seconds[pc], x.without_process), pc + 1)


def _timer(x: FastRun, pc: int) -> Any:
    """A helper-thread step whose stream's previous work has a known end joins the
    shared cores by a timer, not a SimPy process (cpu_shared's without_process, inlined)."""
    w, s = x.w, x.steps[pc]
    prev = w.streams.get(s.stream, 0.0)
    if isinstance(prev, simpy.Event):
        return _shared(x, pc)
    x.m.events += 1
    start = prev if prev > w.t_ready else w.t_ready
    w.streams[s.stream] = x.m.cores.run(x.seconds[pc], s.threads, start)
    return pc + 1


def _pool_timer(x: FastRun, pc: int) -> int:
    """A pooled helper-thread step without a SimPy process (_helper's, inlined): its end
    is an event made now, that the cores fire; it joins them at its start, a timer after
    the stream's previous work, the pool jobs it queues behind and the worker's issue
    time, waiting for each one still running by a callback, in _helper's order."""
    m, w, s = x.m, x.w, x.steps[pc]
    key = f"{s.pool}@gpu{w.device.index}"  # _pool's
    chain = m.pools.get(key)
    if chain is None:
        chain = m.pools[key] = PoolChain()
    deps = [w.streams.get(s.stream, 0.0), *chain.after(s)]
    seconds = x.seconds[pc] * m.cpu_slowdown(s.kind)
    m.events += 1
    ev = x.env.event()
    job = _PoolJob(m, w, s, chain, key, ev, seconds, deps)
    ev.callbacks.append(job.ended)
    job.walk(0, w.t_ready)
    w.streams[s.stream] = ev
    chain.issued(s, ev)
    return pc + 1


class _PoolJob:
    """A pooled job of _pool_timer: what it waits for, and its start once known."""

    __slots__ = ("m", "w", "s", "chain", "key", "ev", "seconds", "deps", "cores", "start", "i")

    def __init__(
        self, m: Machine, w: Worker, s: Cpu, chain: PoolChain, key: str, ev: simpy.Event,
        seconds: float, deps: list[float | simpy.Event],
    ) -> None:  # fmt: skip
        self.m, self.w, self.s, self.chain, self.key = m, w, s, chain, key
        self.ev, self.seconds, self.deps, self.cores = ev, seconds, deps, m.cores

    def walk(self, i: int, start: float) -> None:
        deps = self.deps
        while i < len(deps):
            d = deps[i]
            if isinstance(d, simpy.Event):
                if not d.processed:
                    self.i, self.start = i, start
                    d.callbacks.append(self.resumed)
                    return
                d = d.value
            if d > start:
                start = d
            i += 1
        self.start = start
        self.cores.run_into(self.ev, self.seconds, self.s.threads, start)

    def resumed(self, e: simpy.Event) -> None:
        v, start = e.value, self.start
        self.walk(self.i + 1, v if v > start else start)

    def ended(self, e: simpy.Event) -> None:
        m, s, chain, start, end = self.m, self.s, self.chain, self.start, e.value
        key = self.key
        covered = chain.covered_to
        m.pool_busy_s[key] = m.pool_busy_s.get(key, 0.0) + max(
            end - (start if start > covered else covered), 0
        )
        m.pool_first_s[key] = min(m.pool_first_s.get(key, start), start)
        if end > covered:
            chain.covered_to = end
        if s.threads > 1:
            m.serial_pools.add(key)
        if m.recorder.record:
            m.recorder.spans.append(Span(self.w.name, -1, s.name, "cpu", start, end))


def _end(x: float | simpy.Event) -> float:
    return x.value if isinstance(x, simpy.Event) else x


def fast(s: Cpu, pc: int, x: FastRun) -> Any:
    if not x.shared_cores:
        return _timed
    if x.inline and x.without_process and s.stream != "host":
        return _pool_timer if s.pool else _timer
    return _shared


def jitter_kind(s: Cpu) -> str:
    return f"cpu.{s.kind}"


KIND = StepKind(
    op="cpu",
    step=Cpu,
    schema=CpuIn,
    plain=step_cpu,
    fast=fast,
    price=price,
    jitter_kind=jitter_kind,
    touches_host=lambda s: True,
    threads=lambda s: s.threads,
    helper_stream=lambda s: s.stream if s.stream != "host" else None,
)
