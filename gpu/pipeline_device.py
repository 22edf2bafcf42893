"""The `Device` of one partition in the real pipeline: the run's lock, faults, stop flag,
peak sampling and OOM post-mortems around the prover's own allocation layer, and (step
timing) CUDA events around every GPU step, read once the partition has returned."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from cuzk_sim.plan.contract import Kernel

from .backends import Backend
from .device import Buffer, Device, DeviceOutOfMemory, NotEnoughFreeMemory
from .faults import FaultPlan, InjectedOom
from .flags import ProverFlags


class RunStopped(Exception):
    """Raised inside a worker's partition when the run has stopped (on_oom = stop)."""


class RunHooks(Protocol):
    """What a PipelineDevice asks of the run it belongs to (gpu/pipeline.py RealRun)."""

    backend: Backend
    faults: FaultPlan
    step_times: bool
    stopped: threading.Event

    def lock_for(self, gpu: int) -> threading.Lock | None: ...
    def event(self, name: str, **fields: Any) -> None: ...
    def span(self, track: str, dev: int, name: str, cat: str, a: float, b: float) -> None: ...
    def step_stat(self, name: str, seconds: float, gap: float) -> None: ...
    def sample(self, gpu: int) -> None: ...
    def oom(self, dev: PipelineDevice, e: DeviceOutOfMemory, fatal: bool, reason: str) -> None: ...


class PipelineDevice(Device):
    """A `Device` for one partition of one worker: the pipeline's lock, faults, stop
    flag, peak sampling and OOM post-mortems around the prover's own allocation layer."""

    def __init__(self, run: RunHooks, worker: str, gpu: int, part: str, flags: ProverFlags):
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
        once the partition has returned, `_collect_marks`)."""
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
        completed: every GPU section synchronised at its unlock): spans on the worker's
        track, placed from the host time of the first event, and per-step totals
        (RealRun.step_stats)."""
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
                seconds=end - start + gap, zeros=getattr(step, "zeros", None),
                ones=getattr(step, "ones", None),
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

    def kernel(self, name: str, kind: str, size: int, fn: Callable[[], Any], **kw: Any) -> Any:
        """Device.kernel (`fills`, `scalars` passed on), a CuPy temporary's OOM reported."""
        if not self.runs:
            return super().kernel(name, kind, size, fn, **kw)
        import cupy

        try:
            out = super().kernel(name, kind, size, fn, **kw)
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
        # no CUDA call here (the marks are read once the partition has returned,
        # RealRun._partition): another worker holds the lock now
        self.run.event("mutex", part=self.part, wait_s=acquired - asked, held_s=released - acquired)
        self.run.span(self.worker, self.gpu_index, f"wait {mutex}", "lock", asked, acquired)
        self.run.span(self.worker, self.gpu_index, f"hold {mutex}", "lock", acquired, released)
