"""Outputs a refactor of gpu/ must leave byte-identical (issue 29): the dry-run plans of
`cuzk-sim gpu-plan --json` over a grid of domains and flags, `gpu-run --device dry-run
--json` of the validation base scenario, and `run --json` of each gate scenario.

    python benchmarks/gpu_refactor_snapshot.py write DIR    # before the refactor
    python benchmarks/gpu_refactor_snapshot.py check DIR    # after: exit 1 on a difference

Runs in-process (typer's CliRunner), no GPU. Each output is one file in DIR.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).resolve().parent.parent
FLAG_SETS = {
    "default": [],
    "prestage-pinned": ["--prestage", "--pinned"],
    "memory-aware-short": ["--prestage", "--memory-aware", "--assume-free-bytes", "1000"],
    "async": ["--allocator", "async", "--no-free-bc-early"],
    "pinned-overlap": ["--key-pinned", "--overlap-uploads"],
    "porep-split": ["--witness", "porep", "--split-msm"],
    "budget": ["--key-pinned", "--overlap-uploads", "--vram-budget", "14 GiB"],
    "budget-porep-split": ["--witness", "porep", "--split-msm", "--vram-budget", "14 GiB"],
    "chunk": ["--msm-chunk", "4096"],
    "resident": ["--key-resident"],
    "tables": ["--key-resident", "--key-tables"],
    "snarkjs": ["--reduction", "snarkjs", "--witness", "sha256"],
}
DOMAINS = (10, 20, 27)
# at 2^27 a chunk of 4096 is beyond the dry run's chunk limit: the refusal is snapshotted
SCENARIOS = sorted((ROOT / "scenarios" / "gate").glob("*.toml"))


def outputs() -> dict[str, tuple[int, str]]:
    """name -> (exit code, output) of every command of the snapshot."""
    runner = CliRunner()
    out: dict[str, tuple[int, str]] = {}

    def call(name: str, args: list[str]) -> None:
        r = runner.invoke(app, args)
        out[name] = (r.exit_code, r.output)
        print(f"{name}: exit {r.exit_code}, {len(r.output)} chars", file=sys.stderr)

    for log2 in DOMAINS:
        for label, flags in FLAG_SETS.items():
            call(
                f"gpu-plan-{log2}-{label}",
                ["gpu-plan", "--domain-log2", str(log2), "--json", *flags],
            )
    base = ROOT / "scenarios" / "validation" / "base.toml"
    call("gpu-run-dry-base", ["gpu-run", str(base), "--device", "dry-run", "--json"])
    # a dry run's times are the host's wall clock: every decimal number is masked
    code, text = out["gpu-run-dry-base"]
    out["gpu-run-dry-base"] = (code, re.sub(r"[0-9]+\.[0-9]+", "N", text))
    for scn in SCENARIOS:
        call(f"run-{scn.stem}", ["run", str(scn), "--json"])
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("write", "check"):
        print(__doc__)
        return 2
    folder = Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    bad = 0
    for name, (code, text) in outputs().items():
        # a plan names the source line of each allocation: a move shifts the lines, not
        # the files (a buffer allocated in another file than before still differs)
        body = f"exit {code}\n" + re.sub(r"(/gpu/[a-z_]+\.py):[0-9]+", r"\1:L", text)
        path = folder / f"{name}.txt"
        if argv[0] == "write":
            path.write_text(body)
            continue
        before = path.read_text() if path.exists() else None
        same = before == body
        bad += not same
        digest = hashlib.sha256(body.encode()).hexdigest()[:12]
        print(f"{'same' if same else 'DIFFERENT'} {name} {digest}")
    if argv[0] == "check":
        print(f"{bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
