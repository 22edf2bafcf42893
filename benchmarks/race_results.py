"""After the race device call (benchmarks/race_device_call.sh): per race cap, the model's
registered P(OOM), the real OOMs of runs, |P_model - P_real|, whether the model's P lies
in the real 95 % Wilson interval, the card the runs really had and the model's P there
(read from the curve registered before the call, benchmarks/race_model_curve.py), the
buffers that failed and the mean run time; then each configuration's OOM frequency in the
early and the late rounds (a drift of the card over the call?).

Usage: python benchmarks/race_results.py DIR [MODEL_CURVE_JSON]
(DIR holds the call's summary.json and real.jsonl.gz; the curve defaults to
docs/validation/h200-2026-12-03-races/model-curve.json)
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

MIB = 1 << 20
CURVE = "docs/validation/h200-2026-12-03-races/model-curve.json"


def main() -> None:
    d = Path(sys.argv[1])
    curve = json.loads(Path(sys.argv[2] if len(sys.argv) > 2 else CURVE).read_text())
    summary = json.loads((d / "summary.json").read_text())["summary"]
    reals = [
        json.loads(line)
        for line in gzip.decompress((d / "real.jsonl.gz").read_bytes()).splitlines()
    ]
    by = defaultdict(list)
    for r in reals:
        by[r["key"]].append(r)
    for row in summary["races"]:
        points = {int(v): p for v, p in curve["configs"][row["config"]]["curve"]}
        at = []
        for a in row["achieved_vram"]:  # the curve's point at or just below the real card
            below = max((v for v in points if v <= a), default=min(points))
            at.append(f"{a / MIB:.2f} MiB: P {points[below]:.3f}")
        runs = by[row["key"]]
        bufs: dict[str, int] = defaultdict(int)
        for r in runs:
            if r["real"]["oom"]:
                bufs[r["real"]["first_oom_buffer"]] += 1
        wall = sum(r["wall_s"] for r in runs) / len(runs)
        print(
            f"{row['key']:34} model {row['model_p']:.3f}  real {row['real_ooms']:2} of "
            f"{row['real_runs']:2}  |diff| {abs(row['error']):.2f}  within {row['within']}  "
            f"in interval {row['in_interval']}  at the real card {'; '.join(at)}  "
            f"failed {dict(bufs)}  {wall:.2f} s/run"
        )
    print("criteria:", summary["criteria"])
    for cfg in sorted({r["config"] for r in reals}):
        rs = [r for r in reals if r["config"] == cfg]
        half = max(r["repeat"] for r in rs) // 2
        early = [r["real"]["oom"] for r in rs if r["repeat"] <= half]
        late = [r["real"]["oom"] for r in rs if r["repeat"] > half]
        print(
            f"{cfg:26} OOMs in rounds 0-{half}: {sum(early)} of {len(early)}; later "
            f"{sum(late)} of {len(late)}"
        )
    walls = sorted(r["wall_s"] for r in reals)
    print(
        f"{len(reals)} runs; first {reals[0]['wall_s']:.1f} s, median "
        f"{walls[len(walls) // 2]:.2f} s, all {sum(walls):.0f} s"
    )


if __name__ == "__main__":
    main()
