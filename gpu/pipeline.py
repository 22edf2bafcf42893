"""The real pipeline: a scenario executed by our prover's code on worker threads.

The real counterpart of every mechanism the model has (cuzk_sim/model/engine.py):
- one thread per GPU worker (`gpu_workers_per_device` x devices) taking partitions from
  one priority queue, in the workload's order, released at the workload's arrival times
  on the scenario's clock, with its lost GPUs, restarts and deadline (gpu/dispatch.py);
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

This module is the run itself (`RealRun`: host data, workers); beside it run_spec.py
(what runs), dispatch.py (the scenario's clock: arrivals, lost GPUs, restarts, the
deadline), faults.py, backends.py (device memory), card.py (ballast and teardown),
pipeline_device.py (a partition's Device), assembler.py (the host assembly's processes),
partition_data.py (synthetic or reference data) and run_report.py (result, metrics,
details).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cuzk_sim.results.failures import is_oom_exception
from cuzk_sim.results.sim_result import OomEvent, SimResult, Span

from .assembler import (
    TAIL_PROCESSES,
    _assemble_remote,
    _tune_from_env,
    assembler,
    cpu_halves,
    finish_in_pool,
)
from .backends import Backend, LedgerBackend
from .card import CARD_SHORTFALL, CardSetup
from .device import Device, DeviceOutOfMemory
from .dispatch import Dispatch
from .faults import FaultPlan
from .hostdata import (
    MemoryNeed,
    SyntheticStore,
    entries,
    host_available,
    memory_need,
    peak_rss,
    refusal,
)
from .msm_results import msm_results
from .partition_data import PartitionData, synthetic_data, synthetic_store
from .pipeline_device import PipelineDevice, RunStopped
from .prover import PartitionShape, partition
from .run_report import Job, ProofState, RunReport
from .run_spec import RunSpec

KEEP_SYNTHETIC_BYTES = 12 << 30  # synthetic data of other shapes kept across runs, at most


class NotEnoughMemory(ValueError):
    """The machine lacks the host or device memory a run needs (one line: why)."""


# the plans warmed in this process: per shape AND flags, since a plan's flags choose its
# kernels (msm_chunk, split, streamed): the first launch of a kernel loads its module and
# may grow the context's local memory (per-thread local memory x the GPU's resident
# threads), which must happen before `_prepare` measures the context, not inside a run
_WARMED: set[tuple[PartitionShape, Any]] = set()


def _entries(work: Any) -> tuple[tuple, tuple]:
    """The synthetic store's keys of one kind's key and inputs (hostdata.entries)."""
    return entries(work.shape, work.flags.key_pinned, work.flags.pinned)


# ------------------------------------------------------------------------- the run


@dataclass
class RealRun(CardSetup, RunReport, Dispatch):
    """One execution of a RunSpec; `execute()` returns the SimResult, and the run keeps
    its jobs, ballast, measured context and leak check for `details()`."""

    spec: RunSpec
    backend: Backend
    faults: FaultPlan = field(default_factory=FaultPlan)
    verify: dict[str, PartitionData] | None = None  # kind -> reference data (verify mode)
    warm: bool = True  # run one partition of each kind before the timed run (real device)
    # CUDA events around every GPU step: spans in the trace and per-step totals in
    # details() (no synchronisation added; the events are read once the partition returned)
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
        self.context_room: dict[int, int] = {}  # left free for the context to grow back
        self.context_end: dict[int, int] = {}  # measured after the run, the pools empty
        self.start_free: dict[int, int] = {}
        self.live: dict[str, PipelineDevice] = {}
        self.t0 = time.perf_counter()  # reset at the start: lines before it are < 0 s
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
        self.stall: str | None = None
        self._init_dispatch()

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
        held = {"cuda_context": self.context_now(gpu)}  # now: the driver may have shrunk it
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

    def launch_oom(self, dev: PipelineDevice, e: Exception) -> None:
        """A fatal OomEvent for an out-of-memory error raised outside our allocations (a
        kernel launch that cannot grow the context's local memory: CUDA_ERROR_OUT_OF_MEMORY
        from the driver; a library's temporary): its `buffer` names the step that raised
        it, "<step> (<error type>)", requested bytes unknown (0)."""
        step = dev.failed_step or (dev.steps[-1] if dev.steps else None)
        where = getattr(step, "name", None) or getattr(step, "buffer", None) or "(no step)"
        err = DeviceOutOfMemory(f"{where} ({type(e).__name__})", 0, None, dev.gpu_index)
        self.oom(dev, err, fatal=True, reason="launch")

    # --- host memory and host data (gpu/hostdata.py)
    def store(self) -> SyntheticStore:
        return synthetic_store(self.backend.kind == "real")

    def memory_need(self) -> MemoryNeed:
        """What the run needs, asking no GPU (the dry-run device computes what a real run
        would need): the synthetic key and inputs of its kinds (none with verify: the
        reference data is small and made already) and, per GPU used, the scenario's card
        less its context, free."""
        spec = self.spec
        work = [(w.shape, w.flags.key_pinned, w.flags.pinned) for w in spec.work.values()]
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
        wanted = [e for w in self.spec.work.values() for e in _entries(w)]
        total = need.key_bytes + need.inputs_bytes + need.droppable_bytes
        available = self.host_start.get("available_bytes")
        short = available is not None and need.host_bytes > available
        real = self.backend.kind == "real"
        drop = need.droppable_bytes and (total > KEEP_SYNTHETIC_BYTES or short)
        if drop and store.retain(wanted) and real:  # CuPy's pinned pool keeps freed blocks
            import cupy

            cupy.get_default_pinned_memory_pool().free_all_blocks()
        # a key an earlier run of this process made is held, not made: its stats (still in
        # the store) are that run's, not this one's (no making time, no setup)
        key_entries = {_entries(w)[0] for w in self.spec.work.values()}
        held = {k for k in key_entries if k in store.keys}
        t = time.perf_counter()
        for kind, w in self.spec.work.items():
            self.data[kind] = synthetic_data(w.shape, real, w.flags.key_pinned, w.flags.pinned)
        made = time.perf_counter() - t
        keys = [store.stats.get(k) for k in key_entries - held]
        stats = [k for k in keys if k is not None and k.bytes]
        self.host_start.update(
            held_bytes=need.held_bytes,
            key_held_bytes=store.held(held),
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
        """One partition of each kind at full size and flags, untimed (once per plan in
        this process): compiles and loads its kernels and grows the context's local
        memory to what they need (part of the context) and makes the synthetic data."""
        for kind, w in self.spec.work.items():
            if (w.shape, w.flags) in _WARMED and self.verify is None:
                continue
            _WARMED.add((w.shape, w.flags))
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
        real = self.backend.kind == "real"
        return synthetic_data(work.shape, real, work.flags.key_pinned, work.flags.pinned)

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
        try:
            while (item := self._take(gpu, q, done)) is not None:
                proof, p = item
                try:
                    self._partition(name, gpu, proof, p)
                finally:
                    with self._stats:
                        self.outstanding -= 1
        finally:
            with self._stats:
                self.alive -= 1

    def _partition(self, worker: str, gpu: int, proof: ProofState, p: int) -> None:
        label = f"{proof.id}/{p}"
        if proof.failed:
            self._returned(proof, Job(label, worker, "dropped", "its proof had already failed"))
            return
        dev = PipelineDevice(self, worker, gpu, label, self.spec.work[proof.kind].flags)
        try:
            self._prove(worker, gpu, proof, p, dev)
        finally:
            # step timing: its CUDA events are read once the partition has returned (its
            # proof counted). Read right after the unlock, those reads waited for the
            # next lock holder's pageable a/b/c uploads (1.65 s of them at 2^27: the
            # partition's end came that late), so a worker's proof was late by them
            dev._collect_marks()

    def _prove(self, worker: str, gpu: int, proof: ProofState, p: int, dev: PipelineDevice):
        """One partition on `dev`: its GPU section, its assembly, its job returned."""
        label = dev.part
        work = self.spec.work[proof.kind]
        data = self._data(proof.kind)
        with self._stats:
            self.live[worker] = dev
        t0 = time.perf_counter()
        self.event("gpu_start", job=proof.id, partition=p, worker=worker)
        job = Job(label, worker, "proved")
        oom = False
        epoch = self.epoch
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
            job = Job(label, worker, "stopped", self.stop_reason)
        except DeviceOutOfMemory as e:
            oom = True
            job = Job(label, worker, "failed", f"out of memory at {e.buffer} ({e.nbytes} bytes)")
        except Exception as e:  # a worker exception: the partition fails, the worker goes on
            if is_oom_exception(e):  # out of memory outside an allocation: still an OOM
                oom = True
                self.launch_oom(dev, e)
            job = Job(label, worker, "failed", f"worker exception: {type(e).__name__}: {e}")
            self.log(f"worker {worker} partition {label} failed: {type(e).__name__}: {e}")
        finally:
            dev.free_all()
            with self._stats:
                self.live.pop(worker, None)
                self.host_alloc_s.append(dev.host_alloc_s)
        t1 = time.perf_counter()
        if gpu in self.lost and job.status in ("proved", "failed"):  # lost while it ran
            job = Job(label, worker, "failed", f"device lost: gpu{gpu}")
        elif epoch != self.epoch and job.status == "proved":  # a restart took its proof
            job = Job(label, worker, "dropped", "its proof was lost in a daemon restart")
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
        start = time.perf_counter()
        with self._stats:  # what was logged before the start (the memory line) is at < 0 s
            self.lines = [(t - (start - self.t0), line) for t, line in self.lines]
        self.t0 = start
        if on_start is not None:
            on_start()
        self.alive = len(threads)
        for t in threads:
            t.start()
        try:
            self._dispatch(q, seq)  # arrivals, lost GPUs, restarts, shrinks (dispatch.py)
            done.set()
            for t in threads:
                t.join()
        finally:
            sys.setswitchinterval(switch)
            self.stopped.set()
            done.set()
            wall = self.now()
            self.leaks = self._teardown()
        self._stranded(q)
        return self._result(wall)
