"""The cuzk engine as SimPy processes: one run, from arrivals to the result.

`Simulation` builds the run's pieces and starts its entities, as SimPy's and Vidur's
simulators are laid out:

- the machine the workers execute plans on (model/machine.py: devices, the host's RAM
  and cores, mutexes, a recorder), its workers and the fast layer's decisions;
- the arrivals (here), the synthesizers (model/synthesis.py), the GPU workers' loop
  (model/gpu_loop.py), restarts and lost devices (model/faults.py), all sharing one
  `RunContext` (model/context.py) with the daemon's queues (model/queues.py) and the
  run's counters (model/counters.py);
- the result, with the metrics computed from the counters handed to cuzk_sim/results/metrics.py.

Partitions are served by devices × gpu_workers_per_device workers, each executing its
kind's plan on the device its routing policy names.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import simpy

from cuzk_sim.io.units import format_size
from cuzk_sim.model import faults, synthesis
from cuzk_sim.model.allocator import DeviceMemory
from cuzk_sim.model.compiled import CompiledPlan
from cuzk_sim.model.config import Arrivals, EngineConfig
from cuzk_sim.model.context import RunContext
from cuzk_sim.model.cores import HostCores
from cuzk_sim.model.counters import Proof, RunCounters
from cuzk_sim.model.device import SimDevice
from cuzk_sim.model.fast import FastLayer, FastPaths
from cuzk_sim.model.gpu_loop import GpuLoop
from cuzk_sim.model.host import HostMemory, PceCache
from cuzk_sim.model.host_side import HostSide
from cuzk_sim.model.jitter import Jitter, replica_seed
from cuzk_sim.model.machine import Machine, Recorder
from cuzk_sim.model.queues import Queues
from cuzk_sim.model.runtime import Worker
from cuzk_sim.plan.builders.circuits import CircuitShape
from cuzk_sim.profiles.profile import Profile
from cuzk_sim.results.metrics import EngineUse, MutexUse, RunCounts, measure
from cuzk_sim.results.recording import Timeline
from cuzk_sim.results.sim_result import SimResult, seconds_per_proof
from cuzk_sim.steps.alloc import pin_before_run

__all__ = ["Arrivals", "EngineConfig", "Simulation", "plan_cpu_demand"]


def plan_cpu_demand(cp: CompiledPlan) -> float:
    """The most threads one worker running this plan can ask for at once
    (plan.analysis: unbounded when a helper-thread CPU step is never joined)."""
    return cp.analysis.cpu_demand if cp.analysis is not None else math.inf


def _mean_prove_s(counters: RunCounters) -> float | None:
    """cuzk-bench's "prove time" averaged over the completed proofs (Proof.gpu_s)."""
    done = {pid for pid, _, _ in counters.done_times}
    spent = [p.gpu_s for p in counters.proofs if p.id in done]
    return sum(spent) / len(spent) if spent else None


def _devices(cfg: EngineConfig, plans: dict[str, CompiledPlan]) -> list[SimDevice]:
    devices = [
        SimDevice(
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
    # a prover that puts its GPU work on CUDA's legacy default stream (ours: the plan's
    # meta says so) serialises every worker's kernels and copies on a device, but for
    # the streams of its own that the meta names after it ("legacy_default+key_upload")
    streams = [str(cp.plan.meta.get("gpu_stream", "")).split("+") for cp in plans.values()]
    shared = any(names[0] == "legacy_default" for names in streams)
    concurrent = frozenset(n for names in streams for n in names[1:] if n)
    for dev in devices:
        dev.shared_stream = shared
        dev.concurrent_streams = concurrent
    return devices


def _workers(cfg: EngineConfig, devices: list[SimDevice]) -> list[Worker]:
    workers = []
    for d in cfg.devices or range(cfg.gpus):
        routed = devices[0 if cfg.routing == "device0" else d]
        for k in range(cfg.gpu_workers_per_device):
            name = f"gpu{d}-w{k}"
            process = name if cfg.separate_processes else ""
            workers.append(Worker(name, routed, assigned=d, process=process))
    for dev in {w.device.index: w.device for w in workers}.values():
        if cfg.separate_processes:  # one process per worker: a context and allocators each
            mine = [w for w in workers if w.device is dev]
            for w in mine:
                dev.memory.add_process(w.name, w.device_owner())
            dev.memory.context = cfg.context_overhead * len(mine)
        else:
            dev.memory.context = cfg.context_overhead  # one daemon process per device used
        dev.memory.peak_used = dev.memory.used
    return workers


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
    jitter: Jitter = field(default_factory=Jitter)  # timing noise of this replica (model/jitter.py)
    # a bounded recording for plots and traces on the fast path (cuzk_sim/results/recording.py):
    # partition/synthesis spans and bucketed VRAM, host RAM and CPU-thread series
    timeline: Timeline | None = None
    fast: FastPaths = field(default_factory=FastPaths)  # speed-ups allowed (model/fast.py)

    def __post_init__(self) -> None:
        cfg, env, tl = self.config, self.env, self.timeline
        self.devices = _devices(cfg, self.plans)
        self.workers = _workers(cfg, self.devices)
        ram = HostMemory(env, cfg.host_ram_budget, samples=tl.host_sink() if tl else self._series())
        cores = HostCores(env, cfg.host_cores, samples=tl.core_sink() if tl else self._series())
        # what plan execution may touch, and what the run writes down
        self.recorder = Recorder(record=self.record, timeline=tl)
        self.machine = Machine(env, ram, cores, self.recorder, self.jitter)
        self.machine.cores_shared = self._cores_shared()
        profile, shapes = self.profile, self.shapes
        pce = PceCache(
            extract_seconds=lambda k: profile.pce_extract.seconds(shapes[k].constraints),
            load_seconds=profile.pce_load,
            host_bytes=profile.pce_host_bytes,
            writable=cfg.pce_writable,
            on_disk=set(cfg.pce_on_disk),
        )
        layer = FastLayer.for_run(self.fast, self.plans.values(), self.workers, self.record)
        self.ctx = RunContext(
            env=env,
            config=cfg,
            shapes=shapes,
            profile=profile,
            plans=self.plans,
            machine=self.machine,
            devices=self.devices,
            workers=self.workers,
            jitter=self.jitter,
            pce=pce,
            host_side=HostSide(self.machine, shapes, profile, pce, cfg.host_cores),
            queues=Queues.fresh(env, cfg),
            layer=layer,
            stop=env.event(),
            arrivals_open=len(cfg.arrivals),
        )
        self.gpu_loop = GpuLoop(self.ctx)
        # Poisson arrivals: the scenario's seed (replica 0) or one stream per replica
        replica = self.jitter.replica
        self.rng = random.Random(cfg.seed if replica == 0 else replica_seed(cfg.seed, replica))
        self.stall: str | None = None
        self.setup_s = 0.0  # the setup phase's seconds (run(): persistent pinned host buffers)

    def _series(self) -> list | None:
        """Where the host's RAM or CPU samples go without a Timeline: kept when recording."""
        return [] if self.record else None

    def _cores_shared(self) -> bool:
        """Can the CPU work ever ask for more cores than the host has? If not, every task
        runs at full speed and workers price CPU steps arithmetically (exact); else each
        CPU task goes through the processor-sharing model."""
        cfg = self.config
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
        return (
            not self.fast.arithmetic_cpu
            or synth_demand + len(self.workers) * plan_demand > cfg.host_cores
        )

    # --- what the run holds, by the names tests and benchmarks read ---

    @property
    def cores_shared(self) -> bool:
        return self.machine.cores_shared

    @cores_shared.setter
    def cores_shared(self, shared: bool) -> None:
        self.machine.cores_shared = shared

    @property
    def ram(self) -> HostMemory:
        return self.machine.ram

    @property
    def pce(self) -> PceCache:
        return self.ctx.pce

    @property
    def host_side(self) -> HostSide:
        return self.ctx.host_side

    @property
    def proofs(self) -> list[Proof]:
        return self.ctx.counters.proofs

    # --- processes ---

    def _arrive(self, a: Arrivals) -> Generator:
        ctx, env = self.ctx, self.env
        counters = ctx.counters
        if a.start_s:
            yield env.timeout(self.jitter.scale(a.start_s, "start"))
        shape = self.shapes[a.kind]
        for i in itertools.count():
            if a.count is not None and i >= a.count:
                break
            parts = a.partitions or shape.partitions
            proof = Proof(f"{a.kind}-{len(counters.proofs)}", a.kind, parts, env.now)
            counters.proofs.append(proof)
            counters.unfinished += 1
            ctx.queues.jobs.put(simpy.PriorityItem((-shape.priority, next(ctx.seq)), proof))
            if a.every_s:
                gap = self.rng.expovariate(1 / a.every_s) if a.poisson else a.every_s
                self.machine.events += 1
                yield env.timeout(self.jitter.scale(gap, "arrival"))
        ctx.arrivals_open -= 1
        ctx.maybe_finish()

    def _start_daemon(self) -> None:
        """Start what one daemon process runs: the synthesizers (or the partition
        dispatcher) and a GPU worker per worker slot whose device is not lost."""
        self.ctx.daemon = []
        synthesis.start(self.ctx)
        self.gpu_loop.start()

    def _deadline(self, at: float) -> Generator:
        yield self.env.timeout(at)
        if not self.ctx.stop.triggered:
            self.ctx.stop.succeed()

    def run(self, progress: Callable[[float, float], None] | None = None) -> SimResult:
        """progress: called now and then with (done, total), in finished proofs (or in
        simulated seconds of `duration` for an endless workload), for a progress bar."""
        env, cfg, ctx = self.env, self.config, self.ctx
        # the setup phase, before the first proof: the process pins its persistent host
        # buffers (the key); reported apart (setup_s), not in any partition's time
        self.setup_s = sum(
            pin_before_run(self.machine, cp, self.workers) for cp in self.plans.values()
        )
        for a in cfg.arrivals:
            env.process(self._arrive(a))
        self._start_daemon()
        for t in cfg.restarts_s:
            env.process(faults.restart(ctx, t, self._start_daemon))
        for t, d in cfg.devices_lost_s:
            env.process(faults.lose_device(ctx, self.gpu_loop, t, d))
        if cfg.duration_s is not None:
            env.process(self._deadline(cfg.duration_s))
        ran_out = False  # nothing left to happen: e.g. work that can never fit
        if progress is not None:
            ran_out = self._run_reporting(progress)
        else:
            try:
                env.run(until=ctx.stop)
            except RuntimeError as e:
                if "until" not in str(e):
                    raise
                ran_out = True
        if ran_out:
            ctx.log("simulation ran out of events (work left that can never run)")
            if ctx.counters.unfinished:
                self.stall = self._stall_reason()
        return self._result()

    def _run_reporting(self, progress: Callable[[float, float], None]) -> bool:
        """env.run(until=stop), one event at a time, reporting every 10^4 events.
        True when the events ran out before the stop."""
        env, cfg, counters = self.env, self.config, self.ctx.counters
        counted = all(a.count is not None for a in cfg.arrivals)
        total = float(sum(a.count or 0 for a in cfg.arrivals)) if counted else cfg.duration_s
        stop, n = self.ctx.stop, 0
        while not stop.processed:
            try:
                env.step()
            except simpy.core.EmptySchedule:
                return True
            n += 1
            if n % 10_000 == 0 and total:
                done = len(counters.proofs) - counters.unfinished
                progress(done if counted else env.now, total)
        return False

    def _stall_reason(self) -> str:
        """Why proofs are left neither completed nor failed once nothing can happen any
        more: who waits on which mutex (and who holds it), who waits on host RAM."""
        ram, counters = self.machine.ram, self.ctx.counters
        waits = [
            f"{who} waits on mutex {m.name!r} held by {m.owner}"
            for m in self.machine.mutexes.values()
            for who, _ in m.waiters
        ]
        waits += [
            f"{owner} of {what} waits on host RAM for {format_size(nbytes)} "
            f"({format_size(ram.free)} free of {format_size(ram.budget)})"
            for owner, what, nbytes, _ in ram.waiters
        ]
        left = ", ".join(p.id for p in counters.proofs if not p.finished)
        return (
            f"deadlock/stall at t={self.env.now:.3f} s: {counters.unfinished} of "
            f"{len(counters.proofs)} proofs neither completed nor failed ({left}) and nothing "
            "left to happen; "
            + ("; ".join(waits) if waits else "no worker waits on a mutex or on host RAM")
        )

    def counts(self) -> RunCounts:
        """What the run counted, for the metrics."""
        t, cfg, m = self.env.now, self.config, self.machine
        used = sorted({w.device.index for w in self.workers})
        engines = tuple(
            EngineUse(
                d,
                self.devices[d].compute_busy_s,
                self.devices[d].compute_free_at,
                self.devices[d].copy_busy_s,
                self.devices[d].copy_free_at,
            )
            for d in used
        )
        mutexes = tuple(
            MutexUse(mx.device, mx.held_until(t), mx.wait_s, mx.waits) for mx in m.mutexes.values()
        )
        return RunCounts(
            time_s=t,
            counters=self.ctx.counters,
            engines=engines,
            mutexes=mutexes,
            synthesizers=cfg.synthesis_concurrency,
            in_flight=cfg.synthesis_concurrency * (cfg.synthesis_lookahead + 1) + len(self.workers),
            open_stream=any(a.every_s for a in cfg.arrivals),
            host_cores=cfg.host_cores,
            core_work_s=m.cores.work_s,
            gpu_workers=len(self.workers),
            pool_busy=tuple(
                (b, m.pool_first_s[k])
                for k, b in sorted(m.pool_busy_s.items())
                if k in m.serial_pools
            ),
            fallbacks_taken=sum(not e.fatal for e in self.recorder.oom_events),
        )

    def _result(self) -> SimResult:
        counters, m, rec = self.ctx.counters, self.machine, self.recorder
        times = [t for _, _, t in counters.done_times]
        first = min((p.submitted_s for p in counters.proofs), default=0.0)
        plain_series = self.timeline is None
        return SimResult(
            scenario=self.name,
            seed=self.config.seed,
            sim_time_s=self.env.now,
            proofs_submitted=len(counters.proofs),
            proofs_completed=len(times),
            proofs_failed=sum(p.failed for p in counters.proofs),
            partitions_completed=counters.partitions_ok,
            partitions_failed=counters.partitions_failed,
            seconds_per_proof=seconds_per_proof(times, first),
            setup_s=self.setup_s,
            peak_vram_bytes={d.index: d.memory.peak_used for d in self.devices},
            peak_host_bytes=m.ram.peak_used,
            peak_host_rss_bytes=self.ctx.host_side.rss.peak,
            prove_seconds=_mean_prove_s(counters),
            bench_seconds_per_proof=(max(times) - first) / len(times) if times else None,
            host_budget_bytes=m.ram.budget,
            peak_core_demand=m.cores.peak_demand,
            host_samples=m.ram.samples if plain_series and m.ram.samples else [],
            core_samples=m.cores.samples if plain_series and m.cores.samples else [],
            vram_total_bytes={d.index: d.memory.total for d in self.devices},
            oom_events=rec.oom_events,
            log=rec.lines,
            stopped_at_oom=counters.stopped_at_oom,
            events=m.events,
            proof_done_times=counters.done_times,
            pce_extractions=self.ctx.pce.extractions,
            stall=self.stall,
            spans=rec.spans,
            vram_samples=rec.samples,
            metrics=measure(self.counts()),
            timeline=self.timeline,
        )
