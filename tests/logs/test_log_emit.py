"""The emitter's lines equal cuzk's format strings filled in by hand.

Expected strings are written from the cited source (fprintf / eprintln! / tracing
format), not from the emitter: a change of format fails here.
"""

from __future__ import annotations

import datetime as dt

from cuzk_sim.logs import emit

T = dt.datetime(2026, 3, 14, 9, 12, 1, 4511, tzinfo=dt.UTC)


def test_timeline_lines_follow_timeline_event():
    # engine.rs: eprintln!("TIMELINE,{},{},{},{}", offset_ms, event, job_id, detail)
    assert emit.synth_start(97911, "j", 3) == "TIMELINE,97911,SYNTH_START,j,partition=3"
    assert emit.synth_end(1, "j", 3, 20490) == "TIMELINE,1,SYNTH_END,j,partition=3,synth_ms=20490"
    assert emit.gpu_queue(2, "j", 0) == "TIMELINE,2,GPU_QUEUE,j,partition=0"
    assert emit.gpu_pickup(3, "j", 1, 0) == "TIMELINE,3,GPU_PICKUP,j,worker=1,partition=0"
    assert emit.gpu_pickup(3, "j", 1, None) == "TIMELINE,3,GPU_PICKUP,j,worker=1"
    assert emit.gpu_start(4, "j", 1, 0) == "TIMELINE,4,GPU_START,j,worker=1,partition=0"
    assert emit.gpu_end(5, "j", 1, 0, 3750) == (
        "TIMELINE,5,GPU_END,j,worker=1,partition=0,gpu_ms=3750"
    )
    assert emit.gpu_end(5, "j", 1, None, 3750) == "TIMELINE,5,GPU_END,j,worker=1,gpu_ms=3750"


def test_cuzk_timing_lines_follow_groth16_cuda():
    # cuzk-facts.md quotes these lines from a real log
    assert emit.prep_msm(2782) == "CUZK_TIMING: prep_msm_ms=2782"
    assert emit.b_g2_msm(1790) == "CUZK_TIMING: b_g2_msm_ms=1790 num_circuits=1"
    assert emit.d_a_cache_allocated(4096, 0) == "CUZK_TIMING: d_a_cache allocated 4096 MiB on gpu 0"
    # groth16_cuda.cu fprintf format strings
    assert emit.pre_lock(12, 0) == "CUZK_TIMING: pre_lock_cpu_ms=12 mutex_wait_ms=0"
    assert emit.ntt_msm_h(0, 2430) == "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=2430"
    assert emit.barrier_wait(0, 7) == "CUZK_TIMING: gpu_tid=0 barrier_wait_ms=7"
    assert emit.batch_add(0, 600) == "CUZK_TIMING: gpu_tid=0 batch_add_ms=600"
    assert emit.tail_msm(0, 130, 3746) == (
        "CUZK_TIMING: gpu_tid=0 tail_msm_ms=130 gpu_total_ms=3746"
    )
    assert emit.mutex_held(3750, 5100) == "CUZK_TIMING: mutex_held_ms=3750 total_start_fn_ms=5100"
    assert emit.pool_threshold(1) == "CUZK_TIMING: set pool release threshold to MAX on gpu 1"
    # Phase 9 (commit c4effc85)
    assert emit.prestage_fallback(2) == "CUZK_TIMING: prestage_setup=fallback err=2"
    assert emit.prestage_skip_vram() == "CUZK_TIMING: prestage_setup=skip_vram"
    assert emit.prestage_ok(134217728, 0) == (
        "CUZK_TIMING: prestage_setup=ok domain=134217728 lot_of_memory=0"
    )
    assert emit.prestage_vram(9000, 8488, 4096, 2048) == (
        "CUZK_TIMING: prestage_vram free_mib=9000 usable_mib=8488 need_da_mib=4096 "
        "need_dbc_mib=2048 total_mib=6144"
    )


def test_ntt_h_line_follows_groth16_ntt_h():
    assert emit.ntt_h(1, 2, 3, 4, 5, 6, 21) == (
        "CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=2ms coset_intt_sync=3ms msm_init=4ms "
        "msm_invoke=5ms msm_dtor=6ms total=21ms"
    )


def test_tracing_lines_follow_tracing_subscriber_full_format():
    # <RFC 3339 micros>Z, level right-aligned in 5, target, message, fields
    assert emit.gpu_worker_started(T, 1, 0, 1) == (
        "2026-03-14T09:12:01.004511Z  INFO cuzk_core::engine: pipeline GPU worker started "
        "worker_id=1 gpu=0 sub_id=1"
    )
    assert emit.engine_starting(T) == (
        "2026-03-14T09:12:01.004511Z  INFO cuzk_core::engine: starting cuzk engine "
        "pipeline_enabled=true"
    )
    assert emit.pce_save_failed(T, "snap-deals-32g", "no").startswith(
        "2026-03-14T09:12:01.004511Z  WARN cuzk_core::pipeline: failed to save PCE to disk "
        "(non-fatal) circuit_id=snap-deals-32g error=no"
    )
    assert emit.partition_gpu_failed(T, "j", 2, "x").startswith(
        "2026-03-14T09:12:01.004511Z ERROR cuzk_core::engine: partition GPU proving failed"
    )


def test_panic_is_rusts_default_hook_with_spparks_message():
    lines = emit.rust_panic(emit.cuda_oom_message())
    assert lines[0] == (
        "thread 'tokio-runtime-worker' panicked at extern/supraseal-c2/src/lib.rs:316:9:"
    )
    assert lines[1] == (
        'cudaMallocAsync(&d_ptr, sz, stream)@sppark/util/gpu_t.cuh:73 failed: "out of memory"'
    )


def test_ms_truncates_like_as_millis():
    assert emit.ms(1.9999) == 1999
    assert emit.ms(0.0) == 0
    assert emit.ms(-1.0) == 0
    assert emit.ms(2.4305) == 2430
