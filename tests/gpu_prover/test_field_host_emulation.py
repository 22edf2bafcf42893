"""kernels/field.cuh compiled by the host C++ compiler (FIELD_HOST_EMULATION: the PTX carry
steps emulated with an explicit carry flag), run in CI without a GPU: the wide-chain
Montgomery product (the default) and the 64-bit C product against Python ints, a b 2^(-32N)
mod m, for Fr and Fq, edges included; the Fq square the curve code calls against a^2
2^(-32N) mod m; the (Fermat) inverse; both with the defaults (lazy Fq) and with the field's
baseline FIELD_MUL_WIDE=0 (canonical values). Skipped when no C++ compiler is installed."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
from cuzk_sim.reference.field import Q, R
from host_cxx import build
from hypothesis import given
from hypothesis import strategies as st

HARNESS = r"""
#define FIELD_HOST_EMULATION 1
#include "field.cuh"
#include <cstdio>
// stdin: "r|q a_0 .. a_{N-1} b_0 .. b_{N-1}" (hex limbs); stdout: wide product, C product;
// "i|j a_0 .. a_{N-1}" (Fr | Fq): the (Fermat) inverse of a;
// "t a_0 .. a_11": the Fq square sqr(a) (what the curve code calls);
// "o a b" (Fq, limbs < 2q): a + b, a - b, -a, a.canonical(), a stored, is_zero(a), a == b
template <class F> void put(const F& x) {
    for (int i = F::N - 1; i >= 0; i--) printf("%08x", x.v[i]);
    printf(" ");
}
template <class F> void one() {
    F a, b;
    for (int i = 0; i < F::N; i++) if (scanf("%x", &a.v[i]) != 1) return;
    for (int i = 0; i < F::N; i++) if (scanf("%x", &b.v[i]) != 1) return;
    put(mont_mul_wide(a, b));
    put(mont_mul(a, b));
    printf("\n");
}
template <class F> void square() {
    F a;
    for (int i = 0; i < F::N; i++) if (scanf("%x", &a.v[i]) != 1) return;
    put(sqr(a));
    printf("\n");
}
template <class F> void ops() {
    F a, b;
    for (int i = 0; i < F::N; i++) if (scanf("%x", &a.v[i]) != 1) return;
    for (int i = 0; i < F::N; i++) if (scanf("%x", &b.v[i]) != 1) return;
    F stored;
    a.store(stored.v);
    put(a + b);
    put(a - b);
    put(-a);
    put(a.canonical());
    put(stored);
    printf("%d %d\n", (int)a.is_zero(), (int)(a == b));
}
template <class F> void inv() {
    F a;
    for (int i = 0; i < F::N; i++) if (scanf("%x", &a.v[i]) != 1) return;
    put(inverse(a));
    printf("\n");
}
int main() {
    char f[4];
    while (scanf("%3s", f) == 1) {
        if (f[0] == 'r') one<Fr>();
        else if (f[0] == 'q') one<Fq>();
        else if (f[0] == 'i') inv<Fr>();
        else if (f[0] == 't') square<Fq>();
        else if (f[0] == 'o') ops<Fq>();
        else inv<Fq>();
    }
}
"""


@pytest.fixture(scope="module", params=["", "FIELD_MUL_WIDE=0"])
def harness(request, tmp_path_factory):
    """The field harness with the defaults (lazy Fq) and with the field's baseline
    FIELD_MUL_WIDE=0 (no lazy reduction); `.lazy` says whether Fq values may come out in
    [q, 2q)."""
    flags = [f"-D{flag}" for flag in request.param.split()]
    path = build(tmp_path_factory.mktemp("field_emu"), HARNESS, flags)
    return Harness(path, "FIELD_MUL_WIDE=0" not in request.param)


class Harness(NamedTuple):
    path: Path
    lazy: bool

    def __fspath__(self) -> str:
        return str(self.path)

    def __str__(self) -> str:
        return str(self.path)


def _check(got: int, want: int, m: int, lazy: bool, what: str) -> None:
    """got is want (< m), or, lazy, any value < 2m congruent to it"""
    if lazy:
        assert got < 2 * m and got % m == want, what
    else:
        assert got == want, what


def _limbs_hex(x: int, n: int) -> str:
    return " ".join(f"{(x >> (32 * i)) & 0xFFFFFFFF:x}" for i in range(n))


@pytest.mark.parametrize("name, m, n", [("r", R, 8), ("q", Q, 12)])
def test_products_match_python_ints(harness, name, m, n):
    rng = random.Random(n)
    edges = [0, 1, 2, m - 1, m - 2, (m - 1) // 2, 2 ** (32 * n) % m, (2 ** (32 * n - 1)) % m]
    pairs = [(a, b) for a in edges for b in edges]
    pairs += [(rng.randrange(m), rng.randrange(m)) for _ in range(3000)]
    # operands with all-ones / all-zero limbs (the carry chains' worst cases), reduced mod m
    pairs += [((2 ** (32 * k) - 1) % m, rng.randrange(m)) for k in range(1, n + 1)]
    lazy = harness.lazy and name == "q"
    if lazy:  # lazy Fq operands lie in [0, 2q): the same pairs plus q on either side
        pairs += [(a + m, b) for a, b in pairs[:500]] + [(a + m, b + m) for a, b in pairs[:500]]
        pairs += [(2 * m - 1, 2 * m - 1), (m, m), (2 * m - 1, 1)]
    stdin = "".join(f"{name} {_limbs_hex(a, n)} {_limbs_hex(b, n)}\n" for a, b in pairs)
    out = subprocess.run([str(harness)], input=stdin, capture_output=True, text=True, check=True)
    lines = out.stdout.split()
    assert len(lines) == 2 * len(pairs)
    inv = pow(2 ** (32 * n), -1, m)
    for k, (a, b) in enumerate(pairs):
        want = a * b * inv % m
        wide, c = (int(x, 16) for x in lines[2 * k : 2 * k + 2])
        _check(wide, want, m, lazy, f"wide product of {a}, {b}")
        assert c == want, f"C product of {a}, {b}"  # the C product reduces canonically


def _squares(harness, name: str, n: int, values: list[int]) -> list[int]:
    stdin = "".join(f"{name} {_limbs_hex(a, n)}\n" for a in values)
    out = subprocess.run([str(harness)], input=stdin, capture_output=True, text=True, check=True)
    words = [int(x, 16) for x in out.stdout.split()]
    assert len(words) == len(values)
    return words


def test_fq_squares_match_python_ints(harness):
    """sqr(a) = a^2 2^-384 mod q, for edges (0, 1, q - 1, limbs of all ones, values near the
    top bit of q, top bits of limbs) and random values."""
    name, m, n = "t", Q, 12
    rng = random.Random(n + 7)
    top = m.bit_length()
    edges = [0, 1, 2, m - 1, m - 2, (m - 1) // 2, (m + 1) // 2, 2 ** (32 * n) % m]
    edges += [2 ** (top - 1), 2 ** (top - 1) - 1, 2 ** (top - 1) + 1, m - 2 ** (top - 2)]
    edges += [(2 ** (32 * k) - 1) % m for k in range(1, n + 1)]  # all-ones limbs
    edges += [2 ** (32 * k - 1) for k in range(1, n)]  # a top bit that 2a carries up
    edges += [sum(0x80000000 << (32 * k) for k in range(n)) % m]  # every limb's top bit
    values = edges + [rng.randrange(m) for _ in range(3000)]
    if harness.lazy:  # inputs up to 2q - 1
        values += [a + m for a in values[:600]] + [2 * m - 1, m]
    inv = pow(2 ** (32 * n), -1, m)
    for a, g in zip(values, _squares(harness, name, n, values), strict=True):
        _check(g, a * a * inv % m, m, harness.lazy, f"sqr of {a}")


@given(st.lists(st.integers(0, 2 * Q - 1), min_size=1, max_size=40))
def test_fq_squares_match_python_ints_for_any_values(harness, values):
    values = [a if harness.lazy else a % Q for a in values]
    inv = pow(2**384, -1, Q)
    for a, g in zip(values, _squares(harness, "t", 12, values), strict=True):
        _check(g, a * a * inv % Q, Q, harness.lazy, f"sqr of {a}")


def test_fq_additions_and_zero_tests_on_lazy_values(harness):
    """a + b, a - b, -a (outputs < 2q lazy, < q otherwise), the canonical value and the
    stored one (< q, always), is_zero and == mod q, for operands anywhere in [0, 2q) under
    lazy reduction ([0, q) otherwise): 0 and q are both zero."""
    rng = random.Random(3)
    top = 2 * Q if harness.lazy else Q
    edges = [0, 1, Q - 1, top - 1] + ([Q, Q + 1, 2 * Q - 1] if harness.lazy else [])
    pairs = [(a, b) for a in edges for b in edges]
    pairs += [(rng.randrange(top), rng.randrange(top)) for _ in range(2000)]
    pairs += [(a, a % Q + Q) for a, _ in pairs[:300] if harness.lazy and a % Q + Q < top]
    stdin = "".join(f"o {_limbs_hex(a, 12)} {_limbs_hex(b, 12)}\n" for a, b in pairs)
    out = subprocess.run([str(harness)], input=stdin, capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert len(lines) == len(pairs)
    for (a, b), line in zip(pairs, lines, strict=True):
        f = line.split()
        add, sub, neg, canon, stored = (int(x, 16) for x in f[:5])
        _check(add, (a + b) % Q, Q, harness.lazy, f"{a} + {b}")
        _check(sub, (a - b) % Q, Q, harness.lazy, f"{a} - {b}")
        _check(neg, -a % Q, Q, harness.lazy, f"-{a}")
        assert canon == a % Q and stored == a % Q, f"canonical, stored {a}"
        assert f[5:] == [str(int(a % Q == 0)), str(int(a % Q == b % Q))], f"zero, == of {a}, {b}"


@pytest.mark.parametrize("name, m, n", [("i", R, 8), ("j", Q, 12)])
def test_inverses_match_python_ints(harness, name, m, n):
    """inverse (Fermat) of a Montgomery a R gives the Montgomery form of a^-1, (a R)^-1 R^2
    mod m; 0 gives 0 (lazy Fq: for inputs and outputs anywhere in [0, 2q))."""
    rng = random.Random(n + 1)
    edges = [0, 1, 2, 3, m - 1, m - 2, (m - 1) // 2, (m + 1) // 2, 2 ** (32 * n) % m]
    edges += [2**k for k in (29, 30, 31, 32, 60, 61, 200, m.bit_length() - 1)]
    values = edges + [rng.randrange(1, m) for _ in range(400)]
    lazy = harness.lazy and name == "j"
    if lazy:  # lazy Fq inputs in [q, 2q) too (q itself is 0)
        values += [a + m for a in values[:100]]
    stdin = "".join(f"{name} {_limbs_hex(a, n)}\n" for a in values)
    out = subprocess.run([str(harness)], input=stdin, capture_output=True, text=True, check=True)
    lines = out.stdout.split()
    assert len(lines) == len(values)
    mont = 2 ** (32 * n)
    for a, g in zip(values, lines, strict=True):
        want = pow(a, -1, m) * mont * mont % m if a % m else 0
        _check(int(g, 16), want, m, lazy, f"Fermat inverse of {a}")


CURVE_HARNESS = r"""
#define FIELD_HOST_EMULATION 1
#include "curve.cuh"
#include <cstdio>
// stdin: "g|h k x y ..." (k affine G1 (g) or G2 (h) points, Montgomery hex limbs, Fq2 as
// c0 c1); stdout: the affine sum by Jacobian mixed additions (as the accumulation runs
// them), then 2 P_0 by dbl, then sum 2 P_i by full additions
template <class T> static void get(Fp<T>& a) { for (int i = 0; i < 12; i++) scanf("%x", &a.v[i]); }
static void get(Fq2& a) { get(a.c0); get(a.c1); }
template <class T> static void put(const Fp<T>& a) {
    for (int i = 11; i >= 0; i--) printf("%08x", a.v[i]);
    printf(" ");
}
static void put(const Fq2& a) { put(a.c0); put(a.c1); }
template <class F> void run(int k) {
    Jacobian<F> aj = Jacobian<F>::inf(), d = Jacobian<F>::inf(), af = Jacobian<F>::inf();
    for (int i = 0; i < k; i++) {
        Affine<F> p;
        get(p.x);
        get(p.y);
        aj = i == 0 ? Jacobian<F>::from_affine(p) : add_mixed(aj, p);
        af = add(af, dbl(Jacobian<F>::from_affine(p)));  // full additions of 2 P_i
        if (i == 0) d = dbl(Jacobian<F>::from_affine(p));
    }
    Affine<F> rj = to_affine(aj), rd = to_affine(d), rf = to_affine(af);
    put(rj.x); put(rj.y); put(rd.x); put(rd.y); put(rf.x); put(rf.y);
    printf("\n");
}
int main() {
    char g[4];
    int k;
    while (scanf("%3s %d", g, &k) == 2) { if (g[0] == 'g') run<Fq>(k); else run<Fq2>(k); }
}
"""


@pytest.fixture(scope="module", params=["", "FIELD_MUL_WIDE=0"])
def curve_harness(request, tmp_path_factory):
    """The curve harness built with the defaults and with the field's baseline."""
    flags = [f"-D{flag}" for flag in request.param.split()]
    return build(tmp_path_factory.mktemp("curve_emu"), CURVE_HARNESS, flags)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_accumulation_matches_py_ecc(curve_harness, group):
    """Runs of mixed additions as level 0 of the accumulation adds a bucket's points
    (Jacobian), vs py_ecc; with
    P + P, P + (-P), infinity inside a run, and random runs; dbl of the first point; and
    the sum of the doubled points by full Jacobian additions (add-2007-bl)."""
    import py_ecc.optimized_bls12_381 as bls
    from cuzk_sim.gpu.encoding import FQ_MONT, FQ_MONT_INV

    rng = random.Random(5)
    gen, inf = (bls.G1, bls.Z1) if group == "g1" else (bls.G2, bls.Z2)
    pts = [bls.multiply(gen, rng.randrange(1, R)) for _ in range(6)]
    p, q = pts[0], pts[1]
    runs = [[p, p], [p, bls.neg(p)], [p, bls.neg(p), q], [inf, p], [p, inf, q]]
    runs += [[p, q, p, p], [q, q, q]]
    runs += [[rng.choice(pts) for _ in range(rng.randint(1, 10))] for _ in range(25)]

    def coords(pt) -> list[int]:
        """affine standard-form ints: x, y (G2: x0, x1, y0, y1); infinity: zeros"""
        if bls.is_inf(pt):
            return [0] * (2 if group == "g1" else 4)
        x, y = bls.normalize(pt)
        if group == "g1":
            return [int(x.n), int(y.n)]
        return [int(c) for c in x.coeffs] + [int(c) for c in y.coeffs]

    def hexes(pt) -> str:
        return " ".join(_limbs_hex(v * FQ_MONT % Q, 12) for v in coords(pt))

    tag = "g" if group == "g1" else "h"
    stdin = "".join(f"{tag} {len(r)} " + " ".join(hexes(pt) for pt in r) + "\n" for r in runs)
    out = subprocess.run(
        [str(curve_harness)], input=stdin, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(out) == len(runs)
    w = len(coords(inf))
    for r, line in zip(runs, out, strict=True):
        want = inf
        for pt in r:
            want = bls.add(want, pt)
        got = [int(v, 16) * FQ_MONT_INV % Q for v in line.split()]
        assert got[:w] == coords(want), f"Jacobian sum of a run of {len(r)}"
        assert got[w : 2 * w] == coords(bls.double(r[0])), "dbl"
        assert got[2 * w :] == coords(bls.double(want)), "Jacobian full additions"
