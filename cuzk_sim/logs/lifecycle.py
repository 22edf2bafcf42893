"""What the engine and its workers went through outside the GPU sections, for `Analyzer`:
engine starts (a restart closes what was open and starts a new run), the workers' start-up
lines and layout, crashes (out of memory: a panic or an ERROR line) and GPU failures."""

from __future__ import annotations

from cuzk_sim.logs.parse import Record


class Lifecycle:
    """Handlers of `Analyzer` (its state and `_close`, `_close_all`, `_physical_gpu`)."""

    def _engine_start(self, r: Record) -> None:
        self.engine_starts += 1
        if self.engine_starts > 1:  # a restart: TIMELINE offsets start again from 0
            self._close_all("unfinished", r.lineno)
            self.run += 1
            self.now = 0
            for use in self.gpus.values():
                use.active = 0
                use.idle_since = None
            self.queue = self.synth_active = 0
            self.holding.clear()
        if self.epoch_wall is None and r.t_wall is not None:
            self.epoch_wall = r.t_wall
        elif self.epoch_wall is not None and r.t_wall is not None:
            self.run_offsets[self.run] = r.t_wall - self.epoch_wall

    def _worker_started(self, r: Record) -> None:
        wid, gpu = field_int(r.fields.get("worker_id")), field_int(r.fields.get("gpu"))
        if wid is not None and gpu is not None:
            self.workers[wid] = gpu
            sub = field_int(r.fields.get("sub_id"))
            self.worker_sub[wid] = sub if sub is not None else wid
            self.worker_lines.setdefault(wid, (r.lineno, r.text))

    def _workers_init(self, r: Record) -> None:
        wpd = field_int(r.fields.get("gpu_workers_per_device"))
        text = str(r.fields.get("gpus", "")).strip("[] ")
        try:
            gpus = [int(g) for g in text.split(",") if g.strip()]
        except ValueError:
            gpus = []
        if not gpus:
            n = field_int(r.fields.get("num_gpus"))
            gpus = list(range(n)) if n is not None and 0 < n <= 4096 else []
        if wpd is not None and wpd > 0 and gpus and len(gpus) <= 4096:
            self.layout = (gpus, wpd, (r.lineno, r.text))

    def _offset_ms(self, t_wall: float | None) -> float | None:
        """A tracing line's time as a TIMELINE offset of the current run (ms)."""
        if t_wall is None or self.epoch_wall is None:
            return None
        return (t_wall - self.epoch_wall - self.run_offsets.get(self.run, 0.0)) * 1000.0

    def _crash(self, r: Record) -> None:
        if not r.fields.get("oom", True):
            return
        panic = r.kind in ("rust_panic", "cpp_terminate", "model_panic")
        count = panic or not self.ooms  # an ERROR line after a panic is the same event
        if len(self.ooms) < 16:
            self.ooms.append(r)
        msg = str(r.fields.get("message", r.text)).strip()
        where = _oom_where(msg)
        gpu = self._open_gpu()
        ev = [(r.lineno, r.text.split("\n")[0])]
        if "\n" in r.text:
            ev.append((r.lineno + 1, r.text.split("\n")[1]))
        if self.last_da is not None:
            ev.insert(0, self.last_da)
        on = f" on GPU {gpu}" if gpu is not None else ""
        self.book.add(
            "oom",
            f"Out of GPU memory{on} in {where}: the worker panicked and its partition (and "
            "proof) failed"
            + (
                "; two GPU sections were running at once (see concurrent_gpu_sections)"
                if self.book.has("concurrent_gpu_sections") or len(self.open_sections) > 1
                else ""
            )
            + ".",
            ev,
            count=count,
            anchor=r.lineno,
        )
        for part in list(self.open_sections):  # the panic unwinds an open section
            if part.gpu == gpu and len(self.open_sections) == 1:
                self._close(part, "failed", r.lineno)

    def _open_gpu(self) -> int | None:
        gpus = {self._physical_gpu(p) for p in self.open_sections}
        if len(gpus) == 1:
            return gpus.pop()
        if self.last_da is not None and not gpus:
            return None
        return min(gpus) if gpus else None

    def _gpu_failed(self, r: Record) -> None:
        err = str(r.fields.get("error", ""))
        if any(p in err for p in ("out of memory", "cudaErrorMemoryAllocation")):
            self._crash(r)
        job, p = r.fields.get("job_id"), field_int(r.fields.get("partition"))
        if job is not None:
            part = self.parts.get((self.run, str(job), p))
            if part is not None:
                self._close(part, "failed", r.lineno)
                return
        if len(self.open_sections) == 1:
            self._close(self.open_sections[0], "failed", r.lineno)


def field_int(v: object) -> int | None:
    """A log field as an int (`Some(3)` too), None when absent or not a number."""
    if v is None:
        return None
    try:
        return int(str(v).removeprefix("Some(").removesuffix(")"))
    except ValueError:
        return None


def _oom_where(msg: str) -> str:
    if "cudaMallocAsync" in msg:
        return "sppark Dmalloc (cudaMallocAsync, util/gpu_t.cuh)"
    if "cudaMalloc" in msg:
        return "cudaMalloc"
    if "allocating " in msg:  # the model's panic: "... allocating d_b (8.00 GiB, free ...)"
        rest = msg.split("allocating ", 1)[1]
        return "the allocation of " + rest.split(" partition ")[0]
    if "out of host memory" in msg:
        return "host memory: " + msg
    return "a CUDA allocation"
