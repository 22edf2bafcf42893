"""Writes the small cuzk log fixtures of tests/logs/fixtures/ (one per finding).

Run once (`python tests/logs/make_fixtures.py`) and commit the output; the tests read the
committed files. Each is a short, plausible daemon log in cuzk's own line formats (the
emit module, whose formats tests/logs/test_emit.py pins to cuzk's format strings), with
lines that are not cuzk's mixed in, as a real log has. The incident fixture
(incident-rtx4000ada-snapdeals.log) is written by hand.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from cuzk_sim.logs import emit

HERE = Path(__file__).parent / "fixtures"
EPOCH = dt.datetime(2026, 3, 2, 8, 0, 0, tzinfo=dt.UTC)
JOB = "b7c1e0a2-3f4d-4c55-9a61-1e2f3a4b5c6d"


def when(t_ms: float) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=t_ms)


def header(workers: list[tuple[int, int, int]]) -> list[str]:
    out = [
        emit.tracing_line(when(-5), "INFO", "cuzk_daemon", "cuzk-daemon starting"),
        emit.tracing_line(
            when(-4), "INFO", "cuzk_core::engine", "memory budget initialized", total_budget_gib=251
        ),
        emit.engine_starting(when(0)),
    ]
    out += [emit.gpu_worker_started(when(1), w, g, s) for w, g, s in workers]
    return out


def guarded_partition(
    job: str, p: int, worker: int, t: int, wait: int, held: int = 2100
) -> list[str]:
    """One partition's GPU section under a working mutex, start to end."""
    return [
        emit.gpu_pickup(t, job, worker, p),
        emit.gpu_start(t, job, worker, p),
        emit.prep_msm(1602),
        emit.pre_lock(301, wait),
        emit.ntt_h(3, 288, 45, 0, 351, 1, 690),
        emit.ntt_msm_h(0, 694),
        emit.barrier_wait(0, 0),
        emit.batch_add(0, 603),
        emit.tail_msm(0, 131, 1431),
        emit.mutex_held(held, 301 + wait + held),
        emit.b_g2_msm(1012),
        emit.gpu_end(t + 301 + wait + held + 40, job, worker, p, 301 + wait + held + 38),
    ]


def synth(job: str, parts: range, t0: int, ms: int) -> list[str]:
    out = [emit.synth_start(t0, job, p) for p in parts]
    for p in parts:
        out += [emit.synth_end(t0 + ms, job, p, ms), emit.gpu_queue(t0 + ms, job, p)]
    return out


def prestage_fallback() -> list[str]:
    """Phase 9, two workers on a 16 GiB card: the second worker's staging does not fit,
    the fallback's own cudaMalloc then throws out of memory in C++ (terminate)."""
    lines = header([(0, 0, 0), (1, 0, 1)])
    lines += synth(JOB, range(2), 100, 31890)
    t = 31990
    lines += [
        emit.gpu_pickup(t, JOB, 0, 0),
        emit.gpu_start(t, JOB, 0, 0),
        emit.gpu_pickup(t, JOB, 1, 1),
        emit.gpu_start(t, JOB, 1, 1),
        emit.prestage_vram(15320, 14808, 4096, 2048),
        emit.prestage_ok(134217728, 0),
        emit.prestage_vram(8952, 8440, 4096, 2048),
        emit.prestage_ok(134217728, 0),
        emit.pre_lock(312, 0),
        emit.pool_threshold(0),
        emit.d_a_cache_allocated(4096, 0),
        "[2026-03-02 08:00:32] nvidia-persistenced: device 0000:01:00.0 ok",
        emit.ntt_h(2, 281, 45, 0, 350, 1, 680),
        emit.ntt_msm_h(0, 684),
        emit.mutex_held(1448, 1760),
        emit.pre_lock(290, 1470),
        emit.prestage_fallback(2),
        "terminate called after throwing an instance of 'sppark_error'",
        '  what():  cudaMalloc(&d_b, d_b_alloc)@groth16_ntt_h.cu:104 failed: "out of memory"',
    ]
    return lines


def routing_gpu0() -> list[str]:
    """Two GPUs, a worker each, per-GPU mutexes; the C++ side sends both to GPU 0."""
    lines = header([(0, 0, 0), (1, 1, 0)])
    lines += synth(JOB, range(2), 50, 30000)
    t = 30050
    lines += [
        emit.gpu_pickup(t, JOB, 0, 0),
        emit.gpu_start(t, JOB, 0, 0),
        emit.gpu_pickup(t, JOB, 1, 1),
        emit.gpu_start(t, JOB, 1, 1),
        emit.prep_msm(1601),
        emit.prep_msm(1604),
        emit.pre_lock(300, 0),
        emit.pool_threshold(0),
        emit.d_a_cache_allocated(4096, 0),
        emit.pre_lock(301, 0),
        emit.ntt_msm_h(0, 1190),
        emit.ntt_msm_h(0, 1202),
        emit.batch_add(0, 1010),
        emit.batch_add(0, 1022),
        emit.tail_msm(0, 220, 2420),
        emit.tail_msm(0, 224, 2448),
        emit.mutex_held(2421, 2722),
        emit.mutex_held(2449, 2751),
        emit.b_g2_msm(1014),
        emit.b_g2_msm(1020),
        emit.gpu_end(t + 2790, JOB, 0, 0, 2788),
        emit.gpu_end(t + 2812, JOB, 1, 1, 2810),
    ]
    return lines


def pce_restart() -> list[str]:
    """SnapDeals, a param cache the daemon cannot write, one restart: extracted twice."""
    cid, tmp = "snap-deals-32g", "/data/zk/params/pce-snap-deals-32g.tmp"
    out = header([(0, 0, 0)])
    out += [
        emit.tracing_line(
            when(10),
            "INFO",
            emit.PIPELINE_TARGET,
            "PCE file not found on disk",
            circuit_id=cid,
            path="/data/zk/params/pce-snap-deals-32g.bin",
        ),
        emit.pce_extraction_complete(when(83300), cid, 83211),
        emit.pce_save_failed(when(83320), cid, f"failed to create temp file: {tmp}"),
        "Mar 02 08:10:00 prover systemd[1]: curio-cuzk.service: Main process exited, code=killed",
    ]
    restart = 600_000
    out += [
        emit.engine_starting(when(restart)),
        emit.gpu_worker_started(when(restart + 1), 0, 0, 0),
        emit.pce_extraction_complete(when(restart + 83500), cid, 83467),
        emit.pce_save_failed(when(restart + 83520), cid, f"failed to create temp file: {tmp}"),
    ]
    return out


def synthesis_bound() -> list[str]:
    """One worker, synthesis 30 s per proof one proof at a time, GPU 3 s per partition:
    the GPU idles with an empty queue while the next proof synthesizes."""
    out = header([(0, 0, 0)])
    t = 0
    for j in range(3):
        job = f"5e0f{j:04d}-aaaa-4bbb-8ccc-000000000000"
        out += synth(job, range(2), t, 30000)
        g = t + 30000
        for p in range(2):
            out += guarded_partition(job, p, 0, g, 0, held=2000)
            g += 2341 + 40
        t = g  # the next proof's synthesis starts only now (lookahead 0)
    return out


def mutex_contention() -> list[str]:
    """Two workers on one GPU with a working mutex: each waits as long as the other holds."""
    out = header([(0, 0, 0), (1, 0, 1)])
    out += synth(JOB, range(10), 0, 32000)
    t = 32000
    for p in range(0, 10, 2):
        a = guarded_partition(JOB, p, 0, t, 0)
        b = guarded_partition(JOB, p + 1, 1, t, 2100)
        # both start at t; worker 0 holds first; worker 1's lines follow once it holds
        out += a[:2] + b[:2] + a[2:11] + b[2:11] + [a[11], b[11]]
        t += 301 + 2100 + 2100 + 40
    return out


def malformed() -> list[str]:
    out = header([(0, 0, 0)])
    out += [
        "TIMELINE,abc,GPU_START,job,worker=0,partition=0",
        "TIMELINE,100,GPU_WARP,job,worker=0",
        "CUZK_TIMING: prep_msm_ms=fast",
        "random noise from another program",
        emit.synth_start(5, JOB, 0),
        emit.synth_end(30005, JOB, 0, 30000),
    ]
    return out


FIXTURES = {
    "phase9-prestage-fallback.log": prestage_fallback,
    "routing-all-to-gpu0.log": routing_gpu0,
    "pce-not-writable-restart.log": pce_restart,
    "synthesis-bound.log": synthesis_bound,
    "mutex-contention.log": mutex_contention,
    "malformed-lines.log": malformed,
}


def main() -> None:
    for name, make in FIXTURES.items():
        (HERE / name).write_text("\n".join(make()) + "\n")
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
