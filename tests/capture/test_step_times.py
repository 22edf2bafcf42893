"""cuzk_sim/capture/step_times: a capture's GPU time per group of plan steps, measured as
CUDA events measure it. A hand-built trace of one partition on stream 7: an upload, two
kernel steps (three kernels, a memset and a device-side copy between them), a result copy
back; the times worked out by hand below each case."""

from __future__ import annotations

import pytest

from cuzk_sim.capture.step_times import GroupTime, group_times, stream_ops
from cuzk_sim.capture.trace import CopyEvent, KernelEvent, MemsetEvent, Process, Trace
from cuzk_sim.plan import Copy, Kernel, Plan

MiB = 1 << 20
US = 1000  # ns


def _trace() -> Trace:
    # (issued, start, end) in microseconds
    copies = (
        CopyEvent(100 * US, 1100 * US, 7, 0, 8 * MiB, "HtoD", "pinned", 7, issued_ns=90 * US),
        CopyEvent(1400 * US, 1401 * US, 7, 0, 4096, "DtoD", None, 7, issued_ns=1390 * US),
        CopyEvent(2500 * US, 2502 * US, 7, 0, 2048, "DtoH", "pageable", 7, issued_ns=2480 * US),
        CopyEvent(50 * US, 60 * US, 7, 0, 2048, "DtoH", "pageable", 9, issued_ns=40 * US),
    )
    kernels = (
        # the first kernel is issued while the upload runs: it starts when it ends
        KernelEvent(1100 * US, 1300 * US, 7, 0, "a", 7, issued_ns=1000 * US),
        KernelEvent(1310 * US, 1390 * US, 7, 0, "b", 7, issued_ns=1005 * US),
        KernelEvent(1420 * US, 2400 * US, 7, 0, "c", 7, issued_ns=1410 * US),
        KernelEvent(5000 * US, 6000 * US, 7, 0, "later", 7, issued_ns=4900 * US),
    )
    memsets = (MemsetEvent(1395 * US, 1396 * US, 7, 0, 64, 7, issued_ns=1392 * US),)
    procs = (Process(7, (0,), {0: 7}),)
    return Trace("t", "cupti", procs, copies=copies, kernels=kernels, memsets=memsets)


def _reference() -> Plan:
    return Plan(
        "ref",
        (
            Copy("u1", 8 * MiB, "HtoD", True),
            Kernel("k1", "ntt", 1),
            Kernel("k2", "msm_g1", 1),
            Copy("r1", 2048, "DtoH", False),
        ),
    )


def test_the_window_keeps_its_own_stream_in_gpu_order():
    ops = stream_ops(_trace(), 7, 0, 0, 4000 * US)
    # stream 9's copy is another stream; `later` is issued after the window
    assert [getattr(e, "name", getattr(e, "direction", "memset")) for e in ops] == [
        "HtoD", "a", "b", "memset", "DtoD", "c", "DtoH"
    ]  # fmt: skip


def test_groups_are_timed_from_their_start_to_their_last_end():
    details = {
        "steps": {
            "u1": {"n": 1, "gpu_ms": 1.02, "idle_before_ms": 0.5},
            "k1": {"n": 1, "gpu_ms": 0.30, "idle_before_ms": 0.001},
            "k2": {"n": 1, "gpu_ms": 1.01, "idle_before_ms": 0.004},
            "r1": {"n": 1, "gpu_ms": 0.03, "idle_before_ms": 0.001},
        }
    }
    rows = group_times(stream_ops(_trace(), 7, 0, 0, 4000 * US), _reference(), details)
    got = [(r.label, round(r.captured_s * 1e6, 3), round(r.events_s * 1e6, 3)) for r in rows]
    assert got == [
        # the upload: the GPU was idle, so from its issue at 90 us to its end at 1100
        ("copy u1", 1010.0, 1020.0),
        # k1 and k2: from the upload's end (1100; the GPU was busy when `a` was issued)
        # to c's end (2400); the events: 0.30 + 1.01 ms, plus k2's idle before 0.004 ms
        ("kernels k1 .. k2 (2 steps)", 1300.0, 1314.0),
        # the result: issued at 2480 after c ended (2400), so from 2480 to 2502
        ("copy r1", 22.0, 30.0),
    ]
    assert [r.judged for r in rows] == [False, False, False]  # all under 2 ms


def test_a_step_without_an_event_time_is_not_grouped():
    details = {"steps": {"u1": {"n": 1, "gpu_ms": 1.02, "idle_before_ms": 0.0}}}
    rows = group_times(stream_ops(_trace(), 7, 0, 0, 4000 * US), _reference(), details)
    assert [r.label for r in rows] == ["copy u1"]


@pytest.mark.parametrize(
    ("captured", "events", "judged", "ok"),
    [
        (2.09e-3, 2.0e-3, True, True),  # +4.5 %
        (2.11e-3, 2.0e-3, True, False),  # +5.5 %
        (1.0e-3, 1.99e-3, False, False),  # under 2 ms: listed, not judged
    ],
)
def test_judged_and_within_tolerance(captured, events, judged, ok):
    g = GroupTime("x", captured, events)
    assert (g.judged, g.ok) == (judged, ok)
