"""`cuzk-sim groth16 prove | verify | check`: snarkjs's commands, argument order and meaning.

Exit codes: 0 = valid (proof written, proof verifies, witness satisfies); 1 = the answer is
no (invalid proof, unsatisfied witness, or the prover/backend failed); 2 = unusable input
(a malformed or unsupported file, a count mismatch) or a usage error. snarkjs returns 1
for both kinds of failure; every non-zero code means "not valid" for both tools.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

BACKENDS = ("reference", "gpu")
EXIT_NO, EXIT_BAD_INPUT = 1, 2

group = typer.Typer(
    name="groth16",
    help="Groth16 over BLS12-381 on circom/snarkjs files (.zkey, .wtns, .r1cs, JSON).",
    no_args_is_help=True,
    add_completion=False,
)


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def gpu_prover() -> Callable[..., Any]:
    """The GPU prover's prove(pk, witness, r, s), imported only when asked for, after a
    check that CuPy sees a CUDA device (so a CPU-only machine gets one clear line)."""
    try:
        import cupy

        devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # ImportError, or a CUDA install without driver or device
        _fail(
            f"--backend gpu is not available: no usable CuPy/CUDA ({type(e).__name__}: {e})",
            EXIT_NO,
        )
    if devices < 1:
        _fail("--backend gpu is not available: CuPy sees no CUDA device", EXIT_NO)
    try:
        module = importlib.import_module("cuzk_sim.gpu.prover")
    except Exception as e:
        _fail(f"--backend gpu is not available: {type(e).__name__}: {e}", EXIT_NO)
    prove = getattr(module, "prove", None)
    if not callable(prove):
        _fail("--backend gpu is not available: cuzk_sim.gpu.prover has no prove()", EXIT_NO)
    return prove


@group.command("prove")
def prove_command(
    zkey: Annotated[
        Path, typer.Argument(metavar="ZKEY", help="snarkjs Groth16 proving key (bls12-381).")
    ],
    witness: Annotated[Path, typer.Argument(metavar="WITNESS", help="circom witness (.wtns).")],
    proof_json: Annotated[Path, typer.Argument(metavar="PROOF_JSON", help="Output: proof.json.")],
    public_json: Annotated[
        Path, typer.Argument(metavar="PUBLIC_JSON", help="Output: public.json.")
    ],
    backend: Annotated[
        str, typer.Option(help="Prover: reference (py_ecc) or gpu (CuPy).")
    ] = "reference",
    seed: Annotated[
        int | None,
        typer.Option(help="Draw r, s from this seed (reproducible proofs); default: the OS."),
    ] = None,
) -> None:
    """Prove like `snarkjs groth16 prove <zkey> <wtns> <proof.json> <public.json>`."""
    from cuzk_sim.io.errors import InputError
    from cuzk_sim.io.outputs import check_distinct, check_writable, write_all
    from cuzk_sim.reference.formats import FormatError, read_wtns, read_zkey
    from cuzk_sim.reference.formats.snarkjs_json import json_text, proof_to_json
    from cuzk_sim.reference.prove import prove as reference_prove

    if backend not in BACKENDS:
        _fail(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}", EXIT_BAD_INPUT)
    try:  # before any work: an output that cannot be written, or one file named twice
        check_writable("PROOF_JSON", proof_json)
        check_writable("PUBLIC_JSON", public_json)
        check_distinct(
            {"PROOF_JSON": proof_json, "PUBLIC_JSON": public_json},
            {"ZKEY": zkey, "WITNESS": witness},
        )
    except InputError as e:
        _fail(str(e), EXIT_BAD_INPUT)
    prove = gpu_prover() if backend == "gpu" else reference_prove
    try:
        pk = read_zkey(zkey)
        w = read_wtns(witness)
    except FormatError as e:
        _fail(str(e), EXIT_BAD_INPUT)
    if len(w) != pk.num_vars:
        _fail(
            f"{witness}: {len(w)} witness values, the proving key {zkey} has {pk.num_vars} wires",
            EXIT_BAD_INPUT,
        )
    rng = random.Random(seed) if seed is not None else random.SystemRandom()
    r, s = rng.randrange(1, _scalar_modulus()), rng.randrange(1, _scalar_modulus())
    try:
        proof = prove(pk, w, r=r, s=s)
    except ValueError as e:  # UnsatisfiedConstraint, a witness value out of range
        _fail(f"cannot prove: {e}", EXIT_NO)
    except Exception as e:
        if backend != "gpu":
            raise  # a bug in the reference prover: show it in full
        _fail(f"gpu prover failed: {type(e).__name__}: {e}", EXIT_NO)
    public = [str(x) for x in w[1 : 1 + pk.num_public]]
    try:  # both or neither: a failed write leaves the previous proof.json and public.json
        write_all(
            {
                proof_json: json_text(proof_to_json(proof)).encode(),
                public_json: json_text(public).encode(),
            }
        )
    except OSError as e:
        _fail(f"{e.filename or proof_json}: cannot write: {e.strerror or e}", EXIT_BAD_INPUT)


@group.command("verify")
def verify_command(
    verification_key: Annotated[
        Path, typer.Argument(metavar="VERIFICATION_KEY", help="snarkjs verification_key.json.")
    ],
    public_json: Annotated[Path, typer.Argument(metavar="PUBLIC_JSON", help="public.json.")],
    proof_json: Annotated[Path, typer.Argument(metavar="PROOF_JSON", help="proof.json.")],
) -> None:
    """Verify like `snarkjs groth16 verify <vk.json> <public.json> <proof.json>`."""
    from cuzk_sim.reference.formats import FormatError
    from cuzk_sim.reference.formats.errors import PointNotOnCurve
    from cuzk_sim.reference.formats.snarkjs_json import (
        PublicCountMismatch,
        read_proof,
        read_public,
        read_verification_key,
    )
    from cuzk_sim.reference.verify import verify

    try:
        public = read_public(public_json)
        # the count first: a key for another count is refused before its subgroup checks
        vk = read_verification_key(verification_key, num_public=len(public))
    except PublicCountMismatch as e:
        _fail(
            f"{public_json}: {len(public)} public inputs, {verification_key} expects {e.expected}",
            EXIT_BAD_INPUT,
        )
    except FormatError as e:
        _fail(str(e), EXIT_BAD_INPUT)
    try:
        proof = read_proof(proof_json)
    except PointNotOnCurve as e:  # well-formed but off the curve: snarkjs calls that invalid
        typer.echo(f"Invalid proof: {e}")
        raise typer.Exit(EXIT_NO) from None
    except FormatError as e:  # missing or malformed fields: unusable input
        _fail(str(e), EXIT_BAD_INPUT)
    try:
        ok = verify(vk, public, proof)
    except ValueError as e:  # a proof point outside the subgroup
        typer.echo(f"Invalid proof: {e}")
        raise typer.Exit(EXIT_NO) from None
    if not ok:
        typer.echo("Invalid proof")
        raise typer.Exit(EXIT_NO)
    typer.echo("OK!")


@group.command("check")
def check_command(
    circuit: Annotated[
        Path, typer.Argument(metavar="CIRCUIT", help="circom constraint system (.r1cs).")
    ],
    witness: Annotated[Path, typer.Argument(metavar="WITNESS", help="circom witness (.wtns).")],
) -> None:
    """Check that the witness satisfies every constraint, like `snarkjs wtns check`."""
    from cuzk_sim.reference.formats import FormatError, read_r1cs, read_wtns

    try:
        r1cs = read_r1cs(circuit).r1cs
        w = read_wtns(witness)
    except FormatError as e:
        _fail(str(e), EXIT_BAD_INPUT)
    if len(w) != r1cs.num_vars:
        _fail(
            f"{witness}: {len(w)} witness values, {circuit} has {r1cs.num_vars} wires",
            EXIT_BAD_INPUT,
        )
    try:
        r1cs.check(w)
    except ValueError as e:
        typer.echo(f"WITNESS IS NOT CORRECT: {e}")
        raise typer.Exit(EXIT_NO) from None
    typer.echo(f"WITNESS IS CORRECT ({r1cs.num_constraints} constraints, {len(w)} wires)")


def _scalar_modulus() -> int:
    from cuzk_sim.reference.field import R

    return R


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="groth16")
