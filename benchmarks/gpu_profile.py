"""One run of each heavy kernel, for a hardware-counter profile under Nsight Compute.

Usage (device machine):
  ncu --clock-control none --kernel-name regex:'acc_balanced|set_reduce|ntt_group|ntt_pass' \
      --section SpeedOfLight --section Occupancy --section WarpStateStats \
      python3 benchmarks/gpu_profile.py [--log2-msm 20] [--log2-ntt 24] [--variants old,new]
Runs: G1 MSM 2^k signed under each kernel variant (gpu_bench.VARIANTS: old = the field
product's baseline, new = the defaults), then the NTT 2^m with fr_ntt_group_tw (the NTT's
baseline) and fr_ntt_pass (the default).
Each once after a warm-up call at 2^12 (so NVRTC compiles outside the profiled launches).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from gpu_bench import VARIANTS, _points, _scalars, kernels  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2-msm", type=int, default=20)
    ap.add_argument("--log2-ntt", type=int, default=24)
    ap.add_argument("--variants", default="old,new", help="MSM variants (gpu_bench)")
    args = ap.parse_args()
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        ap.error(f"--variants: unknown {sorted(unknown)}; known: {sorted(VARIANTS)}")
    import cupy as cp
    from cuzk_sim.gpu import ntt as gntt
    from cuzk_sim.gpu.device import Buffer, Device
    from cuzk_sim.gpu.msm import msm
    from cuzk_sim.reference.domain import Domain

    n = 1 << args.log2_msm
    pts = Buffer("points", 0, _points(cp, "g1", n).reshape(-1))
    sc = Buffer("scalars", 0, _scalars(cp, n, 1).reshape(-1))
    for warm in (True, False):
        m = 1 << 12 if warm else n
        for variant in variants:
            with kernels(variant):
                msm(Device("real"), "msm", "g1", pts, sc, m, algo="signed")
    k = args.log2_ntt
    t = gntt.DeviceTables.from_buffer(
        cp.asarray(gntt.domain_tables(k, Domain(1 << k).omega, 7, 1).pack()), k
    )
    a = _scalars(cp, 1 << k, 2).reshape(-1)
    runs = (("new", "fr_ntt_group_tw"), ("new", "fr_ntt_pass"))
    for variant, name in runs:
        with kernels(variant):
            gntt.ntt(a, t, name)
    cp.cuda.Device().synchronize()
    print(f"profiled: msm g1 2^{args.log2_msm} {variants}; ntt 2^{k} group_tw, pass")


if __name__ == "__main__":
    main()
