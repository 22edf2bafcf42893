"""The production call's own runs in one process (issue 24): the 2^27 two-worker gpu-run
(one proof of two partitions of scenarios/validation/base.toml: PoRep witness shape, key
pinned, no msm_chunk), then the production grid resumed (validate
scenarios/validation/h200-production.toml --out GRID), so that the grid's 2^27 runs reuse
the key and inputs the first run made (the process's key store, gpu/hostdata.py): the key
is made once per call, not once per process. Both through the CLI's own commands, so the
outputs are what `gpu-run` and `validate` write.

Usage: python3 -P benchmarks/production_runs.py PROD_DIR GRID_DIR [--device real|dry-run]
                 [--order "w2-27 grid"]
  --order: the stages in order, each `grid` or `w2-<log2>` (a two-worker gpu-run of one
  proof of two partitions at that domain: 26 after the grid reuses the grid's 2^26 key);
  writes PROD_DIR/w2-<log2>.{json,log,details.json} and GRID_DIR/real.jsonl (one line per
  run as it ends: the caller may stop the process at any time after the first run).
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

from cuzk_sim.cli import app

PROD = [
    "scenarios/validation/base.toml",
    "--set",
    "engine.gpus.gpu_workers_per_device=2",
    "--set",
    "workload[0].count=1",
    "--set",
    "workload[0].partitions=2",
]
SPEC = "scenarios/validation/h200-production.toml"


def command(argv: list[str], stdout: Path | None = None) -> int:
    """One CLI command in this process; its exit code (stdout to a file when given)."""
    out = stdout.open("w") if stdout is not None else None
    try:
        with contextlib.redirect_stdout(out) if out is not None else contextlib.nullcontext():
            rc = app(argv, standalone_mode=False)  # click returns an Exit's code
        return rc if isinstance(rc, int) else 0
    except SystemExit as e:  # typer.Exit / a usage error
        return e.code if isinstance(e.code, int) else 1
    except Exception as e:  # a run that breaks must not stop the grid after it
        print(f"{argv[0]}: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    finally:
        if out is not None:
            out.close()


def prod_run(prod: Path, name: str, device: str) -> int:
    """gpu-run `name` (w2-<log2>): two workers, one proof of two partitions at 2^log2."""
    log2 = int(name.removeprefix("w2-"))
    return command(
        [
            "gpu-run",
            *PROD,
            "--set",
            f"plan.gpu_prover.domain_log2={log2}",
            "--device",
            device,
            "--log",
            str(prod / f"{name}.log"),
            "--details",
            str(prod / f"{name}.details.json"),
            "--json",
        ],
        stdout=prod / f"{name}.json",
    )


def main() -> None:
    args = sys.argv[1:]
    opts = {"--device": "real", "--order": "w2-27 grid"}
    for flag in opts:
        if flag in args:
            i = args.index(flag)
            opts[flag] = args[i + 1]
            del args[i : i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    prod, grid = Path(args[0]), Path(args[1])
    prod.mkdir(parents=True, exist_ok=True)
    device = opts["--device"]
    t0 = time.perf_counter()
    for stage in opts["--order"].split():
        if stage == "grid":
            rc = command(["validate", SPEC, "--out", str(grid), "--device", device])
        elif stage.startswith("w2-") and stage[3:].isdigit():
            rc = prod_run(prod, stage, device)
        else:
            sys.exit(f"--order: unknown stage {stage!r} (grid or w2-<log2>)")
        print(f"[{time.perf_counter() - t0:.0f} s] {stage} rc={rc}", flush=True)


if __name__ == "__main__":
    main()
