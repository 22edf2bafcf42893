"""The exact lines a cuzk daemon writes, as functions: for our pipeline and the model.

Each function returns one line (without the newline) formatted as the cited cuzk code
prints it (curio `extern/`; docs/logs.md lists file and function per format). Durations
are integer milliseconds truncated toward zero, as cuzk's `Duration::as_millis()` and
C++ `duration_cast<milliseconds>` do: use `ms()` to convert seconds.

Three families of output reach a daemon log:
- `TIMELINE,...` from `timeline_event` (cuzk-core engine.rs): raw `eprintln!`, no prefix;
- `CUZK_TIMING: ...` / `CUZK_NTT_H: ...` from supraseal-c2's `fprintf(stderr, ...)`:
  no prefix either;
- everything else through Rust `tracing` (tracing-subscriber `fmt()` with target):
  `<RFC 3339 UTC, microseconds>  INFO <target>: <message> <key>=<value> ...`.

`LogWriter` puts them together with one clock: seconds since the engine started.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TextIO

ENGINE_TARGET = "cuzk_core::engine"
PIPELINE_TARGET = "cuzk_core::pipeline"
PCE_DISK_TARGET = "cuzk_pce::disk"
PANIC_NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
SPPARK_DMALLOC = "cudaMallocAsync(&d_ptr, sz, stream)@sppark/util/gpu_t.cuh:73"


def ms(seconds: float) -> int:
    """Seconds to the integer milliseconds cuzk prints (truncated, never negative)."""
    return max(math.floor(seconds * 1000.0 + 1e-9), 0)


# --- TIMELINE (cuzk-core/src/engine.rs, timeline_event) ---


def timeline(offset_ms: int, event: str, job_id: str, detail: str) -> str:
    """`TIMELINE,<offset_ms>,<event>,<job_id>,<detail>`; detail may itself hold commas."""
    return f"TIMELINE,{offset_ms},{event},{job_id},{detail}"


def synth_start(offset_ms: int, job_id: str, partition: int) -> str:
    return timeline(offset_ms, "SYNTH_START", job_id, f"partition={partition}")


def synth_end(offset_ms: int, job_id: str, partition: int, synth_ms: int) -> str:
    return timeline(offset_ms, "SYNTH_END", job_id, f"partition={partition},synth_ms={synth_ms}")


def gpu_queue(offset_ms: int, job_id: str, partition: int) -> str:
    return timeline(offset_ms, "GPU_QUEUE", job_id, f"partition={partition}")


def gpu_pickup(offset_ms: int, job_id: str, worker: int, partition: int | None) -> str:
    tail = "" if partition is None else f",partition={partition}"
    return timeline(offset_ms, "GPU_PICKUP", job_id, f"worker={worker}{tail}")


def gpu_start(offset_ms: int, job_id: str, worker: int, partition: int | None) -> str:
    tail = "" if partition is None else f",partition={partition}"
    return timeline(offset_ms, "GPU_START", job_id, f"worker={worker}{tail}")


def gpu_end(offset_ms: int, job_id: str, worker: int, partition: int | None, gpu_ms: int) -> str:
    mid = "" if partition is None else f",partition={partition}"
    return timeline(offset_ms, "GPU_END", job_id, f"worker={worker}{mid},gpu_ms={gpu_ms}")


# --- CUZK_TIMING (supraseal-c2/cuda/groth16_cuda.cu, fprintf(stderr)) ---


def prep_msm(prep_msm_ms: int) -> str:
    return f"CUZK_TIMING: prep_msm_ms={prep_msm_ms}"


def b_g2_msm(b_g2_msm_ms: int, num_circuits: int = 1) -> str:
    return f"CUZK_TIMING: b_g2_msm_ms={b_g2_msm_ms} num_circuits={num_circuits}"


def pre_lock(pre_lock_cpu_ms: int, mutex_wait_ms: int) -> str:
    return f"CUZK_TIMING: pre_lock_cpu_ms={pre_lock_cpu_ms} mutex_wait_ms={mutex_wait_ms}"


def ntt_msm_h(gpu_tid: int, ntt_msm_h_ms: int) -> str:
    return f"CUZK_TIMING: gpu_tid={gpu_tid} ntt_msm_h_ms={ntt_msm_h_ms}"


def barrier_wait(gpu_tid: int, barrier_wait_ms: int) -> str:
    return f"CUZK_TIMING: gpu_tid={gpu_tid} barrier_wait_ms={barrier_wait_ms}"


def batch_add(gpu_tid: int, batch_add_ms: int) -> str:
    return f"CUZK_TIMING: gpu_tid={gpu_tid} batch_add_ms={batch_add_ms}"


def tail_msm(gpu_tid: int, tail_msm_ms: int, gpu_total_ms: int) -> str:
    return f"CUZK_TIMING: gpu_tid={gpu_tid} tail_msm_ms={tail_msm_ms} gpu_total_ms={gpu_total_ms}"


def mutex_held(mutex_held_ms: int, total_start_fn_ms: int) -> str:
    return f"CUZK_TIMING: mutex_held_ms={mutex_held_ms} total_start_fn_ms={total_start_fn_ms}"


def d_a_cache_allocated(mib: int, gpu: int) -> str:
    """get_cached_d_a: the persistent per-GPU d_a, once per GPU (4096 MiB at 2^27)."""
    return f"CUZK_TIMING: d_a_cache allocated {mib} MiB on gpu {gpu}"


def pool_threshold(gpu: int) -> str:
    """ensure_pool_threshold: once per GPU, before its first d_a."""
    return f"CUZK_TIMING: set pool release threshold to MAX on gpu {gpu}"


def prestage_vram(free_mib: int, usable_mib: int, need_da_mib: int, need_dbc_mib: int) -> str:
    """Phase 9 (commit c4effc85) memory-aware pre-staging check."""
    return (
        f"CUZK_TIMING: prestage_vram free_mib={free_mib} usable_mib={usable_mib} "
        f"need_da_mib={need_da_mib} need_dbc_mib={need_dbc_mib} "
        f"total_mib={need_da_mib + need_dbc_mib}"
    )


def prestage_ok(domain: int, lot_of_memory: int) -> str:
    return f"CUZK_TIMING: prestage_setup=ok domain={domain} lot_of_memory={lot_of_memory}"


def prestage_skip_vram() -> str:
    return "CUZK_TIMING: prestage_setup=skip_vram"


def prestage_fallback(err: int = 2) -> str:
    """err: the cudaError_t (2 = cudaErrorMemoryAllocation)."""
    return f"CUZK_TIMING: prestage_setup=fallback err={err}"


# --- CUZK_NTT_H (supraseal-c2/cuda/groth16_ntt_h.cu, execute_ntt_msm_h) ---


def ntt_h(
    d_b_alloc: int,
    ntt_kernels: int,
    coset_intt_sync: int,
    msm_init: int,
    msm_invoke: int,
    msm_dtor: int,
    total: int,
) -> str:
    """All values in ms, each printed with an `ms` suffix as the C++ does."""
    return (
        f"CUZK_NTT_H: d_b_alloc={d_b_alloc}ms ntt_kernels={ntt_kernels}ms "
        f"coset_intt_sync={coset_intt_sync}ms msm_init={msm_init}ms "
        f"msm_invoke={msm_invoke}ms msm_dtor={msm_dtor}ms total={total}ms"
    )


# --- CUZK_SIM_STEP: ours, not cuzk's (cuzk-sim gpu-run --log) ---


def sim_step(
    name: str,
    kind: str,
    size: int,
    nbytes: int,
    pinned: bool,
    us: int,
    zeros: int | None = None,
    ones: int | None = None,
) -> str:
    """One step of our pipeline's GPU section (or its host assembly), timed by CUDA
    events: `us` = the microseconds the step held the stream, including the time the
    stream idled before it waiting for the host to issue it. `zeros` / `ones`: an MSM
    step's expected 0 and 1 scalars (Kernel.zeros / .ones), written only when set. A cuzk
    daemon never writes this line; `cuzk-sim calibrate` fits every kernel kind, the copy
    rates and the assembly from it (docs/logs.md)."""
    line = f"CUZK_SIM_STEP: {name} kind={kind} size={size} bytes={nbytes} pinned={int(pinned)}"
    line += f" us={us}"
    if zeros is not None and ones is not None:
        line += f" zeros={zeros} ones={ones}"
    return line


def sim_context(gpu: int, nbytes: int) -> str:
    """The device memory GPU `gpu` had in use before the run's first buffer (total - free
    once the pools are empty: the CUDA context, CuPy, our kernels' modules and their local
    memory). Ours too; `cuzk-sim calibrate` takes the profile's `context_overhead` from
    these lines (the context moves with the kernels: +54 MiB between two commits of one
    day on the H200, docs/validation.md)."""
    return f"CUZK_SIM_CONTEXT: gpu={gpu} bytes={nbytes}"


def sim_device(gpu: int, total_bytes: int, name: str) -> str:
    """The card GPU `gpu` is (cudaGetDeviceProperties: its name and total memory), so
    `cuzk-sim calibrate` takes the profile's `[gpu] model` and `vram` from the log. Ours
    only (cuzk prints neither); the name runs to the end of the line."""
    return f"CUZK_SIM_DEVICE: gpu={gpu} bytes={total_bytes} name={name}"


# --- tracing (tracing-subscriber fmt, cuzk-daemon main.rs) ---


def tracing_timestamp(when: dt.datetime) -> str:
    """RFC 3339 UTC with microseconds, as tracing-subscriber's default timer prints."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _field(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # Rust's Display of bool
    return str(value)


def tracing_line(when: dt.datetime, level: str, target: str, message: str, **fields: object) -> str:
    """`<ts> <LEVEL right-aligned in 5> <target>: <message> k=v ...` (fields in call order;
    Display values bare, as `%field` prints them)."""
    kv = "".join(f" {k}={_field(v)}" for k, v in fields.items())
    return f"{tracing_timestamp(when)} {level.upper():>5} {target}: {message}{kv}"


def engine_starting(when: dt.datetime, pipeline_enabled: bool = True) -> str:
    """Engine::start, logged right after TIMELINE's epoch is set: TIMELINE offset 0."""
    return tracing_line(
        when, "INFO", ENGINE_TARGET, "starting cuzk engine", pipeline_enabled=pipeline_enabled
    )


def initializing_gpu_workers(when: dt.datetime, gpus: list[int], workers_per_device: int) -> str:
    """Engine::start, once, before the workers spawn: `num_gpus`, `gpu_workers_per_device`,
    `total_workers` and the ordinals (`gpus = ?gpu_ordinals`, Debug: `[0, 1]`)."""
    return tracing_line(
        when,
        "INFO",
        ENGINE_TARGET,
        "initializing GPU workers",
        num_gpus=len(gpus),
        gpu_workers_per_device=workers_per_device,
        total_workers=len(gpus) * workers_per_device,
        gpus="[" + ", ".join(str(g) for g in gpus) + "]",
    )


def gpu_worker_started(when: dt.datetime, worker_id: int, gpu: int, sub_id: int) -> str:
    return tracing_line(
        when,
        "INFO",
        ENGINE_TARGET,
        "pipeline GPU worker started",
        worker_id=worker_id,
        gpu=gpu,
        sub_id=sub_id,
    )


def partition_gpu_complete(when: dt.datetime, job_id: str, partition: int, gpu_ms: int) -> str:
    """process_partition_result, after each partition's GPU proof."""
    return tracing_line(
        when,
        "INFO",
        ENGINE_TARGET,
        "partition GPU prove complete",
        job_id=job_id,
        partition=partition,
        gpu_ms=gpu_ms,
        filled=0,
    )


def proof_assembled(
    when: dt.datetime, job_id: str, total_ms: int, synth_ms: int, gpu_ms: int
) -> str:
    return tracing_line(
        when,
        "INFO",
        ENGINE_TARGET,
        "Phase 7: all partitions complete, proof assembled",
        job_id=job_id,
        proof_len=1920,
        total_ms=total_ms,
        synth_ms=synth_ms,
        gpu_ms=gpu_ms,
    )


def partition_gpu_failed(when: dt.datetime, job_id: str, partition: int, error: str) -> str:
    return tracing_line(
        when,
        "ERROR",
        ENGINE_TARGET,
        "partition GPU proving failed",
        error=error,
        job_id=job_id,
        partition=partition,
    )


def pce_extraction_complete(when: dt.datetime, circuit_id: str, extract_ms: int) -> str:
    """extract_and_cache_pce (cuzk-core pipeline.rs)."""
    return tracing_line(
        when,
        "INFO",
        PIPELINE_TARGET,
        "PCE extraction complete",
        circuit_id=circuit_id,
        extract_ms=extract_ms,
    )


def pce_saved(when: dt.datetime, circuit_id: str, path: str) -> str:
    return tracing_line(
        when, "INFO", PIPELINE_TARGET, "PCE saved to disk", circuit_id=circuit_id, path=path
    )


def pce_save_failed(when: dt.datetime, circuit_id: str, error: str) -> str:
    """PceCache::insert_blocking when cuzk_pce::save_to_disk fails (e.g. no write access)."""
    return tracing_line(
        when,
        "WARN",
        PIPELINE_TARGET,
        "failed to save PCE to disk (non-fatal)",
        circuit_id=circuit_id,
        error=error,
    )


def pce_loaded(when: dt.datetime, circuit_id: str) -> str:
    return tracing_line(
        when, "INFO", PIPELINE_TARGET, "PCE loaded from disk", circuit_id=circuit_id
    )


def rust_panic(
    message: str,
    thread: str = "tokio-runtime-worker",
    where: str = "extern/supraseal-c2/src/lib.rs:316:9",
) -> list[str]:
    """The default panic hook (Rust >= 1.73): location line, message, backtrace note.
    supraseal-c2's start_groth16_proof panics with the C++ error string."""
    return [f"thread '{thread}' panicked at {where}:", message, PANIC_NOTE]


def cuda_oom_message(expr: str = SPPARK_DMALLOC) -> str:
    """sppark CUDA_OK's error text for cudaErrorMemoryAllocation (util/exception.cuh)."""
    return f'{expr} failed: "out of memory"'


class LogWriter:
    """Writes a cuzk-style daemon log on one clock (seconds since the engine started):
    TIMELINE offsets and tracing timestamps agree, as in a real log."""

    def __init__(self, out: TextIO, epoch: dt.datetime | None = None) -> None:
        self.out = out
        self.epoch = epoch or dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def when(self, t_s: float) -> dt.datetime:
        return self.epoch + dt.timedelta(microseconds=math.floor(t_s * 1e6))

    def offset(self, t_s: float) -> int:
        return ms(t_s)

    def line(self, text: str) -> None:
        self.out.write(text + "\n")

    def lines(self, texts: list[str]) -> None:
        for t in texts:
            self.line(t)
