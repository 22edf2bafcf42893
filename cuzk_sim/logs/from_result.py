"""A recorded run's timeline (`SimResult` with spans) written as a cuzk daemon log.

The model (and any pipeline that records the same spans: `gpu-run`) then produces the
lines a real daemon would, so `cuzk-sim logs` and `calibrate` read both alike, and a
model run with a known profile can be calibrated back (the round-trip test).

Per partition (a `partition` span of a worker, and that worker's kernel, copy, cpu and
lock spans inside it) the lines are those of cuzk's split GPU path, each at its time:
GPU_PICKUP and GPU_START at the partition's start; prep_msm_ms when the prep thread
ends; pre_lock_cpu_ms / mutex_wait_ms when the mutex is taken; CUZK_NTT_H and
ntt_msm_h_ms when the H MSM ends; barrier_wait_ms and batch_add_ms after the batch
additions; tail_msm_ms / gpu_total_ms after the tail MSMs; mutex_held_ms at the unlock;
b_g2_msm_ms when the B_G2 thread ends; GPU_END at the partition's end. Synthesis spans
(one per proof in the model) give SYNTH_START, SYNTH_END and GPU_QUEUE for each of the
proof's partitions. Durations are truncated to whole milliseconds, as cuzk prints them.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from dataclasses import dataclass
from typing import TextIO

from cuzk_sim.logs import emit
from cuzk_sim.model.allocator import NEVER
from cuzk_sim.plans.circuits import SHAPES, CircuitShape
from cuzk_sim.result import SimResult, Span

PARAM_CACHE = "/var/tmp/filecoin-proof-parameters"
CIRCUIT_IDS = {
    "porep": "porep-32g",
    "snapdeals": "snap-deals-32g",
    "window_post": "window-post-32g",
    "winning_post": "winning-post-32g",
}
_WORKER = re.compile(r"gpu(\d+)-w(\d+)$")
_PANIC = re.compile(r"worker (\S+) panicked: (.*) partition (\S+)/(\d+)$")
_PCE = re.compile(r"PCE (loaded|extracted and saved|extracted) kind=(\w+)")
_DA = re.compile(r"d_a_cache allocated (\d+) MiB on gpu (\d+)")


@dataclass(frozen=True)
class _Line:
    t: float
    seq: int
    text: str
    timeline: bool = False

    @property
    def opens(self) -> bool:
        """A line that starts something: at one instant, what ends prints first (cuzk
        prints mutex_held before it unlocks, the next holder its pre_lock after)."""
        return any(m in self.text for m in _OPENING)


_OPENING = ("pre_lock_cpu_ms", ",GPU_PICKUP,", ",GPU_START,", ",SYNTH_START,", "prestage_setup")


def _ms(a: float, b: float) -> int:
    return emit.ms(b - a)


def worker_ids(result: SimResult) -> dict[str, tuple[int, int, int]]:
    """Model worker name -> (cuzk worker_id, assigned GPU, sub_id), numbered as the engine
    does: GPU by GPU, then worker within the GPU."""
    names = {s.track for s in result.spans if s.cat == "partition"}
    parsed = sorted((int(m[1]), int(m[2]), n) for n in names if (m := _WORKER.match(n)) is not None)
    return {n: (i, g, k) for i, (g, k, n) in enumerate(parsed)}


def cuzk_log_lines(
    result: SimResult,
    pce_extract_s: dict[str, float] | None = None,
    epoch: dt.datetime | None = None,
    pool_max: bool = True,
    memory_aware: bool = False,
    layout: tuple[list[int], int] | None = None,
    staged_under: bool | None = None,
) -> list[str]:
    """The log, in time order. pce_extract_s: extraction seconds per kind (the profile's),
    for the `PCE extraction complete extract_ms=` field; pool_max: the async pool's release
    threshold was set to UINT64_MAX (cuzk then logs it once per GPU); memory_aware: the
    pre-staging asks cudaMemGetInfo first and logs `prestage_vram` (Phase 9's final fix);
    layout: the GPU ordinals and workers per GPU the engine ran (the scenario's), for the
    engine's `initializing GPU workers` line and a start line for every worker, as cuzk
    prints them (else only the workers that ran a partition); staged_under: pre-staging
    allocates under the mutex (its line then follows pre_lock even on one instant; None:
    told by the span times)."""
    restarts = sorted(t for t, text in result.log if text.startswith("daemon restart"))
    out = _Lines(emit.LogWriter(None, epoch), [0.0, *restarts])  # type: ignore[arg-type]
    ids = worker_ids(result)
    if layout is not None:
        gpus, wpd = layout
        ids = {f"gpu{g}-w{k}": (i * wpd + k, g, k) for i, g in enumerate(gpus) for k in range(wpd)}
    vram_check = _vram_check(result) if memory_aware else None
    _startup_lines(out, ids, layout)
    _synthesis_lines(out, result)
    _partition_lines(out, result, ids, vram_check, staged_under)
    _event_lines(out, result, pce_extract_s, pool_max, vram_check)
    for proof, _kind, t in result.proof_done_times:
        out.add(t, emit.proof_assembled(out.w.when(t), proof, 0, 0, 0))
    out.lines.sort(key=lambda x: (x.t, x.opens, x.seq))
    return [x.text for x in out.lines]


class _Lines:
    """The log being written: lines with their time and order of writing; TIMELINE lines
    carry milliseconds since their run's engine start (a restart starts a run)."""

    def __init__(self, w: emit.LogWriter, run_epochs: list[float]) -> None:
        self.w, self.run_epochs = w, run_epochs
        self.lines: list[_Line] = []
        self.seq = iter(range(1 << 62))

    def epoch_of(self, t: float) -> float:
        return self.run_epochs[bisect.bisect_right(self.run_epochs, t) - 1]

    def add(self, t: float, text: str, timeline: bool = False) -> None:
        self.lines.append(_Line(t, next(self.seq), text, timeline))

    def tl(self, t: float, fn, *args) -> None:
        self.add(t, fn(emit.ms(t - self.epoch_of(t)), *args), True)


def _startup_lines(
    out: _Lines, ids: dict[str, tuple[int, int, int]], layout: tuple[list[int], int] | None
) -> None:
    """Each run's engine start, worker layout and worker start-up lines."""
    w = out.w
    for t0 in out.run_epochs:
        out.add(t0, emit.engine_starting(w.when(t0)))
        if layout is not None:
            out.add(t0, emit.initializing_gpu_workers(w.when(t0), layout[0], layout[1]))
        for _name, (wid, gpu, sub) in sorted(ids.items(), key=lambda x: x[1]):
            out.add(t0, emit.gpu_worker_started(w.when(t0), wid, gpu, sub))


def _synthesis_lines(out: _Lines, result: SimResult) -> None:
    """SYNTH_START, SYNTH_END and GPU_QUEUE of every partition synthesised."""
    parts_of: dict[str, int] = {}
    for s in result.spans:
        if s.cat == "partition":
            proof = s.name.rsplit("/", 1)[0]
            parts_of[proof] = max(parts_of.get(proof, 0), int(s.name.rsplit("/", 1)[1]) + 1)
    for s in result.spans:
        if s.cat == "synthesis":  # a proof's synthesis (all partitions), or one partition's
            proof, _, one = s.name.rpartition("/") if "/" in s.name else (s.name, "", "")
            parts = [int(one)] if one else list(range(parts_of.get(proof, 0)))
            for p in parts:
                out.tl(s.start_s, emit.synth_start, proof, p)
            for p in parts:
                out.tl(s.end_s, emit.synth_end, proof, p, _ms(s.start_s, s.end_s))
                out.tl(s.end_s, emit.gpu_queue, proof, p)


def _partition_lines(
    out: _Lines,
    result: SimResult,
    ids: dict[str, tuple[int, int, int]],
    vram_check,
    staged_under: bool | None,
) -> None:
    """Each GPU section: pickup, start, the C++ timing lines of its steps, end."""
    w = out.w
    by_track: dict[str, list[Span]] = {}
    for s in result.spans:
        if s.cat != "partition":
            by_track.setdefault(s.track, []).append(s)
    starts: dict[str, list[float]] = {}
    for track, spans in by_track.items():
        spans.sort(key=lambda s: (s.start_s, s.end_s))
        starts[track] = [s.start_s for s in spans]
    failed = _failed_parts(result)
    for s in result.spans:
        if s.cat != "partition" or s.track not in ids:
            continue
        wid = ids[s.track][0]
        proof, p = s.name.rsplit("/", 1)
        part = int(p)
        spans = by_track.get(s.track, [])
        lo = bisect.bisect_left(starts.get(s.track, []), s.start_s)
        hi = bisect.bisect_right(starts.get(s.track, []), s.end_s)
        inner = [x for x in spans[lo:hi] if x.end_s <= s.end_s + 1e-12]
        out.tl(s.start_s, emit.gpu_pickup, proof, wid, part)
        out.tl(s.start_s, emit.gpu_start, proof, wid, part)
        shape = SHAPES.get(proof.rsplit("-", 1)[0])  # the model names proofs <kind>-<n>
        for t, text in partition_timing(s, inner, shape, vram_check, staged_under):
            out.add(t, text)
        if (proof, part) not in failed:
            out.tl(s.end_s, emit.gpu_end, proof, wid, part, _ms(s.start_s, s.end_s))
            out.add(
                s.end_s,
                emit.partition_gpu_complete(w.when(s.end_s), proof, part, _ms(s.start_s, s.end_s)),
            )


def _event_lines(
    out: _Lines,
    result: SimResult,
    pce_extract_s: dict[str, float] | None,
    pool_max: bool,
    vram_check,
) -> None:
    """The model's log events as cuzk prints them: d_a cache, C++ timing lines, panics,
    PCE loads and extractions."""
    w = out.w
    seen_gpu: set[int] = set()
    for t, text in result.log:
        m = _DA.search(text)
        if m:
            gpu = int(m[2])
            if gpu not in seen_gpu and pool_max:
                seen_gpu.add(gpu)
                out.add(t, emit.pool_threshold(gpu))
            out.add(t, emit.d_a_cache_allocated(int(m[1]), gpu))
            continue
        if text.startswith("CUZK_TIMING:"):
            if vram_check is not None and "prestage_setup=" in text:
                out.add(t, vram_check(t, 0, None))
            out.add(t, text)
            continue
        m = _PANIC.match(text)
        if m:
            for line in emit.rust_panic(m[2]):
                out.add(t, line)
            out.add(t, emit.partition_gpu_failed(w.when(t), m[3], int(m[4]), m[2]))
            continue
        m = _PCE.search(text)
        if m:
            what, kind = m[1], m[2]
            cid = CIRCUIT_IDS.get(kind, kind)
            if what == "loaded":
                out.add(t, emit.pce_loaded(w.when(t), cid))
            else:
                extract_ms = emit.ms((pce_extract_s or {}).get(kind, 0.0))
                out.add(t, emit.pce_extraction_complete(w.when(t), cid, extract_ms))
                if what == "extracted and saved":
                    out.add(
                        t,
                        emit.pce_saved(w.when(t), cid, f"{PARAM_CACHE}/pce-{cid}.bin"),
                    )
                elif "save failed" in text:
                    out.add(
                        t,
                        emit.pce_save_failed(
                            w.when(t),
                            cid,
                            f"failed to create temp file: {PARAM_CACHE}/pce-{cid}.tmp",
                        ),
                    )
            continue


def _vram_check(result: SimResult):
    """prestage_vram lines from the run's VRAM samples (free = total - used then)."""
    samples: dict[int, tuple[list[float], list[int]]] = {}
    for t, dev, used in sorted(result.vram_samples):
        ts, us = samples.setdefault(dev, ([], []))
        ts.append(t)
        us.append(used)

    def line(t: float, dev: int, shape: CircuitShape | None) -> str:
        total = result.vram_total_bytes.get(dev, 0)
        ts, us = samples.get(dev, ([], []))
        i = bisect.bisect_right(ts, t) - 1
        free = total - (us[i] if i >= 0 else 0)
        margin = 512 << 20
        domain = shape.domain if shape is not None else 1 << 27
        need_da, need_dbc = domain * 32, domain * 16  # d_a and d_bc, as the plan stages them
        return emit.prestage_vram(
            free >> 20, max(free - margin, 0) >> 20, need_da >> 20, need_dbc >> 20
        )

    return line


def _failed_parts(result: SimResult) -> set[tuple[str, int]]:
    out = set()
    for e in result.oom_events:
        if e.fatal and "/" in e.partition:
            proof, p = e.partition.rsplit("/", 1)
            out.add((proof, int(p)))
    return out


def _names(span: Span, suffix: str) -> bool:
    """Does the span time a kernel whose name ends in `suffix`? The model merges runs of
    compute kernels into one span named `a+b+c` (exact for time, see compile_plan)."""
    return any(n.endswith(suffix) for n in span.name.split("+"))


def partition_timing(
    part: Span,
    inner: list[Span],
    shape: CircuitShape | None = None,
    vram_check=None,  # (t, device, shape) -> the prestage_vram line, when memory-aware
    staged_under: bool | None = None,  # the staging is allocated under the mutex
) -> list[tuple[float, str]]:
    """The C++ timing lines of one partition from its worker's spans inside it."""
    out: list[tuple[float, str]] = []
    t0 = part.start_s

    def first(pred) -> Span | None:
        return next((x for x in inner if pred(x)), None)

    hold = first(lambda x: x.cat == "lock" and x.name.startswith("hold "))
    wait = first(lambda x: x.cat == "lock" and x.name.startswith("wait "))
    staged = [x for x in inner if x.cat == "copy" and x.name.startswith("stage_")]
    stage_lines: list[tuple[float, str]] = []
    if staged and shape is not None:  # the staging buffers were allocated: pre-staging ran
        if vram_check is not None:
            t = staged[0].start_s
            stage_lines.append((t, vram_check(t, part.device, shape)))
        stage_lines.append((staged[0].start_s, emit.prestage_ok(shape.domain, 0)))
    # staged under the mutex: its line follows the pre_lock line of the same instant
    if staged_under is None:  # not told: by the times (a tie reads as before the lock)
        staged_under = hold is not None and bool(staged) and hold.start_s < staged[0].start_s
    under = hold is not None and staged_under
    if not under:
        out += stage_lines
    prep = first(lambda x: x.cat == "cpu" and x.name == "prep_msm")
    if prep is not None:
        out.append((prep.end_s, emit.prep_msm(_ms(prep.start_s, prep.end_s))))
    bg2 = first(lambda x: x.cat == "cpu" and x.name == "b_g2_msm")
    if bg2 is not None:
        out.append((bg2.end_s, emit.b_g2_msm(_ms(bg2.start_s, bg2.end_s))))
    if hold is None:
        return out
    asked = wait.start_s if wait is not None else hold.start_s
    out.append((hold.start_s, emit.pre_lock(_ms(t0, asked), _ms(asked, hold.start_s))))
    if under:
        out += stage_lines
    kernels = [x for x in inner if x.cat in ("kernel", "copy")]
    msm_h = first(lambda x: x.cat == "kernel" and _names(x, "msm_h"))
    if msm_h is not None:
        coset = first(lambda x: x.cat == "kernel" and _names(x, "coset_intt_h"))
        c0, c1 = (coset.start_s, coset.end_s) if coset else (msm_h.start_s, msm_h.start_s)
        out.append(
            (
                msm_h.end_s,
                emit.ntt_h(
                    0,
                    _ms(hold.start_s, c0),
                    _ms(c0, c1),
                    0,
                    _ms(msm_h.start_s, msm_h.end_s),
                    0,
                    _ms(hold.start_s, msm_h.end_s),
                ),
            )
        )
        out.append((msm_h.end_s, emit.ntt_msm_h(0, _ms(hold.start_s, msm_h.end_s))))
        after = [x for x in kernels if x.start_s >= msm_h.end_s - 1e-12 and x.cat == "kernel"]
        batch = [x for x in after if x.name.startswith("batch_add")]
        tail = [x for x in after if not x.name.startswith("batch_add")]
        b_end = msm_h.end_s
        if batch:
            b0, b_end = min(x.start_s for x in batch), max(x.end_s for x in batch)
            out.append((b0, emit.barrier_wait(0, _ms(msm_h.end_s, b0))))
            out.append((b_end, emit.batch_add(0, _ms(b0, b_end))))
        t_end = max((x.end_s for x in tail), default=b_end)
        out.append((t_end, emit.tail_msm(0, _ms(b_end, t_end), _ms(hold.start_s, t_end))))
    out.append((hold.end_s, emit.mutex_held(_ms(hold.start_s, hold.end_s), _ms(t0, hold.end_s))))
    return out


def write_cuzk_log(
    result: SimResult,
    out: TextIO,
    pce_extract_s: dict[str, float] | None = None,
    pool_max: bool = True,
    memory_aware: bool = False,
    layout: tuple[list[int], int] | None = None,
    staged_under: bool | None = None,
) -> int:
    """Write the log; returns the number of lines."""
    lines = cuzk_log_lines(
        result,
        pce_extract_s,
        pool_max=pool_max,
        memory_aware=memory_aware,
        layout=layout,
        staged_under=staged_under,
    )
    for line in lines:
        out.write(line + "\n")
    return len(lines)


def write_scenario_log(result: SimResult, scenario, path: str) -> int:
    """`cuzk-sim run --log`: the run's log, PCE extraction times from its profile."""
    extract = {
        k: scenario.profile.pce_extract.seconds(shape.constraints)
        for k, shape in scenario.shapes.items()
    }
    pool_max = scenario.config.pool_release_threshold == NEVER
    aware = scenario.spec.variant.memory_aware_margin is not None
    cfg = scenario.config
    layout = (list(cfg.devices or range(cfg.gpus)), cfg.gpu_workers_per_device)
    from cuzk_sim.outputs import atomic_file

    under = scenario.spec.variant.prestage == "under_mutex"
    with atomic_file(path) as f:  # whole or not at all
        return write_cuzk_log(result, f, extract, pool_max, aware, layout, under)
