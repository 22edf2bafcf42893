"""The schema of plan JSON files: every step typed and bounded before the model sees it.

A plan file is untrusted input. Each step is validated strictly by the schema of its
`op` (pydantic, strict mode; each kind's own, in its module under cuzk_sim/steps/):
`"persistent": "false"` is a string, not a false boolean, and is refused;
`"scope": "bogus"`, `"allocator": "bogus"`, `"direction": "up"`, a label given as a list,
a `meta` that is not an object — each is one line naming `steps[i] (op).field`. Sizes and
counts carry upper limits (far beyond any real plan, but finite, so the model's
arithmetic never overflows and a run's work stays bounded). The step dataclasses stay the
one definition of what a step means; a test holds the two in step (same fields, same
defaults). `Plan.from_dict` builds the plan from what this module checked.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cuzk_sim.io.errors import InputError, key_path
from cuzk_sim.io.inputs import parse_json
from cuzk_sim.steps.base import (
    MAX_BYTES,
    MAX_STEP_SECONDS,
    MAX_STEPS,
    MAX_THREADS,
    MAX_WORK_SIZE,
    PlanError,
    Text,
)
from cuzk_sim.steps.registry import KINDS

__all__ = [
    "MAX_BYTES",
    "MAX_STEPS",
    "MAX_STEP_SECONDS",
    "MAX_THREADS",
    "MAX_WORK_SIZE",
    "STEP_SCHEMAS",
]

# op -> (schema, the step dataclass it builds)
STEP_SCHEMAS: dict[str, tuple[type[BaseModel], type]] = {
    op: (kind.schema, kind.step) for op, kind in KINDS.items()
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


def step_from_dict(raw: Any, i: int, source: str) -> Any:
    """One step, validated by the schema of its op; PlanError names steps[i] and field."""
    op = raw.get("op") if isinstance(raw, dict) else None
    if not isinstance(op, str) or op not in STEP_SCHEMAS:
        got = op if isinstance(raw, dict) else raw
        raise PlanError(
            f"{source}: steps[{i}].op must be one of {sorted(STEP_SCHEMAS)}, got {got!r}"[:400]
        )
    schema, step_cls = STEP_SCHEMAS[op]
    unknown = set(raw) - set(schema.model_fields)
    if unknown:
        raise PlanError(
            f"{source}: steps[{i}] ({op}): unknown field(s) {sorted(map(str, unknown))}; "
            f"known: {sorted(schema.model_fields)}"[:600]
        )
    try:
        checked = schema.model_validate(raw)
    except ValidationError as e:
        raise PlanError(_first_problem(e, f"{source}: steps[{i}] ({op})")) from None
    return step_cls(**checked.model_dump())


def plan_parts_from_dict(data: Any, source: str = "<plan>") -> tuple[str, tuple, dict]:
    """(name, steps, meta) of a plan's JSON form, each step validated field by field."""
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise PlanError(f"{source}: expected an object with a list 'steps'")
    try:
        header = _Header.model_validate(data)
    except ValidationError as e:
        raise PlanError(_first_problem(e, source, ": ")) from None
    steps = tuple(step_from_dict(raw, i, source) for i, raw in enumerate(header.steps))
    return (header.name if header.name is not None else source, steps, header.meta)


def parse_plan_json(text: str, source: str = "<plan>") -> Any:
    """The JSON value of a plan file (bounded, one PlanError line if it is not JSON)."""
    try:
        return parse_json(text, source)
    except InputError as e:
        raise PlanError(str(e)) from None
