"""Floors for the figures of issue 23, computed from what OUR kernels do and the H200's
published figures; each printed beside the measured figure and measured / floor.

What is counted (read from the kernels, gpu/kernels/*.cu, and the shapes of gpu/msm.py,
gpu/ntt.py; the partitions' kernels and copies from the dry-run plan that the prover runs):
- a field product is one Montgomery CIOS product of L 32-bit limbs (Fr L = 8, Fq L = 12):
  L^2 partial products a_i b_j and L^2 m q_j, each 32 x 32 -> 64 bits = 2 multiply-add
  results (lo, hi: PTX mad.lo / mad.hi, which ptxas fuses into IMAD.WIDE), and L products
  m = t_0 q' mod 2^32 (lo only): 4 L^2 + L results (Fr 264, Fq 588); squares are products
  (kernels/field.cuh: FIELD_SQR retired); Fq2: a product 3 Fq products, a square 2;
- curve formulas (kernels/curve.cuh, a = 0): mixed addition madd-2007-bl 7 M + 4 S,
  addition add-2007-bl 11 M + 5 S, doubling dbl-2009-l 2 M + 5 S (G1: 11 / 16 / 7 Fq
  products; G2: 29 / 43 / 16);
- the signed Pippenger (kernels/msm_signed.cu, `SignedShape`): c-bit windows, W = ceil(256
  / c), entries n W (digits 0 have probability ~2^-c: not subtracted); building the
  buckets takes entries - buckets additions whatever the split among threads (k points
  summed into one take k - 1), of which those joining pieces of a bucket that crosses a
  thread boundary (`*_acc_level`) are full additions: threads x (1 - buckets / entries)
  expected crossings, the rest mixed; `*_set_reduce` per segment of seg_len buckets: 2
  seg_len running-sum additions (the first two onto infinity, free) and for lo = s
  seg_len > 0 the 32-bit multiple lo x run (bitlen(lo) - 1 doublings and popcount(lo) - 1
  additions, the first of each onto infinity) plus one addition; `*_sum_groups`: segments -
  1 additions per set; the Horner over the windows runs on the host (not counted);
- the split MSM (gpu/msm_split.py): the ones summed by the balanced accumulation as one
  bucket (ones - 1 additions, the threads' crossings full), the rest by the Pippenger;
- the NTT (kernels/ntt.cu fr_ntt_pass): n/2 log n butterflies, one Fr product each but at
  global stage 0; the last pass computes its block's 2^k - 1 twiddles with one product
  each (an upper bound: a twiddle whose table part is 1 takes none), the passes before
  load them; memory: the bit reversal and each pass read and write the vector once;
  scale factors: 1/n one product, g^j two (the power from two tables, then the element),
  the coset iNTT's post pass three; pointwise: Montgomery conversion 1, the quotient 2;
- HBM bytes of an MSM: the scalars read twice (count, scatter), the sorted order written
  and read (4 B per entry, twice), one point load per entry, the buckets written and read.

H200 published figures (stated assumptions): 132 SMs (H200 SXM, the GH100 of the H100
SXM5: NVIDIA H100 Tensor Core GPU Architecture whitepaper); 1.98 GHz max SM clock
(nvidia-smi's max clock of the H100/H200 SXM); 64 results of 32-bit integer multiply /
multiply-add per clock per SM for compute capability 9.0 (CUDA C++ Programming Guide,
"Arithmetic Instructions" throughput table) -- ASSUMPTION: an IMAD.WIDE (32 x 32 -> 64)
costs two of them (our fr_mul_rate measured 47.6 G Fr products/s = 12.6 T results/s at
264 per product, 75 % of this peak; were IMAD.WIDE full rate the compute floors would
halve); HBM3e 4.8 TB/s (NVIDIA H200 datasheet); PCIe: the link measured in the same call
(pinned HtoD, 2 GiB copies: the `link` row of production.json).

Usage: python3 benchmarks/gpu_floors.py [--json production.json] (no GPU, no CuPy)
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JSON = ROOT / "docs/validation/h200-2026-12-03-production/rerun/s23/production.json"

SMS = 132
CLOCK_HZ = 1.98e9
IMAD_PER_SM_CLK = 64
HBM_BYTES_S = 4.8e12
IMAD_S = SMS * CLOCK_HZ * IMAD_PER_SM_CLK  # 16.7 T multiply-add results per second
GIB = 1 << 30

LIMBS = {"fr": 8, "fq": 12}
# (products, squares) of each curve formula (kernels/curve.cuh)
FORMULAS = {"madd": (7, 4), "add": (11, 5), "dbl": (2, 5)}
# base-field products per field product / square of the curve's field
FIELD_COST = {"g1": (1, 1), "g2": (3, 2)}
POINT_BYTES = {"g1": 96, "g2": 192}
JACOBIAN_BYTES = {"g1": 144, "g2": 288}


def imad_per_product(limbs: int) -> int:
    """32-bit multiply-add results of one CIOS Montgomery product of `limbs` limbs."""
    return 4 * limbs * limbs + limbs


def formula_products(group: str, formula: str) -> int:
    """Fq products of one curve formula on `group` (G2: over Fq2)."""
    m, s = FORMULAS[formula]
    pm, ps = FIELD_COST[group]
    return m * pm + s * ps


@dataclass
class Ops:
    """Curve operations (GPU) and the HBM bytes they move."""

    madd: float = 0.0
    add: float = 0.0
    dbl: float = 0.0
    hbm_bytes: float = 0.0

    def __iadd__(self, o: Ops) -> Ops:
        self.madd += o.madd
        self.add += o.add
        self.dbl += o.dbl
        self.hbm_bytes += o.hbm_bytes
        return self

    def products(self, group: str) -> float:
        return sum(getattr(self, f) * formula_products(group, f) for f in FORMULAS)


def accumulation(entries: int, buckets: int, threads: int) -> tuple[float, float]:
    """(mixed, full) additions that sum `entries` sorted points into `buckets` non-empty
    buckets with `threads` equal ranges: entries - buckets in all; a thread boundary
    inside a bucket (probability 1 - buckets / entries) costs one full addition."""
    if entries <= buckets:
        return 0.0, 0.0
    crossings = max(0, threads - 1) * (1.0 - buckets / entries)
    return entries - buckets - crossings, crossings


def set_reduce(c: int, segment_len: int = 16) -> tuple[int, int]:
    """(additions, doublings) of `*_set_reduce` over one set of 2^(c-1) buckets."""
    per_set = 1 << (c - 1)
    segs = max(1, per_set // segment_len)
    seg_len = per_set // segs
    adds = dbls = 0
    for s in range(segs):
        adds += 2 * seg_len - 2
        lo = s * seg_len
        if lo:
            dbls += lo.bit_length() - 1
            adds += bin(lo).count("1")  # popcount - 1 in the multiple, + 1 onto acc
    return adds, dbls


def msm_ops(group: str, n: int, precomputed: bool = False) -> Ops:
    """The signed Pippenger of n random scalars, as msm_signed.cu runs it (`precomputed`:
    over the fixed-base tables, one bucket set, `key_tables`)."""
    from cuzk_sim.gpu.msm import SEGMENT_LEN, SignedShape

    if n <= 0:
        return Ops()
    sh = SignedShape.of(group, n, precomputed)
    entries = n * sh.windows
    madd, full = accumulation(entries, sh.buckets, sh.acc_threads)
    adds, dbls = set_reduce(sh.c, SEGMENT_LEN)
    tree = sh.sets * (sh.segments - 1)
    hbm = 2 * n * 32 + 2 * 4 * entries + entries * POINT_BYTES[group]
    hbm += 2 * sh.buckets * JACOBIAN_BYTES[group]
    return Ops(madd, full + sh.sets * adds + tree, sh.sets * dbls, hbm)


def ones_ops(group: str, ones: int) -> Ops:
    """The split MSM's sum of the ones' points: one bucket of the balanced accumulation."""
    from cuzk_sim.gpu.msm import MAX_ACC_THREADS, MIN_ACC_CHUNK

    if ones <= 0:
        return Ops()
    chunk = max(MIN_ACC_CHUNK, -(-ones // MAX_ACC_THREADS))
    madd, full = accumulation(ones, 1, -(-ones // chunk))
    return Ops(madd, full, 0.0, ones * (POINT_BYTES[group] + 4))


def ntt_ops(log_n: int) -> tuple[float, float]:
    """(Fr products, HBM bytes) of one fr_ntt_pass transform of 2^log_n (no factors)."""
    from cuzk_sim.gpu.ntt import pass_groups

    n = 1 << log_n
    groups = pass_groups(log_n)
    products = (n // 2) * max(0, log_n - 1)
    k_last = groups[-1][1]
    products += (n >> k_last) * ((1 << k_last) - 1)  # the last pass's twiddles
    passes = len(groups) + 1  # + the bit reversal
    return float(products), float(passes * 2 * n * 32)


# per-element Fr products and vector moves (read + write of n x 32 B) of the NTT phase's
# steps beyond the transforms (gpu/compute_h.py, gpu/ntt.py Scale, kernels/field_ops.cu)
NTT_PHASE_EXTRA = {
    "to_mont": (1, 2),
    "intt": (1, 0),  # 1/n folded into the bit reversal
    "coset_ntt": (2, 0),  # g^j = hi * lo, then the element
    "quotient": (2, 4),  # (a b - c) zinv: reads a, b, c, writes a
    "coset_intt": (4, 2),  # 1/n in the bit reversal; fr_coset_scale pass: 3
    "from_mont": (1, 2),
}


def ntt_phase_ops(log_n: int, kernels: list[str]) -> tuple[float, float]:
    """(Fr products, HBM bytes) of the compute_h kernels named in a plan."""
    n = 1 << log_n
    prod = hbm = 0.0
    for name in kernels:
        step = name.split(".")[-1].rsplit("_", 1)[0] if "_" in name else name
        if step in ("intt", "coset_ntt", "coset_intt"):
            p, b = ntt_ops(log_n)
            prod, hbm = prod + p, hbm + b
        per, moves = NTT_PHASE_EXTRA.get(step, (0, 0))
        prod += per * n
        hbm += moves * n * 32
    return prod, hbm


@dataclass
class Work:
    """What a figure's GPU work comes to: products of each field, HBM and PCIe bytes."""

    fq_products: float = 0.0
    fr_products: float = 0.0
    hbm_bytes: float = 0.0
    pcie_bytes: float = 0.0

    def add_ops(self, group: str, ops: Ops) -> None:
        self.fq_products += ops.products(group)
        self.hbm_bytes += ops.hbm_bytes

    def imad(self) -> float:
        return self.fq_products * imad_per_product(12) + self.fr_products * imad_per_product(8)

    def floors(self, link_bytes_s: float) -> dict[str, float]:
        """Seconds: integer throughput, HBM, PCIe, and the floor (the largest: the three
        fully overlapped)."""
        out = {
            "compute_s": self.imad() / IMAD_S,
            "hbm_s": self.hbm_bytes / HBM_BYTES_S,
            "pcie_s": self.pcie_bytes / link_bytes_s if self.pcie_bytes else 0.0,
        }
        out["floor_s"] = max(out.values())
        return out


def split_work(group: str, n: int, witness: str) -> Work:
    """The split MSM of n scalars of `witness`'s shape: classification, ones, rest."""
    from cuzk_sim.gpu.witness_shape import witness_shape

    _, ones, rest = witness_shape(witness).split(n)
    w = Work(hbm_bytes=n * (32 + 4))  # split_scalars: read the scalars, write the index
    w.add_ops(group, ones_ops(group, ones))
    w.add_ops(group, msm_ops(group, rest))
    return w


def plan_work(plan, steady: bool = True, stages: tuple[str, ...] | None = None) -> Work:
    """The GPU work of a dry-run plan: its MSM, ones-sum, NTT-phase and split kernels and
    its HtoD copies (`steady`: without the copies and kernels that fill a resident buffer,
    which only a device's first partition runs). `stages`: only those MSM stages' kernels
    (and no NTT phase, no copies)."""
    w, ntt_names = Work(), []
    log_n = int(plan.meta["domain_size"]).bit_length() - 1
    for s in plan.steps:
        if steady and getattr(s, "fills", None):
            continue
        if s.op == "copy" and s.direction == "HtoD" and stages is None:
            w.pcie_bytes += s.bytes
        if s.op != "kernel":
            continue
        stage = s.name.split(".")[0]
        if stages is not None and stage not in stages:
            continue
        if s.kind in ("msm_g1", "msm_g2"):
            w.add_ops(s.kind[-2:], msm_ops(s.kind[-2:], s.size))
        elif s.kind in ("batch_add_g1", "batch_add_g2"):
            w.add_ops(s.kind[-2:], ones_ops(s.kind[-2:], s.size))
        elif s.name.endswith(".split"):
            w.hbm_bytes += s.size * (32 + 4)
        elif stage == "compute_h" and stages is None:
            ntt_names.append(s.name)
    prod, hbm = ntt_phase_ops(log_n, ntt_names)
    w.fr_products += prod
    w.hbm_bytes += hbm
    return w


def partition_plans(log2: int = 27, witness: str = "porep", budget: int = 14 * GIB):
    """The streamed and the resident partition's dry-run plans, with production_bench.py's
    flags."""
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan

    shape = PartitionShape.synthetic(log2, witness=witness)
    common = {"key_pinned": True, "pinned": True, "split_msm": True, "overlap_uploads": True}
    streamed = ProverFlags(**common, vram_budget_bytes=budget)
    resident = ProverFlags(**common, key_resident=True)
    return shape, dry_run_plan(shape, streamed), dry_run_plan(shape, resident)


def measured(rows: list[dict]) -> dict[str, float]:
    """The measured seconds of each figure in a production_bench.py JSON."""
    out: dict[str, float] = {}
    for r in rows:
        what = r["what"]
        if what == "link":
            out["link_bytes_s"] = r["bytes"] / (r["ms"] / 1e3)
        elif what in ("msm_g1", "msm_g2") and r.get("form") == "gpu" and r["log2"] == 20:
            out[f"{what} 2^20"] = r["ms"] / 1e3
        elif what == "ntt" and r["log2"] == 24:
            out["ntt 2^24"] = r["ms"] / 1e3
        elif what == "split_msm" and r["case"] == "split" and r.get("group", "g1") == "g1":
            out[f"split_msm 2^{r['log2']}"] = r["ms"] / 1e3
        elif what == "partition":
            out[f"partition {r['config']}"] = r["gpu_s"]
            out[f"msm_h {r['config']}"] = r["traced_ms"]["msm_h"] / 1e3
    return out


def figures(witness: str = "porep") -> list[tuple[str, Work]]:
    """(name, work) of every figure of issue 23 (names as `measured`'s keys)."""
    shape, streamed, resident = partition_plans(witness=witness)
    out = [
        ("msm_g1 2^20", Work()),
        ("msm_g2 2^20", Work()),
    ]
    out[0][1].add_ops("g1", msm_ops("g1", 1 << 20))
    out[1][1].add_ops("g2", msm_ops("g2", 1 << 20))
    for group in ("g1", "g2"):  # the key_tables path, for comparison (not a target)
        out.append((f"{group} 2^20 precomputed", Work()))
        out[-1][1].add_ops(group, msm_ops(group, 1 << 20, precomputed=True))
    prod, hbm = ntt_ops(24)
    out.append(("ntt 2^24", Work(fr_products=prod, hbm_bytes=hbm)))
    out.append(("split_msm 2^24", split_work("g1", 1 << 24, witness)))
    out.append(("msm_h resident", plan_work(resident, stages=("msm_h",))))
    out.append(("msm_h streamed", plan_work(streamed, stages=("msm_h",))))
    out.append(("partition streamed", plan_work(streamed)))
    out.append(("partition resident", plan_work(resident)))
    return out


def report(rows: list[dict], witness: str = "porep") -> list[dict]:
    """One row per figure: its counts, floors, the measured seconds and their ratio."""
    got = measured(rows)
    link = got.get("link_bytes_s", 51.6 * GIB)
    out = []
    for name, w in figures(witness):
        f = w.floors(link)
        row = {
            "figure": name,
            "fq_products": w.fq_products,
            "fr_products": w.fr_products,
            "imad": w.imad(),
            "hbm_bytes": w.hbm_bytes,
            "pcie_bytes": w.pcie_bytes,
            **f,
            "measured_s": got.get(name),
        }
        row["measured_over_floor"] = row["measured_s"] / f["floor_s"] if got.get(name) else None
        out.append(row)
    return out


def _ms(s: float) -> str:
    return f"{1e3 * s:9.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=str(DEFAULT_JSON), help="production_bench.py's JSON")
    ap.add_argument("--witness", default="porep")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    args = ap.parse_args()
    rows = json.loads(Path(args.json).read_text())
    link = measured(rows).get("link_bytes_s", 51.6 * GIB)
    print(f"H200: {SMS} SMs x {CLOCK_HZ / 1e9:.2f} GHz x {IMAD_PER_SM_CLK} IMAD/clk = "
          f"{IMAD_S / 1e12:.2f} T multiply-add results/s (Fr product {imad_per_product(8)}, "
          f"Fq product {imad_per_product(12)}: {IMAD_S / imad_per_product(8) / 1e9:.1f} / "
          f"{IMAD_S / imad_per_product(12) / 1e9:.1f} G products/s); HBM "
          f"{HBM_BYTES_S / 1e12:.1f} TB/s; PCIe (measured) {link / GIB:.1f} GiB/s")  # fmt: skip
    print(f"{'figure':20s} {'Fq prod (G)':>11s} {'Fr prod (G)':>11s} {'HBM GB':>7s} "
          f"{'PCIe GiB':>8s} {'compute ms':>10s} {'HBM ms':>9s} {'PCIe ms':>9s} {'floor ms':>9s} "
          f"{'measured':>9s} {'x floor':>7s}")  # fmt: skip
    out = report(rows, args.witness)
    for r in out:
        meas = _ms(r["measured_s"]) if r["measured_s"] else "        -"
        ratio = f"{r['measured_over_floor']:7.2f}" if r["measured_over_floor"] else "      -"
        counts = (f"{r['fq_products'] / 1e9:11.3f} {r['fr_products'] / 1e9:11.3f} "
                  f"{r['hbm_bytes'] / 1e9:7.2f} {r['pcie_bytes'] / GIB:8.2f}")  # fmt: skip
        secs = (f"{_ms(r['compute_s']):>10s} {_ms(r['hbm_s'])} {_ms(r['pcie_s'])} "
                f"{_ms(r['floor_s'])}")  # fmt: skip
        print(f"{r['figure']:20s} {counts} {secs} {meas} {ratio}")
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
