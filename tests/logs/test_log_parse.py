"""The streaming parser: each known format becomes a record; unknown lines are counted;
a malformed known line is reported with its line number; prefixes and colours pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuzk_sim.io.errors import InputError
from cuzk_sim.logs.parse import LogParser, parse_lines, read_log

FIXTURES = Path(__file__).parent / "fixtures"


def records(lines):
    p = LogParser()
    return list(parse_lines(lines, p)), p.counts


def test_timeline_fields_and_a_detail_with_commas():
    (r,), _ = records(["TIMELINE,118413,GPU_END,5d1c,worker=1,partition=3,gpu_ms=3750"])
    assert r.kind == "timeline"
    assert r.fields == {
        "ms": 118413,
        "event": "GPU_END",
        "job": "5d1c",
        "worker": 1,
        "partition": 3,
        "gpu_ms": 3750,
    }


def test_cuzk_timing_and_ntt_h_values_are_integers():
    recs, _ = records(
        [
            "CUZK_TIMING: gpu_tid=0 tail_msm_ms=130 gpu_total_ms=3746",
            "CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=2ms coset_intt_sync=45ms msm_init=0ms "
            "msm_invoke=350ms msm_dtor=0ms total=398ms",
            "CUZK_TIMING: d_a_cache allocated 4096 MiB on gpu 1",
            "d_a_cache allocated 4096 MiB on gpu 0",  # without the prefix (cuzk-facts.md)
            "CUZK_TIMING: prestage_setup=fallback err=2",
        ]
    )
    assert [r.kind for r in recs] == ["timing", "ntt_h", "d_a_cache", "d_a_cache", "prestage"]
    assert recs[0].fields == {"gpu_tid": 0, "tail_msm_ms": 130, "gpu_total_ms": 3746}
    assert recs[1].fields["coset_intt_sync"] == 45 and recs[1].fields["total"] == 398
    assert recs[2].fields == {"mib": 4096, "gpu": 1}
    assert recs[3].fields == {"mib": 4096, "gpu": 0}
    assert recs[4].fields == {"prestage_setup": "fallback", "err": 2}


def test_tracing_line_with_span_prefix_ansi_and_journald_prefix():
    line = (
        "Mar 14 09:12:01 prover cuzk[812]: \x1b[2m2026-03-14T09:12:01.009410Z\x1b[0m \x1b[32m"
        " INFO\x1b[0m \x1b[2mcuzk_core::engine\x1b[0m: pipeline GPU worker started "
        "worker_id=3 gpu=1 sub_id=1"
    )
    (r,), c = records([line])
    assert r.kind == "worker_started"
    assert (r.fields["worker_id"], r.fields["gpu"], r.fields["sub_id"]) == ("3", "1", "1")
    assert r.t_wall == pytest.approx(1773479521.009410)
    err = (
        "2026-03-14T09:13:37.481554Z  WARN cuzk_core::pipeline: failed to save PCE to disk "
        "(non-fatal) circuit_id=snap-deals-32g error=failed to create temp file: /d/p.tmp"
    )
    (r,), _ = records([err])
    assert r.kind == "pce_save_failed"
    assert r.fields["error"] == "failed to create temp file: /d/p.tmp"  # spaces kept


def test_unknown_lines_counted_and_malformed_known_lines_carry_their_number():
    recs, c = records(
        [
            "hello",
            "TIMELINE,abc,GPU_START,j,worker=0",
            "2026-03-14T09:12:01.004511Z  INFO cuzk_daemon: cuzk-daemon starting",
            "CUZK_TIMING: prep_msm_ms=fast",
            "TIMELINE,5,GPU_START,j,worker=x",
        ]
    )
    assert c.lines == 5 and c.unknown == 2 and c.malformed == 3
    assert [(r.lineno, r.kind) for r in recs] == [
        (2, "malformed"),
        (4, "malformed"),
        (5, "malformed"),
    ]
    assert "not an integer" in recs[2].fields["why"]


def test_two_line_rust_panic_old_panic_and_cpp_terminate():
    recs, _ = records(
        [
            "thread 'tokio-runtime-worker' panicked at src/lib.rs:316:9:",
            'cudaMallocAsync(&d_ptr, sz, stream)@sppark/util/gpu_t.cuh:73 failed: "out of memory"',
            "thread 'main' panicked at 'index out of bounds', src/x.rs:1:2",
            "terminate called after throwing an instance of 'sppark_error'",
            '  what():  cudaMalloc(&p, n)@x.cu:9 failed: "out of memory"',
        ]
    )
    assert [(r.kind, r.lineno, r.fields["oom"]) for r in recs] == [
        ("rust_panic", 1, True),
        ("rust_panic", 3, False),
        ("cpp_terminate", 4, True),
    ]
    assert recs[0].fields["message"].startswith("cudaMallocAsync")


def test_read_log_streams_and_refuses_a_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such log file"):
        read_log(tmp_path / "nope.log")
    it = read_log(FIXTURES / "incident-rtx4000ada-snapdeals.log")
    first = next(it)  # a generator: nothing read beyond what is needed
    assert (first.lineno, first.kind) == (3, "rayon_threads")  # lines 1-2: not ours


def test_bytes_lines_are_decoded_leniently():
    recs, c = records([b"TIMELINE,1,SYNTH_START,j\xff,partition=0\n", b"\xff\xfe junk\n"])
    assert recs[0].kind == "timeline" and c.unknown == 1


def test_read_log_reads_a_gzip_log_line_for_line(tmp_path):
    import gzip

    plain = FIXTURES / "incident-rtx4000ada-snapdeals.log"
    packed = tmp_path / "incident.log.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    want = [(r.lineno, type(r).__name__) for r in read_log(plain)]
    got = [(r.lineno, type(r).__name__) for r in read_log(packed)]
    assert got == want and len(want) > 10
