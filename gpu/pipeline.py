"""The real pipeline: a scenario executed by our prover's code on worker threads.

The real counterpart of every mechanism the model has (cuzk_sim/model/engine.py):
- one thread per GPU worker (`gpu_workers_per_device` x devices) taking partitions from
  one priority queue, in the workload's order, released at the workload's arrival times;
- the device lock per `variant.mutex_scope` (device: one per GPU, global: one for all,
  none: no lock) and `variant.routing` (device0: every worker's GPU work on GPU 0);
- the prover flags of each kind's plan (the dry run's `meta`), so the code that runs is
  the code whose plan the model replays;
- the card's size `hardware.vram`: a ballast (raw cudaMalloc) takes what is free beyond
  `vram - context`, so cudaMalloc and the pools fail as on the smaller card;
- synthetic partitions of the plan's shape (random a/b/c and witness; a key of distinct
  points made on the GPU, gpu/keygen.py), made once per process before the workers start
  and shared by all of them (gpu/hostdata.py, which also estimates the host and device
  memory a run needs: `check_memory` refuses a run the machine cannot hold); or, with
  `verify`, a small reference circuit whose every proof is compared with the reference
  prover's;
- `on_oom`: a partition that hits OOM returns no proof, its buffers are freed and the
  worker goes on (continue) or the run stops (stop: nothing finishing later is counted).

Two devices: `real` (CuPy on the GPU) and `dry-run` (no GPU, no CuPy: device memory is
the model's own allocator ledger, kernels take no time), so that everything here except
the CUDA calls is tested in CI. The output is a `SimResult`: the same JSON as `run`.
CuPy is imported only inside the functions that need it.
"""

from __future__ import annotations

import itertools
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from cuzk_sim.plan import Kernel, Plan
from cuzk_sim.result import OomEvent, SimResult, Span, per_hour, seconds_per_proof

from .device import Buffer, Device, DeviceOutOfMemory, NotEnoughFreeMemory
from .hostdata import (
    MemoryNeed,
    SyntheticStore,
    entries,
    host_available,
    memory_need,
    peak_rss,
    refusal,
)
from .prover import (
    HostKey,
    PartitionInput,
    PartitionShape,
    ProverFlags,
    assemble,
    msm_results,
    partition,
)
from .witness_data import shaped_witness, witness_shaped

DeviceKind = Literal["real", "dry-run"]
NEVER = 2**64 - 1
MAX_VERIFY_LOG2 = 8  # reference proofs are computed by py_ecc: small domains only
BALLAST_GRANULE = 2 << 20  # cudaMalloc's granule on the H200 (benchmarks/allocator_probe.py)
CARD_SHORTFALL = 2 << 30  # a card this much smaller than hardware.vram - context still runs


KEEP_SYNTHETIC_BYTES = 12 << 30  # synthetic data of other shapes kept across runs, at most


class NotEnoughMemory(ValueError):
    """The machine lacks the host or device memory a run needs (one line: why)."""


class RunStopped(Exception):
    """Raised inside a worker's partition when the run has stopped (on_oom = stop)."""


class InjectedError(RuntimeError):
    """A worker exception injected by a fault plan."""


class InjectedOom(DeviceOutOfMemory):
    """A device OOM injected by a fault plan at a named (or random) buffer."""


# ------------------------------------------------------------------------- input


@dataclass(frozen=True)
class KindWork:
    """What one partition of a proof kind runs: the prover's shape and flags."""

    shape: PartitionShape
    flags: ProverFlags


def kind_work(plan: Plan, where: str) -> KindWork:
    """The shape and flags our prover's dry run recorded in `plan.meta`; ValueError when
    the plan is not our prover's (the cuzk builder's plans, a Plan JSON file)."""
    m = plan.meta
    need = ("domain_size", "num_vars", "num_public", "h_len", "reduction", "flags")
    if any(k not in m for k in need):
        raise ValueError(
            f"{where}: the plan {plan.name!r} is not our GPU prover's dry run "
            "(gpu-run executes only `[plan] gpu_prover = {...}` scenarios)"
        )
    shape = PartitionShape(
        m["domain_size"], m["num_vars"], m["num_public"], m["h_len"], m["reduction"]
    )
    shape = witness_shaped(shape, m)  # issue 23: the densities and witness shape, if given
    flags = ProverFlags(**m["flags"])
    # not in the real pipeline yet: a resident key (and its tables) would outlive a
    # partition's Device, and the tails already run in the assembler process (`cuzk-sim
    # run` models them)
    for name in ("key_tables", "key_resident", "overlap_tails"):  # the most specific first
        if getattr(flags, name):
            raise ValueError(
                f"{where}: plan.gpu_prover.{name} = true is not supported by gpu-run "
                "(the model simulates it; set it false to run the scenario on a GPU)"
            )
    return KindWork(shape, flags)


@dataclass(frozen=True)
class Arrival:
    """One proof entering the queue at `at_s` with `partitions` partitions."""

    at_s: float
    kind: str
    partitions: int
    priority: int


@dataclass(frozen=True)
class RunSpec:
    """Everything the real pipeline needs, taken from a loaded scenario (`from_scenario`)."""

    name: str
    seed: int
    on_oom: Literal["stop", "continue"]
    gpus: int
    devices: tuple[int, ...]
    workers_per_device: int
    vram: int
    context: int  # the model's CUDA context: free at start = vram - context
    routing: Literal["assigned", "device0"]
    mutex_scope: Literal["device", "global", "none"]
    pool_release_threshold: int
    host_budget: int
    duration_s: float | None
    arrivals: tuple[Arrival, ...]
    work: dict[str, KindWork]

    @classmethod
    def from_scenario(cls, scn: Any) -> RunSpec:
        cfg = scn.config
        kinds = {a.kind for a in cfg.arrivals}
        work = {k: kind_work(scn.plans[k], f"{scn.source}: plan for {k}") for k in sorted(kinds)}
        rng = random.Random(cfg.seed)
        arrivals: list[Arrival] = []
        for a in cfg.arrivals:
            shape = scn.shapes[a.kind]
            t = a.start_s
            for i in itertools.count():
                if a.count is not None and i >= a.count:
                    break
                if cfg.duration_s is not None and t >= cfg.duration_s:
                    break
                arrivals.append(
                    Arrival(t, a.kind, a.partitions or shape.partitions, shape.priority)
                )
                if not a.every_s:
                    if a.count is None:
                        break
                    continue
                t += rng.expovariate(1 / a.every_s) if a.poisson else a.every_s
        arrivals.sort(key=lambda a: a.at_s)  # stable: the workload's order at equal times
        return cls(
            name=scn.name,
            seed=cfg.seed,
            on_oom=cfg.on_oom,
            gpus=cfg.gpus,
            devices=tuple(cfg.devices or range(cfg.gpus)),
            workers_per_device=cfg.gpu_workers_per_device,
            vram=cfg.vram,
            context=cfg.context_overhead,
            routing=cfg.routing,
            mutex_scope=scn.spec.variant.mutex_scope,
            pool_release_threshold=cfg.pool_release_threshold,
            host_budget=cfg.host_ram_budget,
            duration_s=cfg.duration_s,
            arrivals=tuple(arrivals),
            work=work,
        )


# ------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class Fault:
    """One injected fault. kind: `oom` (at `buffer`, or any buffer when buffer is None,
    each matching allocation with probability `p`), `exception` (a worker exception at
    an allocation, probability `p` per allocation), `shrink` (at `at_s` the cap shrinks
    by `nbytes`, an extra ballast)."""

    kind: Literal["oom", "exception", "shrink"]
    p: float = 0.0
    buffer: str | None = None
    at_s: float = 0.0
    nbytes: int = 0

    @classmethod
    def parse(cls, text: str) -> Fault:
        """`oom:BUFFER:P`, `oom:random:P`, `exception:P`, `shrink:SECONDS:SIZE`."""
        from cuzk_sim.units import parse_duration, parse_size

        parts = text.split(":")
        try:
            if parts[0] == "oom" and len(parts) == 3:
                buf = None if parts[1] == "random" else parts[1]
                return cls("oom", p=_probability(parts[2]), buffer=buf)
            if parts[0] == "exception" and len(parts) == 2:
                return cls("exception", p=_probability(parts[1]))
            if parts[0] == "shrink" and len(parts) == 3:
                at = parse_duration(parts[1] if " " in parts[1] else parts[1] + " s")
                return cls("shrink", at_s=at, nbytes=parse_size(parts[2]))
        except ValueError as e:
            raise ValueError(f"--fault {text!r}: {e}") from None
        raise ValueError(
            f"--fault {text!r}: expected oom:BUFFER:P, oom:random:P, exception:P or "
            "shrink:SECONDS:SIZE (e.g. oom:msm_h.points:0.1, shrink:0.5:2GiB)"
        )


def _probability(text: str) -> float:
    p = float(text)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability must be in [0, 1], got {text}")
    return p


@dataclass
class FaultPlan:
    """The faults of one run, drawn from one seeded generator under a lock (the draws'
    order follows the threads' interleaving: the counts, not the victims, repeat)."""

    faults: tuple[Fault, ...] = ()
    seed: int = 0
    injected: dict[str, int] = field(default_factory=dict)
    _rng: random.Random = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def at_alloc(self, buffer: str, nbytes: int, free: int | None, gpu: int) -> None:
        for f in self.faults:
            if f.kind == "shrink" or (f.buffer is not None and f.buffer != buffer):
                continue
            with self._lock:
                hit = self._rng.random() < f.p
                if hit:
                    key = f"{f.kind}:{f.buffer or 'random'}"
                    self.injected[key] = self.injected.get(key, 0) + 1
            if hit and f.kind == "oom":
                raise InjectedOom(buffer, nbytes, free, gpu)
            if hit:
                raise InjectedError(f"injected worker exception at alloc of {buffer}")


# ------------------------------------------------------------------------- devices


class Backend:
    """Device memory as the pipeline sees it; `LedgerBackend` (dry-run) and `CupyBackend`."""

    kind: DeviceKind

    def mem_info(self, gpu: int) -> tuple[int, int]:  # (free, total) as cudaMemGetInfo
        raise NotImplementedError


@dataclass
class LedgerBackend(Backend):
    """Dry-run device memory: the model's allocator ledger (cuzk_sim.model.allocator),
    one per GPU, of the scenario's size; thread-safe by one lock."""

    vram: int
    context: int
    gpus: int
    release_threshold: int = NEVER
    kind: DeviceKind = "dry-run"
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        from cuzk_sim.model.allocator import DeviceMemory

        self.memory = [
            DeviceMemory(
                g, self.vram, context=self.context, release_threshold=self.release_threshold
            )
            for g in range(self.gpus)
        ]

    def mem_info(self, gpu: int) -> tuple[int, int]:
        with self.lock:
            m = self.memory[gpu]
            return m.free, m.total

    def charge(self, gpu: int, owner: str, buffer: str, nbytes: int, allocator: str) -> bool:
        with self.lock:
            return self.memory[gpu].try_alloc(owner, buffer, nbytes, allocator) is not None

    def release(self, gpu: int, owner: str, buffer: str) -> None:
        with self.lock:
            self.memory[gpu].release(owner, buffer)

    def pools(self, gpu: int) -> dict[str, int]:
        m = self.memory[gpu]
        return {"caching_pool_idle": m.caching.idle, "async_pool_idle": m.async_pool.idle}

    def used_by_buffers(self, gpu: int) -> int:
        m = self.memory[gpu]
        return sum(a.live for a in m.allocators.values())


@dataclass
class CupyBackend(Backend):
    """The GPU through CuPy: cudaMemGetInfo, raw cudaMalloc ballasts, the pools."""

    kind: DeviceKind = "real"
    async_pools: dict[int, Any] = field(default_factory=dict)

    def mem_info(self, gpu: int) -> tuple[int, int]:
        import cupy

        with cupy.cuda.Device(gpu):
            free, total = cupy.cuda.runtime.memGetInfo()
        return int(free), int(total)

    def async_pool(self, gpu: int) -> Any:
        import cupy

        pool = self.async_pools.get(gpu)
        if pool is None:
            with cupy.cuda.Device(gpu):
                pool = self.async_pools[gpu] = cupy.cuda.MemoryAsyncPool()
        return pool

    def raw_malloc(self, gpu: int, nbytes: int) -> int:
        import cupy

        with cupy.cuda.Device(gpu):
            return int(cupy.cuda.runtime.malloc(nbytes))

    def raw_free(self, gpu: int, ptr: int) -> None:
        import cupy

        with cupy.cuda.Device(gpu):
            cupy.cuda.runtime.free(ptr)

    def _mempool(self, gpu: int) -> int:
        import cupy

        return int(cupy.cuda.runtime.deviceGetDefaultMemPool(gpu))

    def set_release_threshold(self, gpu: int, value: int) -> None:
        import cupy

        rt = cupy.cuda.runtime
        attr = getattr(rt, "cudaMemPoolAttrReleaseThreshold", 4)
        rt.memPoolSetAttribute(self._mempool(gpu), attr, min(value, NEVER))

    def release_threshold(self, gpu: int) -> int:
        import cupy

        rt = cupy.cuda.runtime
        attr = getattr(rt, "cudaMemPoolAttrReleaseThreshold", 4)
        return int(rt.memPoolGetAttribute(self._mempool(gpu), attr))

    def async_reserved_used(self, gpu: int) -> tuple[int, int]:
        import cupy

        rt = cupy.cuda.runtime
        pool = self._mempool(gpu)
        reserved = rt.memPoolGetAttribute(pool, getattr(rt, "cudaMemPoolAttrReservedMemCurrent", 5))
        used = rt.memPoolGetAttribute(pool, getattr(rt, "cudaMemPoolAttrUsedMemCurrent", 7))
        return int(reserved), int(used)

    def reset(self, gpu: int) -> None:
        """Empty every pool: CuPy's caching pool and pinned pool, the async pool."""
        import cupy

        with cupy.cuda.Device(gpu):
            cupy.cuda.Device(gpu).synchronize()
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()
            cupy.cuda.runtime.memPoolTrimTo(self._mempool(gpu), 0)

    def pools(self, gpu: int) -> dict[str, int]:
        import cupy

        with cupy.cuda.Device(gpu):
            caching = int(cupy.get_default_memory_pool().free_bytes())
        reserved, used = self.async_reserved_used(gpu)
        return {"caching_pool_idle": caching, "async_pool_idle": reserved - used}

    def used_by_buffers(self, gpu: int) -> int:
        import cupy

        with cupy.cuda.Device(gpu):
            caching = int(cupy.get_default_memory_pool().used_bytes())
        return caching + self.async_reserved_used(gpu)[1]


class PipelineDevice(Device):
    """A `Device` for one partition of one worker: the pipeline's lock, faults, stop
    flag, peak sampling and OOM post-mortems around the prover's own allocation layer."""

    def __init__(self, run: RealRun, worker: str, gpu: int, part: str, flags: ProverFlags):
        super().__init__("real" if run.backend.kind == "real" else "dry-run", gpu, flags.allocator)
        self.run, self.worker, self.part = run, worker, part
        # step timing (run.step_times): per GPU step (name, cat, start event, end event,
        # the plan step it ran)
        self.marks: list[tuple[str, str, Any, Any, Any]] = []
        self.mark_t0: float | None = None  # perf_counter when the first start event went in
        self.host_alloc_s = 0.0  # host seconds inside alloc/free calls (driver and pools)

    def _timed(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run one GPU step (the Device's hook around every kernel and copy); with step
        timing, between two CUDA events on the worker's stream (no synchronisation: read
        when the GPU section ends, `_collect_marks`)."""
        if not (self.run.step_times and self.runs):
            return super()._timed(name, fn)
        import cupy

        step = self.steps[-1]  # the step being run: Device appended it first
        cat = "kernel" if isinstance(step, Kernel) else "copy"
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        if self.mark_t0 is None:
            self.mark_t0 = time.perf_counter()
        a.record()
        out = fn()
        b.record()
        self.marks.append((name, cat, a, b, step))
        return out

    def _collect_marks(self) -> None:
        """The GPU times of the steps marked since the last call (their events have
        completed: the GPU section synchronised): spans on the worker's track, placed from
        the host time of the first event, and per-step totals (RealRun.step_stats)."""
        if not self.marks:
            return
        import cupy

        first = self.marks[0][2]
        t0 = self.mark_t0 if self.mark_t0 is not None else time.perf_counter()
        prev_end = None
        for name, cat, a, b, step in self.marks:
            a.synchronize()
            b.synchronize()
            start = t0 + cupy.cuda.get_elapsed_time(first, a) / 1000
            end = t0 + cupy.cuda.get_elapsed_time(first, b) / 1000
            gap = 0.0 if prev_end is None else max(start - prev_end, 0.0)
            prev_end = end
            if cat == "lock":  # the lock was taken here: the next gap starts from it
                continue
            self.run.span(self.worker, self.gpu_index, name, cat, start, end)
            self.run.step_stat(name, end - start, gap)
            direction = getattr(step, "direction", None)
            kind = f"copy_{direction.lower()}" if direction else getattr(step, "kind", "?")
            size = getattr(step, "size", 0)
            self.run.event(
                "step", worker=self.worker, step=name, kind=kind, size=size,
                nbytes=getattr(step, "bytes", 0), pinned=getattr(step, "pinned", False),
                seconds=end - start + gap,
            )  # fmt: skip
        self.marks, self.mark_t0 = [], None

    def lock(self, mutex: str | None = None) -> None:
        super().lock(mutex)
        if self.run.step_times and self.runs:  # a zero-length mark: gaps count from here
            import cupy

            ev = cupy.cuda.Event()
            if self.mark_t0 is None:
                self.mark_t0 = time.perf_counter()
            ev.record()
            self.marks.append(("(lock)", "lock", ev, ev, None))

    def cpu(self, name: str, kind: str, size: int, fn: Callable[[], Any], threads: int = 1) -> Any:
        t = time.perf_counter()
        out = super().cpu(name, kind, size, fn, threads)
        if self.run.step_times and self.runs:
            self.run.event(
                "step", worker=self.worker, step=name, kind=kind, size=size, nbytes=0,
                pinned=False, seconds=time.perf_counter() - t,
            )  # fmt: skip
        return out

    # --- memory
    def _malloc(self, nbytes: int) -> Any:
        if self.allocator == "async":
            return self.run.backend.async_pool(self.gpu_index).malloc(nbytes)
        return super()._malloc(nbytes)

    def free_bytes(self) -> int | None:
        return self.run.backend.mem_info(self.gpu_index)[0]

    def alloc(
        self,
        name: str,
        nbytes: int,
        persistent: bool = False,
        margin: int | None = None,
        note: str = "",
    ) -> Buffer:
        run = self.run
        if run.stopped.is_set():
            raise RunStopped()
        try:
            run.faults.at_alloc(name, nbytes, None, self.gpu_index)
            t = time.perf_counter()
            try:
                buf = super().alloc(name, nbytes, persistent, margin, note)
            finally:
                self.host_alloc_s += time.perf_counter() - t
            if not self.runs and not run.backend.charge(
                self.gpu_index, self.worker, name, nbytes, self.allocator
            ):
                self._live.pop(name)
                self.steps.pop()
                raise DeviceOutOfMemory(name, nbytes, self.free_bytes(), self.gpu_index)
        except NotEnoughFreeMemory as e:
            run.oom(self, e, fatal=False, reason="skip_vram")
            raise
        except DeviceOutOfMemory as e:
            run.oom(
                self, e, fatal=True, reason="injected" if isinstance(e, InjectedOom) else "alloc"
            )
            raise
        run.sample(self.gpu_index)
        return buf

    def free(self, name: str) -> None:
        t = time.perf_counter()
        super().free(name)
        self.host_alloc_s += time.perf_counter() - t
        if not self.runs:
            self.run.backend.release(self.gpu_index, self.worker, name)

    def kernel(self, name: str, kind: str, size: int, fn: Callable[[], Any]) -> Any:
        if not self.runs:
            return super().kernel(name, kind, size, fn)
        import cupy

        try:
            out = super().kernel(name, kind, size, fn)
        except cupy.cuda.memory.OutOfMemoryError as e:  # a CuPy library temporary
            err = DeviceOutOfMemory(
                f"{name} (cupy temporary)",
                int(e.args[0]) if e.args else 0,
                self.free_bytes(),
                self.gpu_index,
            )
            self.run.oom(self, err, fatal=True, reason="alloc")
            raise err from None
        self.run.sample(self.gpu_index)
        return out

    # --- the lock of the scenario's mutex_scope (None: no lock)
    def mutex_lock(self) -> threading.Lock | None:
        return self.run.lock_for(self.gpu_index)

    def on_unlock(self, mutex: str, asked: float, acquired: float, released: float) -> None:
        self._collect_marks()
        self.run.event("mutex", part=self.part, wait_s=acquired - asked, held_s=released - acquired)
        self.run.span(self.worker, self.gpu_index, f"wait {mutex}", "lock", asked, acquired)
        self.run.span(self.worker, self.gpu_index, f"hold {mutex}", "lock", acquired, released)


# ------------------------------------------------------------------------- data


@dataclass(frozen=True)
class PartitionData:
    """The host data every partition of one kind reuses, and (verify) the proofs due."""

    data: PartitionInput | None
    key: HostKey | None
    # verify mode: (r, s, the reference proof's bytes) per case; partition j uses j % len
    cases: tuple[tuple[int, int, bytes], ...] = ()
    pk: Any = None


TUNES = frozenset({"streams", "switch", "local", "noaffinity", "serialtail"})


def _tune_from_env() -> frozenset[str]:
    import os

    asked = {t.strip() for t in os.environ.get("CUZK_SIM_PIPELINE_TUNE", "").split(",")}
    asked.discard("")
    unknown = asked - TUNES
    if unknown:
        raise ValueError(
            f"CUZK_SIM_PIPELINE_TUNE: unknown {sorted(unknown)}; known: {sorted(TUNES)}"
        )
    return frozenset(asked)


_WARMED: set[tuple[PartitionShape, str]] = set()
_ASSEMBLERS: list[Any] = []  # [ProcessPoolExecutor, its size, its CPUs]


def _assemble_remote(ends: tuple, res: dict[str, Any], r: int, s: int, convert: bool) -> Any:
    """assemble() in a helper process (py_ecc holds the GIL for tens of ms: in a thread
    it would stall the other workers' kernel launches; cuzk assembles on CPU threads).
    convert: `res` holds the raw MSM results -- the window sums of each MSM, whose Horner
    (9-18 ms of Python ints per partition at any domain, benchmarks/assembler_timing.py)
    and conversion to points run here, outside the GPU section and off the worker
    threads."""
    return assemble(HostKey({}, *ends), msm_results(res) if convert else res, r, s)


# The deferred MSM tails of one partition, split over assembler processes so that they run
# side by side: the G2 tail costs ~2.5 G1 tails (its doublings are over Fq2), so it runs
# alone and the four G1 tails in pairs. Three processes per worker; the critical path is
# the G2 tail, ~40 % of the tails in one process (benchmarks/assembler_timing.py).
TAIL_GROUPS = (("msm_b_g2",), ("msm_h", "msm_a"), ("msm_b_g1", "msm_l"))
TAIL_PROCESSES = len(TAIL_GROUPS)


def tail_groups(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """`raw` (stage -> its MSM results) split as TAIL_GROUPS; a stage no group names gets
    a group of its own. Empty groups are dropped."""
    named = {st for g in TAIL_GROUPS for st in g}
    groups = [{st: raw[st] for st in g if st in raw} for g in TAIL_GROUPS]
    groups += [{st: v} for st, v in raw.items() if st not in named]
    return [g for g in groups if g]


def finish_in_pool(pool: Any, ends: tuple, raw: dict[str, Any], r: int, s: int) -> Any:
    """A partition's host assembly through the assembler pool: its MSM tails side by side
    (`tail_groups`, one task each), then the assembly (one more task)."""
    futures = [pool.submit(msm_results, g) for g in tail_groups(raw)]
    res: dict[str, Any] = {}
    for f in futures:
        res.update(f.result())
    return pool.submit(_assemble_remote, ends, res, r, s, False).result()


def _warm_assembler(_: int) -> int:
    """Import what assembly needs in a helper process; the short sleep spreads one call
    over each process of the pool."""
    import py_ecc.optimized_bls12_381  # noqa: F401

    time.sleep(0.05)
    return 0


def cpu_halves(
    sysfs: str = "/sys/devices/system/cpu", allowed: set[int] | None = None
) -> tuple[set[int], set[int]] | None:
    """Two sets of logical CPUs that share no physical core (sysfs topology, of the CPUs
    this process may use): the first half of the physical cores with their hyperthreads,
    and the second half. None where the topology cannot be read or there are fewer than
    4 physical cores."""
    import glob
    import os

    cores: dict[tuple[int, int], set[int]] = {}
    try:
        allowed = os.sched_getaffinity(0) if allowed is None else allowed
        for path in glob.glob(f"{sysfs}/cpu[0-9]*/topology"):
            cpu = int(path.split("/")[-2][3:])
            if cpu not in allowed:
                continue
            with open(f"{path}/physical_package_id") as f:
                pkg = int(f.read())
            with open(f"{path}/core_id") as f:
                core = int(f.read())
            cores.setdefault((pkg, core), set()).add(cpu)
    except (OSError, ValueError, AttributeError):
        return None
    if len(cores) < 4:
        return None
    phys = sorted(cores.values(), key=min)
    half = len(phys) // 2
    return set().union(*phys[:half]), set().union(*phys[half:])


def _pin_to(cpus: set[int] | None) -> None:
    """Pool initializer: run this helper process on `cpus` only."""
    import os

    if cpus:
        os.sched_setaffinity(0, cpus)


def assembler(workers: int, cpus: set[int] | None = None) -> Any:
    """A process pool of at least `workers` processes (spawned: no CUDA state in them),
    on `cpus` if given (off the cores of the worker threads)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    key = frozenset(cpus or ())
    if _ASSEMBLERS and _ASSEMBLERS[1] >= workers and _ASSEMBLERS[2] == key:
        return _ASSEMBLERS[0]
    if _ASSEMBLERS:
        _ASSEMBLERS[0].shutdown()
        _ASSEMBLERS.clear()
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_pin_to,
        initargs=(cpus,),
    )
    # start them now, not inside a timed run: each imports this module and py_ecc (the
    # first partition of a run used to pay ~0.5 s for it)
    list(pool.map(_warm_assembler, range(workers)))
    _ASSEMBLERS.extend([pool, workers, key])
    return pool


def _random_limbs(rng: np.random.Generator, rows: int) -> np.ndarray:
    """(rows, 8) random standard-form scalars < 2^254 < r, written in place chunk by chunk
    (no temporary the size of the output: at 2^27 a/b/c are 12 GiB)."""
    out = np.empty((rows, 8), dtype=np.uint32)
    flat = out.reshape(-1).view(np.uint64)
    step = 1 << 24
    for a in range(0, flat.size, step):
        flat[a : a + step] = rng.bit_generator.random_raw(min(step, flat.size - a))
    out[:, 7] &= 0x3FFFFFFF  # < 2^254 < r: a valid standard-form scalar
    return out


def _make_key(sizes: dict[str, tuple[str, int]], pinned: bool) -> tuple[Any, Any]:
    """A synthetic key of these MSM sizes made on the GPU (gpu/keygen.py), with a progress
    bar; logged with its size and time."""
    from .keygen import key_bytes, make_key_with_progress

    gib = key_bytes(sizes) / 2**30
    label = f"synthetic key {gib:.1f} GiB {'pinned' if pinned else 'pageable'}"
    return make_key_with_progress(sizes, pinned, label)


SYNTHETIC = SyntheticStore(_make_key)  # the real device's synthetic data, once per process
DRY_SYNTHETIC = SyntheticStore(_make_key, real=False)  # the dry-run's books (no data)


def synthetic_data(shape: PartitionShape, real: bool, key_pinned: bool = False) -> PartitionData:
    """Random a/b/c and witness of `shape` and a GPU-made key, each made once per process
    (SyntheticStore: the key per MSM sizes and pinning, the inputs per shape) and shared
    by every worker; key_pinned: the key's points in page-locked host memory
    (ProverFlags.key_pinned). Dry-run: no data (the store keeps the same books)."""
    import py_ecc.optimized_bls12_381 as bls

    store = SYNTHETIC if real else DRY_SYNTHETIC

    def inputs() -> tuple[np.ndarray, np.ndarray, dict]:
        n = shape.domain_size
        rng = np.random.default_rng(shape.domain_size)
        abc = _random_limbs(rng, 3 * n).reshape(3, n, 8)
        witness, scalars = shaped_witness(shape, rng)  # issue 23: the shape's 0 / 1 share
        return abc, witness, scalars

    pts = store.key(shape.msm_sizes(), key_pinned)
    made = store.partition_inputs(shape, inputs)
    if not real:
        return PartitionData(None, None)
    abc, witness, scalars = made
    data = PartitionInput(abc, witness, pts, scalars)
    return PartitionData(data, HostKey(pts, bls.G1, bls.G1, bls.G2, bls.G1, bls.G2))


def reference_data(
    log2: int, cases: int = 4, seed: int = 7, key_pinned: bool = False
) -> PartitionData:
    """A squaring chain filling a domain of 2^log2, with `cases` (r, s) pairs and the
    reference prover's proof for each: the oracle every GPU proof is compared with."""
    from cuzk_sim.reference.circuits import squaring_chain
    from cuzk_sim.reference.field import R
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.qap import evaluate_matrices
    from cuzk_sim.reference.serialize import proof_to_bytes
    from cuzk_sim.reference.setup import setup

    from . import encoding
    from .prover import host_key

    if not 2 <= log2 <= MAX_VERIFY_LOG2:
        raise ValueError(f"verify: domain 2^{log2} is outside 2^2..2^{MAX_VERIFY_LOG2}")
    rng = random.Random(seed)
    r1cs, w = squaring_chain((1 << log2) - 4)
    pk = setup(r1cs, rng=rng)
    key = host_key(pk, pinned=key_pinned)
    n = pk.domain_size
    a, b, c = evaluate_matrices(pk.A, pk.B, pk.C, w, n)
    abc = encoding.ints_to_limbs(a + b + c, 8).reshape(3, n, 8)
    data = PartitionInput(abc, encoding.ints_to_limbs(list(w), 8), key.points)
    due = []
    for _ in range(cases):
        r, s = rng.randrange(R), rng.randrange(R)
        due.append((r, s, proof_to_bytes(ref_prove(pk, w, r, s))))
    return PartitionData(data, key, tuple(due), pk)


# ------------------------------------------------------------------------- the run


@dataclass
class ProofState:
    id: str
    kind: str
    partitions: int
    submitted_s: float
    done: int = 0
    returned: int = 0
    failed: bool = False


@dataclass
class Job:
    """How one partition ended: proved, failed (reason), dropped (its proof had failed)
    or stopped (the run stopped first)."""

    partition: str
    worker: str
    status: Literal["proved", "failed", "dropped", "stopped"]
    reason: str = ""
    valid: bool | None = None  # verify mode: equal to the reference's proof


@dataclass
class RealRun:
    """One execution of a RunSpec; `execute()` returns the SimResult, and the run keeps
    its jobs, ballast, measured context and leak check for `details()`."""

    spec: RunSpec
    backend: Backend
    faults: FaultPlan = field(default_factory=FaultPlan)
    verify: dict[str, PartitionData] | None = None  # kind -> reference data (verify mode)
    warm: bool = True  # run one partition of each kind before the timed run (real device)
    # CUDA events around every GPU step: spans in the trace and per-step totals in
    # details() (no synchronisation added; the events are read when a GPU section ends)
    step_times: bool = False
    # experiments (CUZK_SIM_PIPELINE_TUNE, comma-separated; docs/validation.md): "streams"
    # (each worker on its own non-blocking stream instead of the legacy default stream),
    # "switch" (GIL switch interval 0.1 ms during the run), "local" (the MSM results --
    # Horner over the window sums, points -- finished in the worker thread, where they ran
    # before, instead of the assembler process), "noaffinity" (worker threads and
    # assembler processes on any core; default: on disjoint physical cores, `cpu_halves`),
    # "serialtail" (a partition's MSM tails one after another in one assembler process,
    # as before; default: side by side in three, `finish_in_pool`)
    tune: frozenset[str] = field(default_factory=lambda: _tune_from_env())
    # where the memory estimate goes before the run starts (gpu-run: stderr)
    say: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        self.data: dict[str, PartitionData] = {}  # kind -> its host data, made up front
        self.memory: MemoryNeed | None = None
        self.host_start: dict[str, Any] = {}
        self.stopped = threading.Event()
        self._stats = threading.Lock()
        self.oom_events: list[OomEvent] = []
        self.lines: list[tuple[float, str]] = []
        # (t, event, fields) for a cuzk-style log (cuzk_sim.cli.gpu_run writes it)
        self.events: list[tuple[float, str, dict[str, Any]]] = []
        self.spans: list[Span] = []
        self.jobs: list[Job] = []
        self.peak: dict[int, int] = {}
        self.ballast: dict[int, list[int]] = {}
        self.ballast_bytes: dict[int, int] = {}
        self.context_real: dict[int, int] = {}
        self.start_free: dict[int, int] = {}
        self.live: dict[str, PipelineDevice] = {}
        self.t0 = 0.0
        self.stopped_at_oom = False
        self.dispatched = 0  # partitions put in the queue
        self.shrunk_bytes: dict[int, int] = {}  # faults: extra ballast taken mid-run
        self.ballast_placed: dict[int, int] = {}  # the ballast of each GPU at the start
        self.threshold_before: dict[int, int] = {}
        # step name -> [count, GPU seconds, seconds the stream idled before it]
        self.step_totals: dict[str, list[float]] = {}
        self.host_alloc_s: list[float] = []  # per partition: host seconds in alloc/free
        scope = self.spec.mutex_scope
        self._global = threading.Lock() if scope == "global" else None
        self._device_locks = {g: threading.Lock() for g in range(self.spec.gpus)}

    # --- shared state, called from workers
    def now(self) -> float:
        return time.perf_counter() - self.t0

    def lock_for(self, gpu: int) -> threading.Lock | None:
        if self.spec.mutex_scope == "none":
            return None
        return self._global if self._global is not None else self._device_locks[gpu]

    def log(self, line: str) -> None:
        with self._stats:
            self.lines.append((self.now(), line))

    def event(self, name: str, **fields: Any) -> None:
        with self._stats:
            self.events.append((self.now(), name, fields))

    def span(self, track: str, dev: int, name: str, cat: str, a: float, b: float) -> None:
        with self._stats:
            self.spans.append(Span(track, dev, name, cat, a - self.t0, b - self.t0))

    def step_stat(self, name: str, seconds: float, gap: float) -> None:
        with self._stats:
            t = self.step_totals.setdefault(name, [0, 0.0, 0.0])
            t[0] += 1
            t[1] += seconds
            t[2] += gap

    def used(self, gpu: int) -> int:
        """Device memory in use as the scenario's card would show it: everything the
        process holds (context, pools, buffers), the ballast excluded."""
        if isinstance(self.backend, LedgerBackend):
            return self.backend.memory[gpu].used
        free, total = self.backend.mem_info(gpu)
        return total - free - self.ballast_bytes.get(gpu, 0)

    def sample(self, gpu: int) -> None:
        u = self.used(gpu)
        with self._stats:
            if u > self.peak.get(gpu, 0):
                self.peak[gpu] = u

    def oom(self, dev: PipelineDevice, e: DeviceOutOfMemory, fatal: bool, reason: str) -> None:
        gpu = dev.gpu_index
        free = self.backend.mem_info(gpu)[0]
        ledger: dict[str, dict[str, int]] = {}
        with self._stats:
            for d in list(self.live.values()):
                if d.gpu_index == gpu and d.live:
                    ledger.setdefault(d.worker, {}).update(d.live)
        held = {"cuda_context": self.context_real.get(gpu, self.spec.context)}
        held.update({k: v for k, v in self.backend.pools(gpu).items() if v})
        ledger["(device)"] = held
        allocator = "injected" if reason == "injected" else dev.allocator
        event = OomEvent(
            self.now(), gpu, dev.worker, dev.part, e.buffer, e.nbytes, free,
            allocator, fatal, reason, ledger,
        )  # fmt: skip
        with self._stats:
            self.oom_events.append(event)
        if fatal:
            self.log(
                f"worker {dev.worker} panicked: CUDA error 2: out of memory allocating "
                f"{e.buffer} ({e.nbytes} bytes, free {free}) partition {dev.part}"
            )
        else:
            self.log(f"CUZK_TIMING: prestage_setup={reason}")
        self.event("oom", buffer=e.buffer, nbytes=e.nbytes, free=free, fatal=fatal, reason=reason)

    # --- setup and teardown
    def _devices_used(self) -> list[int]:
        return [0] if self.spec.routing == "device0" else list(self.spec.devices)

    def _prepare(self) -> None:
        """Empty the pools, measure the context, place the ballast of each GPU used."""
        spec, be = self.spec, self.backend
        for g in self._devices_used():
            if not isinstance(be, CupyBackend):
                self.context_real[g] = spec.context
                self.start_free[g] = be.mem_info(g)[0]
                continue
            be.reset(g)
            self.threshold_before[g] = be.release_threshold(g)
            be.set_release_threshold(g, spec.pool_release_threshold)
            free, total = be.mem_info(g)
            self.context_real[g] = total - free
            want_free = spec.vram - spec.context
            if want_free > free + CARD_SHORTFALL:
                raise ValueError(
                    f"hardware.vram {spec.vram} B leaves {want_free} B free; this GPU has "
                    f"only {free} B free"
                )
            if want_free > free:  # the whole card, with a context larger than the model's
                self.log(
                    f"gpu{g}: {want_free - free} bytes fewer free than hardware.vram - "
                    "context (the real context is larger): no ballast"
                )
            self.ballast[g] = []
            # cudaMalloc takes 2 MiB granules: round the ballast down, so that at least
            # `want_free` stays free (less than 2 MiB more; `achieved_vram_bytes` says)
            ballast = (free - want_free) // BALLAST_GRANULE * BALLAST_GRANULE
            if ballast > 0:
                self.ballast[g].append(be.raw_malloc(g, ballast))
            after = be.mem_info(g)[0]
            self.ballast_bytes[g] = self.ballast_placed[g] = free - after
            self.start_free[g] = after

    def shrink(self, gpu: int, nbytes: int) -> None:
        """The cap shrinks mid-run by nbytes (or what is free): an extra ballast."""
        be = self.backend
        if isinstance(be, LedgerBackend):
            with be.lock:
                mem = be.memory[gpu]
                take = min(nbytes, mem.free)
                mem.try_alloc("(ballast)", f"shrink{len(self.lines)}", take, "sync")
            self.shrunk_bytes[gpu] = self.shrunk_bytes.get(gpu, 0) + take
            self.log(f"fault: VRAM cap of gpu{gpu} shrank by {take} bytes")
            return
        free = be.mem_info(gpu)[0]
        take = min(nbytes, max(free - (4 << 20), 0)) // BALLAST_GRANULE * BALLAST_GRANULE
        if take > 0:
            with self._stats:  # counted before it exists: no peak sample sees it as used
                self.ballast_bytes[gpu] += take
            try:
                self.ballast[gpu].append(be.raw_malloc(gpu, take))
            except Exception:
                with self._stats:
                    self.ballast_bytes[gpu] -= take
                take = 0
        self.shrunk_bytes[gpu] = self.shrunk_bytes.get(gpu, 0) + take
        self.log(f"fault: VRAM cap of gpu{gpu} shrank by {take} bytes")

    def _teardown(self) -> dict[int, int]:
        """Free the ballasts; the bytes each GPU's pools still hand out (leaks), and empty
        the pools so that the next run starts from the same state."""
        leaks: dict[int, int] = {}
        be = self.backend
        for g in self._devices_used():
            if isinstance(be, LedgerBackend):
                mem = be.memory[g]
                for owner, buf in [k for k in mem.live if k[0] == "(ballast)"]:
                    mem.release(owner, buf)
                leaks[g] = be.used_by_buffers(g)
                continue
            leaks[g] = be.used_by_buffers(g)
            for ptr in self.ballast.get(g, []):
                be.raw_free(g, ptr)
            self.ballast[g] = []
            self.ballast_bytes[g] = 0
            be.reset(g)
            be.set_release_threshold(g, self.threshold_before.get(g, 0))
        return leaks

    # --- host memory and host data (gpu/hostdata.py)
    def store(self) -> SyntheticStore:
        return SYNTHETIC if self.backend.kind == "real" else DRY_SYNTHETIC

    def memory_need(self) -> MemoryNeed:
        """What the run needs, asking no GPU (the dry-run device computes what a real run
        would need): the synthetic key and inputs of its kinds (none with verify: the
        reference data is small and made already) and, per GPU used, the scenario's card
        less its context, free."""
        spec = self.spec
        work = [(w.shape, w.flags.key_pinned) for w in spec.work.values()]
        workers = len(spec.devices) * spec.workers_per_device
        device = {g: max(spec.vram - spec.context, 0) for g in self._devices_used()}
        return memory_need(work, workers, device, self.verify is None, self.store())

    def check_memory(self) -> MemoryNeed:
        """Say what the run needs (`say`, the log); on the real device refuse
        (NotEnoughMemory, one line) when MemAvailable or a GPU's free memory is short."""
        need = self.memory = self.memory_need()
        available = host_available()
        self.host_start = {"available_bytes": available}
        if self.say is not None:
            self.say(need.line())
        self.log(need.line())
        if self.backend.kind != "real":
            return need
        why = refusal(need, available, None)  # the host first: no GPU asked
        if not why:
            free = {g: self.backend.mem_info(g)[0] for g in need.device_bytes}
            why = refusal(need, available, free, CARD_SHORTFALL)
        if why:
            raise NotEnoughMemory(why)
        return need

    def _make_data(self) -> None:
        """Check the memory, then make each kind's host data once, before any worker
        starts (the key with a progress bar); data other runs left in this process is
        dropped first when it and this run's would not fit in KEEP_SYNTHETIC_BYTES or in
        what the host has available."""
        need = self.check_memory()
        if self.verify is not None:
            return
        store = self.store()
        wanted = [e for w in self.spec.work.values() for e in entries(w.shape, w.flags.key_pinned)]
        total = need.key_bytes + need.inputs_bytes + need.droppable_bytes
        available = self.host_start.get("available_bytes")
        short = available is not None and need.host_bytes > available
        real = self.backend.kind == "real"
        drop = need.droppable_bytes and (total > KEEP_SYNTHETIC_BYTES or short)
        if drop and store.retain(wanted) and real:  # CuPy's pinned pool keeps freed blocks
            import cupy

            cupy.get_default_pinned_memory_pool().free_all_blocks()
        t = time.perf_counter()
        for kind, w in self.spec.work.items():
            self.data[kind] = synthetic_data(w.shape, real, w.flags.key_pinned)
        made = time.perf_counter() - t
        keys = [
            store.stats.get(entries(w.shape, w.flags.key_pinned)[0])
            for w in self.spec.work.values()
        ]
        stats = [k for k in keys if k is not None and k.bytes]
        self.host_start.update(
            data_seconds=made,
            key_seconds=sum(k.seconds for k in stats),
            key_alloc_seconds=sum(k.alloc_s for k in stats),
            key_generate_seconds=sum(k.generate_s for k in stats),
            key_made_bytes=sum(k.bytes for k in stats),
            key_method=sorted({k.method for k in stats}),
            key_notes=[n for k in stats for n in k.notes],
        )
        for note in self.host_start["key_notes"]:
            self.log(f"synthetic key: {note}")
        if real:
            self.log(f"host data made in {made:.1f} s (key {self.host_start['key_seconds']:.1f} s)")

    def host_report(self) -> dict[str, Any]:
        """Host memory: the estimate, MemAvailable at the start, the peak RSS (VmHWM) and
        the bound it is held to, the key's making time."""
        need = self.memory or self.memory_need()
        return {
            "need_bytes": need.host_bytes,
            "key_bytes": need.key_bytes,
            "inputs_bytes": need.inputs_bytes,
            "overhead_bytes": need.overhead_bytes,
            "bound_bytes": need.bound_bytes,
            "peak_rss_bytes": peak_rss(),
            **self.host_start,
        }

    def _warm_up(self) -> None:
        """One partition of each kind at full size, untimed: compiles and loads the
        kernels (part of the context) and makes the synthetic data."""
        for kind, w in self.spec.work.items():
            if (w.shape, w.flags.allocator) in _WARMED and self.verify is None:
                continue
            _WARMED.add((w.shape, w.flags.allocator))
            data = self._data(kind)
            dev = Device("real", 0, w.flags.allocator)
            with dev.selected():
                partition(dev, w.shape, w.flags, data.data)
            dev.free_all()
            self.log(f"warm-up: one {kind} partition (2^{w.shape.log_n}) untimed")

    def _data(self, kind: str) -> PartitionData:
        if self.verify is not None:
            return self.verify[kind]
        if kind in self.data:
            return self.data[kind]
        work = self.spec.work[kind]
        return synthetic_data(work.shape, self.backend.kind == "real", work.flags.key_pinned)

    # --- the workers
    def _worker(self, name: str, gpu: int, q: queue.PriorityQueue, done: threading.Event) -> None:
        if self.worker_cpus:  # this thread only (Linux: pid 0 is the calling thread)
            import os

            os.sched_setaffinity(0, self.worker_cpus)
        if "streams" in self.tune and self.backend.kind == "real":
            import cupy

            with cupy.cuda.Device(gpu):
                stream = cupy.cuda.Stream(non_blocking=True)
            with stream:
                self._work(gpu, name, q, done)
            return
        self._work(gpu, name, q, done)

    def _work(self, gpu: int, name: str, q: queue.PriorityQueue, done: threading.Event) -> None:
        while not self.stopped.is_set():
            try:
                _, (proof, p) = q.get(timeout=0.01)
            except queue.Empty:
                if done.is_set() and q.empty():
                    return
                continue
            self._partition(name, gpu, proof, p)

    def _partition(self, worker: str, gpu: int, proof: ProofState, p: int) -> None:
        label = f"{proof.id}/{p}"
        if proof.failed:
            self._returned(proof, Job(label, worker, "dropped", "its proof had already failed"))
            return
        work = self.spec.work[proof.kind]
        data = self._data(proof.kind)
        dev = PipelineDevice(self, worker, gpu, label, work.flags)
        with self._stats:
            self.live[worker] = dev
        t0 = time.perf_counter()
        self.event("gpu_start", job=proof.id, partition=p, worker=worker)
        job = Job(label, worker, "proved")
        oom = False
        try:
            with dev.selected():
                raw = partition(dev, work.shape, work.flags, data.data)
            if self.stopped.is_set():
                raise RunStopped()
            if data.key is not None:
                convert = "local" not in self.tune
                res = raw if convert else msm_results(raw)
                r, s, due = data.cases[p % len(data.cases)] if data.cases else (3, 4, b"")
                k = data.key
                ends = (k.alpha_g1, k.beta_g1, k.beta_g2, k.delta_g1, k.delta_g2)
                pool = self.assemblers
                if convert and "serialtail" not in self.tune:
                    finish = lambda: finish_in_pool(pool, ends, res, r, s)  # noqa: E731
                else:  # one task: the tails one after another, then the assembly
                    finish = lambda: pool.submit(  # noqa: E731
                        _assemble_remote, ends, res, r, s, convert
                    ).result()
                proof_obj = dev.cpu("assemble", "assemble", 1, finish)
                if data.cases:
                    from cuzk_sim.reference.serialize import proof_to_bytes

                    job.valid = proof_to_bytes(proof_obj) == due
            else:
                dev.cpu("assemble", "assemble", 1, lambda: None)
        except RunStopped:
            job = Job(label, worker, "stopped", "the run stopped (on_oom = stop)")
        except DeviceOutOfMemory as e:
            oom = True
            job = Job(label, worker, "failed", f"out of memory at {e.buffer} ({e.nbytes} bytes)")
        except Exception as e:  # a worker exception: the partition fails, the worker goes on
            job = Job(label, worker, "failed", f"worker exception: {type(e).__name__}: {e}")
            self.log(f"worker {worker} partition {label} failed: {type(e).__name__}: {e}")
        finally:
            dev.free_all()
            dev._collect_marks()
            with self._stats:
                self.live.pop(worker, None)
                self.host_alloc_s.append(dev.host_alloc_s)
        t1 = time.perf_counter()
        self.span(worker, gpu, label, "partition", t0, t1)
        if job.status == "proved":
            self.event("gpu_end", job=proof.id, partition=p, worker=worker, gpu_s=t1 - t0)
        elif job.status == "failed":
            self.event("gpu_failed", job=proof.id, partition=p, error=job.reason)
        if job.status == "stopped":
            with self._stats:
                self.jobs.append(job)
            return
        if job.status == "failed":
            proof.failed = True
            if oom and self.spec.on_oom == "stop":
                with self._stats:
                    self.jobs.append(job)
                    self.stopped_at_oom = True
                self.stopped.set()
                return
        self._returned(proof, job)

    def _returned(self, proof: ProofState, job: Job) -> None:
        with self._stats:
            self.jobs.append(job)
            if job.status == "proved":
                proof.done += 1
            proof.returned += 1
            finished = proof.returned == proof.partitions
            t = self.now()
        if finished:
            if proof.failed:
                self.log(f"proof {proof.id} failed")
            else:
                with self._stats:
                    self.done_times.append((proof.id, proof.kind, t))
                self.log(f"proof {proof.id} done")
                self.event("proof_done", job=proof.id, total_s=t - proof.submitted_s)

    def execute(self, on_start: Callable[[], None] | None = None) -> SimResult:
        spec = self.spec
        self.assemblers = None
        # worker threads and assembler processes on disjoint physical cores: the two kinds
        # of Python work do not share a core (on the H200 device machine, 16 vCPUs without
        # SMT, no effect was measurable either way: docs/validation.md; it costs nothing)
        halves = None if "noaffinity" in self.tune else cpu_halves()
        self.worker_cpus = halves[0] if halves else None
        self._make_data()
        if self.backend.kind == "real":
            self.assemblers = assembler(
                len(spec.devices) * spec.workers_per_device * TAIL_PROCESSES,
                halves[1] if halves else None,
            )
            if self.warm:
                self._warm_up()
        self._prepare()
        self.done_times: list[tuple[str, str, float]] = []
        self.proofs = [
            ProofState(f"{a.kind}-{i}", a.kind, a.partitions, a.at_s)
            for i, a in enumerate(spec.arrivals)
        ]
        for g in self.start_free:
            self.peak[g] = self.used(g)
        q: queue.PriorityQueue = queue.PriorityQueue()
        done = threading.Event()
        seq = itertools.count()
        threads = []
        for d in spec.devices:
            gpu = 0 if spec.routing == "device0" else d
            for k in range(spec.workers_per_device):
                name = f"gpu{d}-w{k}"
                threads.append(
                    threading.Thread(target=self._worker, args=(name, gpu, q, done), name=name)
                )
        import sys

        switch = sys.getswitchinterval()
        if "switch" in self.tune:
            sys.setswitchinterval(1e-4)
        self.t0 = time.perf_counter()
        if on_start is not None:
            on_start()
        for t in threads:
            t.start()
        timers = [
            threading.Timer(f.at_s, self.shrink, args=(g, f.nbytes))
            for f in self.faults.faults
            if f.kind == "shrink"
            for g in self._devices_used()
        ]
        for t in timers:
            t.start()
        try:
            for a, proof in zip(spec.arrivals, self.proofs, strict=True):
                wait = a.at_s - self.now()
                if wait > 0 and self.stopped.wait(wait):
                    break
                if spec.duration_s is not None and self.now() >= spec.duration_s:
                    break
                for p in range(a.partitions):
                    self.event("gpu_queue", job=proof.id, partition=p)
                    self.dispatched += 1
                    q.put(((-a.priority, next(seq)), (proof, p)))
            done.set()
            if spec.duration_s is not None:
                threading.Timer(max(spec.duration_s - self.now(), 0), self.stopped.set).start()
            for t in threads:
                t.join()
        finally:
            sys.setswitchinterval(switch)
            self.stopped.set()
            done.set()
            for t in timers:
                t.cancel()
            wall = self.now()
            self.leaks = self._teardown()
        while not q.empty():  # never started: the run stopped first
            _, (proof, p) = q.get()
            self.jobs.append(Job(f"{proof.id}/{p}", "-", "stopped", "the run stopped first"))
        return self._result(wall)

    def _result(self, wall: float) -> SimResult:
        times = [t for _, _, t in self.done_times]
        spp = seconds_per_proof(times, min((p.submitted_s for p in self.proofs), default=0.0))
        used = self._devices_used()
        return SimResult(
            scenario=self.spec.name,
            seed=self.spec.seed,
            sim_time_s=wall,
            proofs_submitted=len(self.proofs),
            proofs_completed=len(times),
            proofs_failed=sum(p.failed for p in self.proofs),
            partitions_completed=sum(j.status == "proved" for j in self.jobs),
            partitions_failed=sum(j.status == "failed" for j in self.jobs),
            seconds_per_proof=spp,
            peak_vram_bytes={
                g: self.peak.get(g, 0) if g in used else 0 for g in range(self.spec.gpus)
            },
            vram_total_bytes={g: self.spec.vram for g in range(self.spec.gpus)},
            oom_events=list(self.oom_events),
            log=sorted(self.lines, key=lambda x: x[0]),
            stopped_at_oom=self.stopped_at_oom,
            host_budget_bytes=self.spec.host_budget,
            proof_done_times=list(self.done_times),
            spans=list(self.spans),
            metrics=self._metrics(wall),
        )

    def _metrics(self, wall: float) -> Any:
        """The model's metrics, from what a real run measures: proofs and latencies per
        kind, and per device the share of the run inside GPU sections (lock holds; also
        reported as compute utilization: an upper bound, kernels are not timed) and the
        time workers waited for the lock. Host-side figures are 0 (not measured)."""
        from cuzk_sim.metrics import DeviceMetrics, KindMetrics, RunMetrics, bottleneck, percentile

        done = {pid: at for pid, _, at in self.done_times}
        kinds = []
        for kind in sorted({p.kind for p in self.proofs}):
            proofs = [p for p in self.proofs if p.kind == kind]
            lat = sorted(done[p.id] - p.submitted_s for p in proofs if p.id in done)
            failed = sum(p.failed for p in proofs)
            spp = seconds_per_proof(
                [done[p.id] for p in proofs if p.id in done], min(p.submitted_s for p in proofs)
            )
            kinds.append(
                KindMetrics(
                    kind, len(proofs), len(lat), failed, spp, per_hour(spp),
                    percentile(lat, 50), percentile(lat, 95), lat[-1] if lat else None,
                )
            )  # fmt: skip
        devices = []
        waits = 0
        wait_total = 0.0
        for g in self._devices_used():
            held = sum(s.end_s - s.start_s for s in self.spans if s.cat == "lock" and s.device == g
                       and s.name.startswith("hold"))  # fmt: skip
            wait = [s.end_s - s.start_s for s in self.spans if s.cat == "lock" and s.device == g
                    and s.name.startswith("wait")]  # fmt: skip
            waits += sum(w > 1e-4 for w in wait)
            wait_total += sum(wait)
            share = min(held / wall, 1.0) if wall > 0 else 0.0
            devices.append(DeviceMetrics(g, share, {"HtoD": 0.0, "DtoH": 0.0}, share, sum(wait)))
        gpu = sum(d.compute_utilization for d in devices) / len(devices) if devices else 0.0
        verdict, evidence = bottleneck(gpu, 0.0, gpu, 0.0, 0.0, 0.0)
        return RunMetrics(
            time_s=wall,
            kinds=tuple(kinds),
            devices=tuple(devices),
            mutex_wait_s=wait_total,
            mutex_waits=waits,
            host_core_utilization=0.0,
            synthesis_busy=0.0,
            host_ram_wait=0.0,
            fallbacks_taken=sum(not e.fatal for e in self.oom_events),
            bottleneck=verdict,
            evidence=f"gpu-run (GPU sections measured, host side not): {evidence}",
        )

    def details(self) -> dict[str, Any]:
        """What only a real run has: per-job outcomes, the context and ballast measured,
        the leak check and the faults injected."""
        counts: dict[str, int] = {}
        for j in self.jobs:
            counts[j.status] = counts.get(j.status, 0) + 1
        return {
            "device": self.backend.kind,
            "context_bytes": {str(g): b for g, b in self.context_real.items()},
            "ballast_bytes": {str(g): b for g, b in self.ballast_placed.items()},
            "shrunk_bytes": {str(g): b for g, b in self.shrunk_bytes.items()},
            "start_free_bytes": {str(g): b for g, b in self.start_free.items()},
            # the card the run really had: free at start + the model's context (the ballast
            # sets free memory in 2 MiB steps, so this is the scenario's vram + < 2 MiB)
            "achieved_vram_bytes": {
                str(g): b + self.spec.context for g, b in self.start_free.items()
            },
            "leaked_bytes": {str(g): b for g, b in getattr(self, "leaks", {}).items()},
            "faults_injected": dict(self.faults.injected),
            "jobs": counts,
            "jobs_total": len(self.jobs),
            "jobs_lost": self.dispatched - len(self.jobs),
            "proofs_verified": sum(j.valid is True for j in self.jobs),
            "proofs_invalid": sum(j.valid is False for j in self.jobs),
            "failed_reasons": sorted({j.reason for j in self.jobs if j.status == "failed"}),
            "unexplained_jobs": [
                j.partition for j in self.jobs if j.status == "failed" and not j.reason
            ],
            "tune": sorted(self.tune),
            "host": self.host_report(),
            # step timing (--trace/--log): per GPU step, mean ms on the GPU and mean ms the
            # stream idled before it (host work: launches, allocations, copies' staging)
            "steps": {
                name: {"n": int(n), "gpu_ms": 1000 * t / n, "idle_before_ms": 1000 * g / n}
                for name, (n, t, g) in sorted(self.step_totals.items())
            },
            "host_alloc_ms_per_partition": (
                1000 * sum(self.host_alloc_s) / len(self.host_alloc_s) if self.host_alloc_s else 0.0
            ),
        }


def gpu_missing() -> str | None:
    """Why the real device cannot run here (no CuPy, no CUDA device), or None."""
    try:
        import cupy
    except ImportError as e:
        return f"CuPy cannot be imported ({e})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDARuntimeError without a driver
        return f"no CUDA device ({type(e).__name__}: {e})"
    return None if n > 0 else "no CUDA device"


def backend_for(device: DeviceKind, spec: RunSpec, card_vram: int | None = None) -> Backend:
    """The backend of `device`; a dry-run card has the scenario's size (card_vram: another)."""
    if device == "real":
        return CupyBackend()
    return LedgerBackend(
        card_vram or spec.vram, spec.context, spec.gpus, spec.pool_release_threshold
    )
