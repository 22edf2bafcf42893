"""Device memory of one GPU and the three allocators that carve it up.

Not `simpy.Container`: a CUDA allocation never waits, it succeeds or fails at once, and
a failure must not block smaller requests behind it. The ledger is O(1) per operation:

    free = total − context − sync_live − async_reserved − caching_reserved

`free` is what cudaMemGetInfo reports. Bytes reserved by a pool (live or idle) are not
free: an idle async-pool block serves later async allocations of the same process only,
never a cudaMalloc.

The caching pool follows CuPy's `SingleDeviceMemoryPool`: sizes rounded to 512 B; a
request takes the smallest free chunk that fits and splits off the rest; a freed chunk
merges with free neighbours of the same cudaMalloc segment; when cudaMalloc fails, every
segment that is entirely free is released (`free_all_blocks`) and the malloc retried.
A segment with one live chunk stays reserved whole: that is the fragmentation modelled.
Each segment is one cudaMalloc of the request's 512-B-rounded size, and cudaMalloc takes
device memory in 2 MiB granules: a segment costs its size rounded up to 2 MiB, the slack
belonging to no chunk (measured on the H200: with it the real pipeline's peaks equal the
model's to the byte on 32 of the grid's 49 runs that fit, within 4 MiB on the others;
docs/validation.md). The driver packs allocations of at most 1 MiB into shared 2 MiB
pages; the model charges them a whole granule each (over by at most 4 MiB there).
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass, field

from cuzk_sim.plan import Allocator

CUDA_GRANULE = 2 * 2**20  # cudaMalloc / pool rounding of large allocations
CACHING_ROUND = 512  # CuPy's memory pool rounds to 512 B
CACHING_SEGMENT_GRANULE = CUDA_GRANULE  # each new segment is a cudaMalloc: 2 MiB granules
NEVER = 2**64 - 1  # UINT64_MAX release threshold: the pool never gives bytes back


def round_up(n: int, to: int) -> int:
    return -(-n // to) * to


@dataclass(slots=True)
class LiveBuffer:
    owner: str
    buffer: str
    bytes: int  # bytes charged (rounded)
    allocator: Allocator
    persistent: bool = False
    chunk: tuple[int, int] | None = None  # caching pool: (segment, offset)


@dataclass
class DeviceMemory:
    """VRAM of one device: the live-buffer ledger by owner and the pools' holdings."""

    device: int
    total: int
    context: int = 0  # CUDA context overhead (per process on this device)
    release_threshold: int = NEVER  # of the async (default) pool
    sync_live: int = 0
    async_live: int = 0
    async_idle: int = 0
    caching_live: int = 0
    # caching pool: segment id -> its chunks [offset, size, in use] by offset; the free
    # chunks again as sorted (size, segment, offset) for the best fit
    caching_segments: dict[int, list[list[int]]] = field(default_factory=dict)
    caching_idle: list[tuple[int, int, int]] = field(default_factory=list)
    caching_idle_bytes: int = 0
    caching_next_segment: int = 0
    caching_slack: int = 0  # granule rounding of the segments: reserved, in no chunk
    caching_segment_slack: dict[int, int] = field(default_factory=dict)
    live: dict[tuple[str, str], LiveBuffer] = field(default_factory=dict)
    peak_used: int = 0
    reserved: int = 0  # everything but the context, kept up to date by every operation
    pending_frees: list[tuple[float, int, str, str]] = field(default_factory=list)
    _seq: int = 0

    def __post_init__(self) -> None:
        self.peak_used = max(self.peak_used, self.context)

    @property
    def free(self) -> int:
        """What cudaMemGetInfo reports as free."""
        return self.total - self.used

    @property
    def used(self) -> int:
        return self.context + self.reserved

    def check_ledger(self) -> None:
        """The O(1) counter equals the sum of its parts (an invariant for tests)."""
        parts = self.sync_live + self.async_live + self.async_idle
        parts += self.caching_live + self.caching_idle_bytes + self.caching_slack
        if parts != self.reserved or min(self.sync_live, self.async_live, self.async_idle) < 0:
            raise RuntimeError(f"gpu{self.device}: ledger out of balance")
        chunks = [c for seg in self.caching_segments.values() for c in seg]
        free = sorted(
            (c[1], sid, c[0]) for sid, seg in self.caching_segments.items() for c in seg if not c[2]
        )
        if (
            sum(c[1] for c in chunks) != self.caching_live + self.caching_idle_bytes
            or free != self.caching_idle
            or sum(c[1] for c in chunks if c[2]) != self.caching_live
        ):
            raise RuntimeError(f"gpu{self.device}: caching pool out of balance")

    def _charge(self, allocator: Allocator, nbytes: int) -> int | None:
        """Reserve nbytes through `allocator`; the bytes charged, or None on failure."""
        if allocator == "sync":
            size = -(-nbytes // CUDA_GRANULE) * CUDA_GRANULE
            if size > self.total - self.context - self.reserved:
                return None
            self.sync_live += size
            self.reserved += size
            return size
        if allocator == "async":
            size = -(-nbytes // CUDA_GRANULE) * CUDA_GRANULE
            if size <= self.async_idle:
                self.async_idle -= size
            else:
                grow = size - self.async_idle
                if grow > self.total - self.context - self.reserved:
                    return None
                self.async_idle = 0
                self.reserved += grow
            self.async_live += size
            return size
        raise AssertionError("caching allocations go through _charge_caching")

    def _charge_caching(self, nbytes: int) -> tuple[int, tuple[int, int] | None] | None:
        """(bytes charged, chunk) or None. The smallest free chunk that fits, split; else a
        new segment; if cudaMalloc fails, release the entirely free segments and retry."""
        size = round_up(nbytes, CACHING_ROUND) if nbytes else 0
        if size == 0:
            return 0, None
        idle = self.caching_idle
        i = bisect.bisect_left(idle, (size, -1, -1))
        if i < len(idle):
            have, sid, offset = idle.pop(i)
            chunks = self.caching_segments[sid]
            j = _chunk_index(chunks, offset)
            chunks[j][1:] = [size, 1]
            if have > size:
                chunks.insert(j + 1, [offset + size, have - size, 0])
                bisect.insort(idle, (have - size, sid, offset + size))
            self.caching_idle_bytes -= size
            self.caching_live += size
            return size, (sid, offset)
        segment = round_up(size, CACHING_SEGMENT_GRANULE)
        if segment > self.free and idle:
            self._release_free_segments()
        if segment > self.free:
            return None
        sid = self.caching_next_segment
        self.caching_next_segment += 1
        self.caching_segments[sid] = [[0, size, 1]]
        self.caching_live += size
        self.reserved += segment
        if segment > size:
            self.caching_slack += segment - size
            self.caching_segment_slack[sid] = segment - size
        return size, (sid, 0)

    def _release_free_segments(self) -> None:
        """CuPy's free_all_blocks: give back every segment that is one free chunk."""
        for sid, chunks in list(self.caching_segments.items()):
            if len(chunks) == 1 and not chunks[0][2]:
                size = chunks[0][1]
                del self.caching_segments[sid]
                self.caching_idle.remove((size, sid, 0))
                self.caching_idle_bytes -= size
                slack = self.caching_segment_slack.pop(sid, 0)
                self.caching_slack -= slack
                self.reserved -= size + slack

    def _free_chunk(self, chunk: tuple[int, int]) -> None:
        """Mark a chunk free and merge it with free neighbours of its segment."""
        sid, offset = chunk
        chunks = self.caching_segments[sid]
        idle = self.caching_idle
        j = _chunk_index(chunks, offset)
        size = chunks[j][1]
        chunks[j][2] = 0
        self.caching_live -= size
        self.caching_idle_bytes += size
        if j + 1 < len(chunks) and not chunks[j + 1][2]:
            nxt = chunks.pop(j + 1)
            idle.pop(bisect.bisect_left(idle, (nxt[1], sid, nxt[0])))
            chunks[j][1] += nxt[1]
        if j > 0 and not chunks[j - 1][2]:
            prev = chunks[j - 1]
            idle.pop(bisect.bisect_left(idle, (prev[1], sid, prev[0])))
            prev[1] += chunks.pop(j)[1]
            j -= 1
        bisect.insort(idle, (chunks[j][1], sid, chunks[j][0]))

    def try_alloc(
        self,
        owner: str,
        buffer: str,
        nbytes: int,
        allocator: Allocator,
        persistent: bool = False,
    ) -> LiveBuffer | None:
        """Allocate at once or fail at once (None). Never waits."""
        chunk = None
        if allocator == "caching":
            got = self._charge_caching(nbytes)
            if got is None:
                return None
            charged, chunk = got
        else:
            charged = self._charge(allocator, nbytes)
            if charged is None:
                return None
        buf = LiveBuffer(owner, buffer, charged, allocator, persistent, chunk)
        self.live[(owner, buffer)] = buf
        used = self.context + self.reserved
        if used > self.peak_used:
            self.peak_used = used
        return buf

    def release(self, owner: str, buffer: str) -> LiveBuffer | None:
        """Free a live buffer into its allocator; None (a no-op) if it is not live."""
        buf = self.live.pop((owner, buffer), None)
        if buf is None:
            return None
        if buf.allocator == "sync":
            self.sync_live -= buf.bytes
            self.reserved -= buf.bytes
        elif buf.allocator == "async":
            self.async_live -= buf.bytes
            self.async_idle += buf.bytes
        elif buf.chunk is not None:
            self._free_chunk(buf.chunk)
        return buf

    def snapshot(self) -> tuple:
        """Everything an allocation decision depends on (for replaying critical sections)."""
        return (
            self.sync_live,
            self.async_live,
            self.async_idle,
            self.caching_live,
            tuple((sid, tuple(map(tuple, c))) for sid, c in sorted(self.caching_segments.items())),
            self.caching_idle_bytes,
            self.caching_next_segment,
            self.reserved,
            tuple(sorted(self.caching_segment_slack.items())),
            frozenset(self.live),
        )

    def restore(self, snap: tuple) -> None:
        """Set the counters to a snapshot taken with the same live buffers."""
        (
            self.sync_live,
            self.async_live,
            self.async_idle,
            self.caching_live,
            segments,
            self.caching_idle_bytes,
            self.caching_next_segment,
            self.reserved,
            slack,
            _,
        ) = snap
        self.caching_segment_slack = dict(slack)
        self.caching_slack = sum(self.caching_segment_slack.values())
        self.caching_segments = {sid: [list(c) for c in chunks] for sid, chunks in segments}
        self.caching_idle = sorted(
            (c[1], sid, c[0]) for sid, chunks in segments for c in chunks if not c[2]
        )

    def free_at(self, t: float, owner: str, buffer: str) -> None:
        """A free that happens at time t: applied by `settle` once the clock reaches t, so a
        worker need not wake up just to free (a free cannot fail, only make room)."""
        heapq.heappush(self.pending_frees, (t, self._seq, owner, buffer))
        self._seq += 1

    def settle(self, now: float, samples: list | None = None) -> None:
        """Apply every pending free due at or before `now` (call before reading the ledger).
        So at equal times frees come before allocations, whatever order the workers wake
        in. samples: where to record (t, device, used) after each free, if anywhere."""
        pending = self.pending_frees
        while pending and pending[0][0] <= now:
            t, _, owner, buffer = heapq.heappop(pending)
            buf = self.live.get((owner, buffer))
            if buf is not None and not buf.persistent:
                self.release(owner, buffer)
                if samples is not None:
                    samples.append((t, self.device, self.used))

    def rename(self, owner: str, buffer: str, new_name: str) -> None:
        """Keep a still-live buffer under another name (a leak: allocated again, never freed)."""
        buf = self.live.pop((owner, buffer))
        buf.buffer = new_name
        self.live[(owner, new_name)] = buf

    def trim_async_pool(self) -> int:
        """At a synchronization point the pool gives idle bytes back down to its release
        threshold (cudaMemPoolAttrReleaseThreshold). Returns the bytes released."""
        reserved = self.async_live + self.async_idle
        excess = reserved - self.release_threshold
        if excess <= 0 or self.async_idle == 0:
            return 0
        released = min(excess, self.async_idle)
        self.async_idle -= released
        self.reserved -= released
        return released

    def ledger(self) -> dict[str, dict[str, int]]:
        """Live bytes by owner, then by buffer, plus what the context and pools hold."""
        out: dict[str, dict[str, int]] = {}
        for buf in self.live.values():
            out.setdefault(buf.owner, {})[buf.buffer] = buf.bytes
        held = {
            "cuda_context": self.context,
            "async_pool_idle": self.async_idle,
            "caching_pool_idle": self.caching_idle_bytes,
            "caching_pool_granule_slack": self.caching_slack,
        }
        out["(device)"] = {k: v for k, v in held.items() if v}
        return out


def _chunk_index(chunks: list[list[int]], offset: int) -> int:
    """Position of the chunk at `offset` in a segment's chunks (sorted by offset)."""
    j = bisect.bisect_left(chunks, [offset])
    if j == len(chunks) or chunks[j][0] != offset:  # pragma: no cover - broken invariant
        raise RuntimeError(f"no caching-pool chunk at offset {offset}")
    return j
