"""What one run of the engine is asked to do: the cuzk configuration and the workload,
as plain frozen data (the scenario layer builds it from a scenario file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cuzk_sim.model.allocator import NEVER


@dataclass(frozen=True)
class Arrivals:
    """`count` proofs of `kind` from `start_s`, all at once (every_s None), evenly spaced,
    or as a Poisson stream with mean gap every_s. count None: until the run ends."""

    kind: str
    count: int | None
    start_s: float = 0.0
    every_s: float | None = None
    poisson: bool = False
    partitions: int | None = None  # default: the kind's (WindowPoSt: 1 per 2349 sectors)


@dataclass(frozen=True)
class EngineConfig:
    gpus: int
    vram: int
    context_overhead: int
    host_ram_budget: int
    host_cores: int = 96
    gpu_workers_per_device: int = 2
    # each GPU worker is a process of its own (a captured program run N times on a card):
    # its own CUDA context (context_overhead each), allocators, mutexes and pinned host
    # buffers; False: the workers are threads of one daemon process per device
    separate_processes: bool = False
    devices: tuple[int, ...] = ()  # () = all
    synthesis_concurrency: int = 1
    synthesis_lookahead: int = 1
    max_parallel_synthesis: int = 18
    routing: Literal["assigned", "device0"] = "assigned"
    pool_release_threshold: int = NEVER
    on_oom: Literal["stop", "continue"] = "stop"
    pce_writable: bool = True
    pce_on_disk: tuple[str, ...] = ()
    restarts_s: tuple[float, ...] = ()  # daemon restarts: in-flight work is lost
    devices_lost_s: tuple[tuple[float, int], ...] = ()  # (when, GPU): the device is gone
    duration_s: float | None = None
    seed: int = 0
    arrivals: tuple[Arrivals, ...] = ()
    # allocator -> rounding in bytes (e.g. a measured cudaMallocAsync granule); () = the
    # defaults of model/allocator.py (2 MiB for sync and async, 512 B for caching)
    allocator_granularity: tuple[tuple[str, int], ...] = ()
    # cuzk's per-partition synthesis pool ([synthesis] partition_workers, Phase 7): 0 =
    # whole-proof synthesis (rounds of max_parallel_synthesis); N > 0 = each partition
    # synthesized on its own under a semaphore of N permits, each held through the send
    # into a bounded channel of max(synthesis_lookahead, N) partitions
    partition_workers: int = 0
