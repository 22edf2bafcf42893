"""A GPU device: its memory ledger and its engines.

Engines (compute, one copy engine per direction) are FIFO queues kept as "busy until"
clocks: work issued at t starts at max(t, engine free) and ends a duration later. A
device whose prover issues everything on one in-order stream (`shared_stream`) has one
clock for kernels and copies: a copy waits for every kernel before it, of any worker. That
costs no SimPy event; a worker only yields when it must meet other workers in time
(memory, mutexes), which keeps a day of a farm cheap to simulate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuzk_sim.model.allocator import DeviceMemory


@dataclass
class SimDevice:
    index: int
    memory: DeviceMemory
    compute_free_at: float = 0.0
    copy_free_at: dict[str, float] = field(
        default_factory=lambda: {"HtoD": 0.0, "DtoH": 0.0, "DtoD": 0.0}
    )
    # busy-time accumulators for utilization (cuzk_sim/results/metrics.py): seconds of work issued
    # to each engine. The worker's inlined compute hot path adds to compute_busy_s too.
    compute_busy_s: float = 0.0
    copy_busy_s: dict[str, float] = field(
        default_factory=lambda: {"HtoD": 0.0, "DtoH": 0.0, "DtoD": 0.0}
    )
    # one in-order queue for every worker's kernels and copies (a prover on CUDA's legacy
    # default stream: plan meta gpu_stream = "legacy_default"); else copies overlap kernels
    shared_stream: bool = False
    # with shared_stream: the streams of its own whose copies run on the copy engines,
    # beside the queue (meta gpu_stream = "legacy_default+key_upload": the key's uploads)
    concurrent_streams: frozenset[str] = frozenset()

    def run_compute(self, ready: float, seconds: float) -> tuple[float, float]:
        """Queue `seconds` of kernel work issued at `ready`; (start, end)."""
        start = ready if ready > self.compute_free_at else self.compute_free_at
        self.compute_free_at = end = start + seconds
        self.compute_busy_s += seconds
        return start, end

    def run_copy(
        self, direction: str, ready: float, seconds: float, stream: str = "compute"
    ) -> tuple[float, float]:
        self.copy_busy_s[direction] += seconds
        if self.shared_stream and stream not in self.concurrent_streams:
            # behind every kernel and copy issued before it, and behind the copies of
            # the streams beside the queue on the same link: one copy engine per
            # direction serves them all (issue 24: a pageable upload issued while a
            # key upload runs ends that upload's duration later, grid-v2's timelines)
            free_at = self.copy_free_at[direction]
            start = max(ready, self.compute_free_at, free_at)
            self.compute_free_at = self.copy_free_at[direction] = end = start + seconds
            return start, end
        free_at = self.copy_free_at[direction]
        start = ready if ready > free_at else free_at
        self.copy_free_at[direction] = end = start + seconds
        return start, end

    def idle_at(self) -> float:
        """When every kernel and copy issued so far has ended (what cudaFree waits for)."""
        return max(self.compute_free_at, *self.copy_free_at.values())
