"""The host data of a real-pipeline run's partitions: synthetic (random a/b/c and witness
of the plan's shape, a key made on the GPU; once per process, gpu/hostdata.py keeps the
books) or a small reference circuit whose proofs every GPU proof is compared with."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from .hostdata import SyntheticStore
from .prover import HostKey, PartitionInput, PartitionShape
from .witness_data import random_scalars, shaped_witness

MAX_VERIFY_LOG2 = 8  # reference proofs are computed by py_ecc: small domains only


@dataclass(frozen=True)
class PartitionData:
    """The host data every partition of one kind reuses, and (verify) the proofs due."""

    data: PartitionInput | None
    key: HostKey | None
    # verify mode: (r, s, the reference proof's bytes) per case; partition j uses j % len
    cases: tuple[tuple[int, int, bytes], ...] = ()
    pk: Any = None


def _make_key(sizes: dict[str, tuple[str, int]], pinned: bool) -> tuple[Any, Any]:
    """A synthetic key of these MSM sizes made on the GPU (gpu/keygen.py), with a progress
    bar; logged with its size and time."""
    from .keygen import key_bytes, make_key_with_progress

    gib = key_bytes(sizes) / 2**30
    label = f"synthetic key {gib:.1f} GiB {'pinned' if pinned else 'pageable'}"
    return make_key_with_progress(sizes, pinned, label)


SYNTHETIC = SyntheticStore(_make_key)  # the real device's synthetic data, once per process
DRY_SYNTHETIC = SyntheticStore(_make_key, real=False)  # the dry-run's books (no data)


def synthetic_store(real: bool) -> SyntheticStore:
    """The store of the real device's synthetic data, or the dry run's books."""
    return SYNTHETIC if real else DRY_SYNTHETIC


def synthetic_data(
    shape: PartitionShape, real: bool, key_pinned: bool = False, inputs_pinned: bool = False
) -> PartitionData:
    """Random a/b/c and witness of `shape` and a GPU-made key, each made once per process
    (SyntheticStore: the key per MSM sizes and pinning, the inputs per shape and pinning)
    and shared by every worker; key_pinned: the key's points in page-locked host memory
    (ProverFlags.key_pinned); inputs_pinned: a/b/c, the witness and the gathered scalars
    there too (ProverFlags.pinned, as cuzk's pre-staging registers its a/b/c: copied by DMA,
    no staging). Dry-run: no data (the store keeps the same books)."""
    import py_ecc.optimized_bls12_381 as bls

    store = synthetic_store(real)

    def inputs() -> tuple[np.ndarray, np.ndarray, dict]:
        from .keygen import pinned_empty

        empty = pinned_empty if inputs_pinned else np.empty
        n = shape.domain_size
        rng = np.random.default_rng(shape.domain_size)
        abc = random_scalars(rng, 3 * n, empty).reshape(3, n, 8)
        witness, scalars = shaped_witness(shape, rng, empty)  # issue 23: the 0 / 1 share
        return abc, witness, scalars

    pts = store.key(shape.msm_sizes(), key_pinned)
    made = store.partition_inputs(shape, inputs, inputs_pinned)
    if not real:
        return PartitionData(None, None)
    abc, witness, scalars = made
    data = PartitionInput(abc, witness, pts, scalars)
    return PartitionData(data, HostKey(pts, bls.G1, bls.G1, bls.G2, bls.G1, bls.G2))


def reference_data(
    log2: int, cases: int = 4, seed: int = 7, key_pinned: bool = False
) -> PartitionData:
    """A squaring chain filling a domain of 2^log2, with `cases` (r, s) pairs and the
    reference prover's proof for each: the oracle every GPU proof is compared with."""
    from cuzk_sim.reference.circuits import squaring_chain
    from cuzk_sim.reference.field import R
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.qap import evaluate_matrices
    from cuzk_sim.reference.serialize import proof_to_bytes
    from cuzk_sim.reference.setup import setup

    from . import encoding
    from .prover import host_key

    if not 2 <= log2 <= MAX_VERIFY_LOG2:
        raise ValueError(f"verify: domain 2^{log2} is outside 2^2..2^{MAX_VERIFY_LOG2}")
    rng = random.Random(seed)
    r1cs, w = squaring_chain((1 << log2) - 4)
    pk = setup(r1cs, rng=rng)
    key = host_key(pk, pinned=key_pinned)
    n = pk.domain_size
    a, b, c = evaluate_matrices(pk.A, pk.B, pk.C, w, n)
    abc = encoding.ints_to_limbs(a + b + c, 8).reshape(3, n, 8)
    data = PartitionInput(abc, encoding.ints_to_limbs(list(w), 8), key.points)
    due = []
    for _ in range(cases):
        r, s = rng.randrange(R), rng.randrange(R)
        due.append((r, s, proof_to_bytes(ref_prove(pk, w, r, s))))
    return PartitionData(data, key, tuple(due), pk)
