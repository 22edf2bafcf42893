"""Benchmark: `cuzk-sim logs` on a large generated daemon log (target: 1 GB in <= 60 s and
<= 200 MB RSS on a 2-core machine; docs/benchmarks.md).

The log is generated here (never committed): PoRep jobs of 10 partitions on one GPU with
two workers, each partition with the lines a real daemon writes for it: TIMELINE events,
CUZK_TIMING / CUZK_NTT_H lines, and tracing lines, most of them ones we do not read
(GPU_TIMING, FIN_TIMING, buffer logs), as in a real log. The parse runs as a separate
process (`python -m cuzk_sim logs LOG --json`), timed by wall clock; its peak RSS comes
from getrusage(RUSAGE_CHILDREN).

    python benchmarks/log_parse.py                 # 1 GB, in $TMPDIR
    python benchmarks/log_parse.py --size-mb 100   # a quicker look
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cuzk_sim.logs import emit

EPOCH = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)


def job_lines(j: int, t0: int) -> tuple[list[str], int]:
    """One job's lines (10 partitions, 2 workers) and the time its GPU work ends. Timings
    vary from line to line (a fixed pseudo-random jitter), as measured ones do."""
    job = f"{j:08x}-7c57-4a8e-9d5b-0f3e2a9c11b7"

    def jit(p: int, k: int) -> int:
        return (j * 7919 + p * 104729 + k * 1299709) % 97

    when = EPOCH + dt.timedelta(milliseconds=t0)
    out = [emit.synth_start(t0, job, p) for p in range(10)]
    t = t0 + 32000
    for p in range(10):
        out.append(emit.synth_end(t, job, p, 32000 - jit(p, 0) * 13))
        out.append(
            emit.tracing_line(
                when,
                "INFO",
                emit.ENGINE_TARGET,
                "partition synthesis complete, pushing to GPU queue",
                job_id=job,
                partition=p,
                synth_ms=32000,
            )
        )
        out.append(emit.gpu_queue(t, job, p))
    for p in range(10):
        w = p % 2
        span = (
            f"gpu_worker{{worker_id={w} gpu=0 job_id={job} proof_kind=PoRep32G "
            f"batch_size=1 partition=Some({p})}}"
        )
        out += [
            emit.gpu_pickup(t, job, w, p),
            f"{emit.tracing_timestamp(when)}  INFO {span}: cuzk_core::engine: GPU_TIMING "
            f"hot_path pre-prove overhead worker_id={w} partition=Some({p}) status_ms=0 "
            "fail_check_ms=0 mark_busy_ms=0 total_overhead_ms=0",
            emit.gpu_start(t, job, w, p),
            emit.prep_msm(1602 + jit(p, 1)),
            emit.pre_lock(301 + jit(p, 2) % 9, 0 if w == 0 else 1800 + jit(p, 3)),
            emit.ntt_h(
                3,
                288 + jit(p, 4) % 7,
                45 + jit(p, 5) % 3,
                0,
                351 + jit(p, 6) % 11,
                1,
                690 + jit(p, 7) % 13,
            ),
            emit.ntt_msm_h(0, 694 + jit(p, 8) % 13),
            emit.barrier_wait(0, jit(p, 9) % 3),
            emit.batch_add(0, 603 + jit(p, 10) % 17),
            emit.tail_msm(0, 131 + jit(p, 11) % 5, 1431 + jit(p, 12) % 29),
            emit.mutex_held(1800 + jit(p, 13), 2101 + jit(p, 14)),
            f"{emit.tracing_timestamp(when)}  INFO {span}: cuzk_core::engine: GPU_TIMING "
            f"prove_start returned worker_id={w} partition=Some({p}) total_pre_prove_ms=2102 "
            "spawn_blocking_wall_ms=2101",
            emit.b_g2_msm(1012 + jit(p, 15)),
            emit.gpu_end(t + 2150, job, w, p, 2148 + jit(p, 16)),
            f"{emit.tracing_timestamp(when)}  INFO cuzk_core::engine: FIN_TIMING malloc_trim "
            f"(success path) job_id={job} partition={p} malloc_trim_ms=3",
            emit.partition_gpu_complete(when, job, p, 2148 + jit(p, 16)),
        ]
        t += 1800
    return out, t


def generate(path: Path, size: int) -> int:
    written = lines = 0
    t = j = 0
    with open(path, "w", buffering=1 << 22) as f:
        f.write(emit.engine_starting(EPOCH) + "\n")
        for w in range(2):
            f.write(emit.gpu_worker_started(EPOCH, w, 0, w) + "\n")
        while written < size:
            chunk, t = job_lines(j, t)
            text = "\n".join(chunk) + "\n"
            f.write(text)
            written += len(text)
            lines += len(chunk)
            j += 1
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    args = ap.parse_args()
    folder = Path(os.environ.get("TMPDIR", tempfile.gettempdir()))
    log = folder / f"cuzk-bench-{args.size_mb}mb.log"
    t0 = time.monotonic()
    n = generate(log, args.size_mb * 2**20)
    gen_s = time.monotonic() - t0
    size = log.stat().st_size
    print(f"generated {log}: {size / 2**20:.0f} MiB, {n} lines in {gen_s:.1f} s")
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "cuzk_sim", "logs", str(log), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.monotonic() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss_mb = usage.ru_maxrss / 1024  # KiB on Linux
    cpu = usage.ru_utime + usage.ru_stime
    if proc.returncode not in (0, 1):
        sys.exit(f"cuzk-sim logs failed ({proc.returncode}): {proc.stderr[-2000:]}")
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}"
    )
    load = os.getloadavg()[0]
    print(
        f"cuzk-sim logs --json: {wall:.1f} s wall, {cpu:.1f} s CPU (load average {load:.1f} "
        f"on {os.cpu_count()} CPUs), {size / 2**20 / wall:.1f} MiB/s wall, "
        f"peak RSS {rss_mb:.0f} MB"
    )
    if not args.keep:
        log.unlink()


if __name__ == "__main__":
    main()
