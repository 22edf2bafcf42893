"""The plan: the ordered steps one GPU worker performs for one partition.

This is the contract between provers and the simulator. A prover (the documented cuzk
engine in `cuzk_sim.plans`, or our own `cuzk_sim.gpu` prover by dry run or trace) emits a
`Plan`; the SimPy model executes any plan generically. Sizes are plain integers (bytes,
elements, points) computed from the circuit shape by the plan builder.

Steps are frozen dataclasses, one per op. Control flow is flat: an `alloc` that may fail
names a `fallback` label; execution then continues after the matching `label` step, and
`goto` jumps unconditionally. JSON form: ``{"name": ..., "steps": [{"op": "alloc", ...}]}``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from cuzk_sim.plan_analysis import PlanAnalysis, analyze

MutexScope = Literal["device", "process", "global", "none"]
Allocator = Literal["sync", "async", "caching"]
Direction = Literal["HtoD", "DtoH", "DtoD"]
Memory = Literal["device", "host_pinned"]


@dataclass(frozen=True)
class Lock:
    """Acquire a mutex. scope: one per `device`, per `process`, one `global` for all devices,
    or `none` (the step is a no-op: workers enter unguarded)."""

    mutex: str
    scope: MutexScope = "device"
    op: Literal["lock"] = "lock"


@dataclass(frozen=True)
class Unlock:
    mutex: str
    scope: MutexScope = "device"
    op: Literal["unlock"] = "unlock"


@dataclass(frozen=True)
class Alloc:
    """Allocate a named device buffer.

    allocator: `sync` (cudaMalloc: fails at once), `async` (cudaMallocAsync pool),
    `caching` (CuPy/PyTorch-style pool). persistent: never freed by the plan (e.g. the
    per-GPU `d_a` cache); with `per_device` it is allocated once per device and shared by
    every worker there. margin: memory-aware allocation — succeed only if the free bytes
    (cudaMemGetInfo) are at least bytes + margin. fallback: label to continue at on
    failure instead of panicking. note: a cuzk-style log tag for this step.
    memory: `device` (VRAM, the default) or `host_pinned` (page-locked host memory,
    cudaHostAlloc / cudaHostRegister): charged to the host RAM budget, fails at once when
    the budget cannot hold it, and costs the profile's registration time; `allocator`
    and `per_device` do not apply to it; `margin` is checked against the host's free bytes;
    a persistent one belongs to the process: pinned once, shared by every worker (the
    proving key, pinned once per key).
    """

    buffer: str
    bytes: int
    allocator: Allocator = "sync"
    persistent: bool = False
    per_device: bool = False
    margin: int | None = None
    fallback: str | None = None
    note: str = ""
    memory: Memory = "device"
    op: Literal["alloc"] = "alloc"


@dataclass(frozen=True)
class Free:
    """Free a buffer. Freeing a buffer that is not live is a no-op (like cudaFree(nullptr)),
    so a fallback path may free what its failed branch may or may not have allocated;
    freeing a persistent buffer is a no-op too. memory: where the buffer lives, as in its
    `alloc` (`host_pinned`: cudaFreeHost / cudaHostUnregister)."""

    buffer: str
    memory: Memory = "device"
    op: Literal["free"] = "free"


@dataclass(frozen=True)
class Copy:
    """A host<->device copy. stream: copies on a stream other than `compute` are issued
    asynchronously (they overlap the worker's kernels) until a `sync` on that stream.
    fills: the persistent per-device buffer (an earlier `alloc`, persistent and per_device)
    this HtoD copy fills, e.g. a proving key kept on the device across partitions: it is
    charged only while that buffer has not been filled on this device yet (the first copy
    after the buffer is created); later partitions find it filled and skip the copy.
    Several steps may fill one buffer (a copy, then a `kernel` with `fills` that builds
    on it): the partition that reaches the first of them runs them all.
    seconds: measured duration (a captured trace): it overrides the profile's price."""

    name: str
    bytes: int
    direction: Direction = "HtoD"
    pinned: bool = False
    stream: str = "compute"
    fills: str | None = None
    seconds: float | None = None
    op: Literal["copy"] = "copy"


@dataclass(frozen=True)
class Kernel:
    """Device work. kind selects the cost model of the calibration profile (`ntt`,
    `msm_g1`, `msm_g2`, `batch_add_g1`, `pointwise`, ...); size is elements or points.
    fills: as `Copy.fills`, the persistent per-device buffer this kernel fills (e.g. the
    precomputed tables built from a resident key): charged by the partition that fills
    the buffer on its device, skipped by the later ones there.
    seconds: measured duration (a captured trace): it overrides the profile's price, so
    `kind` need not be one the profile prices."""

    name: str
    kind: str
    size: int
    stream: str = "compute"
    fills: str | None = None
    seconds: float | None = None
    op: Literal["kernel"] = "kernel"


@dataclass(frozen=True)
class Cpu:
    """Host work (synthesis, prep_msm, B_G2 MSM on the CPU); threads: cores it occupies.

    stream: `host` work blocks the worker; work on any other stream runs in a helper
    thread (cuzk's prep_msm and B_G2 threads) until a `sync` on that stream joins it."""

    name: str
    kind: str
    size: int
    threads: int = 1
    stream: str = "host"
    op: Literal["cpu"] = "cpu"


@dataclass(frozen=True)
class Sync:
    """Wait until everything issued on `stream` has finished."""

    stream: str
    op: Literal["sync"] = "sync"


@dataclass(frozen=True)
class Label:
    name: str
    op: Literal["label"] = "label"


@dataclass(frozen=True)
class Goto:
    label: str
    op: Literal["goto"] = "goto"


# The shared vocabulary of work kinds; every calibration profile prices each of them.
KERNEL_KINDS = ("ntt", "pointwise", "msm_g1", "msm_g2", "batch_add_g1", "batch_add_g2")
CPU_KINDS = ("synthesis", "prep_msm", "msm_g2_cpu", "assemble")

Step = Lock | Unlock | Alloc | Free | Copy | Kernel | Cpu | Sync | Label | Goto

STEP_TYPES: dict[str, type] = {
    cls.__dataclass_fields__["op"].default: cls  # type: ignore[attr-defined]
    for cls in (Lock, Unlock, Alloc, Free, Copy, Kernel, Cpu, Sync, Label, Goto)
}


def _step_dict(step: Step) -> dict[str, Any]:
    """A step's JSON form; a measured `seconds` appears only when set, so the plans of
    the builders read as they did before the field existed."""
    out = asdict(step)
    if out.get("seconds", 0) is None:
        del out["seconds"]
    return out


class PlanError(ValueError):
    """A plan that cannot be executed; the message names the step index and field."""


@dataclass(frozen=True)
class Plan:
    name: str
    steps: tuple[Step, ...]
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "meta": self.meta, "steps": [_step_dict(s) for s in self.steps]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<plan>") -> Plan:
        """Validated by the plan file schema (cuzk_sim.plan_json): PlanError names the
        step and field."""
        from cuzk_sim.plan_json import plan_from_dict

        return plan_from_dict(data, source)

    @classmethod
    def from_json(cls, text: str, source: str = "<plan>") -> Plan:
        from cuzk_sim.plan_json import plan_from_json

        return plan_from_json(text, source)

    def validate(self, source: str = "<plan>") -> None:
        """Static checks: sizes non-negative, labels defined once, every jump target exists
        and lies after the jump (so every plan terminates: a worker cannot loop forever),
        and on every path (each fallback taken or not) an unlock releases a held mutex, a
        lock never waits on the worker itself and nothing is held at the end (else workers
        would deadlock). Raises the first problem `plan_analysis.analyze` finds.
        (Allocating a live buffer again is allowed: the simulator models it as a leak.)"""
        problems = self.analysis().problems
        if problems:
            raise PlanError(f"{source}: {problems[0]}")

    def analysis(self) -> PlanAnalysis:
        """Every static fact about this plan, from one walk of its paths."""
        return analyze(self)

    def buffers(self) -> list[tuple[str, int]]:
        """(buffer, bytes) of every alloc step, in order."""
        return [(s.buffer, s.bytes) for s in self.steps if isinstance(s, Alloc)]
