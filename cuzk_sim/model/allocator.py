"""Device memory of one GPU: one shared ledger and the allocators that carve it up.

Not `simpy.Container`: a CUDA allocation never waits, it succeeds or fails at once, and
a failure must not block smaller requests behind it. The ledger is O(1) per operation:

    free = total − context − Σ over allocators of the bytes each has reserved

`free` is what cudaMemGetInfo reports. Bytes reserved by a pool (live or idle) are not
free: an idle async-pool block serves later async allocations of the same process only,
never a cudaMalloc.

Each allocator is a small object over the shared `Ledger` with three operations —
`try_alloc(nbytes)` (charged bytes and a handle, or None at once), `release(charged,
handle)`, `on_sync()` (what a synchronization point gives back) — plus its state for the
fast layer's section replay. A new allocator is one class in `ALLOCATORS` (constructed
as `cls(ledger, granularity, release_threshold)`) and its name in `plan.Allocator`. Each has its
rounding (`granularity`), so a measured granule (e.g. of cudaMallocAsync on the H200)
is a parameter, not code:

- `sync` (cudaMalloc): rounds to 2 MiB, fails when the ledger cannot take the bytes
  and one granule more (`CUDA_MALLOC_HEADROOM`; a caching segment too).
- `async` (cudaMallocAsync's default pool): rounds to 2 MiB, served from its idle bytes
  first, grows by the missing part; freed bytes stay in the pool; at a sync point bytes
  above the release threshold go back (UINT64_MAX: never).
- `caching` (CuPy's `SingleDeviceMemoryPool`): sizes rounded to 512 B; a request takes
  the smallest free chunk that fits and splits off the rest; a freed chunk merges with
  free neighbours of the same cudaMalloc segment; when cudaMalloc fails, every segment
  that is entirely free is released (`free_all_blocks`) and the malloc retried. A
  segment with one live chunk stays reserved whole: that is the fragmentation modelled.
  Each new segment is one cudaMalloc, which takes device memory in 2 MiB granules: a
  segment costs its size rounded up to `segment_granule`, the slack in no chunk (measured
  on the H200: with it the real pipeline's peaks equal the model's to the byte on 32 of
  the grid's 49 runs that fit, within 4 MiB on the others, docs/validation.md; the driver
  packs allocations of at most 1 MiB into shared 2 MiB pages, which the model charges a
  whole granule each).

`DeviceMemory` holds the ledger, one allocator of each kind, the live buffers by
(owner, buffer), and frees queued at a future time (`free_at` / `settle`). Workers that
are separate processes (`add_process`) each get allocators of their own over the same
ledger: one process's idle pool bytes never serve another's allocation, while every
process's bytes (and each one's context, in `context`) count against the one card.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass
from typing import ClassVar

from cuzk_sim.steps.base import Allocator as AllocatorName

CUDA_GRANULE = 2 * 2**20  # cudaMalloc / pool rounding of large allocations
# A cudaMalloc (the sync allocator, a caching-pool segment) needs one granule free beyond
# its rounded size: on the H200 a cudaMalloc of 81 MiB (82 rounded) failed with 83.125 MiB
# free in 13 real runs (docs/validation.md, "After the grid: issue 12's kernels"); no
# allocation is known to have succeeded with less. The async pool is not measured so.
CUDA_MALLOC_HEADROOM = CUDA_GRANULE
CACHING_ROUND = 512  # CuPy's memory pool rounds to 512 B
NEVER = 2**64 - 1  # UINT64_MAX release threshold: the pool never gives bytes back


def round_up(n: int, to: int) -> int:
    return -(-n // to) * to


@dataclass(slots=True)
class Ledger:
    """The device's bytes, shared by every allocator: what the context and the
    allocators hold, and the peak of their sum."""

    total: int
    context: int = 0
    reserved: int = 0  # everything the allocators hold (live or idle)
    peak_used: int = 0

    @property
    def free(self) -> int:
        return self.total - self.context - self.reserved

    def take(self, nbytes: int, headroom: int = 0) -> bool:
        """Reserve nbytes from the device at once, or refuse (False) and change nothing."""
        if nbytes + headroom > self.total - self.context - self.reserved:
            return False
        self.reserved += nbytes
        return True

    def give(self, nbytes: int) -> None:
        self.reserved -= nbytes

    def note_peak(self) -> None:
        used = self.context + self.reserved
        if used > self.peak_used:
            self.peak_used = used


class SyncAllocator:
    """cudaMalloc / cudaFree: straight to the device, nothing kept."""

    name: ClassVar[str] = "sync"
    idle_label: ClassVar[str | None] = None
    gives_back_on_sync = False
    slack = 0  # the granule rounding is charged to the buffer itself

    def __init__(
        self, ledger: Ledger, granularity: int | None = None, release_threshold: int = NEVER
    ) -> None:
        self.ledger, self.granularity = ledger, granularity or CUDA_GRANULE
        self.live = 0

    @property
    def idle(self) -> int:
        return 0

    def try_alloc(self, nbytes: int) -> tuple[int, object] | None:
        size = round_up(nbytes, self.granularity)
        if not self.ledger.take(size, CUDA_MALLOC_HEADROOM if size else 0):
            return None
        self.live += size
        return size, None

    def release(self, charged: int, handle: object) -> None:
        self.live -= charged
        self.ledger.give(charged)

    def on_sync(self) -> int:
        return 0

    def state(self) -> tuple:
        return (self.live,)

    def restore(self, state: tuple) -> None:
        (self.live,) = state

    def check(self) -> None:
        if self.live < 0:
            raise RuntimeError("sync allocator: negative live bytes")


class AsyncPool:
    """cudaMallocAsync's default pool: keeps freed bytes for later async allocations of
    this process; gives back what exceeds the release threshold at a sync point."""

    name: ClassVar[str] = "async"
    idle_label: ClassVar[str | None] = "async_pool_idle"
    slack = 0  # the granule rounding is charged to the buffer itself

    def __init__(
        self, ledger: Ledger, granularity: int | None = None, release_threshold: int = NEVER
    ) -> None:
        self.ledger, self.granularity = ledger, granularity or CUDA_GRANULE
        self.release_threshold = release_threshold
        self.gives_back_on_sync = release_threshold != NEVER
        self.live = 0
        self.idle = 0

    def try_alloc(self, nbytes: int) -> tuple[int, object] | None:
        size = round_up(nbytes, self.granularity)
        if size <= self.idle:
            self.idle -= size
        else:
            if not self.ledger.take(size - self.idle):  # grow by the missing part
                return None
            self.idle = 0
        self.live += size
        return size, None

    def release(self, charged: int, handle: object) -> None:
        self.live -= charged
        self.idle += charged

    def on_sync(self) -> int:
        """Give idle bytes back down to the release threshold
        (cudaMemPoolAttrReleaseThreshold); the bytes released."""
        excess = self.live + self.idle - self.release_threshold
        if excess <= 0 or self.idle == 0:
            return 0
        released = min(excess, self.idle)
        self.idle -= released
        self.ledger.give(released)
        return released

    def state(self) -> tuple:
        return (self.live, self.idle)

    def restore(self, state: tuple) -> None:
        self.live, self.idle = state

    def check(self) -> None:
        if min(self.live, self.idle) < 0:
            raise RuntimeError("async pool: negative bytes")


class CachingPool:
    """CuPy's SingleDeviceMemoryPool: best-fit chunks of cudaMalloc'd segments, split on
    allocation, merged with free neighbours on free, segments released on pressure."""

    name: ClassVar[str] = "caching"
    idle_label: ClassVar[str | None] = "caching_pool_idle"
    gives_back_on_sync = False

    def __init__(
        self, ledger: Ledger, granularity: int | None = None, release_threshold: int = NEVER
    ) -> None:
        self.ledger, self.granularity = ledger, granularity or CACHING_ROUND
        self.live = 0
        self.idle = 0  # bytes of free chunks
        # segment id -> its chunks [offset, size, in use] by offset; the free chunks again
        # as sorted (size, segment, offset) for the best fit
        self.segments: dict[int, list[list[int]]] = {}
        self.free_chunks: list[tuple[int, int, int]] = []
        self.next_segment = 0
        self.segment_granule = CUDA_GRANULE  # each segment is a cudaMalloc
        self.segment_slack: dict[int, int] = {}  # segment -> its granule rounding
        self.slack = 0  # reserved by the segments' rounding, in no chunk

    def try_alloc(self, nbytes: int) -> tuple[int, object] | None:
        """The smallest free chunk that fits, split; else a new segment; if cudaMalloc
        fails, release the entirely free segments and retry."""
        size = round_up(nbytes, self.granularity) if nbytes else 0
        if size == 0:
            return 0, None
        idle = self.free_chunks
        i = bisect.bisect_left(idle, (size, -1, -1))
        if i < len(idle):
            have, sid, offset = idle.pop(i)
            chunks = self.segments[sid]
            j = _chunk_index(chunks, offset)
            chunks[j][1:] = [size, 1]
            if have > size:
                chunks.insert(j + 1, [offset + size, have - size, 0])
                bisect.insort(idle, (have - size, sid, offset + size))
            self.idle -= size
            self.live += size
            return size, (sid, offset)
        segment = round_up(size, self.segment_granule)
        if segment + CUDA_MALLOC_HEADROOM > self.ledger.free and idle:
            self._release_free_segments()
        if not self.ledger.take(segment, CUDA_MALLOC_HEADROOM):
            return None
        sid = self.next_segment
        self.next_segment += 1
        self.segments[sid] = [[0, size, 1]]
        self.live += size
        if segment > size:
            self.segment_slack[sid] = segment - size
            self.slack += segment - size
        return size, (sid, 0)

    def _release_free_segments(self) -> None:
        """CuPy's free_all_blocks: give back every segment that is one free chunk."""
        for sid, chunks in list(self.segments.items()):
            if len(chunks) == 1 and not chunks[0][2]:
                size = chunks[0][1]
                del self.segments[sid]
                self.free_chunks.remove((size, sid, 0))
                self.idle -= size
                slack = self.segment_slack.pop(sid, 0)
                self.slack -= slack
                self.ledger.give(size + slack)

    def release(self, charged: int, handle: object) -> None:
        """Mark the chunk free and merge it with free neighbours of its segment."""
        if handle is None:  # a zero-byte allocation
            return
        sid, offset = handle  # type: ignore[misc]
        chunks = self.segments[sid]
        idle = self.free_chunks
        j = _chunk_index(chunks, offset)
        size = chunks[j][1]
        chunks[j][2] = 0
        self.live -= size
        self.idle += size
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

    def on_sync(self) -> int:
        return 0  # CuPy's pool keeps its cache until free_all_blocks

    def state(self) -> tuple:
        segments = tuple((sid, tuple(map(tuple, c))) for sid, c in sorted(self.segments.items()))
        slack = tuple(sorted(self.segment_slack.items()))
        return (self.live, segments, self.idle, self.next_segment, slack)

    def restore(self, state: tuple) -> None:
        self.live, segments, self.idle, self.next_segment, slack = state
        self.segment_slack = dict(slack)
        self.slack = sum(self.segment_slack.values())
        self.segments = {sid: [list(c) for c in chunks] for sid, chunks in segments}
        self.free_chunks = sorted(
            (c[1], sid, c[0]) for sid, chunks in segments for c in chunks if not c[2]
        )

    def check(self) -> None:
        chunks = [c for seg in self.segments.values() for c in seg]
        free = sorted(
            (c[1], sid, c[0]) for sid, seg in self.segments.items() for c in seg if not c[2]
        )
        if (
            sum(c[1] for c in chunks) != self.live + self.idle
            or free != self.free_chunks
            or sum(c[1] for c in chunks if c[2]) != self.live
        ):
            raise RuntimeError("caching pool out of balance")


ALLOCATORS: dict[str, type] = {a.name: a for a in (SyncAllocator, AsyncPool, CachingPool)}


@dataclass(slots=True)
class LiveBuffer:
    owner: str
    buffer: str
    bytes: int  # bytes charged (rounded)
    allocator: AllocatorName
    persistent: bool = False
    chunk: object = None  # the allocator's handle (caching pool: (segment, offset))
    # a persistent buffer's data put in: by which (worker, partition) (plan `fills`)
    filled_by: tuple[str, int] | None = None


class DeviceMemory:
    """VRAM of one device: the shared ledger, its allocators and the live buffers."""

    def __init__(
        self,
        device: int,
        total: int,
        context: int = 0,
        release_threshold: int = NEVER,
        granularity: dict[str, int] | None = None,
    ) -> None:
        self.device, self.total = device, total
        self.release_threshold = release_threshold
        self.granularity = dict(granularity or {})
        unknown = set(self.granularity) - set(ALLOCATORS)
        if unknown:
            raise ValueError(f"granularity for unknown allocator(s) {sorted(unknown)}")
        self.ledger_ = Ledger(total, context, 0, context)
        self.allocators = {
            name: cls(self.ledger_, self.granularity.get(name), release_threshold)
            for name, cls in ALLOCATORS.items()
        }
        self._states = [a.state for a in self.allocators.values()]
        self._restores = [a.restore for a in self.allocators.values()]
        self.sync = self.allocators["sync"]
        self.async_pool = self.allocators["async"]
        self.caching = self.allocators["caching"]
        # does a sync step ever give bytes back? (if not, a sync need not meet the others)
        self.syncs_matter = any(a.gives_back_on_sync for a in self.allocators.values())
        self.live = {}
        self.pending_frees = []
        self._seq = 0
        # owner -> the allocators of its own process (separate processes); others share
        # `allocators`, the daemon process's
        self.process_allocators: dict[str, dict[str, object]] = {}

    def add_process(self, *owners: str) -> None:
        """Give the buffers of `owners` (one process's) allocators of their own: same
        ledger, own pools. Its context is counted by the caller in `context`."""
        allocs = {
            name: cls(self.ledger_, self.granularity.get(name), self.release_threshold)
            for name, cls in ALLOCATORS.items()
        }
        for owner in owners:
            self.process_allocators[owner] = allocs
        self._states += [a.state for a in allocs.values()]
        self._restores += [a.restore for a in allocs.values()]

    def _every_allocator(self) -> list:
        out = list(self.allocators.values())
        for allocs in {id(a): a for a in self.process_allocators.values()}.values():
            out.extend(allocs.values())
        return out

    # --- the ledger ---

    @property
    def context(self) -> int:
        return self.ledger_.context

    @context.setter
    def context(self, nbytes: int) -> None:
        self.ledger_.context = nbytes

    @property
    def reserved(self) -> int:
        return self.ledger_.reserved

    @property
    def peak_used(self) -> int:
        return self.ledger_.peak_used

    @peak_used.setter
    def peak_used(self, nbytes: int) -> None:
        self.ledger_.peak_used = nbytes

    @property
    def free(self) -> int:
        """What cudaMemGetInfo reports as free."""
        return self.ledger_.free

    @property
    def used(self) -> int:
        return self.ledger_.context + self.ledger_.reserved

    # the allocators' holdings, by their old names (tests and post-mortems read them)
    sync_live = property(lambda self: self.sync.live)
    async_live = property(lambda self: self.async_pool.live)
    async_idle = property(lambda self: self.async_pool.idle)
    caching_live = property(lambda self: self.caching.live)
    caching_idle_bytes = property(lambda self: self.caching.idle)
    caching_idle = property(lambda self: self.caching.free_chunks)
    caching_segments = property(lambda self: self.caching.segments)

    def check_ledger(self) -> None:
        """The O(1) counter equals the sum of its parts (an invariant for tests)."""
        every = self._every_allocator()
        for a in every:
            try:
                a.check()
            except RuntimeError as e:
                raise RuntimeError(f"gpu{self.device}: {e}") from None
        parts = sum(a.live + a.idle + a.slack for a in every)
        if parts != self.reserved:
            raise RuntimeError(f"gpu{self.device}: ledger out of balance")

    # --- buffers ---

    def try_alloc(
        self,
        owner: str,
        buffer: str,
        nbytes: int,
        allocator: AllocatorName,
        persistent: bool = False,
    ) -> LiveBuffer | None:
        """Allocate at once or fail at once (None). Never waits."""
        got = self.process_allocators.get(owner, self.allocators)[allocator].try_alloc(nbytes)
        if got is None:
            return None
        charged, handle = got
        buf = LiveBuffer(owner, buffer, charged, allocator, persistent, handle)
        self.live[(owner, buffer)] = buf
        self.ledger_.note_peak()
        return buf

    def release(self, owner: str, buffer: str) -> LiveBuffer | None:
        """Free a live buffer into its allocator; None (a no-op) if it is not live."""
        buf = self.live.pop((owner, buffer), None)
        if buf is None:
            return None
        allocs = self.process_allocators.get(owner, self.allocators)
        allocs[buf.allocator].release(buf.bytes, buf.chunk)
        return buf

    def rename(self, owner: str, buffer: str, new_name: str) -> None:
        """Keep a still-live buffer under another name (a leak: allocated again, never freed)."""
        buf = self.live.pop((owner, buffer))
        buf.buffer = new_name
        self.live[(owner, new_name)] = buf

    def on_sync(self) -> int:
        """A synchronization point: every allocator gives back what it lets go of there.
        Returns the bytes released. (With separate processes every process's pools are
        trimmed at any one's sync: only a release threshold other than never tells.)"""
        return sum(a.on_sync() for a in self._every_allocator())

    def trim_async_pool(self) -> int:
        """The async pools' part of `on_sync` (the only allocator that gives back there)."""
        return sum(a.on_sync() for a in self._every_allocator() if a.name == "async")

    # --- the fast layer's section replay ---

    def snapshot(self) -> tuple:
        """Everything an allocation decision depends on; the live buffers' keys last."""
        return (
            self.ledger_.reserved,
            tuple([state() for state in self._states]),
            frozenset(self.live),
        )

    def restore(self, snap: tuple) -> None:
        """Set the counters to a snapshot taken with the same live buffers."""
        self.ledger_.reserved, states, _ = snap
        for restore, state in zip(self._restores, states):  # noqa: B905 (hot path)
            restore(state)

    # --- frees at a future time ---

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

    def ledger(self) -> dict[str, dict[str, int]]:
        """Live bytes by owner, then by buffer, plus what the context and pools hold."""
        out: dict[str, dict[str, int]] = {}
        for buf in self.live.values():
            out.setdefault(buf.owner, {})[buf.buffer] = buf.bytes
        held = {"cuda_context": self.context}
        for a in self._every_allocator():
            if a.idle_label is not None:
                held[a.idle_label] = held.get(a.idle_label, 0) + a.idle
            if a.slack:
                key = f"{a.name}_pool_granule_slack"
                held[key] = held.get(key, 0) + a.slack
        out["(device)"] = {k: v for k, v in held.items() if v}
        return out


def _chunk_index(chunks: list[list[int]], offset: int) -> int:
    """Position of the chunk at `offset` in a segment's chunks (sorted by offset)."""
    j = bisect.bisect_left(chunks, [offset])
    if j == len(chunks) or chunks[j][0] != offset:  # pragma: no cover - broken invariant
        raise RuntimeError(f"no caching-pool chunk at offset {offset}")
    return j
