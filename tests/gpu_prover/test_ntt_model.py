"""A Python model of kernels/ntt.cu's index arithmetic (bit reversal, then stage groups of
fr_ntt_group with two-level twiddle tables), checked against the reference NTT. Runs in CI:
it catches a wrong group base, stride or twiddle exponent without a GPU."""

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
