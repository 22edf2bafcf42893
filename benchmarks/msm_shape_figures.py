"""The h200 profile's figures for MSMs over shaped scalars, from issue 23's device calls.

Reads docs/validation/h200-2026-12-03-issue23-call1/ and -call2/ production.json
(benchmarks/production_bench.py on the H200; neither is the 2^27 validation run these
figures re-price) and prints what cuzk_sim/profiles/h200.toml states:
- kernel.msm_g1 zero_share: call 1's key-resident msm_h at 2^27 ran over H's
  coefficients of a/b/c tiled from a 2^20 block, zero but every 128th (2^20 random among
  2^27 - 1), against call 2's over random coefficients: ratio = rest + zero_share x zeros.
- kernel.msm_g1 one_share: the signed Pippenger at 2^24 over the porep shape's scalars
  (51.59 % zeros, 48.41 % ones) against random ones, the mean of both calls' ratios:
  ratio = zero_share x 0.5159 + one_share x 0.4841.
- kernel.msm_g2 shares, derived (no G2 Pippenger over 0/1 scalars was measured): a 0 or 1
  costs the counting sort (signed_count / signed_scatter read only scalars: the same
  time in G1 and G2) and a 1 one mixed addition more; the G2 addition's extra time is
  the key-resident split msm_b_g2 minus msm_b_g1 (the same scalars, the same classify)
  over its ones; each absolute time over the G2 (G1) random-scalar price per point at
  2^24 (the profile's points).
- kernel.batch_add_g1 / _g2 (the split MSM's ones, summed by additions): each
  key-resident split MSM at 2^27 (msm_a, msm_b_g1, msm_l; msm_b_g2) and the 2^24 split,
  means of both calls, less their classify (`split_scalars`, priced as the profile's
  `pointwise` of n), by the shape's expected ones.
Usage: python3 benchmarks/msm_shape_figures.py
"""

from __future__ import annotations

import json
from pathlib import Path

from cuzk_sim.gpu.prover import PartitionShape
from cuzk_sim.gpu.witness_shape import witness_shape

from cuzk_sim.profiles.profile import load_profile

CALLS = [
    Path("docs/validation/h200-2026-12-03-issue23-call1/production.json"),
    Path("docs/validation/h200-2026-12-03-issue23-call2/production.json"),
]


def _rows(path: Path) -> tuple[dict, dict]:
    rows = json.loads(path.read_text())
    split = {  # G1's rows (a G2 row says "group": "g2"; none in these calls)
        r["case"]: r["ms"]
        for r in rows
        if r["what"] == "split_msm" and r.get("group", "g1") == "g1"
    }
    resident = next(r for r in rows if r.get("config") == "resident")["traced_ms"]
    return split, resident


def figures() -> dict[str, float]:
    """Every figure, in ms and shares (see the module docstring)."""
    (s1, res1), (s2, res2) = (_rows(p) for p in CALLS)
    prof = load_profile("h200")
    g1, g2, pw = prof.kernels["msm_g1"], prof.kernels["msm_g2"], prof.kernels["pointwise"]
    porep = witness_shape("porep")
    h = (1 << 27) - 1
    h_rest = 1 << 20
    r0 = res1["msm_h"] / res2["msm_h"]
    zero_g1 = (r0 - h_rest / h) / ((h - h_rest) / h)
    ratio = [s["pippenger, same scalars"] / s["pippenger, random scalars"] for s in (s1, s2)]
    r1 = sum(ratio) / 2
    one_g1 = (r1 - zero_g1 * porep.zero_fraction) / porep.one_fraction
    n24 = 1 << 24
    p_g1, p_g2 = g1.seconds(n24) / n24, g2.seconds(n24) / n24
    shape = PartitionShape.synthetic(27, witness="porep")
    sizes = {k: n for k, (_, n) in shape.msm_sizes().items()}
    ones = {k: porep.split(n)[1] for k, n in sizes.items()}
    mean = {k: (res1[k] + res2[k]) / 2 for k in ("msm_a", "msm_b_g1", "msm_b_g2", "msm_l")}
    add_extra = (mean["msm_b_g2"] - mean["msm_b_g1"]) * 1e-3 / ones["msm_b_g1"]
    zero_g2 = zero_g1 * p_g1 / p_g2
    one_g2 = (one_g1 * p_g1 + add_extra) / p_g2
    out = {
        "r0": r0,
        "r1": r1,
        "msm_g1.zero_share": zero_g1,
        "msm_g1.one_share": one_g1,
        "msm_g2.zero_share": zero_g2,
        "msm_g2.one_share": one_g2,
        "g2_extra_ns_per_one": add_extra * 1e9,
    }
    split24 = (s1["split"] + s2["split"]) / 2 - pw.seconds(n24) * 1e3
    out[f"batch_add_g1@{porep.split(n24)[1]}"] = split24
    for k in ("msm_b_g1", "msm_a", "msm_l", "msm_b_g2"):
        group = "g2" if k == "msm_b_g2" else "g1"
        out[f"batch_add_{group}@{ones[k]}"] = mean[k] - pw.seconds(sizes[k]) * 1e3
    return out


def main() -> None:
    for k, v in figures().items():
        print(f"{k}: {v:.6g}")


if __name__ == "__main__":
    main()
