"""Fit the h200 profile's `[jitter]` table from the committed H200 gpu-run logs, and plot
measured vs fitted.

Reads the CUZK_SIM_STEP lines of docs/validation/h200-2026-12-0*/calib/*.log and
docs/validation/h200-2026-12-03-production/w*.log (27 runs of `cuzk-sim gpu-run`, one
process each). The between-run component compares only runs of identical prover code:
the calib logs of 2c8dbf8 and e1937a8 (2c8dbf8 is e1937a8's child and changes no file of
gpu/, cuzk_sim/gpu or scenarios/validation); every other folder is its own code group
(their step means differ by the code changes between them, not by noise).

Prints, per kind, the components, the family chosen and the held-out log-likelihood and
KS distance of each family; writes docs/jitter-h200.png (per kind: the histogram of the
per-step ratios d / (step mean in its run x partition factor) with the three fitted
densities) and, with --write-profile, replaces the [jitter] table of
cuzk_sim/profiles/h200.toml.

    python3 benchmarks/jitter_fit_h200.py [--write-profile] [--png docs/jitter-h200.png]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cuzk_sim.logs.jitter_fit import (  # noqa: E402
    FAMILIES,
    fit_family,
    fit_jitter,
    frozen,
    jitter_table,
)
from cuzk_sim.logs.toml_out import dumps  # noqa: E402

SAME_CODE = {"h200-2026-12-01-2c8dbf8": "h200-2026-12-01-e1937a8"}
PROFILE = ROOT / "cuzk_sim" / "profiles" / "h200.toml"


def logs() -> tuple[list[Path], list[int]]:
    paths = sorted(ROOT.glob("docs/validation/h200-2026-12-0*/calib/*.log"))
    paths += sorted(ROOT.glob("docs/validation/h200-2026-12-03-production/w*.log"))
    folder = [
        SAME_CODE.get(p.parent.parent.name, p.parent.parent.name)
        if p.parent.name == "calib"
        else p.parent.name
        for p in paths
    ]
    ids = {f: i for i, f in enumerate(sorted(set(folder)))}
    return paths, [ids[f] for f in folder]


def plot(fits, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 4
    rows = math.ceil(len(fits) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows))
    for ax, f in zip(axes.flat, fits, strict=False):
        xs = sorted(x for _, x in f.residuals)
        lo, hi = xs[int(0.002 * len(xs))], xs[int(0.998 * len(xs)) - 1]
        ax.hist(xs, bins=60, range=(lo, hi), density=True, color="0.75", label="measured")
        grid = [lo + (hi - lo) * i / 300 for i in range(301)]
        for fam, style in zip(FAMILIES, ("-", "--", ":"), strict=True):
            d = frozen(fam, fit_family(fam, xs))
            mark = " (chosen)" if fam == f.family else ""
            ax.plot(grid, d.pdf(grid), style, label=f"{fam}{mark}")
        ax.set_title(
            f"{f.kind}: {f.samples} steps, {f.runs} runs\n"
            f"step {f.step_rel:.1%} ({f.family}), partition {f.partition_rel:.1%}, "
            f"run {f.run_rel:.1%}",
            fontsize=8,
        )
        ax.set_xlabel("d / (step mean in its run x partition factor)", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(fits) :]:
        ax.axis("off")
    fig.suptitle("H200 gpu-run step durations: measured spread vs fitted families", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def write_profile(table: dict) -> None:
    text = PROFILE.read_text()
    start = text.find("\n[jitter]")
    if start >= 0:  # the [jitter] table and its sub-tables run to the end of the file
        text = text[:start].rstrip("\n") + "\n"
    body = dumps({"jitter": table})
    PROFILE.write_text(text + "\n" + body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-profile", action="store_true")
    ap.add_argument("--png", type=Path, default=ROOT / "docs" / "jitter-h200.png")
    args = ap.parse_args()
    paths, groups = logs()
    fits = fit_jitter(paths, groups)
    print(f"{len(paths)} logs, {len(set(groups))} code groups")
    head = f"{'kind':18} {'steps':>6} {'runs':>4} {'pairs':>5} {'run':>7} {'part':>7} "
    print(head + f"{'step':>7} family     held-out log-lik (ln/norm/gamma)   KS (ln/norm/gamma)")
    for f in fits:
        ll = "/".join(f"{f.heldout_loglik[k]:.3f}" for k in FAMILIES)
        ks = "/".join(f"{f.heldout_ks[k]:.3f}" for k in FAMILIES)
        print(
            f"{f.kind:18} {f.samples:6d} {f.runs:4d} {f.run_pairs:5d} {f.run_rel:7.1%} "
            f"{f.partition_rel:7.1%} {f.step_rel:7.1%} {f.family:10} {ll:34} {ks}"
        )
    names = sorted({str(p.relative_to(ROOT).parent) for p in paths})
    table = jitter_table(paths, [f"{n}/*.log" for n in names], groups)
    assert table is not None
    table["source"] += (
        " Between-run component from runs of identical prover code only (2c8dbf8 and "
        "e1937a8, benchmarks/jitter_fit_h200.py)."
    )
    plot(fits, args.png)
    print(f"wrote {args.png}")
    if args.write_profile:
        write_profile(table)
        print(f"wrote the [jitter] table of {PROFILE}")
    else:
        print(dumps({"jitter": table}))


if __name__ == "__main__":
    main()
