"""The shape of a circuit kind's witness and key, as the MSMs see it.

A real partition is not random scalars over dense queries:
- query densities: a point of the A (B) query belongs to a variable that appears in some
  A (B) constraint; the others are the point at infinity and a real key leaves them out.
  bellperson tracks this per proof as `DensityTracker`s (a_aux_density, b_input_density,
  b_aux_density: bit vectors and their popcounts); supraseal's `Assignment` takes the
  bit vectors with their popcounts (`c2/cuda/groth16_cuda.cu`), and curio's cuzk
  precomputes them from the circuit's matrices (`PreComputedDensity::from_csr`: bit i
  of a_aux = aux i has a non-zero coefficient in some A row; A's inputs are always dense).
  B_G1 and B_G2 share B's density. Densities here are over the aux variables; the inputs
  are few and counted dense.
- bit-valued scalars: most aux assignments of a hash-heavy circuit are 0 or 1. A zero
  scalar adds nothing; a one adds its point (supraseal's `groth16_split_msm.cu` sums
  those by batch addition and runs Pippenger only over the rest).

Every figure states its source. `measure(r1cs, witness)` computes a shape from a circuit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WITNESS_SHAPES: dict[str, WitnessShape] = {}


@dataclass(frozen=True)
class WitnessShape:
    """Fractions over the aux variables (m - l - 1 of them)."""

    name: str
    a_density: float  # share of aux variables in some A constraint (popcount / aux)
    b_density: float  # share of aux variables in some B constraint (B_G1 and B_G2)
    zero_fraction: float  # share of aux assignments equal to 0
    one_fraction: float  # share equal to 1 (the rest: any other field element)
    source: str

    def __post_init__(self) -> None:
        for f in ("a_density", "b_density", "zero_fraction", "one_fraction"):
            v = getattr(self, f)
            if not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise ValueError(f"WitnessShape.{f} must be in [0, 1], got {v!r}")
        if self.zero_fraction + self.one_fraction > 1.0 + 1e-12:
            raise ValueError(
                f"WitnessShape {self.name!r}: zero_fraction + one_fraction must be <= 1, got "
                f"{self.zero_fraction + self.one_fraction}"
            )

    @property
    def bit_fraction(self) -> float:
        return self.zero_fraction + self.one_fraction

    def counts(self, aux: int) -> tuple[int, int]:
        """(aux variables in A, in B) of a circuit with `aux` aux variables."""
        return round(self.a_density * aux), round(self.b_density * aux)

    def split(self, n: int) -> tuple[int, int, int]:
        """(zeros, ones, rest) among n scalars of this shape, as a plan expects them."""
        zeros = round(self.zero_fraction * n)
        ones = min(n - zeros, round(self.one_fraction * n))
        return zeros, ones, n - zeros - ones


def _register(shape: WitnessShape) -> WitnessShape:
    WITNESS_SHAPES[shape.name] = shape
    return shape


DENSE = _register(
    WitnessShape(
        "dense",
        1.0,
        1.0,
        0.0,
        0.0,
        "uniformly random scalars over dense queries: the shape of every benchmark and "
        "synthetic partition before issue 23 (no real circuit has it)",
    )
)

# measured by `measure` on reference/circuits_sha256.py: 4 chained compressions of random
# blocks (seed 1; 107,489 constraints, 106,752 aux variables): zeros 55,073, ones 51,679,
# others 0; in A 61,824, in B 27,552 (tests/gpu_prover/test_witness_shape.py recounts it)
SHA256 = _register(
    WitnessShape(
        "sha256",
        0.5791,
        0.2581,
        0.5159,
        0.4841,
        "measured: reference/circuits_sha256.py, 4 chained SHA-256 compressions of random "
        "blocks built with bellman's boolean gadgets (booleanity, xor, ch, maj, add mod 2^32)",
    )
)

# PoRep (32 GiB, 130 M constraints per partition) is SHA-256 nearly throughout: the SDR
# labelling of each challenged node hashes its 37 parents (~20 compressions per label, 11
# layers) and tree D's inclusion path is SHA-256 too; the Poseidon hashes (tree C columns,
# tree R paths) and the packed labels are a small share, not measured here. So the PoRep
# shape is the SHA-256 one, a stated proxy: a real PoRep witness has a few field-valued
# aux scalars more than none.
POREP = _register(
    WitnessShape(
        "porep",
        SHA256.a_density,
        SHA256.b_density,
        SHA256.zero_fraction,
        SHA256.one_fraction,
        "proxy: the sha256 shape (PoRep's constraints are mostly SHA-256: SDR labelling "
        "and tree D paths; its Poseidon part is not measured)",
    )
)


def witness_shape(name: str) -> WitnessShape:
    """The named shape; ValueError naming the known ones."""
    if name not in WITNESS_SHAPES:
        raise ValueError(f"unknown witness shape {name!r}; known: {sorted(WITNESS_SHAPES)}")
    return WITNESS_SHAPES[name]


def measure(
    name: str,
    num_public: int,
    num_vars: int,
    a_rows: Sequence[Sequence[tuple[int, int]]],
    b_rows: Sequence[Sequence[tuple[int, int]]],
    witness: Sequence[int],
    source: str,
) -> WitnessShape:
    """The shape of a circuit (its matrices and a witness [1, public..., aux...])."""
    first = 1 + num_public
    aux = num_vars - first
    if aux < 1:
        raise ValueError(f"measure {name!r}: the circuit has no aux variables")

    def density(rows: Sequence[Sequence[tuple[int, int]]]) -> float:
        used = {v for row in rows for v, k in row if k and v >= first}
        return len(used) / aux

    values = witness[first:]
    zeros = sum(1 for v in values if v == 0)
    ones = sum(1 for v in values if v == 1)
    return WitnessShape(name, density(a_rows), density(b_rows), zeros / aux, ones / aux, source)
