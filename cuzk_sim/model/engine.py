"""The cuzk engine as SimPy processes: arrivals, synthesis, the queues, GPU workers.

Owns the run: it builds the devices, the host (RAM budget, cores, PCE cache), the
`Machine` the workers execute plans on, and the fast layer's decisions
(model/fast.py); it moves proofs from arrival to completion and assembles the result.

Proofs arrive into a priority job queue. Whole-proof synthesis (the default):
`synthesis_concurrency` synthesizers take one proof at a time, reserve host RAM for all
its partitions (waiting on the budget), make sure the PCE is available, and synthesize
up to `max_parallel_synthesis` partitions in parallel; a synthesizer runs at most
`synthesis_lookahead` proofs ahead of the GPUs; partitions go to a priority queue.
Per-partition synthesis (`partition_workers` N > 0, cuzk's Phase 7 pool): each partition
waits for one of N permits, reserves its own host memory, is synthesized, and is sent
into a FIFO channel of max(synthesis_lookahead, N) partitions, holding its permit until
the send went through. Partitions are served by devices × gpu_workers_per_device
workers, each executing its kind's plan on the device its routing policy names.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import simpy

from cuzk_sim.calibration import Profile
from cuzk_sim.model.allocator import NEVER, DeviceMemory
from cuzk_sim.model.compiled import CompiledPlan
from cuzk_sim.model.cores import HostCores
from cuzk_sim.model.execute import execute_plan
from cuzk_sim.model.fast import FastLayer, FastPaths
from cuzk_sim.model.gpu import Device
from cuzk_sim.model.host import HostMemory, PceCache
from cuzk_sim.model.jitter import Jitter, replica_seed
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import Worker, panic
from cuzk_sim.plans.circuits import CircuitShape
from cuzk_sim.result import OomEvent, SimResult, Span, seconds_per_proof

if TYPE_CHECKING:
    from cuzk_sim.recording import Timeline
from cuzk_sim.units import format_size


@dataclass(frozen=True)
class Arrivals:
    """`count` proofs of `kind` from `start_s`, all at once (every_s None), evenly spaced,
    or as a Poisson stream with mean gap every_s. count None: until the run ends."""

    kind: str
    count: int | None
    start_s: float = 0.0
    every_s: float | None = None
    poisson: bool = False
    partitions: int | None = None  # default: the kind's (WindowPoSt: 1 per 2349 sectors)


@dataclass(frozen=True)
class EngineConfig:
    gpus: int
    vram: int
    context_overhead: int
    host_ram_budget: int
    host_cores: int = 96
    gpu_workers_per_device: int = 2
    devices: tuple[int, ...] = ()  # () = all
    synthesis_concurrency: int = 1
    synthesis_lookahead: int = 1
    max_parallel_synthesis: int = 18
    routing: Literal["assigned", "device0"] = "assigned"
    pool_release_threshold: int = NEVER
    on_oom: Literal["stop", "continue"] = "stop"
    pce_writable: bool = True
    pce_on_disk: tuple[str, ...] = ()
    restarts_s: tuple[float, ...] = ()  # daemon restarts: in-flight work is lost
    devices_lost_s: tuple[tuple[float, int], ...] = ()  # (when, GPU): the device is gone
    duration_s: float | None = None
    seed: int = 0
    arrivals: tuple[Arrivals, ...] = ()
    # allocator -> rounding in bytes (e.g. a measured cudaMallocAsync granule); () = the
    # defaults of model/allocator.py (2 MiB for sync and async, 512 B for caching)
    allocator_granularity: tuple[tuple[str, int], ...] = ()
    # cuzk's per-partition synthesis pool ([synthesis] partition_workers, Phase 7): 0 =
    # whole-proof synthesis (rounds of max_parallel_synthesis); N > 0 = each partition
    # synthesized on its own under a semaphore of N permits, each held through the send
    # into a bounded channel of max(synthesis_lookahead, N) partitions
    partition_workers: int = 0


def plan_cpu_demand(cp: CompiledPlan) -> float:
    """The most threads one worker running this plan can ask for at once
    (plan_analysis: unbounded when a helper-thread CPU step is never joined)."""
    return cp.analysis.cpu_demand if cp.analysis is not None else math.inf


@dataclass
class Proof:
    id: str
    kind: str
    partitions: int
    submitted_s: float
    picked: int = 0
    done: int = 0
    returned: int = 0  # partitions back from the GPU workers: done, failed or dropped
    failed: bool = False
    finished: bool = False


@dataclass
class Simulation:
    """One run. Built from plain config; `run()` returns a `SimResult`."""

    name: str
    config: EngineConfig
    plans: dict[str, CompiledPlan]
    shapes: dict[str, CircuitShape]
    profile: Profile
    record: bool = False
    env: simpy.Environment = field(default_factory=simpy.Environment)
    oom_events: list[OomEvent] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    samples: list[tuple[float, int, int]] = field(default_factory=list)
    lines: list[tuple[float, str]] = field(default_factory=list)
    sections: dict[tuple, tuple] = field(default_factory=dict)  # critical sections learnt
    jitter: Jitter = field(default_factory=Jitter)  # timing noise of this replica (model/jitter.py)
    # a bounded recording for plots and traces on the fast path (cuzk_sim/recording.py):
    # partition/synthesis spans and bucketed VRAM, host RAM and CPU-thread series
    timeline: Timeline | None = None
    synth_busy_s: float = 0.0  # metrics.py: seconds synthesizers spent synthesizing
    ram_wait_s: float = 0.0  # metrics.py: seconds synthesizers waited on the RAM budget
    fast: FastPaths = field(default_factory=FastPaths)  # speed-ups allowed (model/fast.py)

    def __post_init__(self) -> None:
        cfg, env = self.config, self.env
        self.devices = [
            Device(
                i,
                DeviceMemory(
                    i,
                    cfg.vram,
                    release_threshold=cfg.pool_release_threshold,
                    granularity=dict(cfg.allocator_granularity),
                ),
            )
            for i in range(cfg.gpus)
        ]
        self.workers: list[Worker] = []
        for d in cfg.devices or range(cfg.gpus):
            routed = self.devices[0 if cfg.routing == "device0" else d]
            for k in range(cfg.gpu_workers_per_device):
                self.workers.append(Worker(f"gpu{d}-w{k}", routed, assigned=d))
        for dev in {w.device.index: w.device for w in self.workers}.values():
            dev.memory.context = cfg.context_overhead  # one daemon process per device used
            dev.memory.peak_used = dev.memory.used
        # a prover that puts its GPU work on CUDA's legacy default stream (ours: the plan's
        # meta says so) serialises every worker's kernels and copies on a device, but for
        # the streams of its own that the meta names after it ("legacy_default+key_upload")
        streams = [str(cp.plan.meta.get("gpu_stream", "")).split("+") for cp in self.plans.values()]
        shared = any(names[0] == "legacy_default" for names in streams)
        concurrent = frozenset(n for names in streams for n in names[1:] if n)
        for dev in self.devices:
            dev.shared_stream = shared
            dev.concurrent_streams = concurrent
        tl = self.timeline
        self.ram = HostMemory(
            env, cfg.host_ram_budget, samples=tl.host_sink() if tl else [] if self.record else None
        )
        self.cores = HostCores(
            env, cfg.host_cores, samples=tl.core_sink() if tl else [] if self.record else None
        )
        # what plan execution may touch; the simulation itself is its recorder (spans,
        # samples, log lines, OOM events, `record`, `timeline`), which recording.py swaps
        # and switches during a run
        self.machine = Machine(env, self.ram, self.cores, self, self.jitter)
        self.mutexes = self.machine.mutexes
        # Can the CPU work ever ask for more cores than the host has? If not, every task
        # runs at full speed and workers price CPU steps arithmetically (exact); else each
        # CPU task goes through the processor-sharing model.
        parts = max(
            [a.partitions or self.shapes[a.kind].partitions for a in cfg.arrivals], default=1
        )
        at_once = (  # partitions synthesized at once
            cfg.partition_workers
            if cfg.partition_workers
            else cfg.synthesis_concurrency * min(parts, cfg.max_parallel_synthesis)
        )
        synth_demand = at_once * self.profile.synthesis_threads
        plan_demand = max((plan_cpu_demand(cp) for cp in self.plans.values()), default=0)
        self.cores_shared = (
            not self.fast.arithmetic_cpu
            or synth_demand + len(self.workers) * plan_demand > cfg.host_cores
        )
        self.pce = PceCache(
            extract_seconds=lambda k: self.profile.pce_extract.seconds(self.shapes[k].constraints),
            load_seconds=self.profile.pce_load,
            host_bytes=self.profile.pce_host_bytes,
            writable=cfg.pce_writable,
            on_disk=set(cfg.pce_on_disk),
        )
        self.jobs = simpy.PriorityStore(env)
        if cfg.partition_workers:
            # cuzk engine.rs (Phase 7): the synthesis -> GPU channel, auto-sized to
            # max(synthesis_lookahead, partition_workers), FIFO; and the permits
            cap = max(cfg.synthesis_lookahead, 1, cfg.partition_workers)
            self.partitions = simpy.Store(env, capacity=cap)
            self.partition_permits = simpy.Resource(env, capacity=cfg.partition_workers)
        else:
            self.partitions = simpy.PriorityStore(env)
        # each synthesizer may run `synthesis_lookahead` proofs ahead of the GPUs
        slots = cfg.synthesis_concurrency * (cfg.synthesis_lookahead + 1)
        self.lookahead = simpy.Container(env, capacity=slots, init=slots)
        self.stop = env.event()
        self.layer = FastLayer.for_run(
            self.fast, self.plans.values(), self.workers, self.record, self.sections
        )
        self.exclusive = self.layer.stamping  # critical sections run without wake-ups
        self.seq = itertools.count()
        self.proofs: list[Proof] = []
        self.unfinished = 0
        self.done_times: list[tuple[str, str, float]] = []
        self.arrivals_open = len(cfg.arrivals)
        # Poisson arrivals: the scenario's seed (replica 0) or one stream per replica
        replica = self.jitter.replica
        self.rng = random.Random(cfg.seed if replica == 0 else replica_seed(cfg.seed, replica))
        self.stopped_at_oom = False
        self.partitions_ok = 0
        self.partitions_failed = 0
        self.lost_devices: set[int] = set()

    # --- what the machine holds, by the names other code reads ---

    @property
    def cores_shared(self) -> bool:
        return self.machine.cores_shared

    @cores_shared.setter
    def cores_shared(self, shared: bool) -> None:
        self.machine.cores_shared = shared

    @property
    def events(self) -> int:
        return self.machine.events

    @events.setter
    def events(self, n: int) -> None:
        self.machine.events = n

    @property
    def leaks(self) -> int:
        return self.machine.leaks

    def log(self, line: str, t: float | None = None) -> None:
        self.lines.append((self.env.now if t is None else t, line))

    # --- processes ---

    def _arrive(self, a: Arrivals) -> Generator:
        env = self.env
        if a.start_s:
            yield env.timeout(self.jitter.scale(a.start_s))
        shape = self.shapes[a.kind]
        for i in itertools.count():
            if a.count is not None and i >= a.count:
                break
            parts = a.partitions or shape.partitions
            proof = Proof(f"{a.kind}-{len(self.proofs)}", a.kind, parts, env.now)
            self.proofs.append(proof)
            self.unfinished += 1
            self.jobs.put(simpy.PriorityItem((-shape.priority, next(self.seq)), proof))
            if a.every_s:
                gap = self.rng.expovariate(1 / a.every_s) if a.poisson else a.every_s
                self.events += 1
                yield env.timeout(self.jitter.scale(gap))
        self.arrivals_open -= 1
        self._maybe_finish()

    def _synthesis_seconds(self, proof: Proof) -> float:
        """One partition's synthesis time (a round synthesizes its partitions in parallel,
        each taking this long)."""
        shape = self.shapes[proof.kind]
        if shape.synthesis_s is not None:
            return shape.synthesis_s
        return self.profile.cpu_seconds(
            "synthesis", shape.constraints, f"synthesis of {proof.kind}"
        )

    def _dispatch_partitions(self) -> Generator:
        """partition_workers > 0: take a proof, make its PCE available, hand each partition
        to its own synthesis task (which waits for a permit), and go on to the next proof
        (cuzk spawns the tasks and does not wait for them)."""
        env = self.env
        while True:
            item = yield self.jobs.get()
            proof: Proof = item.item
            if self.shapes[proof.kind].pce:
                yield from self.pce.ensure(env, self.ram, proof.kind, self.log)
            for p in range(proof.partitions):
                self._spawn(self._synthesize_partition(proof, p))

    def _synthesize_partition(self, proof: Proof, p: int) -> Generator:
        """One partition: a permit, its host memory (the budget), its synthesis, then the
        send into the channel — the permit is released only once the send went through, so
        at most partition_workers syntheses and finished-but-unsent partitions exist."""
        env, shape = self.env, self.shapes[proof.kind]
        permit = self.partition_permits.request()
        yield permit
        if proof.failed:  # cuzk skips the synthesis of a failed job's partitions
            self.partition_permits.release(permit)
            self._partition_back(proof, reserved=False)
            return
        asked = env.now
        yield self.ram.reserve("synthesis", proof.id, shape.host_bytes)
        self.ram_wait_s += env.now - asked
        seconds = self._synthesis_seconds(proof)
        t0 = env.now
        if self.cores_shared:
            yield self.cores.run(self.jitter.scale(seconds), self.profile.synthesis_threads)
        else:
            yield env.timeout(self.jitter.scale(seconds))
            self.cores.work_s += seconds * self.profile.synthesis_threads
        self.events += 2
        self.synth_busy_s += env.now - t0
        if self.record or self.timeline is not None:
            name = f"{proof.id}/{p}"
            self.spans.append(Span("partition-synth", -1, name, "synthesis", t0, env.now))
        yield self.partitions.put(simpy.PriorityItem((-shape.priority, next(self.seq)), (proof, p)))
        self.partition_permits.release(permit)

    def _synthesize(self, index: int) -> Generator:
        env, cfg = self.env, self.config
        while True:
            item = yield self.jobs.get()
            proof: Proof = item.item
            shape = self.shapes[proof.kind]
            yield self.lookahead.get(1)
            asked = env.now
            yield self.ram.reserve("synthesis", proof.id, proof.partitions * shape.host_bytes)
            self.ram_wait_s += env.now - asked  # metrics.py: synthesizers waiting on RAM
            if shape.pce:
                yield from self.pce.ensure(env, self.ram, proof.kind, self.log)
            rounds = math.ceil(proof.partitions / cfg.max_parallel_synthesis)
            seconds = self._synthesis_seconds(proof)
            t0 = env.now
            if self.cores_shared:  # each round: its partitions in parallel, sharing cores
                left = proof.partitions
                for _ in range(rounds):
                    now_parts = min(left, cfg.max_parallel_synthesis)
                    left -= now_parts
                    yield self.cores.run(
                        self.jitter.scale(seconds), now_parts * self.profile.synthesis_threads
                    )
            else:
                if self.jitter:
                    yield env.timeout(sum(self.jitter.scale(seconds) for _ in range(rounds)))
                else:
                    yield env.timeout(rounds * seconds)
                self.cores.work_s += proof.partitions * seconds * self.profile.synthesis_threads
            self.events += 4
            self.synth_busy_s += env.now - t0  # metrics.py: synthesizer busy time
            if self.record or self.timeline is not None:
                self.spans.append(Span(f"synth{index}", -1, proof.id, "synthesis", t0, env.now))
            for p in range(proof.partitions):
                self.partitions.put(
                    simpy.PriorityItem((-shape.priority, next(self.seq)), (proof, p))
                )

    def _gpu_worker(self, w: Worker) -> Generator:
        """Serve partitions until the run ends, the daemon restarts or the device is lost
        (simpy.Interrupt, caught here: no wrapper around the hottest process)."""
        env = self.env
        try:
            while True:
                get = self.waiting_get[w.name] = self.partitions.get()
                item = yield get
                self.events += 1
                proof, p = item.item
                self.current[w.name] = (proof, p)
                proof.picked += 1
                if proof.picked == proof.partitions and not self.config.partition_workers:
                    self.lookahead.put(1)
                if not proof.failed:
                    t0 = env.now
                    label = f"{proof.id}/{p}"
                    ok = yield from execute_plan(
                        self.machine, w, self.plans[proof.kind], label, self.layer
                    )
                    if self.record or self.timeline is not None:
                        self.spans.append(
                            Span(w.name, w.device.index, label, "partition", t0, env.now)
                        )
                    if ok:
                        self.partitions_ok += 1
                        proof.done += 1
                    else:
                        self.partitions_failed += 1
                        proof.failed = True
                        if self.config.on_oom == "stop":
                            self.stopped_at_oom = True
                            if not self.stop.triggered:
                                self.stop.succeed()
                            return
                del self.current[w.name]
                self._partition_back(proof)
        except simpy.Interrupt:
            return

    def _partition_back(self, proof: Proof, reserved: bool = True) -> None:
        """A partition is back from the GPU workers (done, failed or dropped): its host
        memory is released; the proof finishes with its last partition."""
        if reserved:
            self.ram.unreserve("synthesis", proof.id, self.shapes[proof.kind].host_bytes)
        proof.returned += 1
        if proof.returned == proof.partitions:  # every partition is back (done or not)
            proof.finished = True
            self.unfinished -= 1
            if not proof.failed:
                self.done_times.append((proof.id, proof.kind, self.env.now))
                self.log(f"proof {proof.id} done")
            else:
                self.log(f"proof {proof.id} failed")
            self._maybe_finish()

    # --- the daemon's processes, restarts and lost devices ---

    def _start_daemon(self) -> None:
        """Start what one daemon process runs: the synthesizers (or the partition
        dispatcher) and a GPU worker per worker slot whose device is not lost."""
        cfg, env = self.config, self.env
        self.daemon: list[simpy.Process] = []  # what a restart kills
        self.worker_procs: dict[str, simpy.Process] = {}
        self.waiting_get: dict[str, simpy.Event] = {}  # a GPU worker's pending queue get
        self.current: dict[str, tuple[Proof, int]] = {}  # a GPU worker's partition
        for i in range(cfg.synthesis_concurrency):
            gen = self._dispatch_partitions() if cfg.partition_workers else self._synthesize(i)
            self.daemon.append(env.process(self._killable(gen)))
        for w in self.workers:
            if w.device.index not in self.lost_devices:
                proc = env.process(self._gpu_worker(w))  # killable itself (the hot one)
                self.daemon.append(proc)
                self.worker_procs[w.name] = proc

    def _spawn(self, gen: Generator) -> None:
        """A daemon process started during the run (a partition's synthesis)."""
        self.daemon.append(self.env.process(self._killable(gen)))

    @staticmethod
    def _killable(gen: Generator) -> Generator:
        """A daemon process: a restart or a lost device ends it (simpy.Interrupt)."""
        try:
            return (yield from gen)
        except simpy.Interrupt:
            return None

    def _restart(self, at: float) -> Generator:
        """A daemon restart (cuzk-daemon is one process): everything in flight is lost —
        synthesis, queued and running partitions, device buffers (persistent caches too),
        pinned buffers, host reservations, mutexes, the in-memory PCE. Proofs in flight
        fail; arrivals go on into the restarted daemon, which starts empty."""
        yield self.env.timeout(at)
        env, cfg = self.env, self.config
        for proc in self.daemon:
            if proc.is_alive:
                proc.interrupt("daemon restart")
        lost = [p for p in self.proofs if not p.finished]
        for proof in lost:
            proof.failed = proof.finished = True
            self.unfinished -= 1
            self.log(f"proof {proof.id} failed: lost in a daemon restart")
        # a new process: empty queues, memories, mutexes (peaks and counters carried)
        old_ram, old_cores = self.ram, self.cores
        self.ram = HostMemory(env, cfg.host_ram_budget, samples=old_ram.samples)
        self.ram.peak_used = old_ram.peak_used
        self.cores = HostCores(env, cfg.host_cores, samples=old_cores.samples)
        self.cores.peak_demand, self.cores.work_s = old_cores.peak_demand, old_cores.work_s
        self.machine.ram, self.machine.cores = self.ram, self.cores
        for mx in self.mutexes.values():
            mx.reset(env.now)
        for dev in self.devices:
            old = dev.memory
            dev.memory = DeviceMemory(
                old.device,
                old.total,
                context=old.context,
                release_threshold=old.release_threshold,
                granularity=old.granularity,
            )
            dev.memory.peak_used = old.peak_used
            dev.compute_free_at = min(dev.compute_free_at, env.now)  # its queued work died
            for direction, t in dev.copy_free_at.items():
                dev.copy_free_at[direction] = min(t, env.now)
            if self.timeline is not None:
                self.timeline.resync(env.now, dev.memory)
        for w in self.workers:
            w.held.clear()
            w.begin(env.now)
        self._fresh_queues()
        self.pce.restart()
        self.pce.pending.clear()  # an extraction in flight died with the process
        self.sections.clear()  # learnt sections keyed by the old memories' states
        lost_text = f"; {len(lost)} proofs in flight lost" if lost else ""
        self.log(f"daemon restart: in-memory PCE dropped{lost_text}")
        self._start_daemon()
        self._maybe_finish()

    def _fresh_queues(self) -> None:
        cfg, env = self.config, self.env
        self.jobs = simpy.PriorityStore(env)
        if cfg.partition_workers:
            cap = max(cfg.synthesis_lookahead, 1, cfg.partition_workers)
            self.partitions = simpy.Store(env, capacity=cap)
            self.partition_permits = simpy.Resource(env, capacity=cfg.partition_workers)
        else:
            self.partitions = simpy.PriorityStore(env)
        slots = cfg.synthesis_concurrency * (cfg.synthesis_lookahead + 1)
        self.lookahead = simpy.Container(env, capacity=slots, init=slots)

    def _lose_device(self, at: float, device: int) -> Generator:
        """A GPU falls off the bus: the workers whose work runs on it stop; the partition
        each was proving fails with its proof; what they held (mutexes, pinned host
        buffers) is released; the other workers go on. Queued partitions wait for them."""
        yield self.env.timeout(at)
        self.lost_devices.add(device)
        gone = [w for w in self.workers if w.device.index == device]
        for w in gone:
            proc = self.worker_procs.pop(w.name, None)
            if proc is None or not proc.is_alive:
                continue
            proc.interrupt("device lost")
            get = self.waiting_get.pop(w.name, None)
            if get is not None and not get.triggered:
                get.cancel()  # else the queue would hand the next partition to no one
            elif get is not None and w.name not in self.current:
                self.partitions.put(get.value)  # handed over but not yet taken: requeue
            for mx in self.mutexes.values():  # a worker waiting on a mutex leaves its queue
                mx.waiters = type(mx.waiters)(x for x in mx.waiters if x[0] != w.name)
            panic(self.machine, w)  # release its mutexes, free its buffers, unpin
            job = self.current.pop(w.name, None)
            if job is not None:
                proof, _ = job
                self.partitions_failed += 1
                proof.failed = True
                self._partition_back(proof)
        self.log(f"gpu{device} lost: {len(gone)} workers stopped")

    def _maybe_finish(self) -> None:
        if self.arrivals_open == 0 and self.unfinished == 0 and not self.stop.triggered:
            self.stop.succeed()

    def _deadline(self, at: float) -> Generator:
        yield self.env.timeout(at)
        if not self.stop.triggered:
            self.stop.succeed()

    def run(self, progress: Callable[[float, float], None] | None = None) -> SimResult:
        """progress: called now and then with (done, total), in finished proofs (or in
        simulated seconds of `duration` for an endless workload), for a progress bar."""
        env, cfg = self.env, self.config
        for a in cfg.arrivals:
            env.process(self._arrive(a))
        self._start_daemon()
        for t in cfg.restarts_s:
            env.process(self._restart(t))
        for t, d in cfg.devices_lost_s:
            env.process(self._lose_device(t, d))
        if cfg.duration_s is not None:
            env.process(self._deadline(cfg.duration_s))
        self.stall: str | None = None
        ran_out = False  # nothing left to happen: e.g. work that can never fit
        if progress is not None:
            ran_out = self._run_reporting(progress)
        else:
            try:
                env.run(until=self.stop)
            except RuntimeError as e:
                if "until" not in str(e):
                    raise
                ran_out = True
        if ran_out:
            self.log("simulation ran out of events (work left that can never run)")
            if self.unfinished:
                self.stall = self._stall_reason()
        return self._result()

    def _run_reporting(self, progress: Callable[[float, float], None]) -> bool:
        """env.run(until=self.stop), one event at a time, reporting every 10^4 events.
        True when the events ran out before the stop."""
        env, cfg = self.env, self.config
        counted = all(a.count is not None for a in cfg.arrivals)
        total = float(sum(a.count or 0 for a in cfg.arrivals)) if counted else cfg.duration_s
        stop, n = self.stop, 0
        while not stop.processed:
            try:
                env.step()
            except simpy.core.EmptySchedule:
                return True
            n += 1
            if n % 10_000 == 0 and total:
                progress(len(self.proofs) - self.unfinished if counted else env.now, total)
        return False

    def _stall_reason(self) -> str:
        """Why proofs are left neither completed nor failed once nothing can happen any
        more: who waits on which mutex (and who holds it), who waits on host RAM."""
        waits = [
            f"{who} waits on mutex {m.name!r} held by {m.owner}"
            for m in self.mutexes.values()
            for who, _ in m.waiters
        ]
        waits += [
            f"{owner} of {what} waits on host RAM for {format_size(nbytes)} "
            f"({format_size(self.ram.free)} free of {format_size(self.ram.budget)})"
            for owner, what, nbytes, _ in self.ram.waiters
        ]
        left = ", ".join(p.id for p in self.proofs if not p.finished)
        return (
            f"deadlock/stall at t={self.env.now:.3f} s: {self.unfinished} of "
            f"{len(self.proofs)} proofs neither completed nor failed ({left}) and nothing "
            "left to happen; "
            + ("; ".join(waits) if waits else "no worker waits on a mutex or on host RAM")
        )

    def _result(self) -> SimResult:
        from cuzk_sim.metrics import measure

        times = [t for _, _, t in self.done_times]
        spp = seconds_per_proof(times, min((p.submitted_s for p in self.proofs), default=0.0))
        return SimResult(
            scenario=self.name,
            seed=self.config.seed,
            sim_time_s=self.env.now,
            proofs_submitted=len(self.proofs),
            proofs_completed=len(times),
            proofs_failed=sum(p.failed for p in self.proofs),
            partitions_completed=self.partitions_ok,
            partitions_failed=self.partitions_failed,
            seconds_per_proof=spp,
            peak_vram_bytes={d.index: d.memory.peak_used for d in self.devices},
            peak_host_bytes=self.ram.peak_used,
            host_budget_bytes=self.ram.budget,
            peak_core_demand=self.cores.peak_demand,
            host_samples=self.ram.samples if self.timeline is None and self.ram.samples else [],
            core_samples=self.cores.samples if self.timeline is None and self.cores.samples else [],
            vram_total_bytes={d.index: d.memory.total for d in self.devices},
            oom_events=self.oom_events,
            log=self.lines,
            stopped_at_oom=self.stopped_at_oom,
            events=self.events,
            proof_done_times=self.done_times,
            pce_extractions=self.pce.extractions,
            stall=self.stall,
            spans=self.spans,
            vram_samples=self.samples,
            metrics=measure(self),
            timeline=self.timeline,
        )
