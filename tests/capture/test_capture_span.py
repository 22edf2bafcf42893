"""`--span`: one partition's window in a program that marks none (our prover: its key
generation, warm-up partition and timed partition each allocate and free their own device
buffers). Hand-built traces; spans and plans written out by hand."""

from __future__ import annotations

import sys

import pytest
from test_capture_cmd import fake_cupti  # noqa: F401  (the fixture)
from typer.testing import CliRunner

from cuzk_sim.capture.to_plan import busy_spans, trace_to_plan
from cuzk_sim.capture.trace import KernelEvent, MemEvent, Trace, TraceError
from cuzk_sim.cli import app
from cuzk_sim.plan import Alloc, Free, Kernel, Plan


def mem(t, op, addr, n=0, memory="device"):
    return MemEvent(
        t, 7, 0, op, addr, n, memory, "cudaMalloc", "sync" if memory == "device" else None
    )


def _trace() -> Trace:
    """A key pinned at t=1 and a device table kept from t=2 (never freed: not transient);
    span 1 = key generation [10, 21), span 2 = a warm-up [30, 41) with two buffers, span 3
    = the timed partition [50, 61): D, a kernel, E inside it."""
    memory = (
        mem(1, "alloc", 0x9000, 4096, "host_pinned"),
        mem(2, "alloc", 0x100, 1 << 20),
        mem(10, "alloc", 0x200, 512),
        mem(20, "free", 0x200),
        mem(30, "alloc", 0x300, 1024),
        mem(31, "alloc", 0x400, 2048),
        mem(35, "free", 0x400),
        mem(40, "free", 0x300),
        mem(50, "alloc", 0x500, 8192),
        mem(56, "alloc", 0x200, 64),  # an address handed out again
        mem(58, "free", 0x200),
        mem(60, "free", 0x500),
    )
    kernels = (KernelEvent(55, 57, 7, 0, "k", 0, issued_ns=54), KernelEvent(36, 37, 7, 0, "w", 0))
    return Trace("t.json", "cupti", memory=memory, kernels=kernels)


def test_spans_are_the_stretches_of_transient_device_memory():
    assert busy_spans(_trace(), 7, 0) == [(10, 21), (30, 41), (50, 61)]


def test_a_buffer_kept_to_the_end_does_not_join_partitions():
    # 0x2 is allocated inside the second stretch and never freed (a cache kept from then
    # on): the stretch still ends when its transient buffer is freed
    memory = (
        mem(1, "alloc", 0x1, 8),
        mem(2, "free", 0x1),
        mem(3, "alloc", 0x1, 8),
        mem(4, "alloc", 0x2, 8),
        mem(5, "free", 0x1),
        mem(6, "alloc", 0x3, 8),
        mem(7, "free", 0x3),
    )
    assert busy_spans(Trace("t", "cupti", memory=memory), 7, 0) == [(1, 3), (3, 6), (6, 8)]


def test_the_last_span_is_the_timed_partition_with_what_it_finds_live():
    plan = trace_to_plan(_trace(), span=-1).plan
    assert plan == trace_to_plan(_trace(), span=3).plan.__class__(plan.name, plan.steps, plan.meta)
    steps = [s for s in plan.steps if isinstance(s, Alloc | Free | Kernel)]
    assert steps == [
        Alloc("h0_4KiB", 4096, persistent=True, memory="host_pinned"),
        Alloc("d0_1MiB", 1 << 20, "sync", persistent=True),
        Alloc("d1_8KiB", 8192, "sync"),
        Kernel("k", "captured", 0, "compute", seconds=2e-9),
        Alloc("d2_64B", 64, "sync"),
        Free("d2_64B", "device"),
        Free("d1_8KiB", "device"),
    ]
    assert plan.meta["span"] == -1 and "span -1" in plan.name


def test_the_second_span_holds_the_warm_up_only():
    plan = trace_to_plan(_trace(), span=2).plan
    allocs = [(s.buffer, s.bytes) for s in plan.steps if isinstance(s, Alloc)]
    assert allocs == [("h0_4KiB", 4096), ("d0_1MiB", 1 << 20), ("d1_1KiB", 1024), ("d2_2KiB", 2048)]
    assert [s.name for s in plan.steps if isinstance(s, Kernel)] == ["w"]


@pytest.mark.parametrize("span", [0, 4, -4])
def test_a_span_the_trace_does_not_have_is_named(span):
    with pytest.raises(TraceError, match=rf"t.json: --span {span}: process 7 on GPU 0 has 3 "):
        trace_to_plan(_trace(), span=span)


def test_span_and_window_together_are_refused():
    with pytest.raises(TraceError, match="--window and --span: choose one"):
        trace_to_plan(_trace(), window="partition", span=1)


def test_the_capture_command_takes_span(tmp_path, fake_cupti):  # noqa: F811
    out = tmp_path / "plan.json"
    args = ["capture", "-o", str(out), "--span", "-1", "--", sys.executable, "-c", "pass"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert Plan.from_json(out.read_text()).meta["span"] == -1
    r = CliRunner().invoke(app, ["capture", "--span", "9", "--", sys.executable, "-c", "pass"])
    assert r.exit_code == 2 and "--span 9: process" in r.stderr
