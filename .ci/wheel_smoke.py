"""Build the wheel, install it into a clean venv, run every README command from outside.

`.ci/wheel-smoke` runs this. The commands are read from the README's "What you can run"
block, so a command added there is smoked here or this script fails naming it. Each runs
verbatim (paths relative to a scratch folder holding a copy of scenarios/ and the input
files it names) with the installed `python -m cuzk_sim`, never the source tree: the
script first checks that every module of the wheel imports from the venv. No GPU is
assumed: `gpu-run` and `validate` get `--device dry-run` unless CUZK_SMOKE_DEVICE=real.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_LOG = ROOT / "tests" / "logs" / "fixtures" / "mutex-contention.log"

# README command (the words after `python3 -m cuzk_sim`) -> the exit codes it may give.
EXPECTED_EXIT: dict[str, tuple[int, ...]] = {
    "check scenarios/": (0,),
    "gate scenarios/gate --baseline scenarios/gate/baseline.json": (0,),
    "run scenarios/phase9-dual-worker-prestage-under-mutex.toml": (1,),  # the Phase 9 OOM
    "run SCENARIO --json --trace t.json --plot p.png": (0,),
    "run scenarios/race-two-workers-prestage-at-once.toml --replicas 100 --jitter 5%": (1,),
    "profile show rtx5070ti": (0,),
    "sweep scenarios/sweeps/phase9-workers-vram-prestage.toml --out out/p9": (0,),
    "gpu-plan --domain-log2 27 --json": (0,),
    "logs daemon.log": (0, 1),  # 1 = an error finding in the log
    "calibrate daemon.log --base rtx5070ti -o my.toml": (0,),
    "scenario-from-log daemon.log -o s.toml --profile my.toml": (0,),
    "gpu-run scenarios/validation/base.toml --json": (0,),
    "gpu-run scenarios/validation/base.toml --log a.log --set workload[0].count=4": (0,),
    "calibrate a.log --base h200 -o mine.toml": (0,),
    # a dry run's verdict against the grid's criteria is not what is smoked here
    "validate scenarios/validation/h200-grid.toml --out v/ --profile mine.toml": (0, 1),
    # no .zkey is made here (only snarkjs writes one): a clear one-line refusal naming it
    "groth16 prove circuit.zkey witness.wtns proof.json public.json": (2,),
    "groth16 verify verification_key.json public.json proof.json": (0,),
    "groth16 check circuit.r1cs witness.wtns": (0,),
    # report.sqlite: a two-partition Nsight Systems export written by write_nsys_export
    "import-nsys report.sqlite -o plan.json --window partition": (0,),
    # no GPU and no cupti-python here: the one-line refusal naming what is missing
    "capture -o plan.json -- python3 prog.py": (2,),
}
# README command -> (doc, pattern): each figure the pattern finds in the doc must be in the
# command's output, so the docs' figures are the installed package's.
FIGURES: dict[str, tuple[str, str]] = {
    "gate scenarios/gate --baseline scenarios/gate/baseline.json": (
        "docs/simulator.md",
        r"the gate prints ([\d.]+) s/proof now",
    ),
}
PLACEHOLDERS = {"SCENARIO": "scenarios/phase9-single-worker.toml"}
NEEDS_DEVICE = ("gpu-run", "validate")

# Run by the venv's Python: writes the groth16 inputs with the INSTALLED reference.
MAKE_GROTH16_FILES = r"""
import random, struct
from cuzk_sim.reference.circuits import cubic
from cuzk_sim.reference.field import R
from cuzk_sim.reference.formats import (
    write_proof, write_public, write_verification_key, write_wtns)
from cuzk_sim.reference.prove import prove
from cuzk_sim.reference.setup import setup

r1cs, w = cubic(3)
pk = setup(r1cs, rng=random.Random(5))
write_verification_key("verification_key.json", pk.vk)
write_proof("proof.json", prove(pk, w, r=3, s=4))
write_public("public.json", w[1 : 1 + r1cs.num_public])
write_wtns("witness.wtns", w)

def fe(x):
    return x.to_bytes(32, "little")

def lc(row):
    return struct.pack("<I", len(row)) + b"".join(struct.pack("<I", i) + fe(c) for i, c in row)

n = r1cs.num_vars
header = struct.pack("<I", 32) + fe(R) + struct.pack(
    "<IIIIQI", n, r1cs.num_public, 0, n - 1 - r1cs.num_public, n, len(r1cs.A))
rows = b"".join(lc(a) + lc(b) + lc(c) for a, b, c in zip(r1cs.A, r1cs.B, r1cs.C))
labels = b"".join(struct.pack("<Q", i) for i in range(n))
sections = [(1, header), (2, rows), (3, labels)]
body = b"".join(struct.pack("<IQ", k, len(d)) + d for k, d in sections)
open("circuit.r1cs", "wb").write(b"r1cs" + struct.pack("<II", 1, len(sections)) + body)
open("circuit.zkey", "wb").write(b"not a zkey")
"""


class SmokeFailure(RuntimeError):
    pass


def readme_commands(readme: str) -> list[str]:
    """The README "What you can run" block's commands, after `python3 -m cuzk_sim`."""
    block = readme.split("## What you can run", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.splitlines():
        line = line.split("  #", 1)[0].strip()
        if line.startswith("python3 -m cuzk_sim "):
            line = re.sub(r"\s\[[^\]]*\]", "", line)  # an optional `[--backend a|b]`
            commands.append(" ".join(shlex.split(line)[3:]))
    return commands


def argv_for(command: str, device: str) -> list[str]:
    """The argv to run for a README command (placeholders filled, the device chosen)."""
    if command not in EXPECTED_EXIT:
        raise SmokeFailure(
            f"README command `{command}` has no entry in .ci/wheel_smoke.py EXPECTED_EXIT"
        )
    argv = [PLACEHOLDERS.get(w, w) for w in shlex.split(command)]
    if argv[0] in NEEDS_DEVICE and device != "real":
        argv += ["--device", device]
    return argv


def missing_figures(command: str, output: str) -> list[str]:
    """The figures FIGURES[command]'s doc states that the command's output does not show."""
    if command not in FIGURES:
        return []
    doc, pattern = FIGURES[command]
    figures = re.findall(pattern, (ROOT / doc).read_text())
    if not figures:
        return [f"(no `{pattern}` in {doc})"]
    return [f for f in figures if not re.search(rf"(?<![\d.]){re.escape(f)}(?![\d])", output)]


def run(argv: list[str], **kw) -> subprocess.CompletedProcess[str]:  # noqa: ANN003
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def build_wheel(out: Path) -> Path:
    done = run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)])
    if done.returncode != 0:
        raise SmokeFailure(f"pip wheel failed: {done.stderr.strip()[-400:]}")
    (wheel,) = out.glob("cuzk_sim-*.whl")
    return wheel


def make_venv(where: Path, wheel: Path) -> Path:
    run([sys.executable, "-m", "venv", str(where)], check=True)
    python = where / "bin" / "python"
    done = run([str(python), "-m", "pip", "install", "-q", str(wheel)])
    if done.returncode != 0:
        raise SmokeFailure(f"installing the wheel failed: {done.stderr.strip()[-400:]}")
    return python


def check_imports(python: Path, wheel: Path, venv: Path, cwd: Path) -> int:
    """Every module in the wheel imports, from the venv (not from any source tree)."""
    names = sorted(
        n[: -len(".py")].replace("/", ".").removesuffix(".__init__")
        for n in zipfile.ZipFile(wheel).namelist()
        if n.endswith(".py") and not n.endswith("__main__.py")  # that one runs the CLI
    )
    code = (
        "import importlib, sys\n"
        f"prefix = {str(venv.resolve())!r}\n"
        "bad = []\n"
        "for name in sys.argv[1:]:\n"
        "    m = importlib.import_module(name)\n"
        "    if not str(m.__file__).startswith(prefix): bad.append(f'{name}: {m.__file__}')\n"
        "print('\\n'.join(bad))\n"
    )
    # the gpu modules import CuPy lazily, so importing them needs no GPU
    done = run([str(python), "-c", code, *names], cwd=cwd)
    if done.returncode != 0 or done.stdout.strip():
        raise SmokeFailure(f"modules not from the wheel: {(done.stdout + done.stderr)[-800:]}")
    return len(names)


def write_nsys_export(path: Path) -> None:
    """A small Nsight Systems export (the schema of tests/capture/nsys_export.py): a key
    allocated once, then two NVTX ranges `partition`, each allocating, running a kernel
    and freeing."""
    sys.path.insert(0, str(ROOT / "tests" / "capture"))
    from nsys_export import ALLOC, FREE, Export

    mib = 1 << 20
    ex = Export(pid=77)
    ex.context(null_stream=7)
    ex.mem(10, ALLOC, 0xA000, 1 << 30, "cudaMalloc_v3020")
    for k, t in enumerate((100, 300)):
        ex.nvtx(t, t + 100, "partition")
        ex.mem(t + 10, ALLOC, 0x100 * (k + 1), 8 * mib, "cudaMalloc_v3020")
        ex.kernel(t + 20, t + 30, t + 50, "k")
        ex.mem(t + 80, FREE, 0x100 * (k + 1), 8 * mib, "cudaFree_v3020")
    ex.write(path)


def smoke(keep: bool = False) -> int:
    device = os.environ.get("CUZK_SMOKE_DEVICE", "dry-run")
    commands = readme_commands((ROOT / "README.md").read_text())
    plans = [(c, argv_for(c, device)) for c in commands]  # fails first on a new command
    scratch = Path(tempfile.mkdtemp(prefix="cuzk-wheel-smoke-"))
    try:
        t0 = time.monotonic()
        wheel = build_wheel(scratch / "dist")
        python = make_venv(scratch / "venv", wheel)
        work = scratch / "work"
        shutil.copytree(ROOT / "scenarios", work / "scenarios")
        (work / "out").mkdir()
        shutil.copyfile(FIXTURE_LOG, work / "daemon.log")
        write_nsys_export(work / "report.sqlite")
        n_modules = check_imports(python, wheel, scratch / "venv", work)
        run([str(python), "-c", MAKE_GROTH16_FILES], cwd=work, check=True)
        print(f"wheel {wheel.name}: {n_modules} modules import from the venv "
              f"({time.monotonic() - t0:.1f} s to build and install)")  # fmt: skip
        failures = []
        for command, argv in plans:
            t = time.monotonic()
            done = run([str(python), "-m", "cuzk_sim", *argv], cwd=work, timeout=300)
            output = done.stdout + done.stderr
            ok = done.returncode in EXPECTED_EXIT[command] and "Traceback" not in output
            if done.returncode == 2:
                ok = ok and len(output.strip().splitlines()) == 1
            missing = missing_figures(command, done.stdout)
            if missing:
                ok = False
                output += f"\nfigures the docs state but the output lacks: {missing}"
            print(f"{'ok  ' if ok else 'FAIL'} exit {done.returncode} "
                  f"{time.monotonic() - t:5.1f} s  cuzk_sim {' '.join(argv)}")  # fmt: skip
            if not ok:
                failures.append(command)
                print("      " + "\n      ".join(output.strip().splitlines()[-8:]))
        if failures:
            print(f"{len(failures)} of {len(plans)} README commands failed from the wheel")
            return 1
        print(f"all {len(plans)} README commands ran from the installed wheel")
        return 0
    except SmokeFailure as e:
        print(f"wheel smoke: {e}")
        return 1
    finally:
        if keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(smoke(keep="--keep" in sys.argv[1:]))
