"""Why a real partition failed, told from its exception or its recorded reason: out of
device memory at any layer (our allocator's DeviceOutOfMemory, CuPy's pool
OutOfMemoryError, the CUDA runtime's cudaErrorMemoryAllocation, the driver's
CUDA_ERROR_OUT_OF_MEMORY, e.g. a kernel launch that cannot grow the context's local
memory) or something else. A run whose partitions failed for any reason is never a run
that fits: an out-of-memory failure is an OOM, any other an error (docs/validation.md)."""

from __future__ import annotations

# the words each layer's out-of-memory error carries in its type name or message
OOM_MARKERS = (
    "out of memory",  # our reasons ("out of memory at d_a ..."), CuPy's and the driver's text
    "OutOfMemoryError",  # cupy.cuda.memory.OutOfMemoryError, DeviceOutOfMemory's base
    "CUDA_ERROR_OUT_OF_MEMORY",  # the driver API (CUDADriverError)
    "cudaErrorMemoryAllocation",  # the runtime API (CUDARuntimeError)
    "DeviceOutOfMemory",
)


def is_oom_text(text: str) -> bool:
    """Whether a failure's text (`Type: message`, or a recorded reason) is an OOM."""
    low = text.lower()
    return any(m.lower() in low for m in OOM_MARKERS)


def is_oom_exception(exc: BaseException) -> bool:
    """Whether an exception is an out-of-device-memory error of any layer: by its class
    (MemoryError: DeviceOutOfMemory, CuPy's OutOfMemoryError) or its text."""
    if isinstance(exc, MemoryError):
        return True
    return is_oom_text(f"{type(exc).__name__}: {exc}")


def failed_outcome(reasons: list[str]) -> str | None:
    """'oom' when any failed partition's reason is an OOM, 'error' when partitions failed
    for other reasons only, None when none failed."""
    if not reasons:
        return None
    return "oom" if any(is_oom_text(r) for r in reasons) else "error"
