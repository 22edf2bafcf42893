"""Rebuild what happened from a stream of records: partitions, workers, GPUs, findings.

TIMELINE lines give each partition's synthesis, queue and GPU section (milliseconds since
the engine started); the tracing start-up lines give each worker's GPU. The C++ timing
lines carry neither a worker nor a time: each is given to the oldest GPU section still
open that has not had a line of that key yet (cuzk prints them in call order: prep_msm,
pre_lock/mutex_wait, ntt_msm_h, batch_add, tail_msm, mutex_held; b_g2_msm whenever its
CPU thread ends). With one worker per GPU or a working mutex that is exact; otherwise it
is the best order-preserving guess (docs/logs.md).

Memory stays bounded: open partitions and jobs are kept until they end, then folded
into running statistics; at most `keep` closed partitions are kept for the report.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from cuzk_sim.io.errors import LineError
from cuzk_sim.logs.exclusion import Exclusion
from cuzk_sim.logs.findings import FindingBook, end_of_log_findings
from cuzk_sim.logs.lifecycle import Lifecycle, field_int
from cuzk_sim.logs.parse import Counts, Record
from cuzk_sim.logs.sections import (  # noqa: F401 - re-exported: the module's old names
    CIRCUIT_KINDS,
    FIGURE_SET,
    FIGURES,
    KEEP_PARTITIONS,
    MAX_MALFORMED,
    MERGED_SPANS,
    SLOT_OF_KEY,
    GpuUse,
    Job,
    Partition,
    kind_of,
)
from cuzk_sim.logs.stats import Stat

# bounded state: cuzk has a GPU section open per worker and a few partitions per job in
# flight; a log with more is not one we can follow (30,000 unended sections made every
# C++ line's attribution a scan of them all)
MAX_OPEN_SECTIONS = 1024
MAX_OPEN_PARTITIONS = 100_000
BACKWARDS_SLACK_MS = 1000  # threads print TIMELINE lines a few ms out of order

MAX_STEP_KEYS = 4096  # distinct (kind, size, bytes, pinned) of CUZK_SIM_STEP lines kept


class Analyzer(Lifecycle, Exclusion):
    """Feed records in log order; `finish()` closes what is still open."""

    def __init__(
        self,
        keep: int = KEEP_PARTITIONS,
        on_close: Callable[[Partition], None] | None = None,
        kind: str | None = None,
    ) -> None:
        self.keep = keep
        self.on_close = on_close
        self.forced_kind = kind
        self.run = 0
        self.book = FindingBook()
        self.counts = Counts()
        self.malformed: list[tuple[int, str, str]] = []
        self.workers: dict[int, int] = {}  # worker id -> assigned GPU
        self.worker_sub: dict[int, int] = {}  # worker id -> its index on its GPU
        self.worker_lines: dict[int, tuple[int, str]] = {}
        # "initializing GPU workers": the GPU ordinals, workers per GPU, (line, text)
        self.layout: tuple[list[int], int, tuple[int, str]] | None = None
        self.timeline_workers: set[int] = set()  # worker ids TIMELINE lines name
        self.parts: dict[tuple, Partition] = {}
        self.open_sections: list[Partition] = []  # started, not ended, in start order
        self.recent: dict[int, deque[Partition]] = {}  # per GPU: recently closed sections
        self.holding: dict[int, Partition] = {}  # per GPU: the section between lock and held
        self.jobs: dict[tuple, Job] = {}
        self.closed: list[Partition] = []
        self.closed_count = 0
        self.kind_stats: dict[str, dict[str, Stat]] = {}
        self.orphan_stats: dict[str, Stat] = {}  # C++ lines with no open section
        self.gpus: dict[int, GpuUse] = {}
        self.queue = 0
        self.synth_active = 0
        self.now = 0
        self.now_line = 0
        self.done_times: list[float] = []  # proof done times (ms) -- first and last kept
        self.done_n = 0
        self.done_first: float | None = None
        self.done_last: float | None = None
        self.cpp_gpus: dict[int, tuple[int, str]] = {}  # GPUs named by per-GPU C++ lines
        self.pce_extracted: dict[str, list[tuple[int, str, int]]] = {}
        # per circuit: (run, TIMELINE ms the extraction began, ms it ended), from the
        # tracing time of "PCE extraction complete" less its extract_ms
        self.pce_extract_spans: dict[str, list[tuple[int, float, float]]] = {}
        self.pce_load_ends: dict[str, list[tuple[int, float]]] = {}  # (run, TIMELINE ms)
        self.pce_save_failed: dict[str, tuple[int, str]] = {}
        self.pce_loaded: set[str] = set()
        self.engine_starts = 0
        self.last_prestage_vram: tuple[int, str] | None = None
        self.last_da: tuple[int, str] | None = None
        self.ooms: list[Record] = []
        self.rayon_threads: int | None = None
        self.budget_gib: int | None = None
        self.epoch_wall: float | None = None
        self.first_ms: int | None = None
        self.last_ms: int | None = None
        self.mutex_wait = Stat()
        self.mutex_held = Stat()
        self.worst_wait: tuple[int, int, str] = (-1, 0, "")
        self.variant: dict[str, int] = {}  # counts of prestage outcomes, b_g2 on cpu, ...
        self.jobs_kept: list[dict] = []
        self.jobs_per_kind: dict[str, int] = {}
        self.circuits: set[str] = set()  # PCE circuit ids named in the log
        self.run_offsets: dict[int, float] = {0: 0.0}  # run -> seconds after the first start
        # CUZK_SIM_STEP (our pipeline): (kind, size, bytes, pinned) -> ms per step
        self.step_stats: dict[tuple[str, int, int, bool], Stat] = {}
        self.step_names: dict[tuple[str, int, int, bool], set[str]] = {}  # the steps of a key
        # CUZK_SIM_CONTEXT (our pipeline): the context measured at each run's start, bytes
        self.context_bytes: list[int] = []
        self.cards: dict[int, tuple[str, int]] = {}  # CUZK_SIM_DEVICE: GPU -> (name, bytes)

    # --- feeding ---

    def feed_all(self, records: Iterable[Record]) -> Analyzer:
        for r in records:
            self.feed(r)
        return self

    def feed(self, r: Record) -> None:
        k = r.kind
        if k == "timeline":
            self._timeline(r)
        elif k == "timing":
            self._timing(r)
        elif k == "ntt_h":
            sec = self._attribute("ntt_h", r)
            for key, v in r.fields.items():
                self._stat(sec, f"ntt_h.{key}", v, r.lineno)
        elif k == "d_a_cache":
            gpu = int(r.fields["gpu"])
            self.cpp_gpus.setdefault(gpu, (r.lineno, r.text))
            self.last_da = (r.lineno, r.text)
            self.variant["d_a_cache"] = self.variant.get("d_a_cache", 0) + 1
        elif k == "pool_threshold":
            self.cpp_gpus.setdefault(int(r.fields["gpu"]), (r.lineno, r.text))
            self.variant["pool_max"] = self.variant.get("pool_max", 0) + 1
        elif k == "prestage":
            self._prestage(r)
        elif k == "prestage_vram":
            self.last_prestage_vram = (r.lineno, r.text)
            self.variant["prestage_vram"] = self.variant.get("prestage_vram", 0) + 1
        elif k == "engine_start":
            self._engine_start(r)
        elif k == "worker_started":
            self._worker_started(r)
        elif k == "workers_init":
            self._workers_init(r)
        elif k in ("rust_panic", "cpp_terminate", "model_panic", "oom_text", "error_oom"):
            self._crash(r)
        elif k == "gpu_failed":
            self._gpu_failed(r)
        elif k == "sim_step":
            f = r.fields
            # an MSM over shaped scalars (zeros= ones=) does not time the random-scalar
            # price its kind is fitted as: kept apart (`<kind>.shaped`, fitted by none)
            kind = f"{f['kind']}.shaped" if "zeros" in f or "ones" in f else str(f["kind"])
            key = (kind, int(f["size"]), int(f["bytes"]), bool(f["pinned"]))  # type: ignore[call-overload]
            st = self.step_stats.get(key)
            if st is None:
                if len(self.step_stats) >= MAX_STEP_KEYS:
                    return
                st = self.step_stats[key] = Stat()
            st.add(int(f["us"]) / 1000, r.lineno)  # type: ignore[call-overload]
            self.step_names.setdefault(key, set()).add(str(f["name"]))
        elif k == "sim_device":  # our pipeline's card: (name, total bytes) per GPU
            if len(self.cards) < MAX_MALFORMED:
                self.cards[int(r.fields["gpu"])] = (str(r.fields["name"]), int(r.fields["bytes"]))  # type: ignore[call-overload]
        elif k == "sim_context":
            self.context_bytes.append(int(r.fields["bytes"]))  # type: ignore[call-overload]
        elif k == "pce_extracted" and "circuit_id" not in r.fields:
            pass  # engine.rs's "background PCE extraction complete [for X]": the extraction
            # pipeline.rs already logged with its circuit_id (counting it again would double)
        elif k == "pce_extracted":
            cid = str(r.fields["circuit_id"])
            ms_ = field_int(r.fields.get("extract_ms"))
            self.pce_extracted.setdefault(cid, []).append((r.lineno, r.text, ms_ or 0))
            end = self._offset_ms(r.t_wall)
            spans = self.pce_extract_spans.setdefault(cid, [])
            if end is not None and ms_ is not None and len(spans) < MAX_MALFORMED:
                spans.append((self.run, end - ms_, end))
        elif k == "pce_save_failed":
            self.pce_save_failed.setdefault(
                str(r.fields.get("circuit_id", "?")), (r.lineno, r.text)
            )
        elif k == "pce_loaded":
            cid = str(r.fields.get("circuit_id", "?"))
            self.pce_loaded.add(cid)
            end = self._offset_ms(r.t_wall)
            ends = self.pce_load_ends.setdefault(cid, [])
            if end is not None and len(ends) < MAX_MALFORMED:
                ends.append((self.run, end))
        if k.startswith("pce_") and "circuit_id" in r.fields:
            self.circuits.add(str(r.fields["circuit_id"]))
        if k == "rayon_threads":
            self.rayon_threads = field_int(r.fields.get("rayon_threads"))
        elif k == "memory_budget":
            self.budget_gib = field_int(r.fields.get("total_budget_gib"))
        elif k == "malformed" and len(self.malformed) < MAX_MALFORMED:
            self.malformed.append((r.lineno, str(r.fields.get("why")), r.text))

    # --- TIMELINE ---

    def _part(self, job: str, p: int | None) -> Partition:
        key = (self.run, job, p)
        part = self.parts.get(key)
        if part is None:
            if len(self.parts) >= MAX_OPEN_PARTITIONS:
                raise LineError(
                    self.now_line,
                    f"more than {MAX_OPEN_PARTITIONS} partitions open at once (started, "
                    "never ended): not a log this reader can follow",
                )
            part = self.parts[key] = Partition(self.run, job, p)
            jk = (self.run, job)
            if jk not in self.jobs:
                self.jobs[jk] = Job(self.run, job)
            part.jobrec = self.jobs[jk]
            part.jobrec.open += 1
        return part

    def _advance(self, t: int, lineno: int) -> None:
        """Sweep the per-GPU occupancy clock forward to t (TIMELINE order)."""
        if t < self.now:
            t = self.now  # eprintln from several threads: a line may be a ms behind
        dt_ = t - self.now
        if dt_ > 0:
            for use in self.gpus.values():
                if (
                    use.active == 0
                    and use.first is not None
                    and self.queue <= 0
                    and self.synth_active > 0
                ):
                    use.starved_ms += dt_
        self.now = t
        self.now_line = lineno

    def _gpu_of(self, worker: int | None) -> int:
        if worker is None:
            return 0
        return self.workers.get(worker, 0)

    def _timeline(self, r: Record) -> None:
        f = r.fields  # the parser made ms, worker, partition, synth_ms, gpu_ms ints
        t, ev, job = f["ms"], f["event"], f["job"]
        p = f.get("partition")
        if t < self.now - BACKWARDS_SLACK_MS:
            raise LineError(
                r.lineno,
                f"TIMELINE time {t} ms is {self.now - t} ms before line {self.now_line}'s: "
                "the timestamps run backwards (one run's times only rise; a restart prints "
                "'starting cuzk engine' first)",
            )
        if self.first_ms is None:
            self.first_ms = t
        if self.last_ms is None or t > self.last_ms:
            self.last_ms = t
        self._advance(t, r.lineno)
        part = self._part(job, p)
        w = f.get("worker")
        if w is not None and len(self.timeline_workers) < MAX_STEP_KEYS:
            self.timeline_workers.add(w)  # type: ignore[arg-type]
        if ev == "GPU_START" or ev == "GPU_END":  # the lines findings cite
            part.lines.append((r.lineno, r.text))
        jobrec = self.jobs[(self.run, job)]
        if jobrec.first_ms is None:
            jobrec.first_ms = t
        if ev == "SYNTH_START":
            part.synth_start = t
            self.synth_active += 1
            if "kind" in f:
                jobrec.kind = str(f["kind"])
        elif ev == "SYNTH_END":
            part.synth_end = t
            jobrec.synth_end = t if jobrec.synth_end is None else max(jobrec.synth_end, t)
            self.synth_active = max(self.synth_active - 1, 0)
            if "synth_ms" in f:
                part.synth_ms = f["synth_ms"]
                self._stat(part, "synth_ms", part.synth_ms, r.lineno)
        elif ev == "GPU_QUEUE":
            part.queued = t
            self.queue += 1
        elif ev == "GPU_PICKUP":
            part.pickup = t
            jobrec.last_pickup = t if jobrec.last_pickup is None else max(jobrec.last_pickup, t)
            if part.queued is not None:
                self.queue = max(self.queue - 1, 0)
                # threads print a line a ms or so apart: a pickup before its queue line
                # waited 0
                self._stat(part, "queue_ms", max(t - part.queued, 0), r.lineno)
            part.worker = f.get("worker")
            part.gpu = self._gpu_of(part.worker)
        elif ev == "GPU_START":
            part.start = t
            part.worker = f.get("worker")
            part.gpu = self._gpu_of(part.worker)
            part.outcome = "open"
            if len(self.open_sections) >= MAX_OPEN_SECTIONS and part not in self.open_sections:
                raise LineError(
                    r.lineno,
                    f"more than {MAX_OPEN_SECTIONS} GPU sections open at once (GPU_START "
                    "without GPU_END): not a log this reader can follow",
                )
            self.open_sections.append(part)
            use = self.gpus.setdefault(part.gpu, GpuUse())
            if use.active == 0 and use.idle_since is not None:
                gap = t - use.idle_since[0]
                if use.longest_gap is None or gap > use.longest_gap[0]:
                    use.longest_gap = (gap, use.idle_since[1], (r.lineno, r.text))
            use.active += 1
            use.sections += 1
            if use.first is None:
                use.first = t
        elif ev == "GPU_END":
            part.end = t
            part.gpu_ms = f.get("gpu_ms")
            if part.gpu_ms is not None:
                self._stat(part, "gpu_ms", part.gpu_ms, r.lineno)
            if part.start is not None:
                self._stat(part, "section_ms", t - part.start, r.lineno)
            self._close(part, "done", r.lineno)

    def _close(self, part: Partition, outcome: str, lineno: int) -> None:
        if part in self.open_sections:
            self.open_sections.remove(part)
            use = self.gpus.setdefault(part.gpu or 0, GpuUse())
            use.active = max(use.active - 1, 0)
            use.last = part.end if part.end is not None else self.now
            if part.start is not None:  # on one clock across restarts
                off = 1000.0 * self.run_offsets.get(part.run, 0.0)
                use.add_section(part.start + off, use.last + off)
            if use.active == 0:
                end_line = part.line_of("GPU_END") or (lineno, "")
                use.idle_since = (self.now, end_line)
        for g, holder in list(self.holding.items()):
            if holder is part:
                del self.holding[g]
        part.outcome = outcome
        if part.end is None:
            part.end = self.now
        self._check_unguarded(part)
        jobrec = self.jobs.get((part.run, part.job))
        if jobrec is not None:
            if outcome == "done":
                jobrec.partitions_done += 1
                jobrec.last_end = (
                    part.end if jobrec.last_end is None else max(jobrec.last_end, part.end)
                )
            else:
                jobrec.failed = True
            jobrec.partitions_seen.add(part.partition)
            jobrec.open -= 1
        self.parts.pop((part.run, part.job, part.partition), None)
        self.closed_count += 1
        if len(self.closed) < self.keep:
            self.closed.append(part)
        if self.on_close is not None:
            self.on_close(part)
        if jobrec is not None and jobrec.open <= 0:
            self._job_finished(jobrec)

    def _job_finished(self, job: Job) -> None:
        """A job with no open partition left: fold its statistics under its kind."""
        n = len(job.partitions_seen)
        synth_v = job.values.get("synth_ms")
        kind = (
            self.forced_kind
            or job.kind
            or kind_of(n, sum(synth_v) / len(synth_v) if synth_v else None)
        )
        if kind.startswith("unknown") and len(self.circuits) == 1:  # the one PCE it used
            kind = CIRCUIT_KINDS.get(next(iter(self.circuits)), kind)
        if kind.startswith("unknown"):  # our model and gpu-run name jobs <kind>-<n>
            named = job.job.rsplit("-", 1)[0]
            if named in CIRCUIT_KINDS.values():
                kind = named
        job.kind = kind
        # done: every partition it started came back (cuzk starts all of a job's
        # partitions' synthesis at once, so the log names them all)
        if not job.failed and job.partitions_done == n and n and job.last_end is not None:
            self.done_n += 1
            t = float(job.last_end) + 1000.0 * self.run_offsets.get(job.run, 0.0)
            self.done_first = t if self.done_first is None else min(self.done_first, t)
            self.done_last = t if self.done_last is None else max(self.done_last, t)
        ks = self.kind_stats.setdefault(kind, {})
        for name, vals in job.values.items():
            ks.setdefault(name, Stat()).extend(vals, job.first_lines.get(name))
        self.jobs_per_kind[kind] = self.jobs_per_kind.get(kind, 0) + 1
        if len(self.jobs_kept) < self.keep:
            self.jobs_kept.append(
                {
                    "offset_s": self.run_offsets.get(job.run, 0.0),
                    "synth_end_ms": job.synth_end,
                    "last_pickup_ms": job.last_pickup,
                    "run": job.run,
                    "job": job.job,
                    "kind": kind,
                    "partitions": n,
                    "partitions_done": job.partitions_done,
                    "failed": job.failed,
                    "first_ms": job.first_ms,
                    "last_end_ms": job.last_end,
                }
            )
        self.jobs.pop((job.run, job.job), None)

    def _stat(self, part: Partition | None, name: str, v: float, lineno: int) -> None:
        if part is None:
            self.orphan_stats.setdefault(name, Stat()).add(v, lineno)
            return
        job = part.jobrec
        if job is None:
            self.orphan_stats.setdefault(name, Stat()).add(v, lineno)
            return
        vals = job.values.get(name)
        if vals is None:
            job.values[name] = [v]
            job.first_lines[name] = lineno
        else:
            vals.append(v)

    # --- C++ timing lines ---

    def _attribute(self, slot: str, r: Record) -> Partition | None:
        """The open section an untagged line belongs to: the first without that slot; a
        lock line first to one whose GPU nobody holds (lines carry no worker id, and
        sections of several GPUs open at once: a mutex taken on a free GPU is no sign of
        two sections inside one mutex)."""
        free = [p for p in self.open_sections if slot not in p.slots]
        if slot == "lock":
            unheld = [p for p in free if self._physical_gpu(p) not in self.holding]
            free = unheld or free
        if not free:
            return None
        free[0].slots.add(slot)
        return free[0]

    def _timing(self, r: Record) -> None:
        f = r.fields
        slot = None
        for k in f:
            slot = SLOT_OF_KEY.get(k)
            if slot is not None:
                break
        else:
            return
        sec = self._attribute(slot, r)
        timing = sec.timing if sec is not None else None
        for key, v in f.items():
            if key == "gpu_tid" or key == "num_circuits":
                continue
            if timing is not None:
                timing[key] = v  # type: ignore[assignment]
            if key in FIGURE_SET:
                self._stat(sec, key, v, r.lineno)
        if slot == "prep":  # the split path's C++ prints it for every partition
            self.variant["prep_lines"] = self.variant.get("prep_lines", 0) + 1
        if slot == "b_g2":
            self.variant["b_g2_cpu"] = self.variant.get("b_g2_cpu", 0) + 1
        if slot == "lock":
            self.variant["mutex_lines"] = self.variant.get("mutex_lines", 0) + 1
            wait = int(f.get("mutex_wait_ms", 0))  # type: ignore[arg-type]
            self.mutex_wait.add(wait, r.lineno)
            if wait > self.worst_wait[0]:
                self.worst_wait = (wait, r.lineno, r.text)
            if sec is not None:
                self._lock_taken(sec, r)
        elif slot == "held":
            self.mutex_held.add(int(f.get("mutex_held_ms", 0)), r.lineno)  # type: ignore[arg-type]
            if sec is not None:
                g = self._physical_gpu(sec)
                self.gpus.setdefault(sec.gpu or 0, GpuUse()).held_ms += int(f["mutex_held_ms"])  # type: ignore[arg-type]
                if self.holding.get(g) is sec:
                    del self.holding[g]
        elif slot == "ntt":
            self.variant["ntt_lines"] = self.variant.get("ntt_lines", 0) + 1

    def worker_count(self) -> tuple[int, str]:
        """How many GPU workers the log shows, and from what: the engine's layout line,
        its worker start-up lines, else the worker ids of the TIMELINE lines."""
        if self.layout is not None:
            return len(self.layout[0]) * self.layout[1], "initializing GPU workers"
        ids = set(self.workers) | self.timeline_workers
        if self.workers and ids == set(self.workers):
            return len(ids), "start-up lines"
        if self.workers:
            return len(ids), "start-up lines and TIMELINE worker ids"
        return len(ids), "TIMELINE worker ids: no start-up line"

    def worker_name(self, wid: int | None) -> str:
        """The model's name for a worker (`gpu<assigned>-w<index>`), so traces match."""
        if wid is None:
            return "worker ?"
        return f"gpu{self.workers.get(wid, 0)}-w{self.worker_sub.get(wid, wid)}"

    # --- other records ---

    def _prestage(self, r: Record) -> None:
        outcome = str(r.fields.get("prestage_setup"))
        self.variant[f"prestage_{outcome}"] = self.variant.get(f"prestage_{outcome}", 0) + 1
        sec = self._attribute("prestage", r)
        if sec is not None:  # staged before or after taking the mutex?
            where = "prestage_under" if "lock" in sec.slots else "prestage_outside"
            self.variant[where] = self.variant.get(where, 0) + 1
        if outcome in ("fallback", "skip_vram"):
            err = r.fields.get("err")
            why = (
                f"failed with cudaError {err}{' (out of memory)' if err == 2 else ''}"
                if outcome == "fallback"
                else "was skipped by the memory-aware check (not enough free VRAM)"
            )
            ev = [(r.lineno, r.text)]
            if self.last_prestage_vram:
                ev.insert(0, self.last_prestage_vram)
            self.book.add(
                "prestage_fallback",
                f"Pre-staging of a/b/c {why} and the partition fell back to the unstaged "
                "upload path: the staged buffers of the workers of one GPU do not fit "
                "beside each other (every fallback gives up the Phase 9 speed-up).",
                ev,
            )

    def _close_all(self, outcome: str, lineno: int) -> None:
        for part in list(self.open_sections):
            self._close(part, outcome, lineno)
        for key in list(self.parts):
            part = self.parts.get(key)
            if part is not None:
                self._close(part, outcome if part.start is not None else "unfinished", lineno)
        for job in list(self.jobs.values()):
            self._job_finished(job)

    # --- the end ---

    def finish(self) -> Analyzer:
        self._close_all("unfinished", self.now_line)
        end_of_log_findings(self)
        return self

    # --- results ---

    def observed_seconds_per_proof(self) -> float | None:
        """As the model defines it: (last done − first done) / (done − 1)."""
        if self.done_n >= 2 and self.done_first is not None and self.done_last is not None:
            return (self.done_last - self.done_first) / 1000 / (self.done_n - 1)
        return None

    def occupancy(self) -> dict[int, dict]:
        out = {}
        for g, use in sorted(self.gpus.items()):
            window = (use.last or 0) - (use.first or 0)
            out[g] = {
                "sections": use.sections,
                "window_s": window / 1000,
                "busy_s": use.busy_ms / 1000,
                "busy_share": use.busy_ms / window if window > 0 else None,
                "mutex_held_s": use.held_ms / 1000,
                "starved_s": use.starved_ms / 1000,
            }
        return out
