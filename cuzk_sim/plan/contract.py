"""The plan: the ordered steps one GPU worker performs for one partition.

This is the contract between provers and the simulator. A prover (the documented cuzk
engine in `cuzk_sim.plan.builders`, or our own `cuzk_sim.gpu` prover by dry run or trace) emits a
`Plan`; the SimPy model executes any plan generically. Sizes are plain integers (bytes,
elements, points) computed from the circuit shape by the plan builder.

Steps are frozen dataclasses, one per op. Control flow is flat: an `alloc` that may fail
names a `fallback` label; execution then continues after the matching `label` step, and
`goto` jumps unconditionally. JSON form: ``{"name": ..., "steps": [{"op": "alloc", ...}]}``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from cuzk_sim.plan.analysis import PlanAnalysis, analyze
from cuzk_sim.plan.schema import parse_plan_json, plan_parts_from_dict

# The step kinds, one module each (cuzk_sim/steps/, registered in steps/registry.py)
from cuzk_sim.steps.alloc import Alloc
from cuzk_sim.steps.base import Allocator, Direction, Memory, MutexScope, PlanError
from cuzk_sim.steps.copy import Copy
from cuzk_sim.steps.cpu import Cpu
from cuzk_sim.steps.free import Free
from cuzk_sim.steps.goto import Goto
from cuzk_sim.steps.kernel import Kernel
from cuzk_sim.steps.label import Label
from cuzk_sim.steps.lock import Lock
from cuzk_sim.steps.registry import KINDS
from cuzk_sim.steps.sync import Sync
from cuzk_sim.steps.unlock import Unlock

__all__ = [
    "CPU_KINDS",
    "KERNEL_KINDS",
    "STEP_TYPES",
    "Alloc",
    "Allocator",
    "Copy",
    "Cpu",
    "Direction",
    "Free",
    "Goto",
    "Kernel",
    "Label",
    "Lock",
    "Memory",
    "MutexScope",
    "Plan",
    "PlanError",
    "Step",
    "Sync",
    "Unlock",
]

# The shared vocabulary of work kinds; every calibration profile prices each of them.
KERNEL_KINDS = ("ntt", "pointwise", "msm_g1", "msm_g2", "batch_add_g1", "batch_add_g2")
CPU_KINDS = ("synthesis", "prep_msm", "msm_g2_cpu", "assemble")

OPTIONAL_FIELDS = ("seconds", "zeros", "ones")  # left out of a step's JSON form when None

Step = Lock | Unlock | Alloc | Free | Copy | Kernel | Cpu | Sync | Label | Goto

STEP_TYPES: dict[str, type] = {op: kind.step for op, kind in KINDS.items()}


def _step_dict(step: Step) -> dict[str, Any]:
    """A step's JSON form; a measured `seconds` and a kernel's scalar shape (`zeros`,
    `ones`) appear only when set, so the plans of the builders read as they did before
    those fields existed."""
    out = asdict(step)
    for key in OPTIONAL_FIELDS:
        if key in out and out[key] is None:
            del out[key]
    return out


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
        """Validated by the plan file schema (cuzk_sim.plan.schema), then statically
        (labels, jumps, balanced locks: `validate`): PlanError names the step and field."""
        name, steps, meta = plan_parts_from_dict(data, source)
        plan = cls(name=name, steps=steps, meta=meta)
        plan.validate(source)
        return plan

    @classmethod
    def from_json(cls, text: str, source: str = "<plan>") -> Plan:
        return cls.from_dict(parse_plan_json(text, source), source)

    def validate(self, source: str = "<plan>") -> None:
        """Static checks: sizes non-negative, labels defined once, every jump target exists
        and lies after the jump (so every plan terminates: a worker cannot loop forever),
        and on every path (each fallback taken or not) an unlock releases a held mutex, a
        lock never waits on the worker itself and nothing is held at the end (else workers
        would deadlock). Raises the first problem `plan.analysis.analyze` finds.
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
