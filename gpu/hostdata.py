"""Host memory of the real pipeline: what it holds, and what a run needs before it starts.

What it holds: one `SyntheticStore` per process keeps the synthetic key of each key shape
(the MSM sizes, pinned or not: gpu/keygen.py) and the partition inputs (a/b/c, witness)
of each partition shape (pinned or not: ProverFlags.pinned), each made once and shared
by every worker of every run in the process, as a cuzk host keeps its SRS pinned once for
all workers. Entries a new run does
not need are dropped before its own are made, so the peak is the run's data, not the sum
of every shape seen.

What a run needs (`memory_need`): on the host the key and the inputs not held yet plus a
process overhead (`HOST_OVERHEAD`: the CUDA context's host side, CuPy, py_ecc, the
assembler processes), against MemAvailable; on each GPU used, the card the scenario asks
for less its context (what the ballast leaves free), against cudaMemGetInfo. The
estimate needs no GPU (the dry-run device computes it too); `refusal` turns a shortfall
into the one-line reason gpu-run exits 2 with. The bound the run is held to afterwards:
peak RSS <= 1.2 x (key + each worker's partition inputs) (`MemoryNeed.bound_bytes`).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .keygen import KeyStats, key_bytes

FR_BYTES = 32
HOST_OVERHEAD = 4 << 30  # the process beside its data: CUDA context host side, CuPy, py_ecc
RSS_BOUND_FACTOR = 1.2  # issue 24: peak RSS <= 1.2 x (key + each worker's partition inputs)
GIB = 1 << 30


def inputs_bytes(domain_size: int, num_vars: int, sparse_scalars: int = 0) -> int:
    """Host bytes of one partition's inputs: a, b, c (3 n Fr), the witness (m Fr) and,
    for a sparse key (issue 23's witness shapes), the A and B queries' gathered scalars
    (a_count + b_count Fr)."""
    return (3 * domain_size + num_vars + sparse_scalars) * FR_BYTES


def _sparse(shape: Any) -> int:
    """The gathered scalars of a sparse key's A and B queries (None: dense, none)."""
    return sum(c for c in (getattr(shape, "a_count", None), getattr(shape, "b_count", None)) if c)


def sizes_key(sizes: dict[str, tuple[str, int]]) -> tuple:
    """A hashable key shape: the stages' (group, points), in stage order."""
    return tuple(sizes.items())


@dataclass
class SyntheticStore:
    """The synthetic host data of one process: keys by (key shape, pinned), inputs by
    partition shape. `make_key(sizes, pinned)` -> (points per stage, KeyStats) makes a
    key; `real` False (the dry-run device) makes nothing but keeps the same books, so the
    sharing is testable without a GPU. `made` counts constructions ("key", "inputs")."""

    make_key: Callable[[dict[str, tuple[str, int]], bool], tuple[Any, KeyStats]]
    real: bool = True
    keys: dict[tuple, Any] = field(default_factory=dict)
    inputs: dict[Hashable, Any] = field(default_factory=dict)
    stats: dict[tuple, KeyStats] = field(default_factory=dict)
    made: Counter = field(default_factory=Counter)
    nbytes: dict[Hashable, int] = field(default_factory=dict)  # entry -> host bytes
    lock: threading.RLock = field(default_factory=threading.RLock)

    def key(self, sizes: dict[str, tuple[str, int]], pinned: bool) -> Any:
        """The key's points per stage (None on the dry-run device), made on first use."""
        k = ("key", sizes_key(sizes), pinned)
        with self.lock:
            if k not in self.keys:
                self.made["key"] += 1
                points, stats = self.make_key(sizes, pinned) if self.real else (None, KeyStats())
                self.keys[k], self.stats[k] = points, stats
                self.nbytes[k] = key_bytes(sizes) if self.real else 0
            return self.keys[k]

    def partition_inputs(
        self, shape: Hashable, make: Callable[[], Any], pinned: bool = False
    ) -> Any:
        """The inputs of partition shape `shape`, in page-locked memory or not (None on the
        dry-run device), made by `make()` on first use."""
        k = ("inputs", shape, pinned)
        with self.lock:
            if k not in self.inputs:
                self.made["inputs"] += 1
                self.inputs[k] = make() if self.real else None
                arrays = list(self.inputs[k] or ())
                for a in list(arrays):  # a dict of arrays (a sparse query's scalars) counts too
                    if isinstance(a, dict):
                        arrays.extend(a.values())
                self.nbytes[k] = sum(getattr(a, "nbytes", 0) for a in arrays)
            return self.inputs[k]

    def held(self, wanted: Iterable[tuple]) -> int:
        """Host bytes this store holds of the entries `wanted` (`entries()` keys)."""
        with self.lock:
            return sum(self.nbytes.get(k, 0) for k in wanted)

    def retain(self, wanted: Iterable[tuple]) -> int:
        """Drop every entry not in `wanted` (before a run makes its own); the bytes freed."""
        keep = set(wanted)
        freed = 0
        with self.lock:
            for book in (self.keys, self.inputs):
                for k in [k for k in book if k not in keep]:
                    del book[k]
                    self.stats.pop(k, None)
                    freed += self.nbytes.pop(k, 0)
        return freed

    def key_stats(self) -> list[KeyStats]:
        with self.lock:
            return [s for s in self.stats.values() if s.bytes]


def entries(shape: Any, key_pinned: bool, inputs_pinned: bool = False) -> tuple[tuple, tuple]:
    """The store's keys of one partition shape's key and inputs."""
    return ("key", sizes_key(shape.msm_sizes()), key_pinned), ("inputs", shape, inputs_pinned)


@dataclass(frozen=True)
class MemoryNeed:
    """What a run needs: host bytes still to make (key, inputs) and the process overhead;
    per GPU used, the free device bytes the scenario's card needs. `bound_bytes`: the
    peak RSS the run is held to."""

    key_bytes: int
    inputs_bytes: int
    held_bytes: int  # of key + inputs, already in this process (made by an earlier run)
    droppable_bytes: int  # held by this process for other shapes: dropped before the run
    overhead_bytes: int
    device_bytes: dict[int, int]
    bound_bytes: int

    @property
    def host_bytes(self) -> int:
        return self.key_bytes + self.inputs_bytes - self.held_bytes + self.overhead_bytes

    def line(self) -> str:
        dev = ", ".join(
            f"gpu{g} {b / GIB:.1f} GiB free" for g, b in sorted(self.device_bytes.items())
        )
        held = f", {self.held_bytes / GIB:.1f} GiB of it held already" if self.held_bytes else ""
        key, inputs = self.key_bytes / GIB, self.inputs_bytes / GIB
        return (
            f"memory needed: host {self.host_bytes / GIB:.1f} GiB (key {key:.1f} + inputs "
            f"{inputs:.1f}{held} + process {self.overhead_bytes / GIB:.1f} GiB; peak RSS "
            f"bound {self.bound_bytes / GIB:.1f} GiB), device {dev or 'none'}"
        )


def memory_need(
    work: Iterable[tuple[Any, bool, bool]],
    workers: int,
    device_free: dict[int, int],
    real_data: bool,
    store: SyntheticStore | None = None,
) -> MemoryNeed:
    """The estimate for a run whose partitions have these (shape, key_pinned,
    inputs_pinned) triples
    (`work`, one per proof kind), `workers` workers in all and, per GPU used, the free
    bytes its card needs (`device_free`). `real_data` False: the run makes no host data
    (the dry-run device) and needs none but the process. `store`: what it holds already."""
    work = list(work)
    keys = {entries(*w)[0]: key_bytes(w[0].msm_sizes()) for w in work}
    inputs = {
        entries(*w)[1]: inputs_bytes(w[0].domain_size, w[0].num_vars, _sparse(w[0])) for w in work
    }
    if not real_data:
        keys = {k: 0 for k in keys}
        inputs = {k: 0 for k in inputs}
    held = dropped = 0
    if store is not None and real_data:
        held = store.held([*keys, *inputs])
        dropped = store.held(store.nbytes) - held
    largest = max(inputs.values(), default=0)
    bound = int(RSS_BOUND_FACTOR * (sum(keys.values()) + workers * largest))
    return MemoryNeed(
        sum(keys.values()),
        sum(inputs.values()),
        held,
        dropped,
        HOST_OVERHEAD,
        dict(device_free),
        bound,
    )


def refusal(
    need: MemoryNeed,
    host_available: int | None,
    device_free: dict[int, int] | None,
    slack: int = 0,
) -> str | None:
    """Why the machine cannot run it (one line), or None: the host's available memory
    (None: unknown, not checked), with what the process drops first, below
    `need.host_bytes`; or a GPU with less free memory than its card needs (`slack`: how
    much less still runs, the pipeline's CARD_SHORTFALL; `device_free` None: not
    checked)."""
    if host_available is not None and need.host_bytes > host_available + need.droppable_bytes:
        dropped = (
            f" + {need.droppable_bytes / GIB:.1f} GiB this process drops first"
            if need.droppable_bytes
            else ""
        )
        return (
            f"the run needs {need.host_bytes / GIB:.1f} GiB of host memory (key "
            f"{need.key_bytes / GIB:.1f} + inputs {need.inputs_bytes / GIB:.1f} - held "
            f"{need.held_bytes / GIB:.1f} + process {need.overhead_bytes / GIB:.1f} GiB); "
            f"this machine has {host_available / GIB:.1f} GiB available (MemAvailable)"
            f"{dropped}"
        )
    for g, want in sorted(need.device_bytes.items()) if device_free is not None else ():
        have = device_free.get(g, 0)
        if want > have + slack:
            return (
                f"the run needs {want / GIB:.1f} GiB free on gpu{g} (hardware.vram less the "
                f"context); it has {have / GIB:.1f} GiB free (cudaMemGetInfo)"
            )
    return None


def report_line(host: dict[str, Any]) -> str:
    """A run's host memory (`RealRun.host_report()`) against the bound, and the key's
    making time (or that an earlier run of the process made it), in one line."""
    key = f"; key made in {host['key_seconds']:.1f} s" if host.get("key_made_bytes") else ""
    if host.get("key_held_bytes"):
        key += (
            f"; key held ({host['key_held_bytes'] / GIB:.1f} GiB), made by an earlier run "
            "of this process"
        )
    return (
        f"host memory: peak RSS {host['peak_rss_bytes'] / GIB:.1f} GiB, bound "
        f"{host['bound_bytes'] / GIB:.1f} GiB (1.2 x (key + each worker's inputs)){key}"
    )


def host_available(meminfo: str = "/proc/meminfo") -> int | None:
    """MemAvailable in bytes (Linux); None when it cannot be read."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def peak_rss(status: str = "/proc/self/status") -> int:
    """This process's peak resident set (VmHWM) in bytes; 0 when it cannot be read."""
    try:
        with open(status) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0
