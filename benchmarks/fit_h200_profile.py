"""Fit the h200 calibration profile to the GPU prover's recorded H200 figures.

Reads docs/history/2026-12-01-benchmarks.md (the measurements of 2026-12-01 morning,
moved out of docs/benchmarks.md), section "## GPU prover (H200)": the NTT / G1 MSM / G2
MSM rows of its table, the traced `compute_h` stage time at 2^20 and the a/b/c upload time
(pageable -> pinned) at 2^20. Prints the least-squares fits, their values at each row and
at 2^27, and the TOML values for cuzk_sim/profiles/h200.toml. Run it after the GPU
figures change, then update the profile, the gate scenarios' hand arithmetic and the
baseline in one commit (docs/simulator.md, "Calibration profile").

    python3 benchmarks/fit_h200_profile.py [docs/history/2026-12-01-benchmarks.md]
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

ROW = re.compile(r"^\|\s*(NTT|G1 MSM|G2 MSM)[^|]*\|\s*2\^(\d+)\s*\|\s*([\d.]+)\s*\|", re.M)
COMPUTE_H = re.compile(r"compute_h\s+([\d.]+)")
ABC_UPLOAD = re.compile(r"upload from\s+([\d.]+)\s+to\s+([\d.]+)\s*ms")
ABC_BYTES = 3 * 2**20 * 32  # a, b, c at 2^20


def section(text: str) -> str:
    start = text.index("## GPU prover (H200)")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def least_squares(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) minimising sum (a + b x - y)^2."""
    n = len(points)
    sx = sum(x for x, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * y for x, y in points)
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - b * sx) / n, b


def work(kind: str, n: int) -> float:
    return n * math.log2(n) if kind == "NTT" else float(n)


def main(path: str = "docs/history/2026-12-01-benchmarks.md") -> None:
    text = section(Path(path).read_text())
    rows: dict[str, list[tuple[int, float]]] = {}
    for kind, log2, ms in ROW.findall(text):
        rows.setdefault(kind, []).append((1 << int(log2), float(ms)))
    fits = {}
    for kind, anchor in (("NTT", 2**24), ("G1 MSM", 2**22), ("G2 MSM", 2**20)):
        pts = rows.get(kind)
        if not pts or len(pts) < 2:
            sys.exit(f"{path}: fewer than two {kind} rows in the GPU prover (H200) table")
        a, b = least_squares([(work(kind, n), ms) for n, ms in pts])
        fits[kind] = (a, b)
        fit = "/".join(f"{a + b * work(kind, n):.2f}" for n, _ in pts)
        meas = "/".join(f"{ms:g}" for _, ms in pts)
        sizes = ", ".join(f"2^{n.bit_length() - 1}" for n, _ in pts)
        print(f"{kind} ({sizes}): a = {a:.4g} ms, b = {b:.5g} ms per unit of work")
        print(f"  fit {fit} vs measured {meas}; at 2^27: {a + b * work(kind, 2**27):.1f} ms")
        print(
            f'  toml: time = "{a + b * work(kind, anchor):.3f} ms", size = {anchor}, '
            f'fixed = "{a:.4g} ms"'
        )
    h = COMPUTE_H.search(text)
    up = ABC_UPLOAD.search(text)
    if h is None or up is None:
        sys.exit(f"{path}: no 'compute_h <ms>' or 'upload from <ms> to <ms> ms' sentence")
    a, b = fits["NTT"]
    ntt20 = a + b * work("NTT", 2**20)
    pointwise = (float(h.group(1)) - 7 * ntt20) / 5
    print(f"pointwise: (compute_h {h.group(1)} - 7 x {ntt20:.3f}) / 5 = {pointwise:.3f} ms at 2^20")
    pageable, pinned = (float(v) for v in up.groups())
    gib_s = [ABC_BYTES / 2**30 / (ms / 1e3) for ms in (pageable, pinned)]
    print(
        f"copies: pageable {gib_s[0]:.2f} GiB/s ({pageable} ms), "
        f"pinned {gib_s[1]:.1f} GiB/s ({pinned} ms) for 96 MiB"
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
