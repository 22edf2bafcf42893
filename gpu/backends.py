"""Device memory as the real pipeline sees it: `LedgerBackend` (dry-run: the model's
allocator ledger, no GPU) and `CupyBackend` (the GPU through CuPy: cudaMemGetInfo, raw
cudaMalloc ballasts, the pools). CuPy is imported only inside the functions that need it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from .run_spec import RunSpec

DeviceKind = Literal["real", "dry-run"]
NEVER = 2**64 - 1


class Backend:
    """Device memory as the pipeline sees it; `LedgerBackend` (dry-run) and `CupyBackend`."""

    kind: DeviceKind

    def mem_info(self, gpu: int) -> tuple[int, int]:  # (free, total) as cudaMemGetInfo
        raise NotImplementedError


@dataclass
class LedgerBackend(Backend):
    """Dry-run device memory: the model's allocator ledger (cuzk_sim.model.allocator),
    one per GPU, of the scenario's size; thread-safe by one lock."""

    vram: int
    context: int
    gpus: int
    release_threshold: int = NEVER
    kind: DeviceKind = "dry-run"
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        from cuzk_sim.model.allocator import DeviceMemory

        self.memory = [
            DeviceMemory(
                g, self.vram, context=self.context, release_threshold=self.release_threshold
            )
            for g in range(self.gpus)
        ]

    def mem_info(self, gpu: int) -> tuple[int, int]:
        with self.lock:
            m = self.memory[gpu]
            return m.free, m.total

    def charge(self, gpu: int, owner: str, buffer: str, nbytes: int, allocator: str) -> bool:
        with self.lock:
            return self.memory[gpu].try_alloc(owner, buffer, nbytes, allocator) is not None

    def release(self, gpu: int, owner: str, buffer: str) -> None:
        with self.lock:
            self.memory[gpu].release(owner, buffer)

    def pools(self, gpu: int) -> dict[str, int]:
        m = self.memory[gpu]
        return {"caching_pool_idle": m.caching.idle, "async_pool_idle": m.async_pool.idle}

    def used_by_buffers(self, gpu: int) -> int:
        m = self.memory[gpu]
        return sum(a.live for a in m.allocators.values())


@dataclass
class CupyBackend(Backend):
    """The GPU through CuPy: cudaMemGetInfo, raw cudaMalloc ballasts, the pools."""

    kind: DeviceKind = "real"
    async_pools: dict[int, Any] = field(default_factory=dict)

    def mem_info(self, gpu: int) -> tuple[int, int]:
        import cupy

        with cupy.cuda.Device(gpu):
            free, total = cupy.cuda.runtime.memGetInfo()
        return int(free), int(total)

    def async_pool(self, gpu: int) -> Any:
        import cupy

        pool = self.async_pools.get(gpu)
        if pool is None:
            with cupy.cuda.Device(gpu):
                pool = self.async_pools[gpu] = cupy.cuda.MemoryAsyncPool()
        return pool

    def raw_malloc(self, gpu: int, nbytes: int) -> int:
        import cupy

        with cupy.cuda.Device(gpu):
            return int(cupy.cuda.runtime.malloc(nbytes))

    def raw_free(self, gpu: int, ptr: int) -> None:
        import cupy

        with cupy.cuda.Device(gpu):
            cupy.cuda.runtime.free(ptr)

    def _mempool(self, gpu: int) -> int:
        import cupy

        return int(cupy.cuda.runtime.deviceGetDefaultMemPool(gpu))

    def set_release_threshold(self, gpu: int, value: int) -> None:
        import cupy

        rt = cupy.cuda.runtime
        attr = getattr(rt, "cudaMemPoolAttrReleaseThreshold", 4)
        rt.memPoolSetAttribute(self._mempool(gpu), attr, min(value, NEVER))

    def release_threshold(self, gpu: int) -> int:
        import cupy

        rt = cupy.cuda.runtime
        attr = getattr(rt, "cudaMemPoolAttrReleaseThreshold", 4)
        return int(rt.memPoolGetAttribute(self._mempool(gpu), attr))

    def async_reserved_used(self, gpu: int) -> tuple[int, int]:
        import cupy

        rt = cupy.cuda.runtime
        pool = self._mempool(gpu)
        reserved = rt.memPoolGetAttribute(pool, getattr(rt, "cudaMemPoolAttrReservedMemCurrent", 5))
        used = rt.memPoolGetAttribute(pool, getattr(rt, "cudaMemPoolAttrUsedMemCurrent", 7))
        return int(reserved), int(used)

    def reset(self, gpu: int) -> None:
        """Empty every pool: CuPy's caching pool and pinned pool, the async pool."""
        import cupy

        with cupy.cuda.Device(gpu):
            cupy.cuda.Device(gpu).synchronize()
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()
            cupy.cuda.runtime.memPoolTrimTo(self._mempool(gpu), 0)

    def pools(self, gpu: int) -> dict[str, int]:
        import cupy

        with cupy.cuda.Device(gpu):
            caching = int(cupy.get_default_memory_pool().free_bytes())
        reserved, used = self.async_reserved_used(gpu)
        return {"caching_pool_idle": caching, "async_pool_idle": reserved - used}

    def used_by_buffers(self, gpu: int) -> int:
        import cupy

        with cupy.cuda.Device(gpu):
            caching = int(cupy.get_default_memory_pool().used_bytes())
        return caching + self.async_reserved_used(gpu)[1]


def gpu_missing() -> str | None:
    """Why the real device cannot run here (no CuPy, no CUDA device), or None."""
    try:
        import cupy
    except ImportError as e:
        return f"CuPy cannot be imported ({e})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDARuntimeError without a driver
        return f"no CUDA device ({type(e).__name__}: {e})"
    return None if n > 0 else "no CUDA device"


def backend_for(device: DeviceKind, spec: RunSpec, card_vram: int | None = None) -> Backend:
    """The backend of `device`; a dry-run card has the scenario's size (card_vram: another)."""
    if device == "real":
        return CupyBackend()
    return LedgerBackend(
        card_vram or spec.vram, spec.context, spec.gpus, spec.pool_release_threshold
    )
