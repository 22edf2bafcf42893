"""Hand-built CUPTI activity records (the attribute names of cupti-python's activity
objects) of the same partition as nsys_export's one_partition in test_import_nsys:
so the plan they give is that test's hand-worked EXPECTED."""

MiB = 1 << 20


def api(corr: int, t: int, name: str, kind: str = "RUNTIME") -> dict:
    return {"kind": kind, "start": t, "end": t + 5, "correlation_id": corr, "api_name": name}


def one_partition() -> list[dict]:
    """The context, the API calls, their activity records, then the NVTX markers."""
    return [
        {"kind": "CONTEXT", "context_id": 1, "device_id": 0, "null_stream_id": 7},
        *_api_calls(),
        *_activities(),
        {"kind": "MARKER", "timestamp": 50, "flags": 2, "id": 5, "name": "partition"},
        {"kind": "MARKER", "timestamp": 60, "flags": 1, "id": 6, "name": "tick"},
        {"kind": "MARKER", "timestamp": 5000, "flags": 4, "id": 5, "name": ""},
    ]


def _api_calls() -> list[dict]:
    """The runtime / driver calls, by correlation id."""
    return [
        api(1, 100, "cudaMalloc_v3020"),
        api(2, 150, "cudaHostAlloc_v3020"),
        api(3, 200, "cudaMemcpyAsync_v3020"),
        api(4, 300, "cuMemAllocAsync", kind="DRIVER"),
        api(5, 400, "cudaLaunchKernel_v7000"),
        api(6, 2600, "cudaStreamSynchronize_v3020"),
        api(7, 2800, "cudaMemcpyAsync_v3020"),
        api(8, 4000, "cudaFreeAsync_v11020"),
        api(9, 4100, "cudaFree_v3020"),
        api(10, 4200, "cudaMemsetAsync_v3020"),
    ]


def _activities() -> list[dict]:
    """The memory, copy, kernel, sync and memset records the calls correlate with."""
    return [*_before_sync(), *_after_sync()]


def _before_sync() -> list[dict]:
    """Allocations, the upload, the kernel and the stream synchronisation."""
    return [
        {
            "kind": "MEMORY2",
            "timestamp": 100,
            "memory_operation_type": "ALLOCATION",
            "memory_kind": "DEVICE",
            "address": 0x1000,
            "bytes": 64 * MiB,
            "correlation_id": 1,
            "device_id": 0,
            "context_id": 1,
            "is_async": False,
        },
        {
            "kind": "MEMORY2",
            "timestamp": 150,
            "memory_operation_type": "ALLOCATION",
            "memory_kind": "PINNED",
            "address": 0x9000,
            "bytes": 4 * MiB,
            "correlation_id": 2,
            "device_id": 0,
            "is_async": False,
        },
        {
            "kind": "MEMORY2",
            "timestamp": 300,
            "memory_operation_type": "ALLOCATION",
            "memory_kind": "DEVICE",
            "address": 0x2000,
            "bytes": 32 * MiB,
            "correlation_id": 4,
            "device_id": 0,
            "is_async": True,
            "stream_id": 7,
        },
        {
            "kind": "MEMCPY",
            "copy_kind": "HTOD",
            "src_kind": "PINNED",
            "dst_kind": "DEVICE",
            "start": 210,
            "end": 1210,
            "bytes": 4 * MiB,
            "stream_id": 7,
            "correlation_id": 3,
            "context_id": 1,
        },  # no device_id: the device through its context
        {
            "kind": "CONCURRENT_KERNEL",
            "name": "ntt_kernel",
            "start": 500,
            "end": 2500,
            "device_id": 0,
            "context_id": 1,
            "stream_id": 13,
            "correlation_id": 5,
        },
        {
            "kind": "SYNCHRONIZATION",
            "type": "STREAM_SYNCHRONIZE",
            "start": 2600,
            "end": 2700,
            "context_id": 1,
            "stream_id": 13,
            "correlation_id": 6,
        },
    ]


def _after_sync() -> list[dict]:
    """The download, the frees and the memset."""
    return [
        {
            "kind": "MEMCPY",
            "copy_kind": "DTOH",
            "src_kind": "DEVICE",
            "dst_kind": "PAGEABLE",
            "start": 2900,
            "end": 3900,
            "bytes": 1 * MiB,
            "stream_id": 7,
            "correlation_id": 7,
            "device_id": 0,
        },
        {
            "kind": "MEMORY2",
            "timestamp": 4000,
            "memory_operation_type": "RELEASE",
            "memory_kind": "DEVICE",
            "address": 0x2000,
            "bytes": 32 * MiB,
            "correlation_id": 8,
            "device_id": 0,
            "is_async": True,
        },
        {
            "kind": "MEMORY2",
            "timestamp": 4100,
            "memory_operation_type": "RELEASE",
            "memory_kind": "DEVICE",
            "address": 0x1000,
            "bytes": 64 * MiB,
            "correlation_id": 9,
            "device_id": 0,
            "is_async": False,
        },
        {
            "kind": "MEMSET",
            "start": 4300,
            "end": 4400,
            "bytes": 1024,
            "stream_id": 7,
            "correlation_id": 10,
            "device_id": 0,
        },
    ]
