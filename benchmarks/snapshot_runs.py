"""Snapshot the model's output for every bundled scenario, to hold a refactor to "no
number changed".

Writes, into a folder, `run --json` (stdout and exit status) of every scenarios/**/*.toml
(a file `run` refuses is snapshotted as refused: its message and status) and the gate's
model baseline as `gate --update-baseline` would write it (into a copy, so the committed
baseline is untouched), each through the CLI in a fresh interpreter. Compare two
snapshots byte for byte. Usage:

    python3 benchmarks/snapshot_runs.py snapshot FOLDER
    python3 benchmarks/snapshot_runs.py compare BEFORE AFTER
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cuzk_sim", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def snapshot(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for toml in sorted((ROOT / "scenarios").rglob("*.toml")):
        rel = toml.relative_to(ROOT)
        done = _cli("run", "--json", str(rel))
        name = str(rel).replace("/", "__")
        (folder / f"{name}.json").write_text(f"rc={done.returncode}\n{done.stdout}{done.stderr}")
        print(f"{rel}: rc={done.returncode}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "baseline.json"
        shutil.copy(ROOT / "scenarios" / "gate" / "baseline.json", copy)
        done = _cli("gate", "scenarios/gate", "--baseline", str(copy), "--update-baseline")
        text = copy.read_text().replace(str(copy), "BASELINE")
        (folder / "gate-baseline.json").write_text(f"rc={done.returncode}\n{text}")
        print(f"gate --update-baseline: rc={done.returncode}", flush=True)


def compare(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.iterdir()} | {p.name for p in after.iterdir()})
    differ = [
        n
        for n in names
        if not (before / n).exists()
        or not (after / n).exists()
        or (before / n).read_bytes() != (after / n).read_bytes()
    ]
    for n in differ:
        print(f"DIFFERS: {n}")
    print(f"{len(names) - len(differ)} of {len(names)} snapshots identical")
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("folder", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.cmd == "snapshot":
        snapshot(args.folder)
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
