"""A Python model of kernels/field.cuh's Montgomery product in its PTX form (two carry
chains per row: low halves into t[0..N-1], high halves into t[1..N], carries into t[N],
t[N+1]), checked against Python ints: a b 2^(-32N) mod m for Fr and Fq, edges included."""

from __future__ import annotations

from cuzk_sim.reference.field import Q, R
from hypothesis import given
from hypothesis import strategies as st

MASK = 2**32 - 1


def _limbs(x: int, n: int) -> list[int]:
    return [(x >> (32 * i)) & MASK for i in range(n)]


def _mul_add_row(t: list[int], x: list[int], y: int) -> None:
    n = len(x)
    carry = 0
    for j in range(n):  # mad.lo.cc / madc.lo.cc
        s = t[j] + ((x[j] * y) & MASK) + carry
        t[j], carry = s & MASK, s >> 32
    s = t[n] + carry  # addc.cc
    t[n], carry = s & MASK, s >> 32
    t[n + 1] = (t[n + 1] + carry) & MASK  # addc
    carry = 0
    for j in range(n):  # mad.hi.cc / madc.hi.cc
        s = t[j + 1] + ((x[j] * y) >> 32) + carry
        t[j + 1], carry = s & MASK, s >> 32
    t[n + 1] = (t[n + 1] + carry) & MASK  # addc


def _mont_mul_model(a: int, b: int, m: int, n: int) -> int:
    inv = (-pow(m, -1, 2**32)) % 2**32
    t = [0] * (n + 2)
    av, bv, p = _limbs(a, n), _limbs(b, n), _limbs(m, n)
    for i in range(n):
        _mul_add_row(t, av, bv[i])
        u = (t[0] * inv) & MASK
        _mul_add_row(t, p, u)
        assert t[0] == 0
        t = t[1:] + [0]
    r = sum(v << (32 * i) for i, v in enumerate(t))
    assert r < 2 * m
    return r - m if r >= m else r


@given(st.integers(0, R - 1), st.integers(0, R - 1))
def test_fr_model(a, b):
    assert _mont_mul_model(a, b, R, 8) == a * b * pow(2, -256, R) % R


@given(st.integers(0, Q - 1), st.integers(0, Q - 1))
def test_fq_model(a, b):
    assert _mont_mul_model(a, b, Q, 12) == a * b * pow(2, -384, Q) % Q


def test_edges():
    for m, n in ((R, 8), (Q, 12)):
        for a, b in ((m - 1, m - 1), (0, m - 1), (1, 1), (m - 1, 1)):
            assert _mont_mul_model(a, b, m, n) == a * b * pow(2, -32 * n, m) % m
