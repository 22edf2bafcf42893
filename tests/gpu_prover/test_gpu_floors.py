"""benchmarks/gpu_floors.py's counting functions on cases counted by hand (and a literal
model of msm_signed.cu's `set_reduce` loop for the reduction's closed form). No GPU."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
floors = importlib.import_module("gpu_floors")


def test_a_montgomery_product_counts_its_partial_products_by_hand():
    # Fr, 8 limbs: 64 a_i b_j + 64 m q_j partial products, 2 results each, + 8 m_i
    assert floors.imad_per_product(8) == 64 * 2 + 64 * 2 + 8 == 264
    assert floors.imad_per_product(12) == 144 * 2 + 144 * 2 + 12 == 588


@pytest.mark.parametrize(
    ("group", "formula", "products"),
    [
        # G1 over Fq: products and squares alike
        ("g1", "madd", 7 + 4),
        ("g1", "add", 11 + 5),
        ("g1", "dbl", 2 + 5),
        # G2 over Fq2: a product 3 Fq products (Karatsuba), a square 2
        ("g2", "madd", 7 * 3 + 4 * 2),
        ("g2", "add", 11 * 3 + 5 * 2),
        ("g2", "dbl", 2 * 3 + 5 * 2),
    ],
)
def test_curve_formulas_cost_what_curve_cuh_computes(group, formula, products):
    assert floors.formula_products(group, formula) == products


def _set_reduce_by_the_kernel(c: int, segment_len: int) -> tuple[int, int]:
    """msm_signed.cu's set_reduce loop run literally over non-empty buckets, counting the
    additions and doublings whose operands are both finite (an operation onto infinity
    returns at its first line)."""
    per_set = 1 << (c - 1)
    segs = max(1, per_set // segment_len)
    seg_len = per_set // segs
    adds = dbls = 0

    def add(p_inf: bool, q_inf: bool) -> bool:
        nonlocal adds
        adds += not (p_inf or q_inf)
        return p_inf and q_inf

    for s in range(segs):
        lo = s * seg_len
        run_inf = acc_inf = True
        for _ in range(seg_len):
            run_inf = add(run_inf, False)
            acc_inf = add(acc_inf, run_inf)
        if lo > 0:
            m_inf = True
            for bit in range(lo.bit_length() - 1, -1, -1):
                dbls += not m_inf
                if (lo >> bit) & 1:
                    m_inf = add(m_inf, run_inf)
            acc_inf = add(acc_inf, m_inf)
    return adds, dbls


def test_the_bucket_reduction_by_hand_and_by_the_kernel_loop():
    # c = 4: 8 buckets, one segment: run += B, acc += run for each, the first two free
    assert floors.set_reduce(4) == (2 * 8 - 2, 0)
    # c = 6: 32 buckets, 2 segments of 16; the second adds 16 x run: 4 doublings, popcount 1
    assert floors.set_reduce(6) == (30 + 30 + 1, 4)
    # c = 16: 2048 segments of 16: 2048 x 30 + sum of popcount(16 s) = 11 x 2^10 additions;
    # doublings sum of (bitlen(s) + 3) for s < 2048 = (10 x 2^11 + 1) + 3 x 2047
    assert floors.set_reduce(16) == (2048 * 30 + 11 * 1024, 10 * 2048 + 1 + 3 * 2047)
    for c in (4, 5, 6, 9, 12):
        assert floors.set_reduce(c) == _set_reduce_by_the_kernel(c, 16)


def test_the_accumulation_takes_entries_minus_buckets_additions():
    # 10 points into 3 buckets by one thread: 7 mixed additions, no join
    assert floors.accumulation(10, 3, 1) == (7, 0)
    # two threads: the boundary falls inside a bucket with probability 1 - 2/10
    madd, full = floors.accumulation(10, 2, 2)
    assert full == pytest.approx(0.8)
    assert madd + full == pytest.approx(8)


def test_a_tiny_msm_counted_by_hand():
    # 32 points: c = 4 (log2 n - 4 < 4), 64 windows of 8 buckets, entries 32 x 64 = 2048 in
    # 64 threads of 32; building 512 buckets: 2048 - 512 additions, 63 boundaries x (1 -
    # 512 / 2048) of them full; reduction 64 sets x 14; one segment per set: no tree
    ops = floors.msm_ops("g1", 32)
    assert ops.madd + ops.add == pytest.approx(2048 - 512 + 64 * 14)
    assert ops.add == pytest.approx(63 * 0.75 + 64 * 14)
    assert ops.dbl == 0
    assert ops.products("g1") == pytest.approx(ops.madd * 11 + ops.add * 16)


def test_the_ones_of_a_split_msm_are_one_bucket():
    ops = floors.ones_ops("g1", 100)  # 4 threads of 32 points: 3 boundaries, all inside
    assert ops.madd + ops.add == pytest.approx(99)
    assert ops.add == pytest.approx(3 * (1 - 1 / 100))


def test_the_ntt_counts_by_hand():
    # 4 points, one pass: stage 0 two butterflies by w^0 (no product), stage 1 two with
    # one product each; the block's 3 twiddles one product each; bit reversal + pass
    assert floors.ntt_ops(2) == (2 + 3, 2 * 2 * 4 * 32)
    # 2^24: three passes of 8 stages; 2^23 x 23 butterfly products, 2^16 blocks x 255
    prod, hbm = floors.ntt_ops(24)
    assert prod == 2**23 * 23 + 2**16 * 255
    assert hbm == 4 * 2 * 2**24 * 32


def test_the_report_reads_the_measured_figures(tmp_path):
    rows = [
        {"what": "link", "bytes": 2 << 30, "ms": 40.0},
        {"what": "msm_g1", "form": "gpu", "log2": 20, "ms": 14.2},
        {"what": "ntt", "log2": 24, "ms": 6.6},
    ]
    got = floors.measured(rows)
    assert got["link_bytes_s"] == pytest.approx((2 << 30) / 0.040)
    out = {r["figure"]: r for r in floors.report(rows)}
    g1 = out["msm_g1 2^20"]
    assert g1["measured_s"] == pytest.approx(0.0142)
    assert g1["measured_over_floor"] == pytest.approx(0.0142 / g1["floor_s"])
    # the NTT's floor: its products at the peak rate (HBM is faster)
    ntt = out["ntt 2^24"]
    assert ntt["floor_s"] == pytest.approx((2**23 * 23 + 2**16 * 255) * 264 / (132 * 1.98e9 * 64))
    assert out["partition streamed"]["measured_s"] is None
    # the streamed partition moves every key and scalar byte over PCIe; the resident one
    # only a/b/c (12 GiB at 2^27) and the witness's scalars
    assert out["partition streamed"]["pcie_bytes"] > 3 * out["partition resident"]["pcie_bytes"]
    assert out["partition resident"]["pcie_bytes"] >= 3 * 2**27 * 32
    json.dumps(out)  # the --out rows are plain JSON


def test_a_tiny_precomputed_msm_has_one_bucket_set():
    # 32 points over tables: c = ceil(log2 32) = 5, 52 tables, 1664 entries into one set
    # of 16 buckets in 52 threads of 32; one segment: 2 x 16 - 2 additions, no tree
    ops = floors.msm_ops("g1", 32, precomputed=True)
    assert ops.madd + ops.add == pytest.approx(1664 - 16 + 30)
    assert ops.add == pytest.approx(51 * (1 - 16 / 1664) + 30)
