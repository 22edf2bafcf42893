"""Plot and trace of the 24 h, 8-GPU farm: wall time and peak RSS of the CLI commands.

Targets (issue 14): `run FARM --plot p.png` < 30 s and < 500 MB RSS; `run FARM --plot
p.png --trace t.json` <= 60 s and <= 1 GB RSS, on the 2-core CI-class machine. Each
command runs under /usr/bin/time -v (wall clock, maximum resident set size); prints the
figures, the output sizes, the machine's load average and the verdicts. Usage:

    python3 benchmarks/sim_farm_views.py [scenario.toml] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[1] / "scenarios" / "farm-8gpu-24h.toml"


def timed(cmd: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds (user + system), max RSS in MB) of one command under
    /usr/bin/time -v. On a shared machine wall exceeds CPU by the time others ran."""
    proc = subprocess.run(
        ["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, check=False
    )
    if proc.returncode not in (0, 1):  # 1: an OOM predicted, still a finished run
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", proc.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    user = re.search(r"User time \(seconds\): ([\d.]+)", proc.stderr)
    system = re.search(r"System time \(seconds\): ([\d.]+)", proc.stderr)
    assert wall and rss and user and system, proc.stderr[-2000:]
    h, m, s = wall.groups()
    cpu = float(user.group(1)) + float(system.group(1))
    return int(h or 0) * 3600 + int(m) * 60 + float(s), cpu, int(rss.group(1)) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default=str(DEFAULT))
    parser.add_argument("--out", default=None, help="folder for p.png and t.json")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="farm-views-"))
    out.mkdir(parents=True, exist_ok=True)
    base = [sys.executable, "-m", "cuzk_sim", "run", args.scenario]
    runs = [
        ("plot", [*base, "--plot", str(out / "p.png")], 30.0, 500.0),
        (
            "plot + trace",
            [*base, "--plot", str(out / "p.png"), "--trace", str(out / "t.json")],
            60.0,
            1024.0,
        ),
    ]
    print(f"scenario     {args.scenario}")
    print(f"load avg     {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    for label, cmd, wall_max, rss_max in runs:
        wall, cpu, rss = timed(cmd)
        ok = wall <= wall_max and rss <= rss_max
        print(
            f"{label:13}{wall:6.1f} s wall, {cpu:6.1f} s CPU, {rss:6.0f} MB max RSS   "
            f"(target <= {wall_max:g} s, <= {rss_max:g} MB: {'met' if ok else 'NOT met'}"
            f"{'' if ok or cpu > wall_max else '; met in CPU time'})"
        )
    for f in ("p.png", "t.json"):
        print(f"{f:13}{(out / f).stat().st_size / 2**20:.1f} MiB  ({out / f})")


if __name__ == "__main__":
    main()
