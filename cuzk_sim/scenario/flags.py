"""Scenario keys derived from a plan builder's flags dataclass, so each flag has one source.

`ProverFlags` (our GPU prover) and `CuzkVariant` (the cuzk plan builder) are the truth; the
scenario's `[plan] gpu_prover` and `[variant]` tables are derived from them here, so a new
flag, a renamed one or a changed default needs no edit in the scenario schema.

Rule: each field of the dataclass is a key of the same name and type, except a field that
holds bytes (its name ends in `_bytes`): its key drops the suffix and takes a size text
("512 MiB"). A key the scenario does not state is not passed on, so the dataclass's own
default applies when the flags are built: flipping a default in the dataclass changes
every scenario that does not state the flag (and what the gate replays).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, StrictBool, create_model

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.units import SizeText, parse_size

SIZE_SUFFIX = "_bytes"
T = TypeVar("T")


def scenario_key(field_name: str) -> str:
    """The scenario key of a dataclass field: `margin_bytes` -> `margin`."""
    return field_name.removesuffix(SIZE_SUFFIX)


def _keys(cls: type, exclude: frozenset[str]) -> dict[str, dataclasses.Field]:
    return {
        scenario_key(f.name): f for f in dataclasses.fields(cls) if f.init and f.name not in exclude
    }


def _key_type(hint: Any, is_size: bool) -> Any:
    if hint is bool:  # true / false only: pydantic's lax mode would read "yes" or 1 as true
        return StrictBool
    if not is_size:
        return hint
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(hint)
    )
    return SizeText | None if optional else SizeText


def _key_default(field: dataclasses.Field, is_size: bool) -> Any:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return ...  # required
    return f"{value} B" if is_size and value is not None else value


@functools.cache
def flags_model(cls: type, base: type[BaseModel], exclude: frozenset[str] = frozenset()) -> Any:
    """A pydantic model (subclass of `base`) with one key per field of dataclass `cls`
    (see the module docstring); cached per class, so a replaced class gets its own."""
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for key, f in _keys(cls, exclude).items():
        is_size = f.name.endswith(SIZE_SUFFIX)
        fields[key] = (_key_type(hints[f.name], is_size), _key_default(f, is_size))
    return create_model(f"{cls.__name__}Keys", __base__=base, **fields)


def build_flags(
    cls: type[T],
    stated: BaseModel,
    where: str,
    exclude: frozenset[str] = frozenset(),
    **fixed: Any,
) -> T:
    """`cls(...)` from the keys `stated` sets (sizes parsed) and `fixed`; a flag the
    dataclass refuses (its __post_init__ raises ValueError) is named `where.key`."""
    keys = _keys(cls, exclude)
    kwargs = dict(fixed)
    for key in stated.model_fields_set & keys.keys():
        value, name = getattr(stated, key), keys[key].name
        kwargs[name] = parse_size(value) if name.endswith(SIZE_SUFFIX) and value else value
    try:
        return cls(**kwargs)
    except ValueError as e:
        named = next((k for k, f in keys.items() if f"{cls.__name__}.{f.name}" in str(e)), None)
        raise InputError(f"{where}{'.' + named if named else ''}: {e}") from None
