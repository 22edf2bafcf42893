"""Synthetic witnesses of a partition's shape (gpu/witness_shape.py) for gpu-run and the
benchmarks: the shape's share of zeros and ones, the rest uniformly random scalars, and
for a shape whose queries leave variables out, the scalars each query's MSM reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

Empty = Callable[[tuple[int, ...], Any], np.ndarray]  # np.empty or keygen.pinned_empty


def random_scalars(rng: np.random.Generator, rows: int, empty: Empty = np.empty) -> np.ndarray:
    """Uniform standard-form scalars below 2^254 < r, as (rows, 8) u32 limbs, written in
    place from the generator's raw 64-bit words chunk by chunk (no temporary the size of
    the output: at 2^27 a/b/c are 12 GiB; ~10x faster than rng.integers). `empty(shape,
    dtype)` makes the array (keygen.pinned_empty: in page-locked memory)."""
    out = empty((rows, 8), np.uint32)
    flat = out.reshape(-1).view(np.uint64)
    step = 1 << 24
    for a in range(0, flat.size, step):
        flat[a : a + step] = rng.bit_generator.random_raw(min(step, flat.size - a))
    out[:, 7] &= 0x3FFFFFFF  # < 2^254 < r: a valid standard-form scalar
    return out


def shaped_scalars(
    rng: np.random.Generator, rows: int, zero: float, one: float, empty: Empty = np.empty
) -> np.ndarray:
    """`rows` scalars: a `zero` share of 0, a `one` share of 1 (in random places), the rest
    uniformly random."""
    out = random_scalars(rng, rows, empty)
    u = rng.random(rows)
    out *= (u >= zero + one)[:, None]  # the zeros and ones cleared (in place)
    out[(u >= zero) & (u < zero + one), 0] = 1
    return out


def shaped_witness(
    shape: Any, rng: np.random.Generator, empty: Empty = np.empty
) -> tuple[np.ndarray, dict]:
    """(witness limbs (m, 8), per query "a" / "b" the scalars its MSM reads): wire 0 is 1,
    the inputs random, the aux of the shape's zero / one shares; the gathered scalars of a
    query with a_count / b_count points are drawn the same way (which variables a query
    holds does not change an MSM's work)."""
    ws = shape.witness_shape()
    m, first = shape.num_vars, shape.num_public + 1
    witness = empty((m, 8), np.uint32)
    witness[:first] = random_scalars(rng, first)
    witness[0] = 0
    witness[0, 0] = 1
    witness[first:] = shaped_scalars(rng, m - first, ws.zero_fraction, ws.one_fraction)
    scalars = {}
    for q, count in (("a", shape.a_count), ("b", shape.b_count)):
        if count is not None:
            scalars[q] = shaped_scalars(rng, count, ws.zero_fraction, ws.one_fraction, empty)
    return witness, scalars


def witness_shaped(shape: Any, meta: Mapping[str, Any]) -> Any:
    """`shape` with the query counts and witness shape a plan's meta records (a plan
    from before issue 23 has none: the dense shape)."""
    keys = ("a_count", "b_count", "witness")
    return dataclasses.replace(shape, **{k: meta[k] for k in keys if k in meta})
