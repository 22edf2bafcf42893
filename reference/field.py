"""BLS12-381 field constants and scalar-field (Fr) helpers on plain Python ints.

Everything in the reference prover is an int reduced mod `R` (scalars) or mod `Q` (base
field coordinates); no wrapper classes, so the arithmetic is cheap and reads like the paper.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# r: the order of G1, G2 and GT; the scalar field Fr of the proof system.
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
# p: the base field Fq of the curve E(Fq): y^2 = x^3 + 4.
Q = int(
    "1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB",
    16,
)

# Montgomery radix used by snarkjs/bellman for Fr: R_MONT = 2^256 mod r.
MONT_BITS = 256
R_MONT = pow(2, MONT_BITS, R)
R_MONT_INV = pow(R_MONT, -1, R)

# Two-adicity of r - 1: r - 1 = 2^S * t with t odd; the largest radix-2 NTT is 2^S.
S = 32
assert (R - 1) % (1 << S) == 0 and ((R - 1) >> S) % 2 == 1

# Multiplicative generator of Fr* used by bellman/arkworks (coset shift, roots of unity).
GENERATOR_BELLMAN = 7
# Quadratic non-residue from which snarkjs (ffjavascript) derives its roots of unity.
NONRESIDUE_SNARKJS = 5


def inv(a: int) -> int:
    """a^-1 mod r; ZeroDivisionError for a = 0 (0 has no inverse)."""
    a %= R
    if a == 0:
        raise ZeroDivisionError("0 has no inverse in Fr")
    return pow(a, -1, R)


def batch_inverse(values: Sequence[int], modulus: int = R) -> list[int]:
    """All inverses with one modular inversion (Montgomery's trick): prefix products,
    invert the total, walk back. Zeros are not allowed."""
    n = len(values)
    prefix = [1] * (n + 1)
    for i, v in enumerate(values):
        if v % modulus == 0:
            raise ZeroDivisionError(f"batch_inverse: element {i} is 0")
        prefix[i + 1] = prefix[i] * v % modulus
    acc = pow(prefix[n], -1, modulus) if n else 1
    out = [0] * n
    for i in range(n - 1, -1, -1):
        out[i] = acc * prefix[i] % modulus  # (v_0...v_i)^-1 * (v_0...v_{i-1}) = v_i^-1
        acc = acc * values[i] % modulus
    return out


def to_mont(a: int) -> int:
    """a·2^256 mod r: the Montgomery form in which bellman and snarkjs store Fr."""
    return a * R_MONT % R


def from_mont(a: int) -> int:
    """a·2^-256 mod r: back from Montgomery form."""
    return a * R_MONT_INV % R


def root_of_unity(order: int, generator: int) -> int:
    """A primitive `order`-th root of unity (order a power of two <= 2^S) derived as
    g^((r-1)/order) from a generator/non-residue g of Fr*."""
    if order < 1 or order & (order - 1) or order > 1 << S:
        raise ValueError(f"root_of_unity: order must be a power of two <= 2^{S}, got {order}")
    w = pow(generator, (R - 1) // order, R)
    if order > 1 and pow(w, order // 2, R) == 1:
        raise ValueError(f"{generator} does not yield a primitive {order}-th root of unity")
    return w


def check_scalars(values: Iterable[int], what: str) -> None:
    """Reject anything that is not a canonical Fr element (an int in [0, r))."""
    for i, v in enumerate(values):
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < R:
            raise ValueError(f"{what}[{i}] must be an int in [0, r), got {v!r}")
