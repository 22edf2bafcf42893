"""Hypothesis strategies for the reference prover tests: field elements, points, R1CS."""

from __future__ import annotations

import random

import py_ecc.optimized_bls12_381 as bls
from cuzk_sim.reference.circuits import random_r1cs
from cuzk_sim.reference.field import R
from hypothesis import strategies as st

R_MINUS_1 = R - 1

# Scalars with the edge cases drawn often: 0, 1, r - 1, small and huge values.
scalars = st.one_of(
    st.sampled_from([0, 1, 2, R_MINUS_1, R - 2]),
    st.integers(min_value=0, max_value=2**16),
    st.integers(min_value=0, max_value=R_MINUS_1),
)
nonzero_scalars = st.integers(min_value=1, max_value=R_MINUS_1)


@st.composite
def g1_points(draw: st.DrawFn, allow_infinity: bool = True):
    """k·G1 via py_ecc's own multiply (k = 0 gives infinity)."""
    k = draw(scalars if allow_infinity else nonzero_scalars)
    return bls.multiply(bls.G1, k) if k else bls.Z1


@st.composite
def g2_points(draw: st.DrawFn, allow_infinity: bool = True):
    k = draw(scalars if allow_infinity else nonzero_scalars)
    return bls.multiply(bls.G2, k) if k else bls.Z2


@st.composite
def r1cs_with_witness(draw: st.DrawFn, max_constraints: int = 6):
    """A random satisfiable R1CS (tiny, so pairing-based properties stay cheap)."""
    seed = draw(st.integers(min_value=0, max_value=2**32))
    num_constraints = draw(st.integers(min_value=1, max_value=max_constraints))
    num_public = draw(st.integers(min_value=0, max_value=3))
    num_private = draw(st.integers(min_value=1, max_value=4))
    return random_r1cs(random.Random(seed), num_constraints, num_public, num_private)
