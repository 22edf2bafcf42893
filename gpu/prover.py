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

import atexit
import functools
import random
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import py_ecc.optimized_bls12_381 as bls
from cuzk_sim.reference.domain import Domain
from cuzk_sim.reference.field import GENERATOR_BELLMAN, R
from cuzk_sim.reference.prove import assemble, check_key_shape, check_witness, draw_scalar
from cuzk_sim.reference.qap import evaluate_matrices
from cuzk_sim.reference.types import Proof, ProvingKey

from . import encoding
from .blinding import assemble_blinded, blinding, scale_g1, scales
from .device import AllocatorName, Device, Mode
from .msm import MSM_ALGOS, POINT_WORDS, MsmAlgo, WindowSums
from .msm_stages import finish_tail, run_msms, run_streamed, streams
from .ntt import DeviceTables, domain_tables, tables_bytes
from .scalars import Scalars
from .streaming import resolve_budget
from .witness_shape import WitnessShape, witness_shape

FR_BYTES = 32
MSM_STAGES = ("msm_h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l")
# a dry-run plan holds one upload and one MSM per chunk; beyond this many chunks it is
# too long to build or replay (msm_chunk = 1 at 2^27 would be 5 x 2^27 chunks)
MAX_DRY_RUN_CHUNKS = 1 << 16
PRESTAGE_DECLINED = "prestage_declined"  # where a memory-aware pre-stage falls back to


@dataclass(frozen=True)
class ProverFlags:
    """cuzk's variants as flags (not forks)."""

    prestage: bool = False  # allocate d_a/d_bc and upload a/b/c before taking the lock
    pinned: bool = False  # upload a/b/c and the witness from pinned host memory
    free_bc_early: bool = True  # free d_bc right after the NTT phase (cuzk's fix)
    memory_aware: bool = False  # pre-stage only if free >= bytes + margin (cudaMemGetInfo)
    margin_bytes: int = 512 << 20
    allocator: AllocatorName = "caching"
    msm_chunk: int | None = None  # upload key points and run each MSM in chunks of this many
    msm_algo: MsmAlgo = "signed"  # gpu/msm.py: signed digits, balanced (or the unsigned one)
    # the key's points in pinned host memory, pinned once per key (host_key(pk, pinned=True))
    # and kept across partitions, as supraseal keeps the SRS: each upload is a DMA
    key_pinned: bool = False
    # upload each MSM's points on the upload stream while the MSM before it runs (needs
    # key_pinned: a pageable copy does not overlap; the next points are live meanwhile)
    overlap_uploads: bool = False
    # the key's points kept on the device across partitions (one cudaMalloc'd buffer per
    # MSM per GPU, filled by the first partition; later ones skip the five key uploads):
    # for cards where the key fits (2^27: 72 GiB). The plan says so: persistent per-device
    # allocs and copies that `fill` them, charged once per device by the model
    key_resident: bool = False
    # finish each MSM's deferred tail (Horner over its window sums, the affine point) in a
    # helper process while the GPU runs the next MSMs, not after all of them (prove path;
    # the plan is unchanged: the tails are host work outside it, as without the flag)
    overlap_tails: bool = False
    # each MSM over fixed-base tables 2^(t c) P_i (gpu/msm.py precompute: one bucket set, no
    # Horner doublings) kept on the device across partitions (needs key_resident): the
    # points go up into table 0 of a resident `<stage>.table` (13-14 x the points; no
    # separate points buffer) and `<stage>.table.build` fills the rest, both once per device
    key_tables: bool = False
    # each witness MSM (a, b_g1, b_g2, l) split (gpu/msm_split.py): the scalars equal to 1
    # summed by additions, the rest (not 0, not 1) by the signed Pippenger, zeros skipped
    split_msm: bool = False
    # device bytes one partition may use: msm_chunk (when not given) becomes the largest
    # power of two whose plan peaks within it (gpu/streaming.py `chunk_for_budget`)
    vram_budget_bytes: int | None = None

    def __post_init__(self) -> None:
        bools = ("prestage", "pinned", "free_bc_early", "memory_aware", "key_pinned")
        more = ("overlap_uploads", "key_resident", "overlap_tails", "key_tables", "split_msm")
        for name in (*bools, *more):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(
                    f"ProverFlags.{name} must be true or false, got {getattr(self, name)!r}"
                )
        if self.msm_algo not in MSM_ALGOS:
            raise ValueError(
                f"ProverFlags.msm_algo must be one of {MSM_ALGOS}, got {self.msm_algo!r}"
            )
        if self.msm_chunk is not None and (
            not isinstance(self.msm_chunk, int) or self.msm_chunk < 1
        ):
            raise ValueError(f"ProverFlags.msm_chunk must be None or >= 1, got {self.msm_chunk!r}")
        if self.overlap_uploads and not self.key_pinned:
            raise ValueError(
                "ProverFlags.overlap_uploads needs key_pinned=True (a copy from pageable "
                "memory does not run beside the MSMs)"
            )
        if self.vram_budget_bytes is not None and (
            not isinstance(self.vram_budget_bytes, int) or self.vram_budget_bytes < 1
        ):
            got = self.vram_budget_bytes
            raise ValueError(f"ProverFlags.vram_budget_bytes must be None or >= 1, got {got!r}")
        if self.vram_budget_bytes is not None and self.key_resident:
            raise ValueError(
                "ProverFlags.vram_budget_bytes does not combine with key_resident (a resident "
                "key is held whole; a budget streams it in chunks)"
            )
        if self.split_msm and (self.key_tables or self.msm_algo != "signed"):
            raise ValueError(
                "ProverFlags.split_msm needs msm_algo='signed' and no key_tables (the rest "
                "of a split runs the signed Pippenger over plain points)"
            )
        if self.key_resident and self.msm_chunk is not None:
            raise ValueError(
                "ProverFlags.key_resident does not combine with msm_chunk (a resident key is "
                "held whole; chunks stream it through one small buffer)"
            )
        if self.key_tables and not self.key_resident:
            raise ValueError(
                "ProverFlags.key_tables needs key_resident=True (the tables are built once "
                "from the resident key and kept on the device across partitions)"
            )
        if self.key_tables and self.msm_algo != "signed":
            raise ValueError(
                f"ProverFlags.key_tables needs msm_algo='signed', got {self.msm_algo!r} "
                "(precomputed bases are a signed-digit MSM)"
            )
        if self.margin_bytes < 0:
            raise ValueError(f"ProverFlags.margin_bytes must be >= 0, got {self.margin_bytes}")


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
    """The same arrays in page-locked host memory (cupyx.empty_pinned), which
    `Device.copy_htod` uploads by DMA with no staging copy."""
    import cupyx

    out = {}
    for stage, arr in points.items():
        out[stage] = cupyx.empty_pinned(arr.shape, arr.dtype)
        out[stage][...] = arr
    return out


def key_points_bytes(shape: PartitionShape) -> int:
    """Bytes of the key's points one partition uploads (affine G1 96 B, G2 192 B)."""
    return sum(4 * POINT_WORDS[group] * count for group, count in shape.msm_sizes().values())


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


@functools.lru_cache(maxsize=8)
def _packed_tables(log_n: int, reduction: str) -> np.ndarray:
    """The NTT tables of a 2^log_n domain, computed once per domain (host work that would
    otherwise run inside the lock for every partition: 20 ms at 2^18)."""
    domain = Domain(1 << log_n, reduction)
    if reduction == "bellman":
        g = GENERATOR_BELLMAN
        zinv = pow(domain.vanishing_at(g), -1, R)
    else:
        g, zinv = domain.omega_2n, 1
    tables = domain_tables(log_n, domain.omega, g, zinv).pack()
    tables.setflags(write=False)
    return tables


def _compute_h(dev: Device, shape: PartitionShape, d_a: Any, d_bc: Any, d_tab: Any) -> None:
    """The NTT-H phase on d_a (a, then h) and d_bc (b | c)."""
    from . import ntt as gntt
    from .module import launch

    n, log_n = shape.domain_size, shape.log_n
    w = 8 * n

    def views() -> tuple[Any, Any, Any, DeviceTables]:
        t = DeviceTables.from_buffer(d_tab.array, log_n)
        return d_a.array[:w], d_bc.array[:w], d_bc.array[w : 2 * w], t

    def to_mont(i: int) -> None:
        launch("field_ops.cu", "fr_convert", n, views()[i], np.int64(n), np.int32(1))

    for i, name in enumerate("abc"):
        dev.kernel(f"compute_h.to_mont_{name}", "pointwise", n, lambda i=i: to_mont(i))
        dev.kernel(
            f"compute_h.intt_{name}", "ntt", n, lambda i=i: gntt.intt(views()[i], views()[3])
        )
        dev.kernel(
            f"compute_h.coset_ntt_{name}",
            "ntt",
            n,
            lambda i=i: gntt.coset_ntt(views()[i], views()[3]),
        )

    def quotient() -> None:
        a, b, c, t = views()
        if shape.reduction == "bellman":
            launch("field_ops.cu", "fr_h_quotient", n, a, b, c, t.zinv, np.int64(n))
        else:
            launch("field_ops.cu", "fr_h_product", n, a, b, c, np.int64(n))

    dev.kernel("compute_h.quotient", "pointwise", n, quotient)
    if shape.reduction == "bellman":
        dev.kernel("compute_h.coset_intt_h", "ntt", n, lambda: gntt.coset_intt(*views()[::3]))
    dev.kernel(
        "compute_h.from_mont_h",
        "pointwise",
        n,
        lambda: launch("field_ops.cu", "fr_convert", n, views()[0], np.int64(n), np.int32(0)),
    )


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
    n = shape.domain_size
    vec = n * FR_BYTES
    abc = data.abc if data is not None else None
    flags = resolve_budget(shape, flags)

    def upload(stream: str, d_a: Any, d_bc: Any) -> None:
        dev.copy_htod(
            "upload_a",
            d_a,
            abc[0] if abc is not None else None,
            vec,
            pinned=flags.pinned,
            stream=stream,
        )
        dev.copy_htod(
            "upload_bc",
            d_bc,
            abc[1:] if abc is not None else None,
            2 * vec,
            pinned=flags.pinned,
            stream=stream,
        )

    def prestage() -> tuple[Any, Any]:
        """Allocate and upload before the lock; memory-aware: only if free >= bytes + margin
        (else the device frees what it got and falls back to `in_lock`)."""
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

    if flags.key_pinned:  # held by the key cache across partitions (not freed here)
        # one per key: partitions of one shape share a key (the pipeline's synthetic data
        # does; two circuits of one shape would be two keys, not told apart here)
        key_buffer = f"key_points.pinned.2^{shape.log_n}"
        dev.pin_host(key_buffer, key_points_bytes(shape), note="key_pinned")
    with dev.critical_section():
        d_a, d_bc = (
            dev.attempt(PRESTAGE_DECLINED, prestage, in_lock) if flags.prestage else in_lock()
        )
        d_tab = dev.alloc("d_ntt_tables", tables_bytes(shape.log_n))
        tables = _packed_tables(shape.log_n, shape.reduction) if dev.runs else None
        dev.copy_htod("upload_ntt_tables", d_tab, tables, tables_bytes(shape.log_n))
        _compute_h(dev, shape, d_a, d_bc, d_tab)
        dev.free("d_ntt_tables")
        if flags.free_bc_early:
            dev.free("d_bc")
        if streams(flags):  # the witness streams with the key's chunks: no d_witness
            results = run_streamed(dev, shape, flags, data, d_a, tails, scale)
            if not flags.free_bc_early:
                dev.free("d_bc")
            return results
        scalars = Scalars(dev, shape, flags, data, d_a, eager=False)
        results = run_msms(dev, shape, flags, data, scalars, tails, scale)
        scalars.close()
        if not flags.free_bc_early:
            dev.free("d_bc")
        dev.free("d_a")
    return results


_TAIL_POOL: list[Executor] = []
_TAIL_POOL_GUARD = threading.Lock()  # worker threads proving at once start one pool


TAIL_PROCESSES = 2  # the key-only blinding products in one, the MSM tails in the other


def _warm_tail(_: int) -> int:
    """Import what a tail needs in a pool process; the short sleep spreads one call over
    each process."""
    import time

    finish_tail(_WARM_SUMS, 1)  # msm_tail, numpy, the reference curve
    time.sleep(0.05)
    return 0


def tail_pool() -> Executor:
    """The processes that finish MSM tails and the assembly's scalar multiplications
    beside the GPU (ProverFlags.overlap_tails, gpu/blinding.py): TAIL_PROCESSES spawned
    processes (no CUDA state; a thread would hold the GIL that the next MSM's kernel
    launches need), started and warmed once per process, not inside a timed prove."""
    with _TAIL_POOL_GUARD:
        if not _TAIL_POOL:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            pool = ProcessPoolExecutor(
                TAIL_PROCESSES, mp_context=multiprocessing.get_context("spawn")
            )
            list(pool.map(_warm_tail, range(TAIL_PROCESSES)))
            atexit.register(pool.shutdown)  # before the interpreter tears its modules down
            _TAIL_POOL.append(pool)
        return _TAIL_POOL[0]


# the window sums of the point at infinity (Z = 0): a tail that costs nothing to finish
_WARM_SUMS = WindowSums("g1", 16, np.zeros(16 * 36, dtype=np.uint32))


def msm_results(raw: dict[str, list[Any]]) -> dict[str, Any]:
    """py_ecc point per stage: the sum of its chunks' results (affine limbs, the window
    sums of a deferred MSM, whose Horner runs here, or the Future of a tail finished
    elsewhere, `partition(..., tails=)`)."""
    out = {}
    for stage, parts in raw.items():
        g2 = stage == "msm_b_g2"
        acc = bls.Z2 if g2 else bls.Z1
        for v in parts:
            if isinstance(v, Future):
                v = v.result()
            if isinstance(v, tuple):  # (limbs, its scaled point): finish_tail with k
                v = v[0]
            if isinstance(v, WindowSums):
                v = v.point()
            acc = bls.add(acc, encoding.g2_from_limbs(v) if g2 else encoding.g1_from_limbs(v))
        out[stage] = acc
    return out


def scaled_points(raw: dict[str, list[Any]], res: Mapping[str, Any], r: int, s: int) -> dict:
    """s a and r b_1 (py_ecc points, gpu/blinding.py): the sum of the scaled chunks the
    tails returned (`partition(..., scale=)`), or, where a stage's results came back
    finished (the unsigned MSM, the device tail), its sum `res[stage]` multiplied here."""
    out = {}
    for stage, k in scales(r, s).items():
        done = [v.result() if isinstance(v, Future) else v for v in raw.get(stage, [])]
        if done and all(isinstance(v, tuple) for v in done):
            acc = bls.Z1
            for _, p in done:
                acc = bls.add(acc, p)
            out[stage] = acc
        else:
            out[stage] = scale_g1(res[stage], k)
    return out


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
    flags: ProverFlags = ProverFlags(),
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
    flags: ProverFlags = ProverFlags(),
) -> Proof:
    """A Groth16 proof computed on GPU `gpu_index`; equal to the reference's for equal r, s."""
    return prove_partition(pk, witness, r, s, rng, gpu_index, flags)[0]


def dry_run_plan(
    shape: PartitionShape,
    flags: ProverFlags = ProverFlags(),
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
        # (`key_upload`: the model runs its copies on the copy engines, the rest queued)
        gpu_stream="legacy_default+key_upload" if flags.overlap_uploads else "legacy_default",
    )


def _chunk_count(shape: PartitionShape, chunk: int) -> int:
    return sum(-(-count // chunk) for _, count in shape.msm_sizes().values())


def _check_chunk_count(shape: PartitionShape, flags: ProverFlags) -> None:
    """Refuse (ValueError) an msm_chunk whose plan would exceed MAX_DRY_RUN_CHUNKS chunks,
    naming the smallest chunk that fits, rather than build that plan for hours."""
    if not flags.msm_chunk or _chunk_count(shape, flags.msm_chunk) <= MAX_DRY_RUN_CHUNKS:
        return
    lo, hi = flags.msm_chunk, max(count for _, count in shape.msm_sizes().values())
    while lo + 1 < hi:  # the count falls as the chunk grows: bisect the smallest that fits
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _chunk_count(shape, mid) > MAX_DRY_RUN_CHUNKS else (lo, mid)
    raise ValueError(
        f"ProverFlags.msm_chunk={flags.msm_chunk} splits the MSMs of a 2^{shape.log_n} "
        f"domain into {_chunk_count(shape, flags.msm_chunk)} chunks; a dry-run plan holds "
        f"at most {MAX_DRY_RUN_CHUNKS}: use an msm_chunk of at least {hi}"
    )
