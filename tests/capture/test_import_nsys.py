"""`import-nsys` on exports we write ourselves in Nsight Systems' schema (nsys_export.py):
each expected plan is worked out by hand from the rows written below."""

from __future__ import annotations

import json

import pytest
from nsys_export import (
    ALLOC,
    CONTEXT_SYNC,
    DEVICE,
    DTOH,
    FREE,
    HTOD,
    MARK,
    PAGEABLE,
    PINNED,
    STREAM_SYNC,
    Export,
)
from typer.testing import CliRunner

from cuzk_sim.capture.nsys import read_nsys
from cuzk_sim.capture.to_plan import trace_to_plan
from cuzk_sim.capture.trace import TraceError
from cuzk_sim.cli import app
from cuzk_sim.plan.contract import Alloc, Copy, Free, Kernel, Plan, Sync

MiB = 1 << 20


def one_partition() -> Export:
    """Process 4242 on GPU 0, NULL stream 7 and a stream 13 of its own."""
    ex = Export()
    ex.context(null_stream=7)
    ex.mem(100, ALLOC, 0x1000, 64 * MiB, "cudaMalloc_v3020")
    ex.mem(150, ALLOC, 0x9000, 4 * MiB, "cudaHostAlloc_v3020", kind=PINNED)
    ex.copy(200, 210, 1210, 4 * MiB, HTOD, src=PINNED, dst=DEVICE)
    ex.mem(300, ALLOC, 0x2000, 32 * MiB, "cudaMallocAsync_v11020", pool=0xABC)
    ex.kernel(400, 500, 2500, "ntt_kernel", stream=13)
    ex.sync(2600, 2700, STREAM_SYNC, stream=13)
    ex.copy(2800, 2900, 3900, 1 * MiB, DTOH, src=DEVICE, dst=PAGEABLE)
    ex.mem(4000, FREE, 0x2000, 32 * MiB, "cudaFreeAsync_v11020", pool=0xABC)
    ex.mem(4100, FREE, 0x1000, 64 * MiB, "cudaFree_v3020")
    ex.memset(4200, 4300, 4400, 1024)
    return ex


# by hand: host order of the rows above; the NULL stream is `compute`, stream 13 `s13`;
# the pinned buffer is never freed (persistent); durations are end - start in seconds
EXPECTED = (
    Alloc("d0_64MiB", 64 * MiB, "sync"),
    Alloc("h0_4MiB", 4 * MiB, persistent=True, memory="host_pinned"),
    Copy("copy0_HtoD", 4 * MiB, "HtoD", True, "compute", seconds=1000e-9),
    Alloc("d1_32MiB", 32 * MiB, "async"),
    Kernel("ntt_kernel", "captured", 0, "s13", seconds=2000e-9),
    Sync("s13"),
    Copy("copy1_DtoH", 1 * MiB, "DtoH", False, "compute", seconds=1000e-9),
    Free("d1_32MiB"),
    Free("d0_64MiB"),
    Kernel("memset", "memset", 1024, "compute", seconds=100e-9),
    Sync("s13"),  # the plan's end joins every named stream
)


def test_hand_made_export_gives_the_hand_worked_plan(tmp_path):
    path = one_partition().write(tmp_path / "r.sqlite")
    imp = trace_to_plan(read_nsys(path))
    assert imp.plan.steps == EXPECTED
    assert imp.pid == 4242 and imp.device == 0 and imp.default_stream == 7
    assert imp.default_stream_known


def test_cli_writes_plan_and_summary(tmp_path):
    path = one_partition().write(tmp_path / "r.sqlite")
    out = tmp_path / "plan.json"
    r = CliRunner().invoke(app, ["import-nsys", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert Plan.from_json(out.read_text()).steps == EXPECTED
    # 64 MiB + 32 MiB live at once (step 3), by hand
    assert f"peak device bytes: {96 * MiB} (96.00 MiB)" in r.output
    assert "ntt_kernel" in r.output and "s13: 1 kernels" in r.output
    r = CliRunner().invoke(app, ["import-nsys", str(path), "--json"])
    facts = json.loads(r.output)
    assert facts["peak_device_bytes"] == 96 * MiB
    assert facts["peak_pinned_host_bytes"] == 4 * MiB
    assert [b["name"] for b in facts["buffers"]] == ["d0_64MiB", "d1_32MiB", "h0_4MiB"]
    assert facts["kernels"]["ntt_kernel"] == {"count": 1, "seconds": 2000e-9}


def windows() -> Export:
    """A key allocated before two NVTX ranges `partition` (and markers `tick`)."""
    ex = Export(pid=77)
    ex.context(null_stream=7)
    ex.mem(10, ALLOC, 0xA000, 1 << 30, "cudaMalloc_v3020")  # never freed
    ex.nvtx(100, 200, "partition")
    ex.nvtx(100, None, "tick", etype=MARK)
    ex.mem(110, ALLOC, 0x100, 8 * MiB, "cudaMalloc_v3020")
    ex.kernel(120, 130, 150, "k1")
    ex.mem(180, FREE, 0x100, 8 * MiB, "cudaFree_v3020")
    ex.nvtx(300, 400, "partition")
    ex.nvtx(300, None, "tick", etype=MARK)
    ex.mem(310, ALLOC, 0x200, 16 * MiB, "cudaMalloc_v3020")
    ex.kernel(320, 330, 370, "k2")
    ex.mem(390, ALLOC, 0x300, 2 * MiB, "cudaMalloc_v3020")
    ex.mem(395, FREE, 0x200, 16 * MiB, "cudaFree_v3020")
    ex.mem(450, FREE, 0x300, 2 * MiB, "cudaFree_v3020")  # after the second range
    return ex


def test_window_by_nvtx_range(tmp_path):
    trace = read_nsys(windows().write(tmp_path / "w.sqlite"))
    imp = trace_to_plan(trace, window="partition", occurrence=2)
    # the key, live when the range opens and never freed in it: allocated first, kept;
    # the 2 MiB buffer outlives the range: kept too
    assert imp.plan.steps == (
        Alloc("d0_1GiB", 1 << 30, persistent=True),
        Alloc("d1_16MiB", 16 * MiB),
        Kernel("k2", "captured", 0, seconds=40e-9),
        Alloc("d2_2MiB", 2 * MiB, persistent=True),
        Free("d1_16MiB"),
    )
    assert imp.window == (300, 400)


def test_window_by_marker_runs_to_the_next(tmp_path):
    trace = read_nsys(windows().write(tmp_path / "w.sqlite"))
    imp = trace_to_plan(trace, window="tick", occurrence=1)  # [100, 300)
    assert imp.plan.steps == (
        Alloc("d0_1GiB", 1 << 30, persistent=True),
        Alloc("d1_8MiB", 8 * MiB),
        Kernel("k1", "captured", 0, seconds=20e-9),
        Free("d1_8MiB"),
    )


def test_whole_trace_without_window(tmp_path):
    imp = trace_to_plan(read_nsys(windows().write(tmp_path / "w.sqlite")))
    allocs = [s for s in imp.plan.steps if isinstance(s, Alloc)]
    assert [(a.bytes, a.persistent) for a in allocs] == [
        (1 << 30, True),
        (8 * MiB, False),
        (16 * MiB, False),
        (2 * MiB, False),
    ]


@pytest.mark.parametrize(
    "window,occ,msg",
    [
        (
            "nope",
            1,
            r"--window 'nope': no NVTX range or marker of that name \(names: 'partition', 'tick'\)",
        ),
        ("partition", 3, r"--occurrence 3: NVTX range 'partition' occurs 2 time\(s\)"),
        ("tick", 0, r"--occurrence 0: must be 1 or more"),
    ],
)
def test_bad_window_named(tmp_path, window, occ, msg):
    trace = read_nsys(windows().write(tmp_path / "w.sqlite"))
    with pytest.raises(TraceError, match=msg):
        trace_to_plan(trace, window=window, occurrence=occ)


def test_context_sync_joins_every_stream_and_missing_columns_named(tmp_path):
    ex = Export()
    ex.kernel(10, 20, 30, "a", stream=7)
    ex.kernel(11, 40, 50, "b", stream=9)
    ex.kernel(12, 60, 70, "c", stream=7)
    ex.sync(80, 90, CONTEXT_SYNC, stream=0)
    # no TARGET_INFO_CUDA_CONTEXT_INFO, and an older KERNEL table without correlationId
    schema = {
        "CUPTI_ACTIVITY_KIND_KERNEL": "start INTEGER, end INTEGER, deviceId INTEGER, "
        "streamId INTEGER, globalPid INTEGER, shortName INTEGER, demangledName INTEGER"
    }
    path = ex.write(tmp_path / "r.sqlite", schema=schema)
    trace = read_nsys(path)
    imp = trace_to_plan(trace)
    assert not imp.default_stream_known and imp.default_stream == 7  # the busiest
    assert [s.op for s in imp.plan.steps] == ["kernel", "kernel", "kernel", "sync", "sync", "sync"]
    assert [s.stream for s in imp.plan.steps[3:]] == ["compute", "s9", "s9"]
    assert any("TARGET_INFO_CUDA_CONTEXT_INFO" in m for m in trace.missing)
    assert any("no CUDA_GPU_MEMORY_USAGE_EVENTS" in m for m in trace.missing)
    assert any("KERNEL lacks correlationId" in m for m in trace.missing)


def test_lacking_column_takes_default_and_says_so(tmp_path):
    ex = Export()
    ex.add("CUPTI_ACTIVITY_KIND_KERNEL", start=10, end=30, deviceId=0, shortName=ex.string("k"))
    schema = {
        "CUPTI_ACTIVITY_KIND_KERNEL": "start INTEGER, end INTEGER, deviceId INTEGER, "
        "shortName INTEGER"
    }
    trace = read_nsys(ex.write(tmp_path / "r.sqlite", schema=schema))
    assert trace.kernels[0].stream == 0 and trace.kernels[0].pid == 0
    assert "CUPTI_ACTIVITY_KIND_KERNEL lacks streamId: taken as 0 for every row" in trace.missing


# --- malformed exports: one line on stderr, exit 2 ---


def _run_bad(path):
    r = CliRunner().invoke(app, ["import-nsys", str(path)])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.output
    return lines[0]


def test_not_sqlite(tmp_path):
    p = tmp_path / "r.sqlite"
    p.write_text("this is a report.nsys-rep, not an export\n")
    assert "not an SQLite database" in _run_bad(p)


def test_missing_file(tmp_path):
    assert "no such file" in _run_bad(tmp_path / "none.sqlite")


def test_no_cuda_tables(tmp_path):
    ex = Export()
    ex.nvtx(1, 2, "x")
    assert "no CUDA activity" in _run_bad(ex.write(tmp_path / "r.sqlite"))


def test_negative_size(tmp_path):
    ex = Export()
    ex.mem(10, ALLOC, 0x10, -4096, "cudaMalloc_v3020")
    assert "bytes -4096 out of range" in _run_bad(ex.write(tmp_path / "r.sqlite"))


def test_free_of_unknown_address(tmp_path):
    ex = Export()
    ex.mem(10, ALLOC, 0x10, 4096, "cudaMalloc_v3020")
    ex.mem(20, FREE, 0x20, 4096, "cudaFree_v3020")
    assert "free of address 0x20" in _run_bad(ex.write(tmp_path / "r.sqlite"))


def test_text_in_an_integer_column(tmp_path):
    ex = Export()
    ex.mem(10, ALLOC, 0x10, 4096, "cudaMalloc_v3020")
    ex.rows["CUDA_GPU_MEMORY_USAGE_EVENTS"][0]["bytes"] = "lots"
    assert "CUDA_GPU_MEMORY_USAGE_EVENTS.bytes: expected an integer, got 'lots'" in _run_bad(
        ex.write(tmp_path / "r.sqlite")
    )


def test_two_processes_need_pid(tmp_path):
    a, b = Export(pid=1), Export(pid=2)
    a.kernel(1, 2, 3, "k")
    b.kernel(1, 2, 3, "k")
    a.rows["CUPTI_ACTIVITY_KIND_KERNEL"] += b.rows["CUPTI_ACTIVITY_KIND_KERNEL"]
    path = a.write(tmp_path / "r.sqlite")
    assert "several processes [1, 2]: choose one with --pid" in _run_bad(path)
    r = CliRunner().invoke(app, ["import-nsys", str(path), "--pid", "2"])
    assert r.exit_code == 0, r.output


def test_what_the_plan_cannot_hold_is_dropped_and_counted(tmp_path):
    ex = Export()
    ex.context()
    ex.mem(10, ALLOC, 0x10, 2 * MiB, "cudaMallocManaged_v6000", kind=4)  # managed
    ex.mem(20, ALLOC, 0x20, 4 * MiB, "cuMemAllocWeird")  # an API we do not know
    ex.copy(30, 31, 41, 1024, 9, src=PAGEABLE, dst=PAGEABLE)  # host to host
    ex.sync(50, 60, 2, stream=7)  # stream-wait-event: a device-side dependency
    ex.mem(70, FREE, 0x20, 4 * MiB, "cuMemFreeWeird")
    ex.mem(80, FREE, 0x10, 2 * MiB, "cudaFree_v3020", kind=4)
    imp = trace_to_plan(read_nsys(ex.write(tmp_path / "r.sqlite")))
    assert imp.plan.steps == (Alloc("d0_4MiB", 4 * MiB, "sync"), Free("d0_4MiB"))
    assert imp.dropped == {
        "managed memory allocation": 1,
        "allocation by an unknown API, taken as sync": 1,
        "HtoH copy": 1,
        "stream_wait_event synchronisation": 1,
    }


def test_too_many_steps_ask_for_a_window(tmp_path, monkeypatch):
    from cuzk_sim.capture import to_plan

    monkeypatch.setattr(to_plan, "MAX_STEPS", 5)
    trace = read_nsys(one_partition().write(tmp_path / "r.sqlite"))
    with pytest.raises(TraceError, match=r"11 steps, more than a plan holds \(5\): choose one"):
        trace_to_plan(trace)


def test_save_trace_round_trips(tmp_path):
    from cuzk_sim.capture.trace import Trace

    path = one_partition().write(tmp_path / "r.sqlite")
    saved = tmp_path / "trace.json"
    r = CliRunner().invoke(app, ["import-nsys", str(path), "--save-trace", str(saved)])
    assert r.exit_code == 0, r.output
    assert Trace.from_dict(json.loads(saved.read_text())) == read_nsys(path)
    r = CliRunner().invoke(app, ["import-nsys", str(path), "-o", str(tmp_path / "p.txt")])
    assert r.exit_code == 2 and "must end in one of .json" in r.stderr
