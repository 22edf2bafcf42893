"""CUPTI activity records -> trace -> plan, on hand-built records shaped like
cupti-python's (cupti_canned.py): the same partition as test_import_nsys, so the same
hand-worked plan; enum fields given by name or by CUPTI's C numbers read the same."""

import pytest
from cupti_canned import one_partition
from test_import_nsys import EXPECTED

from cuzk_sim.capture.cupti_records import MEMORY_KIND, enum_name, records_to_trace
from cuzk_sim.capture.to_plan import trace_to_plan
from cuzk_sim.capture.trace import RangeEvent, TraceError


def test_records_give_the_hand_worked_plan():
    trace = records_to_trace(one_partition(), 4242, "prog.py")
    imp = trace_to_plan(trace)
    assert imp.plan.steps == EXPECTED
    assert imp.default_stream == 7 and imp.default_stream_known  # from the CONTEXT record
    assert trace.memory[2].api == "cuMemAllocAsync" and trace.memory[2].allocator == "async"


def test_a_runtime_call_is_named_before_the_driver_calls_inside_it():
    """A runtime call's inner driver calls carry its correlation id (every cudaMalloc of
    the H200 capture of 2026-12-03 was named cuCtxGetDevice): the runtime call names the
    allocation and gives the host time a kernel was issued."""
    from cupti_canned import api

    recs = one_partition()
    recs += [api(1, 101, "cuCtxGetDevice", kind="DRIVER"), api(5, 403, "cuLaunchKernel", "DRIVER")]
    trace = records_to_trace(recs, 4242, "prog.py")
    assert trace.memory[0].api == "cudaMalloc_v3020" and trace.memory[0].allocator == "sync"
    assert [k.issued_ns for k in trace.kernels] == [400]
    assert trace_to_plan(trace).plan.steps == EXPECTED


def test_markers_become_ranges_and_marks():
    trace = records_to_trace(one_partition(), 4242, "prog.py")
    assert set(trace.ranges) == {
        RangeEvent(50, 5000, 4242, "partition", "range"),
        RangeEvent(60, None, 4242, "tick", "mark"),
    }
    assert trace_to_plan(trace, window="partition").plan.steps == EXPECTED


def test_numeric_enums_read_as_names():
    recs = one_partition()
    for r in recs:  # CUPTI's C numbers: HTOD 1, DTOH 2; PAGEABLE 1, PINNED 2, DEVICE 3
        if r["kind"] == "MEMCPY":
            r["copy_kind"] = {"HTOD": 1, "DTOH": 2}[r["copy_kind"]]
            r["src_kind"] = {"PINNED": 2, "DEVICE": 3}[r["src_kind"]]
            r["dst_kind"] = {"DEVICE": 3, "PAGEABLE": 1}[r["dst_kind"]]
        if r["kind"] == "MEMORY2":
            r["memory_operation_type"] = {"ALLOCATION": 1, "RELEASE": 2}[r["memory_operation_type"]]
            r["memory_kind"] = {"DEVICE": 3, "PINNED": 2}[r["memory_kind"]]
    assert trace_to_plan(records_to_trace(recs, 4242, "p")).plan.steps == EXPECTED
    assert enum_name("ActivityMemoryKind.PINNED", MEMORY_KIND) == "PINNED"


def test_bad_records_named():
    with pytest.raises(TraceError, match=r"record 0: expected an object with a 'kind'"):
        records_to_trace([{"start": 1}], 1, "p")
    bad = [{"kind": "CONCURRENT_KERNEL", "start": "soon", "end": 2, "name": "k"}]
    with pytest.raises(TraceError, match=r"CONCURRENT_KERNEL record 0: start must be an integer"):
        records_to_trace(bad, 1, "p")
    free = [
        {
            "kind": "MEMORY2",
            "timestamp": 1,
            "memory_operation_type": "RELEASE",
            "memory_kind": "DEVICE",
            "address": 64,
            "bytes": 8,
            "device_id": 0,
        }
    ]
    # CUPTI records from the first CUDA call: an unmatched free is CUPTI's, not a late
    # start (the nsys reader refuses it): dropped and said
    trace = records_to_trace(free, 1, "p")
    assert trace.memory == ()
    assert "1 frees of memory no recorded allocation returned: dropped" in trace.missing


def test_an_address_allocated_again_frees_the_old_buffer_there():
    def mem(t, op, nbytes):
        fields = {"memory_operation_type": op, "memory_kind": "DEVICE", "address": 64}
        return {"kind": "MEMORY2", "timestamp": t, "bytes": nbytes, "device_id": 0} | fields

    trace = records_to_trace([mem(1, 1, 8), mem(5, 1, 16), mem(9, 2, 16)], 1, "p")
    ops = [(e.t_ns, e.op, e.bytes) for e in trace.memory]
    assert ops == [(1, "alloc", 8), (5, "free", 8), (5, "alloc", 16), (9, "free", 16)]
    assert "1 addresses allocated again with no recorded free: freed there" in trace.missing


def test_missing_kinds_said():
    trace = records_to_trace(
        [{"kind": "CONCURRENT_KERNEL", "start": 1, "end": 2, "name": "k"}], 3, "p"
    )
    assert "no MEMORY2 records: no allocations recorded" in trace.missing
    assert any("CONTEXT" in m for m in trace.missing)
    assert "no CUDA context size measured" in trace.missing
