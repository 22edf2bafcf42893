"""The documented cuzk / supraseal-c2 partition plan, with the engine's variants as flags.

One worker, one partition: the CPU `prep_msm` thread, the NTT-H phase under the per-GPU
mutex, batch additions and tail MSMs, B_G2 on a CPU thread, proof assembly. Buffer sizes
follow the source (cited in docs/simulator.md):

- `d_a` = N·32 B, a persistent per-GPU cache allocated with cudaMalloc (get_cached_d_a).
- `d_b` = N·32 B·(1 + lot_of_memory), lot_of_memory = 3·N·32 B < VRAM − 1 GiB; a
  `dev_ptr_t` with one argument, i.e. plain cudaMalloc (groth16_ntt_h.cu, gpu_t.cuh).
- batch addition `d_temp` = 2·batch·affine + bit vectors, batch ≈ points/8, cudaMalloc
  (groth16_split_msm.cu).
- MSM buckets/histogram and the per-invoke `d_temp` (digits, scalars, points) come from
  `gpu.Dmalloc` = cudaMallocAsync: they land in the async pool (sppark msm/pippenger.cuh).
- Phase 9 pre-staging: a per-worker `d_a` copy and `d_bc`, ~6 GiB in all at 2^27
  (the incident report); `d_a` is N·32 B, `d_bc` the rest (N·16 B). Uploaded on their
  own stream, each NTT waiting on its own vector's event (cuzk-project.md Phase 9:
  "record CUDA events per polynomial. The NTT kernels stream.wait() on these events"):
  a's NTTs run beside the b/c upload. Their host sources
  are page-locked with cudaHostRegister before the GPU mutex (curio cuzk-project.md,
  Phase 9: "Pin host pages with cudaHostRegister before the GPU mutex"): `pinned_a`,
  `pinned_bc`, host-pinned buffers of the same sizes, released when the partition ends.
- CPU threads: `prep_msm` runs on one thread for one circuit (cuzk-project.md, Phase 11:
  "With num_circuits=1, prep_msm uses only 1 thread regardless (par_map(1,...))"); the
  B_G2 MSM runs on the C++ groth16_pool, `gpus.gpu_threads` threads (cuzk-daemon main.rs).
  Both are jobs of that one process-wide pool, B_G2 after prep_msm on the partition's
  prep thread (groth16_cuda.cu): `pool=POOL`, so one job runs at a time for a device's
  workers (steps/cpu.py: one chain per device).

The plan never asks which incident it is in: each variant only moves, adds or removes
steps, and the model executes whatever comes out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cuzk_sim.plan import (
    Alloc,
    Copy,
    Cpu,
    Free,
    Goto,
    Kernel,
    Label,
    Lock,
    MutexScope,
    Plan,
    Step,
    Sync,
    Unlock,
)
from cuzk_sim.plans.circuits import FR_BYTES, G1_AFFINE_BYTES, G2_AFFINE_BYTES, CircuitShape

GIB = 2**30
SCALAR_BITS = 255  # BLS12-381 Fr
G1_BUCKET_BYTES = 4 * 48  # xyzz bucket over Fp
G2_BUCKET_BYTES = 4 * 96  # xyzz bucket over Fp2
WARP = 32
GPU_DIV = 32 * WARP  # groth16_split_msm.cu
NUM_BATCHES = 8
GPU_MUTEX = "gpu"
POOL = "groth16_pool"  # the C++ side's process-wide CPU pool (get_groth16_pool)

Prestage = Literal["off", "outside_mutex", "under_mutex"]


@dataclass(frozen=True)
class CuzkVariant:
    """The engine's variants (flags, not forks). Defaults: the Phase 8 engine.

    A scenario's `[variant]` table is derived from these fields (cuzk_sim/scenario/flags.py:
    same names and defaults, `_bytes` fields as sizes without the suffix); `b_g2_threads`
    comes from `engine.gpus.gpu_threads` instead."""

    prestage: Prestage = "off"  # Phase 9 pre-staging, and where its allocation happens
    free_d_bc_after_ntt: bool = False  # fix: staged buffers die before the mutex is released
    memory_aware_margin_bytes: int | None = None  # fix: cudaMemGetInfo check, this margin
    mutex_scope: MutexScope = "device"  # one per device / one global for all / none
    d_a_cache: bool = True  # persistent per-GPU d_a (never freed)
    b_g2_msm: Literal["cpu", "gpu"] = "cpu"  # tail B_G2 MSM on a CPU thread or on the GPU
    b_g2_threads: int = 32  # the groth16_pool's threads (gpus.gpu_threads; example: 32)


def lot_of_memory(domain: int, vram_bytes: int) -> bool:
    """groth16_ntt_h.cu: c gets its own region when 3 vectors fit in VRAM − 1 GiB."""
    return 3 * domain * FR_BYTES < vram_bytes - GIB


def _lg2(n: int) -> int:
    return max(n, 1).bit_length() - 1


def msm_window_bits(npoints: int) -> int:
    """sppark msm_t: the window width chosen for npoints."""
    if npoints > 192:
        return max(10, min(_lg2(npoints + npoints // 2) - 8, 18))
    return 10


def msm_buckets_bytes(npoints: int, bucket_bytes: int) -> int:
    """sppark msm_t constructor blob: buckets + histogram (points not preloaded)."""
    wbits = msm_window_bits(npoints)
    nwins = (SCALAR_BITS - 1) // wbits + 1
    row = 1 << (wbits - 1)
    return nwins * row * (bucket_bytes + 4)


def msm_invoke_temp_bytes(npoints: int, affine_bytes: int) -> int:
    """sppark msm_t::invoke d_temp: scalars, digits and a double-buffered batch of points."""
    wbits = msm_window_bits(npoints)
    nwins = (SCALAR_BITS - 1) // wbits + 1
    batch = (1 << (max(_lg2(npoints + npoints // 2), wbits) - wbits)) >> 6 or 1
    stride = -(-npoints // batch)
    stride = -(-stride // WARP) * WARP
    points = (2 * stride if batch > 1 else stride) * affine_bytes
    return stride * max(2 * 8, FR_BYTES) + nwins * stride * 4 + points


def batch_add_temp_bytes(npoints: int, affine_bytes: int) -> int:
    """groth16_split_msm.cu execute_batch_addition d_temp (bucket rows are negligible)."""
    batch = -(-npoints // GPU_DIV)
    batch = -(-batch // NUM_BATCHES) * GPU_DIV
    bit_words = -(-npoints // 64)
    bit_words = -(-bit_words // WARP) * WARP
    return batch * 2 * affine_bytes + bit_words * 8


def _msm(name: str, npoints: int, kind: str, bucket: int, affine: int) -> list[Step]:
    """An sppark MSM: buckets from the async pool, one invoke with its temp, both freed."""
    blob, temp = f"{name}_buckets", f"{name}_temp"
    return [
        Alloc(blob, msm_buckets_bytes(npoints, bucket), allocator="async"),
        Alloc(temp, msm_invoke_temp_bytes(npoints, affine), allocator="async"),
        Kernel(name, kind, npoints),
        Free(temp),
        Free(blob),
    ]


def _ntt_pair(vec: str, n: int) -> list[Step]:
    return [Kernel(f"intt_{vec}", "ntt", n), Kernel(f"coset_ntt_{vec}", "ntt", n)]


def _cpu_head(shape: CircuitShape, variant: CuzkVariant) -> list[Step]:
    """The CPU threads started at pickup: prep_msm, and B_G2 when it runs on the CPU."""
    steps: list[Step] = [
        Cpu("prep_msm", "prep_msm", shape.constraints, threads=1, stream="prep", pool=POOL)
    ]
    if variant.b_g2_msm == "cpu":
        steps.append(
            Cpu(
                "b_g2_msm",
                "msm_g2_cpu",
                shape.tail(shape.b_points),
                threads=variant.b_g2_threads,
                stream="b_g2",
                pool=POOL,
            )
        )
    return steps


def _ntt_h_original(shape: CircuitShape, variant: CuzkVariant, vram_bytes: int) -> list[Step]:
    """The original NTT-H phase (also the fallback of pre-staging): pageable uploads."""
    N, vec_bytes = shape.domain, shape.constraints * FR_BYTES
    d_a = Alloc(
        "d_a",
        N * FR_BYTES,
        persistent=variant.d_a_cache,
        per_device=variant.d_a_cache,
        note="d_a_cache" if variant.d_a_cache else "",
    )
    d_b_bytes = N * FR_BYTES * (1 + lot_of_memory(N, vram_bytes))
    h_msm = _msm("msm_h", N, "msm_g1", G1_BUCKET_BYTES, G1_AFFINE_BYTES)
    original: list[Step] = [d_a, Alloc("d_b", d_b_bytes)]
    for vec in ("a", "b", "c"):
        original += [Copy(f"htod_{vec}", vec_bytes), *_ntt_pair(vec, N)]
        if vec != "a":
            original.append(Kernel("a_mul_b" if vec == "b" else "sub_mul_z_inv", "pointwise", N))
    original += [Free("d_b"), Kernel("coset_intt_h", "ntt", N), Sync("compute"), *h_msm]
    if not variant.d_a_cache:
        original.append(Free("d_a"))
    return original


def _staging(N: int, variant: CuzkVariant) -> list[Step]:
    """Phase 9 pre-staging: the staged buffers (memory-aware when a margin is set) and
    a's upload on the upload stream."""
    stage_a, stage_bc = N * FR_BYTES, N * FR_BYTES // 2
    margin = variant.memory_aware_margin_bytes
    return [
        Alloc(
            "d_a_stage",
            stage_a,
            margin=None if margin is None else margin + stage_bc,
            fallback="prestage_failed",
            note="prestage_setup",
        ),
        Alloc(
            "d_bc",
            stage_bc,
            margin=margin,
            fallback="prestage_failed",
            note="prestage_setup",
        ),
        Copy("stage_a", stage_a, pinned=True, stream="upload"),
    ]


def _prestaged(N: int, variant: CuzkVariant) -> list[Step]:
    """The NTT-H phase over staged vectors: the NTTs of a wait for a's upload only (a
    CUDA event per polynomial, Phase 9), so the b/c upload runs beside them; b's NTTs
    wait for it."""
    stage_bc = N * FR_BYTES // 2
    h_msm = _msm("msm_h", N, "msm_g1", G1_BUCKET_BYTES, G1_AFFINE_BYTES)
    prestaged: list[Step] = [
        Sync("upload"),
        Copy("stage_bc", stage_bc, pinned=True, stream="upload"),
        *_ntt_pair("a", N),
        Sync("upload"),
        *_ntt_pair("b", N),
    ]
    prestaged += [Kernel("a_mul_b", "pointwise", N), *_ntt_pair("c", N)]
    prestaged += [Kernel("sub_mul_z_inv", "pointwise", N)]
    if variant.free_d_bc_after_ntt:
        prestaged.append(Free("d_bc"))
    prestaged += [Kernel("coset_intt_h", "ntt", N), Sync("compute"), *h_msm]
    if variant.free_d_bc_after_ntt:
        prestaged.append(Free("d_a_stage"))
    return prestaged


def _ntt_h(shape: CircuitShape, variant: CuzkVariant, vram_bytes: int, lock: Lock) -> list[Step]:
    """The NTT-H phase with the mutex taken: original, or pre-staged with the original
    as its fallback (the staging allocated before or under the mutex)."""
    original = _ntt_h_original(shape, variant, vram_bytes)
    if variant.prestage == "off":
        return [lock, *original]
    N = shape.domain
    stage_a, stage_bc = N * FR_BYTES, N * FR_BYTES // 2
    staging, prestaged = _staging(N, variant), _prestaged(N, variant)
    failed = [Label("prestage_failed"), Free("d_a_stage"), Free("d_bc")]
    pins: list[Step] = [  # cudaHostRegister of the staged vectors, before the mutex
        Alloc("pinned_a", stage_a, memory="host_pinned", note="prestage_pin"),
        Alloc("pinned_bc", stage_bc, memory="host_pinned", note="prestage_pin"),
    ]
    if variant.prestage == "outside_mutex":
        steps = [*pins, *staging, lock, *prestaged, Goto("ntt_h_done"), *failed, lock]
        steps += original
    else:
        steps = [*pins, lock, *staging, *prestaged, Goto("ntt_h_done"), *failed, *original]
    return [*steps, Label("ntt_h_done")]


def _msm_tail(shape: CircuitShape, variant: CuzkVariant) -> list[Step]:
    """Batch additions (they need prep_msm's bit vectors), then the tail MSMs."""
    steps: list[Step] = [Sync("prep")]
    for name, points, g2 in (
        ("l", shape.l_points, False),
        ("a", shape.a_points, False),
        ("b_g1", shape.b_points, False),
        ("b_g2", shape.b_points, True),
    ):
        affine = G2_AFFINE_BYTES if g2 else G1_AFFINE_BYTES
        steps += [
            Alloc(f"batch_add_{name}", batch_add_temp_bytes(points, affine)),
            Kernel(f"batch_add_{name}", "batch_add_g2" if g2 else "batch_add_g1", points),
            Free(f"batch_add_{name}"),
        ]
    tails = [("l", shape.tail(shape.l_points)), ("a", shape.tail(shape.a_points))]
    tails.append(("b_g1", shape.tail(shape.b_points)))
    for name, points in tails:  # msm_l, msm_a, msm_b constructed together: buckets coexist
        steps.append(
            Alloc(f"msm_{name}_buckets", msm_buckets_bytes(points, G1_BUCKET_BYTES), "async")
        )
    for name, points in tails:
        steps += [
            Alloc(f"msm_{name}_temp", msm_invoke_temp_bytes(points, G1_AFFINE_BYTES), "async"),
            Kernel(f"msm_{name}", "msm_g1", points),
            Free(f"msm_{name}_temp"),
        ]
    steps += [Free(f"msm_{name}_buckets") for name, _ in tails]
    if variant.b_g2_msm == "gpu":
        steps += _msm(
            "msm_b_g2", shape.tail(shape.b_points), "msm_g2", G2_BUCKET_BYTES, G2_AFFINE_BYTES
        )
    return steps


def _epilogue(variant: CuzkVariant) -> list[Step]:
    """After the mutex: B_G2 joins, the proof is assembled, and only then does the
    pending-proof handle (and with it any staged buffer) die."""
    steps: list[Step] = [Sync("b_g2")] if variant.b_g2_msm == "cpu" else []
    steps.append(Cpu("assemble", "assemble", 1))
    if variant.prestage != "off" and not variant.free_d_bc_after_ntt:
        steps += [Free("d_a_stage"), Free("d_bc")]
    if variant.prestage != "off":
        steps += [Free("pinned_a", memory="host_pinned"), Free("pinned_bc", memory="host_pinned")]
    return steps


def build_partition_plan(shape: CircuitShape, variant: CuzkVariant, vram_bytes: int) -> Plan:
    """The steps of one partition on one GPU worker (see the module docstring)."""
    lock = Lock(GPU_MUTEX, variant.mutex_scope)
    unlock = Unlock(GPU_MUTEX, variant.mutex_scope)
    steps = _cpu_head(shape, variant)
    steps += _ntt_h(shape, variant, vram_bytes, lock)
    steps += _msm_tail(shape, variant)
    steps += [Sync("compute"), unlock, *_epilogue(variant)]
    plan = Plan(
        name=f"cuzk-{shape.kind}",
        steps=tuple(steps),
        meta={"builder": "cuzk_sim.plans.cuzk", "kind": shape.kind, "variant": repr(variant)},
    )
    plan.validate(plan.name)
    return plan
