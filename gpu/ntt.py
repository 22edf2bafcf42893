"""NTTs over Fr on the GPU: forward, inverse and coset transforms of arrays of Montgomery
limbs (n, 8), in place.

Twiddles and coset powers come from two small tables each (x^k = hi[k >> L] * lo[k & (2^L - 1)],
L = ceil(log n / 2)), so a transform of 2^27 needs kilobytes of tables, not gigabytes. The
default kernel (fr_ntt_pass) also reads the twiddles of every pass but the last from a
per-pass table of each root, x^(j 2^(log n - P)) for j < 2^(P - 1) with P = pass_log(log n)
the last stage those passes reach: 1 MiB per root at 2^24, 4 MiB at 2^27 (pass_table).
The tables are built on the host with Python ints (cached per root) and uploaded, all of
them in one buffer of tables_bytes(log n) (the prover's d_ntt_tables).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from cuzk_sim.reference.field import R

from .encoding import fr_to_mont_limbs

BLOCK_LOG = 10  # most stages per fr_ntt_group_tw launch
PASS_LOG = 9  # most stages per fr_ntt_pass launch (2^k elements + 2^k twiddles <= 48 KiB)
BITREV_TILE_LOG = 8  # fr_bitrev_tiled swaps tiles of 2^4 x 2^4 elements (log n >= 8)
FR_BYTES = 32
# stage-group kernels (kernels/ntt.cu): fr_ntt_pass (the default: a block's twiddles up
# front, from the per-pass table before the last pass, the product inlined; 5.84 against
# 9.32 ms at 2^24 on the H200, docs/benchmarks.md) and fr_ntt_group_tw (twiddles per block
# in shared memory and one __syncthreads per stage: the default until fr_ntt_pass, the NTT
# family's baseline, kept for side-by-side benchmarks). The others (fr_ntt_pass_c2,
# fr_ntt_reg8, fr_ntt_group, fr_ntt_group_x2) were measured slower and retired (issue 29).
NTT_KERNELS = ("fr_ntt_pass", "fr_ntt_group_tw")


def default_kernel() -> str:
    """$CUZK_NTT_KERNEL (one of NTT_KERNELS), default fr_ntt_pass."""
    name = os.environ.get("CUZK_NTT_KERNEL", NTT_KERNELS[0])
    if name not in NTT_KERNELS:
        raise ValueError(f"CUZK_NTT_KERNEL must be one of {NTT_KERNELS}, got {name!r}")
    return name


def split_bits(log_n: int) -> tuple[int, int]:
    """(lo_bits, hi_count) of a two-level power table covering exponents < 2^log_n."""
    lo_bits = (log_n + 1) // 2
    return lo_bits, 1 << (log_n - lo_bits)


@functools.cache
def power_table(x: int, log_n: int) -> np.ndarray:
    """hi table then lo table, Montgomery limbs: x^(j 2^L) for j < hi_count, x^i for i < 2^L."""
    lo_bits, hi_count = split_bits(log_n)
    lo = [1] * (1 << lo_bits)
    for i in range(1, len(lo)):
        lo[i] = lo[i - 1] * x % R
    step = pow(x, 1 << lo_bits, R)
    hi = [1] * hi_count
    for j in range(1, hi_count):
        hi[j] = hi[j - 1] * step % R
    return fr_to_mont_limbs(hi + lo)


def table_words(log_n: int) -> int:
    lo_bits, hi_count = split_bits(log_n)
    return 8 * (hi_count + (1 << lo_bits))


def pass_groups(log_n: int) -> list[tuple[int, int]]:
    """fr_ntt_pass's launches: ceil(log_n / 9) near-equal groups (2^24: 8, 8, 8)."""
    return stage_groups(log_n, PASS_LOG)


def pass_log(log_n: int) -> int:
    """P, the last stage that fr_ntt_pass's passes before the last reach (every stage when
    there is one pass): their twiddle exponents are multiples of 2^(log_n - P) below
    2^(log_n - 1), so the per-pass table holds 2^(P - 1) entries (2^24: P = 16)."""
    groups = pass_groups(log_n)
    if len(groups) <= 1:
        return max(log_n, 1)
    st, k = groups[-2]
    return st + k


def pass_words(log_n: int) -> int:
    """Words of one root's per-pass table."""
    return 8 << (pass_log(log_n) - 1)


def pass_table(x: int, log_n: int) -> np.ndarray:
    """x^(j 2^(log_n - P)) for j < 2^(P - 1), P = pass_log(log_n), Montgomery limbs."""
    return _pass_table(x, log_n, pass_log(log_n))


@functools.cache
def _pass_table(x: int, log_n: int, p: int) -> np.ndarray:
    step = pow(x, 1 << max(log_n - p, 0), R)
    out = [1] * (1 << (p - 1))
    for j in range(1, len(out)):
        out[j] = out[j - 1] * step % R
    return fr_to_mont_limbs(out)


@dataclass(frozen=True)
class DomainTables:
    """Host tables for one domain and coset: roots w, w^-1, coset g, g^-1, and constants."""

    log_n: int
    tables: tuple[np.ndarray, ...]  # w, w^-1, g, g^-1 power tables
    consts: np.ndarray  # Montgomery limbs of [1, 1/n, zinv]
    passes: tuple[np.ndarray, ...]  # w, w^-1 per-pass tables (fr_ntt_pass)

    @property
    def words(self) -> int:
        return sum(t.size for t in (*self.tables, self.consts, *self.passes))

    def pack(self) -> np.ndarray:
        parts = [*self.tables, self.consts, *self.passes]
        return np.concatenate([t.reshape(-1) for t in parts])


def domain_tables(log_n: int, omega: int, g: int, zinv: int) -> DomainTables:
    n = 1 << log_n
    roots = (omega, pow(omega, -1, R))
    tables = tuple(power_table(x, log_n) for x in (*roots, g, pow(g, -1, R)))
    consts = fr_to_mont_limbs([1, pow(n, -1, R), zinv])
    return DomainTables(log_n, tables, consts, tuple(pass_table(x, log_n) for x in roots))


def tables_bytes(log_n: int) -> int:
    """Bytes of the packed tables (the prover's d_ntt_tables): 4 two-level power tables, 3
    constants, 2 per-pass tables."""
    return 4 * (4 * table_words(log_n) + 3 * 8 + 2 * pass_words(log_n))


@dataclass(frozen=True)
class DeviceTables:
    """Views into the uploaded table buffer (CuPy arrays)."""

    log_n: int
    lo_bits: int
    views: tuple  # (hi, lo) for w, w^-1, g, g^-1
    one: object
    n_inv: object
    zinv: object
    passes: tuple = ()  # per-pass tables of w, w^-1 (fr_ntt_pass)

    @classmethod
    def from_buffer(cls, flat: object, log_n: int) -> DeviceTables:
        lo_bits, hi_count = split_bits(log_n)
        words = table_words(log_n)
        views = []
        for k in range(4):
            base = k * words
            views.append(
                (flat[base : base + 8 * hi_count], flat[base + 8 * hi_count : base + words])
            )
        c = 4 * words
        pw = pass_words(log_n)
        passes = (flat[c + 24 : c + 24 + pw], flat[c + 24 + pw : c + 24 + 2 * pw])
        return cls(
            log_n,
            lo_bits,
            tuple(views),
            flat[c : c + 8],
            flat[c + 8 : c + 16],
            flat[c + 16 : c + 24],
            passes,
        )


@dataclass(frozen=True)
class Scale:
    """An elementwise factor folded into a transform: a_j <- a_j * const * x^j, with x^j
    from power table `powers` of DeviceTables.views (2: g, 3: g^-1) and const a device view
    (t.n_inv); either may be None."""

    powers: int | None = None
    const: object | None = None

    def mode(self) -> int:
        return (1 if self.const is not None else 0) | (2 if self.powers is not None else 0)


def _scale_args(t: DeviceTables, s: Scale | None) -> tuple:
    """(hi, lo, const, mode) kernel arguments; unused pointers point at t.one."""
    if s is None or s.mode() == 0:
        return (t.one, t.one, t.one, np.int32(0))
    hi, lo = t.views[s.powers] if s.powers is not None else (t.one, t.one)
    return (hi, lo, s.const if s.const is not None else t.one, np.int32(s.mode()))


def _scale_launch(a: object, t: DeviceTables, s: Scale) -> Callable[[], None]:
    """A separate pass a_j <- a_j * const * x^j (field_ops.cu), for the older kernels."""
    from .module import launch

    n = 1 << t.log_n
    const = s.const if s.const is not None else t.one
    if s.powers is None:
        return lambda: launch("field_ops.cu", "fr_scale", n, a, const, np.int64(n))
    hi, lo = t.views[s.powers]
    lo_bits = np.int32(t.lo_bits)
    return lambda: launch(
        "field_ops.cu", "fr_coset_scale", n, a, hi, lo, lo_bits, const, np.int64(n)
    )


def ntt_launches(
    a: object,
    t: DeviceTables,
    which: int,
    kernel_name: str | None = None,
    pre: Scale | None = None,
    post: Scale | None = None,
    bitrev: str | None = None,
) -> list[tuple[str, Callable[[], None]]]:
    """The launches of a transform with root table `which` (0: w, 1: w^-1), in order, each
    (label, launch): the bit reversal, then one stage-group kernel per group of stages
    (gpu_bench.py times them one by one). `pre` scales the input (a_j by its own index j),
    `post` the output: `pre` goes into the bit reversal (fr_bitrev_tiled, from 2^8 up);
    what is left runs as passes of their own (fr_scale, fr_coset_scale). `bitrev`:
    "tiled" (fr_bitrev_tiled, from 2^8 up; the default) or "scatter" (fr_bitrev, one
    swap per thread: the bit reversal of commit 43bbd30)."""
    name = kernel_name or default_kernel()
    if name not in NTT_KERNELS:
        raise ValueError(f"NTT kernel must be one of {NTT_KERNELS}, got {name!r}")
    log_n = t.log_n
    if log_n == 0:  # n = 1: the transform and every factor (1/n, g^0) are the identity
        return []
    if log_n >= BITREV_TILE_LOG and bitrev != "scatter":
        out = [_bitrev_tiled(a, t, pre)]
    else:
        out = [] if pre is None else [("scale", _scale_launch(a, t, pre))]
        out.append(_bitrev(a, log_n))
    if name == "fr_ntt_pass":
        out += _pass_launches(a, t, which)
    else:
        out += _group_launches(a, t, which, name)
    return out + ([] if post is None else [("scale", _scale_launch(a, t, post))])


def _bitrev_tiled(a: object, t: DeviceTables, pre: Scale | None) -> tuple[str, Callable[[], None]]:
    """fr_bitrev_tiled (log n >= 8), `pre` applied on the way."""
    from .module import kernel

    fn = kernel("ntt.cu", "fr_bitrev_tiled")
    args = (a, np.int32(t.log_n), *_scale_args(t, pre)[:2], np.int32(t.lo_bits))
    args += _scale_args(t, pre)[2:]
    tiles = 1 << (t.log_n - BITREV_TILE_LOG)
    return ("fr_bitrev_tiled", lambda: fn((tiles,), (256,), args))


def _bitrev(a: object, log_n: int) -> tuple[str, Callable[[], None]]:
    from .module import launch

    n = 1 << log_n
    return ("fr_bitrev", lambda: launch("ntt.cu", "fr_bitrev", n, a, np.int64(n), np.int32(log_n)))


def _pass_launches(a: object, t: DeviceTables, which: int) -> list[tuple[str, Callable[[], None]]]:
    """fr_ntt_pass's launches: one per pass_groups entry, 2^(k-1) threads, 2 2^k elements of
    dynamic shared memory (a block's elements and twiddle slots); the kernel's column count
    cl is 0 (1, two adjacent groups per block, was fr_ntt_pass_c2: retired)."""
    from .module import kernel

    log_n, n = t.log_n, 1 << t.log_n
    hi, lo = t.views[which]
    fn = kernel("ntt.cu", "fr_ntt_pass")
    pl = np.int32(pass_log(log_n))
    out = []
    for st, k in pass_groups(log_n):
        args = (a, hi, lo, np.int32(t.lo_bits), np.int32(log_n), np.int32(st), np.int32(k))
        args += (t.passes[which], pl, np.int32(0))  # cl = 0
        shared = 2 * (1 << k) * FR_BYTES
        out.append(
            (
                f"fr_ntt_pass[{st}:{st + k}]",
                lambda g=n >> k, th=1 << (k - 1), x=args, sh=shared: fn(
                    (g,), (th,), x, shared_mem=sh
                ),
            )
        )
    return out


def _group_launches(
    a: object, t: DeviceTables, which: int, name: str
) -> list[tuple[str, Callable[[], None]]]:
    """The stage groups of fr_ntt_group_tw."""
    from .module import kernel

    log_n, n = t.log_n, 1 << t.log_n
    hi, lo = t.views[which]
    lo_bits = np.int32(t.lo_bits)
    out = []
    for st, k in stage_groups(log_n):
        shared = 3 * (1 << (k - 1)) * FR_BYTES
        threads = 1 << (k - 1)
        fn = kernel("ntt.cu", name)
        args = (a, hi, lo, lo_bits, np.int32(log_n), np.int32(st), np.int32(k))
        out.append(
            (
                f"{name}[{st}:{st + k}]",
                lambda fn=fn, g=n >> k, th=threads, x=args, sh=shared: fn(
                    (g,), (th,), x, shared_mem=sh
                ),
            )
        )
    return out


def _ntt(
    a: object,
    t: DeviceTables,
    which: int,
    kernel_name: str | None = None,
    pre: Scale | None = None,
    post: Scale | None = None,
    bitrev: str | None = None,
) -> None:
    """Bit-reverse then DIT butterflies with root table `which` (0: w, 1: w^-1)."""
    for _, run in ntt_launches(a, t, which, kernel_name, pre, post, bitrev):
        run()


def stage_groups(log_n: int, most: int = BLOCK_LOG) -> list[tuple[int, int]]:
    """(first stage, stage count) of each launch: ceil(log_n / most) near-equal groups."""
    groups = -(-log_n // most)
    out, st = [], 0
    for g in range(groups):
        k = (log_n - st) // (groups - g)
        out.append((st, k))
        st += k
    return out


def ntt(
    a: object, t: DeviceTables, kernel_name: str | None = None, bitrev: str | None = None
) -> None:
    """a <- (sum_j a_j w^(ij))_i"""
    _ntt(a, t, 0, kernel_name, bitrev=bitrev)


def intt(
    a: object, t: DeviceTables, kernel_name: str | None = None, bitrev: str | None = None
) -> None:
    """a <- (1/n sum_j a_j w^(-ij))_i (1/n applied to the input: the transform is linear)"""
    _ntt(a, t, 1, kernel_name, pre=Scale(const=t.n_inv), bitrev=bitrev)


def coset_ntt(
    a: object, t: DeviceTables, kernel_name: str | None = None, bitrev: str | None = None
) -> None:
    """Evaluations on g H: a_j <- a_j g^j, then the forward NTT."""
    _ntt(a, t, 0, kernel_name, pre=Scale(powers=2), bitrev=bitrev)


def coset_intt(
    a: object, t: DeviceTables, kernel_name: str | None = None, bitrev: str | None = None
) -> None:
    """Coefficients from evaluations on g H: inverse NTT, then a_j <- a_j g^(-j) / n (the 1/n
    applied to the input)."""
    pre, post = Scale(const=t.n_inv), Scale(powers=3)
    _ntt(a, t, 1, kernel_name, pre=pre, post=post, bitrev=bitrev)
