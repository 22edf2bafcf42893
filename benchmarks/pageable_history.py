"""The production grids' pageable host-to-device copies, copy by copy (issue 24).

Usage: python3 benchmarks/pageable_history.py GRID [GRID...]

For each fitting run of each GRID (a `validate` folder whose real.jsonl has
details.timeline), every copy of the partition inputs (upload_a, upload_bc, upload_witness,
upload_scalars_a / _b) that went up from pageable memory: its bytes (today's plan of the
configuration: the shapes did not change), ms, GiB/s, the run's place in its process (a
process starts where the run found >= 130 GB available: nothing held), the partition's
index in the run, and how much of the copy another worker's host-to-device copy overlapped.
Streamed configurations count as pageable only in a grid whose README does not say
`pinned` (grid-v2 ran them pageable; grid-v3 pinned). Prints a summary per (grid,
domain, step, plan kind, workers) and the per-partition sums of the chunk plans.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from cuzk_sim.steps.copy import Copy
from cuzk_sim.validation.grid import read_reals
from cuzk_sim.validation.spec import load_spec

INPUTS = ("upload_a", "upload_bc", "upload_witness", "upload_scalars_a", "upload_scalars_b")
GIB = 1 << 30
FRESH = 130e9  # available bytes at a run's start: a process holding nothing


def step_bytes(spec_path: str = "scenarios/validation/h200-production.toml") -> dict:
    out = {}
    for c in load_spec(spec_path).configs:
        for s in c.scenario.plans["porep"].steps:
            if isinstance(s, Copy) and s.name in INPUTS:
                out[(c.name, s.name)] = s.bytes
    return out


def overlap(a: float, b: float, others: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(b, y) - max(a, x)) for x, y in others)


def copies(grid: Path, sizes: dict) -> list[dict]:
    streamed_pinned = (
        "pinned" in (grid / "README.md").read_text() if (grid / "README.md").exists() else False
    )
    rows, proc, order = [], 0, 0
    for rec in read_reals(grid / "real.jsonl"):
        host = rec["details"].get("host", {})
        if host.get("available_bytes", 0) >= FRESH:
            proc, order = proc + 1, 0
        order += 1
        if rec["real"].get("oom") or "timeline" not in rec["details"]:
            continue
        cfg = rec["config"]
        if "stream" in cfg and streamed_pinned:
            continue
        spans = rec["details"]["timeline"]["spans"]
        parts = sorted((s for s in spans if s[2] == "partition"), key=lambda s: s[3])
        htod = [s for s in spans if s[2] == "copy" and s[1].startswith("upload")]
        for i, (w, _, _, pa, pb) in enumerate(parts):
            for _, n, _, a, b in (
                s for s in spans if s[0] == w and s[1] in INPUTS and pa <= s[3] < pb
            ):
                others = [(x[3], x[4]) for x in htod if x[0] != w]
                nb = sizes[(cfg, n)]
                rows.append(
                    dict(
                        grid=grid.name,
                        proc=proc,
                        order=order,
                        run=rec["key"],
                        cfg=cfg,
                        domain=int(cfg[-2:]),
                        workers=int(cfg[1]),
                        kind=cfg.split("-")[1],
                        part=i,
                        step=n,
                        bytes=nb,
                        ms=(b - a) / 1e3,
                        gib_s=nb / GIB / ((b - a) / 1e6),
                        beside=overlap(a, b, others) / (b - a),
                    )
                )
    return rows


def summary(rows: list[dict]) -> list[str]:
    groups = defaultdict(list)
    for r in rows:
        groups[(r["grid"], r["domain"], r["step"], r["kind"], r["workers"])].append(r)
    out = [
        "| grid | 2^ | step | GiB | plan | workers | n "
        "| GiB/s min / median / max | beside another copy |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for k, g in sorted(groups.items()):
        v = [r["gib_s"] for r in g]
        out.append(
            f"| {k[0]} | {k[1]} | {k[2]} | {g[0]['bytes'] / GIB:.2f} | {k[3]} | {k[4]} | {len(g)} "
            f"| {min(v):.2f} / {statistics.median(v):.2f} / {max(v):.2f} "
            f"| {statistics.mean(r['beside'] for r in g):.0%} |"
        )
    return out


def per_partition(rows: list[dict]) -> list[str]:
    sums = defaultdict(float)
    for r in rows:
        if r["kind"] == "chunk":
            sums[(r["grid"], r["proc"], r["order"], r["run"], r["part"])] += r["ms"]
    runs = defaultdict(list)
    for (g, p, o, run, _i), ms in sorted(sums.items()):
        runs[(g, p, o, run)].append(ms)
    out = [
        "| grid | process / run # | run | pageable input ms per partition, in order |",
        "|---|---|---|---|",
    ]
    for (g, p, o, run), v in runs.items():
        out.append(f"| {g} | {p} / {o} | {run} | {' '.join(f'{x:.0f}' for x in v)} |")
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    sizes = step_bytes()
    rows = [r for g in argv for r in copies(Path(g), sizes)]
    print("\n".join(summary(rows) + [""] + per_partition(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
