"""Differential tests of the CUDA kernels and the GPU prover against Python ints, py_ecc and
the reference prover. Marker `gpu`: they run on the device machine, skipped elsewhere."""

from __future__ import annotations

import random

import numpy as np
import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.gpu import encoding
from cuzk_sim.reference.domain import Domain
from cuzk_sim.reference.field import Q, R
from hypothesis import given
from hypothesis import strategies as st
from random_circuits import random_circuit

pytestmark = pytest.mark.gpu

FR_R = 2**256 % R
FQ_R = 2**384 % Q


def _cp():
    import cupy

    return cupy


def _binop(fn: str, limbs: int, a: list[int], b: list[int], op: int) -> list[int]:
    from cuzk_sim.gpu.module import launch

    cp = _cp()
    da = cp.asarray(encoding.ints_to_limbs(a, limbs))
    db = cp.asarray(encoding.ints_to_limbs(b, limbs))
    out = cp.full_like(da, 0xDEADBEEF)  # poison: every element must be written
    launch("field_ops.cu", fn, len(a), out, da, db, np.int64(len(a)), np.int32(op))
    return encoding.limbs_to_ints(out.get())


field_elems = st.lists(st.integers(0, R - 1), min_size=1, max_size=40)


@given(st.data())
def test_fr_ops_match_python_ints(data):
    n = data.draw(st.integers(1, 40))
    a = data.draw(st.lists(st.integers(0, R - 1), min_size=n, max_size=n))
    b = data.draw(st.lists(st.integers(0, R - 1), min_size=n, max_size=n))
    a[0], b[0] = R - 1, R - 1  # the edge: (r-1)^2, (r-1) + (r-1)
    assert _binop("fr_binop", 8, a, b, 0) == [(x + y) % R for x, y in zip(a, b, strict=True)]
    assert _binop("fr_binop", 8, a, b, 1) == [(x - y) % R for x, y in zip(a, b, strict=True)]
    # Montgomery product: a b / 2^256
    inv = pow(FR_R, -1, R)
    assert _binop("fr_binop", 8, a, b, 2) == [x * y * inv % R for x, y in zip(a, b, strict=True)]
    assert _binop("fr_binop", 8, a, b, 3) == [x * FR_R % R for x in a]
    assert _binop("fr_binop", 8, a, b, 4) == [x * inv % R for x in a]


@given(st.data())
def test_fq_fq2_ops_match_python_ints(data):
    n = data.draw(st.integers(1, 20))
    a = data.draw(st.lists(st.integers(0, Q - 1), min_size=n, max_size=n))
    b = data.draw(st.lists(st.integers(0, Q - 1), min_size=n, max_size=n))
    a[0] = Q - 1
    inv = pow(FQ_R, -1, Q)
    assert _binop("fq_binop", 12, a, b, 0) == [(x + y) % Q for x, y in zip(a, b, strict=True)]
    assert _binop("fq_binop", 12, a, b, 1) == [(x - y) % Q for x, y in zip(a, b, strict=True)]
    assert _binop("fq_binop", 12, a, b, 2) == [x * y * inv % Q for x, y in zip(a, b, strict=True)]
    # inverse of a Montgomery element: (a R)^-1 R^2 = a^-1 R
    am = [x * FQ_R % Q for x in a]
    got = _binop("fq_binop", 12, am, b, 5)
    assert got == [pow(x, -1, Q) * FQ_R % Q if x else 0 for x in a]
    # Fq2 product in Montgomery form vs py_ecc FQ2
    a2 = [x for pair in zip(a, b, strict=True) for x in pair]
    b2 = [x for pair in zip(b, a, strict=True) for x in pair]
    got2 = _binop("fq2_binop", 24, _pack2(a2), _pack2(b2), 2)
    for i in range(n):
        x = bls.FQ2([a2[2 * i], a2[2 * i + 1]]) * bls.FQ2([b2[2 * i], b2[2 * i + 1]])
        lo, hi = got2[i] % 2**384, got2[i] >> 384
        assert (lo, hi) == tuple(int(c) * inv % Q for c in x.coeffs)


def _pack2(flat: list[int]) -> list[int]:
    return [flat[2 * i] + (flat[2 * i + 1] << 384) for i in range(len(flat) // 2)]


def _random_g1(rng: random.Random) -> object:
    return bls.multiply(bls.G1, rng.randrange(1, R))


def _random_g2(rng: random.Random) -> object:
    return bls.multiply(bls.G2, rng.randrange(1, R))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_group_law_matches_py_ecc(group):
    from cuzk_sim.gpu.module import launch

    cp = _cp()
    rng = random.Random(5)
    gen = _random_g1 if group == "g1" else _random_g2
    to_limbs = encoding.g1_to_limbs if group == "g1" else encoding.g2_to_limbs
    from_limbs = encoding.g1_from_limbs if group == "g1" else encoding.g2_from_limbs
    inf = bls.Z1 if group == "g1" else bls.Z2
    P = [gen(rng) for _ in range(4)]
    # pairs: random, P + P (doubling inside add), P + (-P) (infinity), inf + P, P + inf
    ps = [P[0], P[1], P[1], inf, P[2]]
    qs = [P[3], P[1], bls.neg(P[1]), P[2], inf]
    dp, dq = cp.asarray(to_limbs(ps)), cp.asarray(to_limbs(qs))
    for op in (0, 1, 2):
        out = cp.full_like(dp, 0xDEADBEEF)
        launch("msm.cu", f"{group}_group_op", len(ps), dp, dq, out, np.int64(len(ps)), np.int32(op))
        host = out.get()
        for i, (p, q) in enumerate(zip(ps, qs, strict=True)):
            want = bls.double(p) if op == 2 else bls.add(p, q)
            assert bls.eq(from_limbs(host[i]), want), (group, op, i)


@given(
    log_n=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    convention=st.sampled_from(["bellman", "snarkjs"]),
)
def test_ntt_matches_reference_domain(log_n, seed, convention):
    from cuzk_sim.gpu import ntt as gntt
    from cuzk_sim.gpu.module import launch

    cp = _cp()
    rng = random.Random(seed)
    n = 1 << log_n
    dom = Domain(n, convention)
    g = dom.default_coset
    values = [rng.randrange(R) for _ in range(n)]
    tables = gntt.domain_tables(log_n, dom.omega, g, 1).pack()
    t = gntt.DeviceTables.from_buffer(cp.asarray(tables), log_n)
    for fn, want in (
        (gntt.ntt, dom.ntt(values)),
        (gntt.intt, dom.intt(values)),
        (gntt.coset_ntt, dom.coset_ntt(values, g)),
        (gntt.coset_intt, dom.coset_intt(values, g)),
    ):
        a = cp.asarray(encoding.ints_to_limbs(values, 8)).reshape(-1)
        launch("field_ops.cu", "fr_convert", n, a, np.int64(n), np.int32(1))
        fn(a, t)
        launch("field_ops.cu", "fr_convert", n, a, np.int64(n), np.int32(0))
        assert encoding.limbs_to_ints(a.get().reshape(n, 8)) == want, fn.__name__


MSM_VARIANTS = ["signed", "unsigned", "precomputed"]


def _variant_msm(dev, group, points_buf, scalars_buf, n, variant: str):
    """msm() as `variant`: an algorithm, or signed over precomputed bases."""
    from cuzk_sim.gpu.msm import msm
    from cuzk_sim.gpu.msm_tables import precompute_table

    if variant == "precomputed":
        table = precompute_table(dev, "msm_test.table", group, points_buf, n)
        return msm(dev, "msm_test", group, points_buf, scalars_buf, n, algo="signed", table=table)
    return msm(dev, "msm_test", group, points_buf, scalars_buf, n, algo=variant)


def _gpu_msm(group: str, points: list, scalars: list[int], variant: str = "signed") -> object:
    from cuzk_sim.gpu.device import Device

    to_limbs = encoding.g1_to_limbs if group == "g1" else encoding.g2_to_limbs
    from_limbs = encoding.g1_from_limbs if group == "g1" else encoding.g2_from_limbs
    dev = Device("real")
    pts = to_limbs(points)
    sc = encoding.scalars_to_limbs(scalars)
    dp = dev.alloc("points", max(4, pts.nbytes))
    ds = dev.alloc("scalars", max(4, sc.nbytes))
    dev.copy_htod("p", dp, pts, pts.nbytes)
    dev.copy_htod("s", ds, sc, sc.nbytes)
    out = _variant_msm(dev, group, dp, ds, len(points), variant)
    dev.free_all()
    return from_limbs(out)


def _naive(points: list, scalars: list[int], inf: object) -> object:
    acc = inf
    for P, k in zip(points, scalars, strict=True):
        acc = bls.add(acc, bls.multiply(P, k))
    return acc


@given(st.data())
@pytest.mark.parametrize("variant", MSM_VARIANTS)
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_msm_matches_naive(group, variant, data):
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    n = data.draw(st.integers(0, 70 if group == "g1" else 24))
    gen = _random_g1 if group == "g1" else _random_g2
    inf = bls.Z1 if group == "g1" else bls.Z2
    base = [gen(rng) for _ in range(min(n, 6))]
    # repeated points, infinity, zero scalars, r - 1, 1
    points = [inf if rng.random() < 0.1 else rng.choice(base) for _ in range(n)]
    special = [0, 1, R - 1, 2**254, 7]
    scalars = [rng.choice(special) if rng.random() < 0.3 else rng.randrange(R) for _ in range(n)]
    assert bls.eq(_gpu_msm(group, points, scalars, variant), _naive(points, scalars, inf))


@pytest.mark.parametrize("variant", MSM_VARIANTS)
@pytest.mark.parametrize(
    "group,log_n,skewed", [("g1", 20, False), ("g2", 16, False), ("g1", 18, True)]
)
def test_msm_large_by_linear_combination_identity(group, log_n, skewed, variant):
    """2^k points P_i = k_i G made on the GPU: sum s_i P_i = (sum s_i k_i) G (an independent
    oracle: Python ints and one py_ecc scalar multiplication). Skewed: scalars mostly 0 and
    1, as in witnesses, so a few buckets hold most of the points."""
    from cuzk_sim.gpu.module import launch

    cp = _cp()
    rng = np.random.default_rng(11 + log_n)
    n = 1 << log_n
    k = _random_scalars(rng, n)
    s = _random_scalars(rng, n)
    if skewed:
        pick = rng.random(n)
        skew = [(0.7, 1), (0.8, 0), (0.9, R - 1)]
        s = [next((x for q, x in skew if p < q), v) for p, v in zip(pick, s, strict=True)]
    s[:3] = [0, R - 1, 1]
    dk = cp.asarray(encoding.scalars_to_limbs(k))
    gen = bls.G1 if group == "g1" else bls.G2
    to_limbs = encoding.g1_to_limbs if group == "g1" else encoding.g2_to_limbs
    words = 24 if group == "g1" else 48
    pts = cp.empty((n, words), dtype=cp.uint32)
    launch(
        "msm.cu",
        f"{group}_scalar_mul",
        n,
        cp.asarray(to_limbs([gen])),
        dk,
        pts,
        np.int64(n),
        threads=128,
    )
    got = _gpu_msm_device(pts, s, group, variant)
    want = bls.multiply(gen, sum(a * b for a, b in zip(k, s, strict=True)) % R)
    assert bls.eq(got, want)


def _random_scalars(rng: np.random.Generator, n: int) -> list[int]:
    raw = rng.integers(0, 2**32, size=(n, 8), dtype=np.uint64).astype(np.uint32)
    return [v % R for v in encoding.limbs_to_ints(raw)]


def _gpu_msm_device(pts, scalars: list[int], group: str = "g1", variant="signed") -> object:
    from cuzk_sim.gpu.device import Buffer, Device

    cp = _cp()
    dev = Device("real")
    sc = cp.asarray(encoding.scalars_to_limbs(scalars)).reshape(-1)
    p, s = Buffer("p", pts.nbytes, pts.reshape(-1)), Buffer("s", sc.nbytes, sc)
    out = _variant_msm(dev, group, p, s, len(scalars), variant)
    dev.free_all()
    return encoding.g1_from_limbs(out) if group == "g1" else encoding.g2_from_limbs(out)


@pytest.mark.parametrize("reduction", ["bellman", "snarkjs"])
@given(seed=st.integers(0, 2**32 - 1))
def test_proof_bytes_equal_reference_and_verify(reduction, seed):
    from cuzk_sim.gpu.prover import prove
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.serialize import proof_to_bytes
    from cuzk_sim.reference.verify import verify

    pk, w, rng = random_circuit(seed, reduction)
    r, s = rng.randrange(R), rng.randrange(R)
    got = prove(pk, w, r, s)
    assert proof_to_bytes(got) == proof_to_bytes(ref_prove(pk, w, r, s))
    assert verify(pk.vk, w[1 : pk.num_public + 1], got)


@pytest.mark.parametrize(
    "flags_kw",
    [
        {},
        {"prestage": True, "pinned": True},
        {"prestage": True, "memory_aware": True, "free_bc_early": False, "allocator": "async"},
        {"allocator": "sync"},
        {"msm_chunk": 3},
    ],
)
def test_dry_run_plan_equals_traced_plan(flags_kw):
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan, prove_partition
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.serialize import proof_to_bytes

    flags = ProverFlags(**flags_kw)
    pk, w, rng = random_circuit(3, "bellman")
    proof, dev = prove_partition(pk, w, 5, 6, flags=flags, mode="traced")
    traced = dev.plan("traced")
    planned = dry_run_plan(PartitionShape.of_key(pk, compact=True), flags)
    assert traced.steps == planned.steps
    assert dev.timings_ms and all(ms >= 0 for _, ms in dev.timings_ms)
    assert proof_to_bytes(proof) == proof_to_bytes(ref_prove(pk, w, 5, 6))


def test_memory_aware_prestage_falls_back_when_margin_exceeds_free():
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import prove_partition

    from cuzk_sim.plan.contract import Alloc, Lock

    cp = _cp()
    free = int(cp.cuda.runtime.memGetInfo()[0])
    flags = ProverFlags(prestage=True, memory_aware=True, margin_bytes=free + (1 << 30))
    pk, w, _ = random_circuit(4, "bellman")
    _, dev = prove_partition(pk, w, 1, 2, flags=flags)
    lock_at = next(i for i, s in enumerate(dev.steps) if isinstance(s, Lock))
    d_a_at = next(i for i, s in enumerate(dev.steps) if isinstance(s, Alloc) and s.buffer == "d_a")
    assert d_a_at > lock_at  # not pre-staged: allocated inside the lock


def test_real_oom_names_the_buffer():
    from cuzk_sim.gpu.device import Device, DeviceOutOfMemory

    dev = Device("real", allocator="sync")
    with pytest.raises(DeviceOutOfMemory, match="d_huge"):
        dev.alloc("d_huge", 1 << 50)
    assert dev.live == {}


def test_worker_threads_share_the_device_lock_and_all_proofs_are_right():
    """Three worker threads on gpu 0, two proofs each: every proof equals the reference's,
    and no two GPU sections (lock holds) overlap in time."""
    from concurrent.futures import ThreadPoolExecutor

    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import prove_partition
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.serialize import proof_to_bytes

    jobs = [random_circuit(seed, "bellman") for seed in range(6)]
    flags = ProverFlags(prestage=True)  # pre-staging runs outside the lock, concurrently

    def work(i: int):
        pk, w, _ = jobs[i]
        return prove_partition(pk, w, i + 1, i + 2, gpu_index=0, flags=flags)

    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(work, range(6)))
    holds = sorted(h for _, dev in results for h in dev.lock_holds)
    assert len(holds) == 6
    assert all(a[1] <= b[0] for a, b in zip(holds, holds[1:], strict=False))
    for i, (proof, _) in enumerate(results):
        pk, w, _ = jobs[i]
        assert proof_to_bytes(proof) == proof_to_bytes(ref_prove(pk, w, i + 1, i + 2))


def test_dry_run_equals_traced_for_snarkjs_reduction():
    from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan, prove_partition

    pk, w, _ = random_circuit(8, "snarkjs")
    _, dev = prove_partition(pk, w, 1, 2, mode="traced")
    assert dev.plan("traced").steps == dry_run_plan(PartitionShape.of_key(pk, compact=True)).steps
