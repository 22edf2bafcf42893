"""A Python model of kernels/ntt.cu's index arithmetic (bit reversal, then stage groups of
fr_ntt_group_tw, the baseline, with two-level twiddle tables), checked against the reference
NTT. Runs in CI: it catches a wrong group base, stride or twiddle exponent without a GPU."""

from __future__ import annotations

import random

import pytest
from cuzk_sim.gpu.ntt import split_bits, stage_groups
from cuzk_sim.reference.domain import Domain
from cuzk_sim.reference.field import R


def _model_ntt(values: list[int], omega: int) -> list[int]:
    n = len(values)
    log_n = n.bit_length() - 1
    lo_bits, hi_count = split_bits(log_n)
    lo_t = [pow(omega, i, R) for i in range(1 << lo_bits)]
    hi_t = [pow(omega, j << lo_bits, R) for j in range(hi_count)]
    a = [values[int(f"{i:0{log_n}b}"[::-1], 2) if log_n else 0] for i in range(n)]
    for st, k in stage_groups(log_n):
        for b in range(n >> k):  # one block
            low = b & ((1 << st) - 1)
            base = ((b >> st) << (st + k)) | low
            s = [a[base + (j << st)] for j in range(1 << k)]
            for sl in range(k):
                h = 1 << sl
                for t in range(1 << (k - 1)):
                    kk = t & (h - 1)
                    i = ((t >> sl) << (sl + 1)) + kk
                    e = (low + (kk << st)) << (log_n - st - sl - 1)
                    w = hi_t[e >> lo_bits] * lo_t[e & ((1 << lo_bits) - 1)] % R
                    u, v = s[i], s[i + h] * w % R
                    s[i], s[i + h] = (u + v) % R, (u - v) % R
            for j in range(1 << k):
                a[base + (j << st)] = s[j]
    return a


@pytest.mark.parametrize("log_n", [1, 2, 5, 10, 11, 12, 13])
def test_stage_groups_model_matches_reference(log_n):
    rng = random.Random(log_n)
    dom = Domain(1 << log_n)
    values = [rng.randrange(R) for _ in range(1 << log_n)]
    assert _model_ntt(values, dom.omega) == dom.ntt(values)


def test_stage_groups_cover_every_stage_once():
    for log_n in range(1, 32):
        groups = stage_groups(log_n)
        assert [st for st, _ in groups] == [
            sum(k for _, k in groups[:i]) for i in range(len(groups))
        ]
        assert sum(k for _, k in groups) == log_n and all(1 <= k <= 10 for _, k in groups)


def _rev(x: int, bits: int) -> int:
    return int(f"{x:0{bits}b}"[::-1], 2) if bits else 0


@pytest.mark.parametrize("log_n", [8, 9, 12, 13])
def test_tiled_bit_reversal_model(log_n):
    """kernels/ntt.cu fr_bitrev_tiled thread by thread: the block of tile M <= rev M loads
    tiles M and rev M, parks each element at slot P ^ (P >> 5) of its partner, stores both;
    the result is the bit-reversal permutation, and the parked slots are a bijection."""
    n, m = 1 << log_n, log_n - 8
    a = list(range(n))
    out = a[:]
    for M in range(1 << m):
        Mr = _rev(M, m)
        if Mr < M:
            continue
        sa, sb = {}, {}
        for t in range(256):
            h, l = t >> 4, t & 15
            P = (_rev(l, 4) << 4) | _rev(h, 4)
            sa[P ^ (P >> 5)] = a[(h << (m + 4)) | (M << 4) | l]
            sb[P ^ (P >> 5)] = a[(h << (m + 4)) | (Mr << 4) | l]
        assert len(sa) == 256
        for t in range(256):
            h, l = t >> 4, t & 15
            out[(h << (m + 4)) | (Mr << 4) | l] = sa[t ^ (t >> 5)]
            if Mr != M:
                out[(h << (m + 4)) | (M << 4) | l] = sb[t ^ (t >> 5)]
    assert out == [a[_rev(i, log_n)] for i in range(n)]


@pytest.mark.parametrize(
    "log_n,pass_log,mib",
    [
        # 4 power tables of (2^12 + 2^12) entries, 3 constants, 2 per-pass tables of 2^15
        (24, 16, (4 * (2**12 + 2**12) + 3 + 2 * 2**15) * 32 / 2**20),
        # 2^27: lo 2^14, hi 2^13; passes 9, 9, 9: per-pass tables of 2^17 entries (4 MiB each)
        (27, 18, (4 * (2**14 + 2**13) + 3 + 2 * 2**17) * 32 / 2**20),
        # 2^20: passes 6, 7, 7: P = 13, tables of 2^12
        (20, 13, (4 * (2**10 + 2**10) + 3 + 2 * 2**12) * 32 / 2**20),
    ],
)
def test_ntt_table_bytes_state_the_per_pass_tables(log_n, pass_log, mib):
    """tables_bytes (the prover's d_ntt_tables, so the plan's) counts every table that
    domain_tables packs, the per-pass tables of fr_ntt_pass included (hand arithmetic)."""
    from cuzk_sim.gpu import ntt as gntt

    assert gntt.pass_log(log_n) == pass_log
    assert gntt.tables_bytes(log_n) == mib * 2**20
    if log_n <= 20:
        packed = gntt.domain_tables(log_n, 5, 7, 1).pack()
        assert packed.nbytes == gntt.tables_bytes(log_n)
