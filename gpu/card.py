"""The card a real-pipeline run has (gpu/pipeline.py RealRun inherits these methods): the
pools emptied and the context measured, a ballast (raw cudaMalloc) taking what is free
beyond the scenario's `hardware.vram - context`, a cap that shrinks mid-run (a fault), and
the teardown that frees the ballast, reports leaks and empties the pools."""

from __future__ import annotations

from .backends import CupyBackend, LedgerBackend
from .device import resident_bytes

BALLAST_GRANULE = 2 << 20  # cudaMalloc's granule on the H200 (benchmarks/allocator_probe.py)
CARD_SHORTFALL = 2 << 30  # a card this much smaller than hardware.vram - context still runs
# GPU -> the largest context measured in this process (at a run's start or end). The
# context holds the local memory of the kernels launched so far (per-thread local memory
# x the GPU's resident threads: ~1 GiB at 2^27 on the H200); the driver can give it back
# when an allocation or a launch runs out of memory (grid call 1808: 1178.8 MiB before
# w2-chunk-27@+1%, 196.8 MiB after it), and takes it again at the next launch. A ballast
# placed against the smaller context would leave the kernels' local memory no room: the
# card would be ~1 GiB smaller than stated, and the first launch fails
# (CUDA_ERROR_OUT_OF_MEMORY). So the ballast leaves the difference free for it.
_CONTEXT_SEEN: dict[int, int] = {}


def shortfall(vram: int, total: int, context_more: int, room: int) -> str:
    """Why a GPU has less free than hardware.vram - the model's context: the parts of
    (vram - total) + (measured context - model's) + room that are positive."""
    parts = []
    if vram > total:  # e.g. the H200's nvidia-smi total against CUDA's (docs/profiles.md)
        parts.append(f"hardware.vram is {vram - total} bytes over CUDA's total {total}")
    if context_more > 0:
        parts.append(f"the real context is {context_more} bytes larger than the model's")
    if room > 0:
        parts.append(f"{room} bytes left for the context to grow back")
    return "; ".join(parts) or "no part positive"


class CardSetup:
    """Setup and teardown of each GPU a run uses (its records: ballast, context, start free)."""

    def _devices_used(self) -> list[int]:
        return [0] if self.spec.routing == "device0" else list(self.spec.devices)

    def _prepare(self) -> None:
        """Empty the pools, measure the context, place the ballast of each GPU used."""
        spec, be = self.spec, self.backend
        for g in self._devices_used():
            if not isinstance(be, CupyBackend):
                self.context_real[g] = spec.context
                self.start_free[g] = be.mem_info(g)[0]
                continue
            be.reset(g)
            self.threshold_before[g] = be.release_threshold(g)
            be.set_release_threshold(g, spec.pool_release_threshold)
            free, total = be.mem_info(g)
            self.context_real[g] = total - free
            ctx = total - free - resident_bytes(g)
            seen = _CONTEXT_SEEN[g] = max(_CONTEXT_SEEN.get(g, 0), ctx)
            room = self.context_room[g] = seen - ctx
            if room:
                self.log(
                    f"gpu{g}: context {ctx} bytes, {room} fewer than this process has "
                    "measured: left free for its local memory to grow back"
                )
            want_free = spec.vram - spec.context + room
            if want_free > free + CARD_SHORTFALL:
                raise ValueError(
                    f"hardware.vram {spec.vram} B leaves {want_free} B free; this GPU has "
                    f"only {free} B free"
                )
            if want_free > free:  # the whole card: say which of the three it is short by
                self.log(
                    f"gpu{g}: {want_free - free} bytes fewer free than hardware.vram - "
                    f"context ({shortfall(spec.vram, total, total - free - spec.context, room)})"
                    ": no ballast"
                )
            self.ballast[g] = []
            # cudaMalloc takes 2 MiB granules: round the ballast down, so that at least
            # `want_free` stays free (less than 2 MiB more; `achieved_vram_bytes` says)
            ballast = (free - want_free) // BALLAST_GRANULE * BALLAST_GRANULE
            if ballast > 0:
                self.ballast[g].append(be.raw_malloc(g, ballast))
            after = be.mem_info(g)[0]
            self.ballast_bytes[g] = self.ballast_placed[g] = free - after
            self.start_free[g] = after

    def shrink(self, gpu: int, nbytes: int) -> None:
        """The cap shrinks mid-run by nbytes (or what is free): an extra ballast."""
        be = self.backend
        if isinstance(be, LedgerBackend):
            with be.lock:
                mem = be.memory[gpu]
                take = min(nbytes, mem.free)
                mem.try_alloc("(ballast)", f"shrink{len(self.lines)}", take, "sync")
            self.shrunk_bytes[gpu] = self.shrunk_bytes.get(gpu, 0) + take
            self.log(f"fault: VRAM cap of gpu{gpu} shrank by {take} bytes")
            return
        free = be.mem_info(gpu)[0]
        take = min(nbytes, max(free - (4 << 20), 0)) // BALLAST_GRANULE * BALLAST_GRANULE
        if take > 0:
            with self._stats:  # counted before it exists: no peak sample sees it as used
                self.ballast_bytes[gpu] += take
            try:
                self.ballast[gpu].append(be.raw_malloc(gpu, take))
            except Exception:
                with self._stats:
                    self.ballast_bytes[gpu] -= take
                take = 0
        self.shrunk_bytes[gpu] = self.shrunk_bytes.get(gpu, 0) + take
        self.log(f"fault: VRAM cap of gpu{gpu} shrank by {take} bytes")

    def _teardown(self) -> dict[int, int]:
        """Free the ballasts; the bytes each GPU's pools still hand out (leaks), and empty
        the pools so that the next run starts from the same state."""
        leaks: dict[int, int] = {}
        be = self.backend
        for g in self._devices_used():
            if isinstance(be, LedgerBackend):
                mem = be.memory[g]
                for owner, buf in [k for k in mem.live if k[0] == "(ballast)"]:
                    mem.release(owner, buf)
                leaks[g] = be.used_by_buffers(g)
                continue
            leaks[g] = be.used_by_buffers(g)
            for ptr in self.ballast.get(g, []):
                be.raw_free(g, ptr)
            self.ballast[g] = []
            self.ballast_bytes[g] = 0
            be.reset(g)
            be.set_release_threshold(g, self.threshold_before.get(g, 0))
            free, total = be.mem_info(g)
            end = self.context_end[g] = total - free - resident_bytes(g)  # pools empty
            _CONTEXT_SEEN[g] = max(_CONTEXT_SEEN.get(g, 0), end)
        return leaks

    def context_now(self, gpu: int) -> int:
        """The context's bytes now: what the GPU uses beyond the ballast, our pools'
        reservations (in use and idle) and our resident buffers."""
        if isinstance(self.backend, LedgerBackend):
            return self.spec.context
        be = self.backend
        pools = be.used_by_buffers(gpu) + sum(be.pools(gpu).values())
        free, total = be.mem_info(gpu)
        return total - free - self.ballast_bytes.get(gpu, 0) - pools - resident_bytes(gpu)
