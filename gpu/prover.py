"""The GPU Groth16 prover: one partition, in cuzk's phases, through the allocation layer.

Phases (stage names shared with the reference and the plan):
  synthesis   a_k, b_k, c_k = <A_k, w>, <B_k, w>, <C_k, w> on the host
  upload      d_a <- a, d_bc <- b | c (pre-staged before the lock, or inside it)
  compute_h   iNTT, coset NTT of a, b, c; pointwise (ab - c) / Z; coset iNTT (bellman),
              or ab - c on the odd coset of the 2n domain (snarkjs); d_bc freed
  msm_h, msm_a, msm_b_g1, msm_b_g2, msm_l   Pippenger on the GPU
  assemble    A, B, C on the host: the reference's own `assemble` (one implementation)
With the same r and s the proof equals the reference's `prove(pk, w, r, s)` byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from cuzk_sim.reference.prove import assemble, check_key_shape, check_witness, draw_scalar
from cuzk_sim.reference.qap import evaluate_matrices
from cuzk_sim.reference.types import Proof, ProvingKey

from . import encoding
from .blinding import assemble_blinded, blinding, scales
from .compute_h import compute_h
from .device import Device, Mode
from .flags import ProverFlags
from .msm import POINT_WORDS
from .msm_results import msm_results, scaled_points, tail_pool
from .msm_stages import run_msms, run_streamed, streams
from .ntt import tables_bytes
from .scalars import Scalars
from .schedule import gpu_streams
from .streaming import resolve_budget, stream_depth
from .witness_shape import WitnessShape, witness_shape

FR_BYTES = 32
MSM_STAGES = ("msm_h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l")
# a dry-run plan holds one upload and one MSM per chunk; beyond this many chunks it is
# too long to build or replay (msm_chunk = 1 at 2^27 would be 5 x 2^27 chunks)
MAX_DRY_RUN_CHUNKS = 1 << 16
DEFAULT_FLAGS = ProverFlags()  # frozen: one instance serves as every default
PRESTAGE_DECLINED = "prestage_declined"  # where a memory-aware pre-stage falls back to


@dataclass(frozen=True)
class PartitionShape:
    """Everything the plan's sizes depend on."""

    domain_size: int
    num_vars: int  # m + 1
    num_public: int  # l
    h_len: int
    reduction: str = "bellman"
    # points of the A / B queries (B_G1 and B_G2 alike) a key holds: the variables in some
    # A / B constraint (the density's popcount); None: every variable (dense)
    a_count: int | None = None
    b_count: int | None = None
    witness: str = "dense"  # gpu/witness_shape.py: what the plan expects of the scalars

    def __post_init__(self) -> None:
        witness_shape(self.witness)  # ValueError naming the known shapes
        for name in ("a_count", "b_count"):
            v = getattr(self, name)
            if v is not None and not 0 <= v <= self.num_vars:
                raise ValueError(f"PartitionShape.{name} must be in 0..num_vars, got {v}")

    def witness_shape(self) -> WitnessShape:
        return witness_shape(self.witness)

    @classmethod
    def of_key(cls, pk: ProvingKey, compact: bool = False) -> PartitionShape:
        """The key's shape. `compact`: as a real key, a query holds only the points of the
        variables it enters (the others' are infinity; host_key(..., compact=True) leaves
        them out, and `prove` runs so); else every variable's."""
        a, b = (len(query_index(m, pk.num_vars)) for m in (pk.A, pk.B))
        a_count = a if compact and a < pk.num_vars else None
        b_count = b if compact and b < pk.num_vars else None
        h_len = len(pk.h_query)
        return cls(
            pk.domain_size, pk.num_vars, pk.num_public, h_len, pk.reduction, a_count, b_count
        )

    @classmethod
    def synthetic(
        cls, log2: int, reduction: str = "bellman", witness: str = "dense"
    ) -> PartitionShape:
        """A circuit filling a domain of 2^log2 with as many wires as constraints, its
        queries as dense as `witness` says (inputs dense)."""
        n = 1 << log2
        h_len = n - 1 if reduction == "bellman" else n
        shape = witness_shape(witness)
        if shape.a_density == 1.0 and shape.b_density == 1.0:
            return cls(n, n, 1, h_len, reduction, witness=witness)
        a, b = shape.counts(n - 2)
        return cls(n, n, 1, h_len, reduction, 2 + a, 2 + b, witness)

    @property
    def log_n(self) -> int:
        return self.domain_size.bit_length() - 1

    def msm_sizes(self) -> dict[str, tuple[str, int]]:
        m, l = self.num_vars, self.num_public
        a = m if self.a_count is None else self.a_count
        b = m if self.b_count is None else self.b_count
        return {
            "msm_h": ("g1", self.h_len),
            "msm_a": ("g1", a),
            "msm_b_g1": ("g1", b),
            "msm_b_g2": ("g2", b),
            "msm_l": ("g1", m - l - 1),
        }


def query_index(matrix: Any, num_vars: int) -> list[int]:
    """The variables with a non-zero coefficient in some row of `matrix` (a density's set
    bits), ascending."""
    used = bytearray(num_vars)
    for row in matrix:
        for v, k in row:
            if k:
                used[v] = 1
    return [v for v in range(num_vars) if used[v]]


@dataclass(frozen=True)
class HostKey:
    """The proving key in the GPU's layout (affine Montgomery limbs)."""

    points: dict[str, np.ndarray]  # stage -> (count, words)
    alpha_g1: Any
    beta_g1: Any
    beta_g2: Any
    delta_g1: Any
    delta_g2: Any
    # "a" / "b": the variables whose points the A / B queries hold (query_index), when a
    # query leaves some out; the witness is gathered by them (gather_scalars)
    density: Mapping[str, Sequence[int]] = field(default_factory=dict)


_HOST_KEYS: dict[tuple[int, bool, bool], tuple[ProvingKey, HostKey]] = {}


def pin_points(points: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The same arrays in page-locked host memory, one cudaHostAlloc of exactly its bytes
    each (keygen.pinned_empty: the plan's `key_points.pinned.*` buffers), which
    `Device.copy_htod` uploads by DMA with no staging copy."""
    from .keygen import pinned_empty

    out = {}
    for stage, arr in points.items():
        out[stage] = pinned_empty(arr.shape, arr.dtype)
        out[stage][...] = arr
    return out


def key_points_by_stage(shape: PartitionShape) -> dict[str, int]:
    """Bytes of each stage's key points (affine G1 96 B, G2 192 B), in stage order; a
    stage without points has no buffer."""
    sizes = shape.msm_sizes().items()
    return {s: 4 * POINT_WORDS[g] * n for s, (g, n) in sizes if n > 0}


def key_points_bytes(shape: PartitionShape) -> int:
    """Bytes of the key's points one partition uploads (affine G1 96 B, G2 192 B)."""
    return sum(key_points_by_stage(shape).values())


def host_key(pk: ProvingKey, pinned: bool = False, compact: bool = False) -> HostKey:
    """Convert (once per key object) the query points to limbs; `pinned`: a copy of them in
    page-locked host memory, also made once per key and kept while the key is cached
    (ProverFlags.key_pinned). `compact`: the A / B queries without the points of variables
    they never enter (PartitionShape.of_key(pk, compact), what `prove` runs)."""
    hit = _HOST_KEYS.get((id(pk), pinned, compact))
    if hit is not None and hit[0] is pk:
        return hit[1]
    if pinned:
        base = host_key(pk, compact=compact)
        key = HostKey(
            pin_points(base.points),
            base.alpha_g1,
            base.beta_g1,
            base.beta_g2,
            base.delta_g1,
            base.delta_g2,
            base.density,
        )
        _HOST_KEYS[(id(pk), True, compact)] = (pk, key)
        return key
    shape = PartitionShape.of_key(pk, compact)
    density = {}
    if shape.a_count is not None:
        density["a"] = query_index(pk.A, pk.num_vars)
    if shape.b_count is not None:
        density["b"] = query_index(pk.B, pk.num_vars)

    def dense(query: Sequence[Any], q: str) -> list[Any]:  # the points a real key holds
        return [query[i] for i in density[q]] if q in density else list(query)

    key = HostKey(
        {
            "msm_h": encoding.g1_to_limbs(pk.h_query),
            "msm_a": encoding.g1_to_limbs(dense(pk.a_query, "a")),
            "msm_b_g1": encoding.g1_to_limbs(dense(pk.b_g1_query, "b")),
            "msm_b_g2": encoding.g2_to_limbs(dense(pk.b_g2_query, "b")),
            "msm_l": encoding.g1_to_limbs(pk.l_query),
        },
        pk.alpha_g1,
        pk.beta_g1,
        pk.beta_g2,
        pk.delta_g1,
        pk.delta_g2,
        density,
    )
    if len(_HOST_KEYS) >= 4:
        _HOST_KEYS.clear()
    _HOST_KEYS[(id(pk), False, compact)] = (pk, key)
    return key


@dataclass(frozen=True)
class PartitionInput:
    """Host data of one partition (absent in dry-run)."""

    abc: np.ndarray  # (3, n, 8) standard-form limbs of a, b, c
    witness: np.ndarray  # (m, 8) standard-form limbs
    key_points: dict[str, np.ndarray]
    # "a" / "b": the witness at the variables the A / B query holds (gather_scalars), for a
    # shape with a_count / b_count
    scalars: Mapping[str, np.ndarray] = field(default_factory=dict)


def gather_scalars(witness: np.ndarray, key: HostKey) -> dict[str, np.ndarray]:
    """The scalars of the A / B MSMs of a key whose queries leave variables out: the
    witness limbs at the variables they hold (host work, prep_msm)."""
    return {q: np.ascontiguousarray(witness[np.asarray(ix)]) for q, ix in key.density.items()}


def partition(
    dev: Device,
    shape: PartitionShape,
    flags: ProverFlags,
    data: PartitionInput | None,
    tails: Executor | None = None,
    scale: Mapping[str, int] | None = None,
) -> dict[str, list[Any]]:
    """Run (or, in dry-run, plan) the GPU part of one partition; per stage, the MSM result
    of each chunk (affine Montgomery limbs, or the window sums of the signed MSM whose
    Horner is deferred to the host: `msm_results` finishes and sums them). `tails`: an
    executor that finishes each deferred result (`finish_tail`) as soon as its MSM is
    done, beside the MSMs after it; its entries are then Futures (ProverFlags.overlap_tails:
    `tail_pool()`). `scale` (with `tails`): stage -> k, whose tail also returns k times
    its result (gpu/blinding.py: s a and r b_1 beside the GPU work)."""
    flags = resolve_budget(shape, flags)
    if flags.key_pinned:  # held by the key cache across partitions (not freed here)
        # one per key: partitions of one shape share a key (the pipeline's synthetic data
        # does; two circuits of one shape would be two keys, not told apart here)
        # one page-locked buffer per stage, in stage order, as the key is made (keygen's
        # allocate_in_order, pin_points): a capture sees these allocations
        for stage, nbytes in key_points_by_stage(shape).items():
            dev.pin_host(f"key_points.pinned.2^{shape.log_n}.{stage}", nbytes, note="key_pinned")
    with dev.critical_section():
        d_a, d_bc = upload_abc(dev, shape, flags, data)
        d_tab = dev.alloc("d_ntt_tables", tables_bytes(shape.log_n))
        compute_h(dev, shape.log_n, shape.reduction, d_a, d_bc, d_tab)
        dev.free("d_ntt_tables")
        if flags.free_bc_early:
            dev.free("d_bc")
        results = msm_phase(dev, shape, flags, data, d_a, tails, scale)
        if not flags.free_bc_early:
            dev.free("d_bc")
        if not streams(flags):  # a streamed run frees d_a itself
            dev.free("d_a")
    return results


def upload_abc(
    dev: Device, shape: PartitionShape, flags: ProverFlags, data: PartitionInput | None
) -> tuple[Any, Any]:
    """d_a <- a and d_bc <- b | c: pre-staged before the lock (ProverFlags.prestage; with
    memory_aware, only if free >= bytes + margin, else the device falls back to the
    in-lock upload), or allocated and uploaded inside it. Returns with the lock held."""
    vec = shape.domain_size * FR_BYTES
    abc = data.abc if data is not None else None

    def upload(stream: str, d_a: Any, d_bc: Any) -> None:
        a = abc[0] if abc is not None else None
        bc = abc[1:] if abc is not None else None
        dev.copy_htod("upload_a", d_a, a, vec, pinned=flags.pinned, stream=stream)
        dev.copy_htod("upload_bc", d_bc, bc, 2 * vec, pinned=flags.pinned, stream=stream)

    def prestage() -> tuple[Any, Any]:
        margin = flags.margin_bytes if flags.memory_aware else None
        d_a = dev.alloc("d_a", vec, margin=margin, note="prestage")
        d_bc = dev.alloc("d_bc", 2 * vec, margin=margin, note="prestage")
        upload("upload", d_a, d_bc)
        dev.lock()
        dev.sync("upload")
        return d_a, d_bc

    def in_lock() -> tuple[Any, Any]:
        dev.lock()
        d_a = dev.alloc("d_a", vec)
        d_bc = dev.alloc("d_bc", 2 * vec)
        upload("compute", d_a, d_bc)
        return d_a, d_bc

    return dev.attempt(PRESTAGE_DECLINED, prestage, in_lock) if flags.prestage else in_lock()


def msm_phase(
    dev: Device,
    shape: PartitionShape,
    flags: ProverFlags,
    data: PartitionInput | None,
    d_a: Any,
    tails: Executor | None,
    scale: Mapping[str, int] | None,
) -> dict[str, list[Any]]:
    """msm_h, msm_a, msm_b_g1, msm_b_g2, msm_l: streamed with the key's chunks (the
    witness goes up with them: no d_witness) or one stage after another over the
    witness's scalars on the device (gpu/msm_stages.py)."""
    if streams(flags):
        return run_streamed(dev, shape, flags, data, d_a, tails, scale)
    scalars = Scalars(dev, shape, flags, data, d_a, eager=False)
    results = run_msms(dev, shape, flags, data, scalars, tails, scale)
    scalars.close()
    return results


def partition_proof(
    dev: Device,
    shape: PartitionShape,
    flags: ProverFlags,
    data: PartitionInput,
    key: HostKey,
    r: int,
    s: int,
    tails: Executor | None = None,
) -> Proof:
    """One partition on the GPU and its proof. With `tails` (ProverFlags.overlap_tails)
    the MSM tails and the assembly's scalar multiplications run there beside the GPU work
    (gpu/blinding.py), and what follows the GPU is additions; else the assembly runs after
    it, here."""
    ends = (key.alpha_g1, key.beta_g1, key.beta_g2, key.delta_g1, key.delta_g2)
    if tails is None:
        with dev.selected():
            raw = partition(dev, shape, flags, data)
        res = msm_results(raw)
        return dev.cpu("assemble", "assemble", 1, lambda: assemble(key, res, r, s))
    blind = tails.submit(blinding, ends, r, s)  # the key-only products, from the start
    with dev.selected():
        raw = partition(dev, shape, flags, data, tails, scales(r, s))
    res = msm_results(raw)
    return dev.cpu(
        "assemble",
        "assemble",
        1,
        lambda: assemble_blinded(ends, res, scaled_points(raw, res, r, s), blind.result()),
    )


def prove_partition(
    pk: ProvingKey,
    witness: Sequence[int],
    r: int | None = None,
    s: int | None = None,
    rng: random.Random | None = None,
    gpu_index: int = 0,
    flags: ProverFlags = DEFAULT_FLAGS,
    mode: Mode = "real",
) -> tuple[Proof, Device]:
    """The proof and the Device that ran it (its steps and, when traced, timings)."""
    check_key_shape(pk)
    check_witness(pk, witness)
    r, s = draw_scalar(r, rng, "r"), draw_scalar(s, rng, "s")
    shape = PartitionShape.of_key(pk, compact=True)  # as a real key: no infinity points
    key = host_key(pk, pinned=flags.key_pinned, compact=True)
    dev = Device(mode, gpu_index, flags.allocator)
    n = pk.domain_size

    def synthesize() -> np.ndarray:
        a, b, c = evaluate_matrices(pk.A, pk.B, pk.C, witness, n)
        return encoding.ints_to_limbs(a + b + c, 8).reshape(3, n, 8)

    abc = dev.cpu("synthesis", "synthesis", n, synthesize)
    w_limbs = encoding.ints_to_limbs(list(witness), 8)
    data = PartitionInput(abc, w_limbs, key.points, gather_scalars(w_limbs, key))
    tails = tail_pool() if flags.overlap_tails else None
    return partition_proof(dev, shape, flags, data, key, r, s, tails), dev


def prove(
    pk: ProvingKey,
    witness: Sequence[int],
    r: int | None = None,
    s: int | None = None,
    rng: random.Random | None = None,
    gpu_index: int = 0,
    flags: ProverFlags = DEFAULT_FLAGS,
) -> Proof:
    """A Groth16 proof computed on GPU `gpu_index`; equal to the reference's for equal r, s."""
    return prove_partition(pk, witness, r, s, rng, gpu_index, flags)[0]


def dry_run_plan(
    shape: PartitionShape,
    flags: ProverFlags = DEFAULT_FLAGS,
    assume_free_bytes: int | None = None,
    both_branches: bool = False,
) -> Any:
    """The plan this prover would execute for `shape`, without a GPU (no CuPy import).
    `assume_free_bytes`: what memory-aware allocations see (None: enough); `both_branches`:
    record both branches of a memory-aware pre-stage instead (decided at replay)."""
    _check_chunk_count(shape, flags)
    dev = Device(
        "dry-run",
        0,
        flags.allocator,
        assume_free_bytes=assume_free_bytes,
        both_branches=both_branches,
    )
    dev.cpu("synthesis", "synthesis", shape.domain_size, lambda: None)
    partition(dev, shape, flags, None)
    dev.cpu("assemble", "assemble", 1, lambda: None)
    return dev.plan(
        f"gpu-prover-2^{shape.log_n}",
        domain_size=shape.domain_size,
        num_vars=shape.num_vars,
        num_public=shape.num_public,
        h_len=shape.h_len,
        reduction=shape.reduction,
        a_count=shape.a_count,
        b_count=shape.b_count,
        witness=shape.witness,
        flags=flags.__dict__,
        # every kernel and copy goes to the calling thread's current CuPy stream, which
        # is CUDA's legacy default stream: the workers of one GPU share one queue; with
        # overlap_uploads the key's uploads run on a stream of their own beside it
        # (`key_upload`; streamed: one per slot of the ring, `key_upload.k`: the model
        # runs their copies on the copy engines, the rest queued)
        gpu_stream=gpu_streams(flags.overlap_uploads, _depth(shape, flags)),
    )


def _depth(shape: PartitionShape, flags: ProverFlags) -> int:
    """The streamed ring's slots (0: the plan does not stream)."""
    resolved = resolve_budget(shape, flags)
    return stream_depth(shape, resolved) if streams(resolved) else 0


def _chunk_count(shape: PartitionShape, chunk: int, by_bytes: bool = False) -> int:
    """The MSM chunks of a plan (`by_bytes`: streamed, G2's chunks of half the points)."""
    total = 0
    for group, count in shape.msm_sizes().values():
        step = max(1, chunk * POINT_WORDS["g1"] // POINT_WORDS[group]) if by_bytes else chunk
        total += -(-count // step)
    return total


def _check_chunk_count(shape: PartitionShape, flags: ProverFlags) -> None:
    """Refuse (ValueError) an msm_chunk whose plan would exceed MAX_DRY_RUN_CHUNKS chunks,
    naming the smallest chunk that fits, rather than build that plan for hours."""
    by_bytes = streams(flags)
    if not flags.msm_chunk or _chunk_count(shape, flags.msm_chunk, by_bytes) <= MAX_DRY_RUN_CHUNKS:
        return
    lo, hi = flags.msm_chunk, max(count for _, count in shape.msm_sizes().values())
    while lo + 1 < hi:  # the count falls as the chunk grows: bisect the smallest that fits
        mid = (lo + hi) // 2
        fits = _chunk_count(shape, mid, by_bytes) <= MAX_DRY_RUN_CHUNKS
        lo, hi = (lo, mid) if fits else (mid, hi)
    raise ValueError(
        f"ProverFlags.msm_chunk={flags.msm_chunk} splits the MSMs of a 2^{shape.log_n} "
        f"domain into {_chunk_count(shape, flags.msm_chunk, by_bytes)} chunks; a dry-run plan "
        f"holds at most {MAX_DRY_RUN_CHUNKS}: use an msm_chunk of at least {hi}"
    )
