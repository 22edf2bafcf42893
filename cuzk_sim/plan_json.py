"""The schema of plan JSON files: every step typed and bounded before the model sees it.

A plan file is untrusted input. Each step is validated strictly by the model of its `op`
(pydantic, strict mode): `"persistent": "false"` is a string, not a false boolean, and is
refused; `"scope": "bogus"`, `"allocator": "bogus"`, `"direction": "up"`, a label given as
a list, a `meta` that is not an object — each is one line naming `steps[i] (op).field`.
Sizes and counts carry upper limits (far beyond any real plan, but finite, so the model's
arithmetic never overflows and a run's work stays bounded). The step dataclasses of
`cuzk_sim.plan` stay the one definition of what a step means; a test holds the two in
step (same fields, same defaults).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from cuzk_sim import plan as plan_steps
from cuzk_sim.input_errors import InputError, key_path
from cuzk_sim.input_files import parse_json

MAX_STEPS = 100_000  # the cuzk PoRep plan has about 60; our prover's a few hundred
MAX_BYTES = 2**50  # 1 PiB, as units.MAX_SIZE_BYTES
MAX_WORK_SIZE = 2**50  # elements or points of one kernel or cpu step
MAX_THREADS = 65_536  # as the scenario's hardware.host_cores
MAX_STEP_SECONDS = 86_400.0  # a measured kernel or copy (Kernel/Copy.seconds): a day

Name = Annotated[str, StringConstraints(min_length=1, max_length=256)]
Text = Annotated[str, StringConstraints(max_length=4096)]
Bytes = Annotated[int, Field(ge=0, le=MAX_BYTES)]
WorkSize = Annotated[int, Field(ge=0, le=MAX_WORK_SIZE)]
# a measured duration: finite, non-negative; an integer number of seconds is taken too
Seconds = Annotated[float, Field(ge=0, le=MAX_STEP_SECONDS, allow_inf_nan=False)]
Scope = Literal["device", "process", "global", "none"]
Memory = Literal["device", "host_pinned"]


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class LockIn(_Step):
    op: Literal["lock"]
    mutex: Name
    scope: Scope = "device"


class UnlockIn(_Step):
    op: Literal["unlock"]
    mutex: Name
    scope: Scope = "device"


class AllocIn(_Step):
    op: Literal["alloc"]
    buffer: Name
    bytes: Bytes
    allocator: Literal["sync", "async", "caching"] = "sync"
    persistent: bool = False
    per_device: bool = False
    margin: Bytes | None = None
    fallback: Name | None = None
    note: Text = ""
    memory: Memory = "device"


class FreeIn(_Step):
    op: Literal["free"]
    buffer: Name
    memory: Memory = "device"


class CopyIn(_Step):
    op: Literal["copy"]
    name: Name
    bytes: Bytes
    direction: Literal["HtoD", "DtoH", "DtoD"] = "HtoD"
    pinned: bool = False
    stream: Name = "compute"
    fills: Name | None = None
    seconds: Seconds | None = None


class KernelIn(_Step):
    op: Literal["kernel"]
    name: Name
    kind: Name
    size: WorkSize
    stream: Name = "compute"
    fills: Name | None = None
    seconds: Seconds | None = None


class CpuIn(_Step):
    op: Literal["cpu"]
    name: Name
    kind: Name
    size: WorkSize
    threads: Annotated[int, Field(ge=0, le=MAX_THREADS)] = 1
    stream: Name = "host"


class SyncIn(_Step):
    op: Literal["sync"]
    stream: Name


class LabelIn(_Step):
    op: Literal["label"]
    name: Name


class GotoIn(_Step):
    op: Literal["goto"]
    label: Name


# op -> (schema, the step dataclass it builds)
STEP_SCHEMAS: dict[str, tuple[type[_Step], type]] = {
    "lock": (LockIn, plan_steps.Lock),
    "unlock": (UnlockIn, plan_steps.Unlock),
    "alloc": (AllocIn, plan_steps.Alloc),
    "free": (FreeIn, plan_steps.Free),
    "copy": (CopyIn, plan_steps.Copy),
    "kernel": (KernelIn, plan_steps.Kernel),
    "cpu": (CpuIn, plan_steps.Cpu),
    "sync": (SyncIn, plan_steps.Sync),
    "label": (LabelIn, plan_steps.Label),
    "goto": (GotoIn, plan_steps.Goto),
}


class _Header(BaseModel):
    model_config = ConfigDict(strict=True)

    name: Text | None = None
    meta: dict[str, Any] = {}
    steps: Annotated[list[Any], Field(max_length=MAX_STEPS)]


def _first_problem(error: ValidationError, prefix: str, sep: str = ".") -> str:
    """One line for the first problem pydantic found: `prefix.field: what`."""
    e = error.errors()[0]
    msg = e["msg"]
    if e["type"] == "extra_forbidden":
        msg = "unknown field"
    elif e["type"] == "missing":
        msg = "required field is missing"
    elif "input" in e and e["type"] not in ("too_long",):
        msg += f", got {e['input']!r}"[:200]
    field = key_path(e["loc"]) if e["loc"] else ""
    return f"{prefix}{sep}{field}: {msg}" if field else f"{prefix}: {msg}"


def step_from_dict(raw: Any, i: int, source: str) -> plan_steps.Step:
    """One step, validated by the schema of its op; PlanError names steps[i] and field."""
    op = raw.get("op") if isinstance(raw, dict) else None
    if not isinstance(op, str) or op not in STEP_SCHEMAS:
        got = op if isinstance(raw, dict) else raw
        raise plan_steps.PlanError(
            f"{source}: steps[{i}].op must be one of {sorted(STEP_SCHEMAS)}, got {got!r}"[:400]
        )
    schema, step_cls = STEP_SCHEMAS[op]
    unknown = set(raw) - set(schema.model_fields)
    if unknown:
        raise plan_steps.PlanError(
            f"{source}: steps[{i}] ({op}): unknown field(s) {sorted(map(str, unknown))}; "
            f"known: {sorted(schema.model_fields)}"[:600]
        )
    try:
        checked = schema.model_validate(raw)
    except ValidationError as e:
        raise plan_steps.PlanError(_first_problem(e, f"{source}: steps[{i}] ({op})")) from None
    return step_cls(**checked.model_dump())


def plan_from_dict(data: Any, source: str = "<plan>") -> plan_steps.Plan:
    """A Plan from its JSON form, validated field by field, then statically (labels, jumps,
    balanced locks: `Plan.validate`)."""
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise plan_steps.PlanError(f"{source}: expected an object with a list 'steps'")
    try:
        header = _Header.model_validate(data)
    except ValidationError as e:
        raise plan_steps.PlanError(_first_problem(e, source, ": ")) from None
    steps = tuple(step_from_dict(raw, i, source) for i, raw in enumerate(header.steps))
    plan = plan_steps.Plan(
        name=header.name if header.name is not None else source, steps=steps, meta=header.meta
    )
    plan.validate(source)
    return plan


def plan_from_json(text: str, source: str = "<plan>") -> plan_steps.Plan:
    try:
        data = parse_json(text, source)
    except InputError as e:
        raise plan_steps.PlanError(str(e)) from None
    return plan_from_dict(data, source)
