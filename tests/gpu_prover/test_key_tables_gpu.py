"""ProverFlags.key_tables on the GPU: proofs byte-equal to the reference prover's partition
after partition (the first uploads the points into table 0 and builds the tables, the
later ones find them on the device), alone and with every other flag; the traced plan
equal to the dry run for both partitions, the uploads and builds only in the first; the
tables' bytes by hand; a precomputed MSM over a table built in place equal to py_ecc."""

from __future__ import annotations

import random

import pytest
from random_circuits import random_circuit

pytestmark = pytest.mark.gpu

STAGES = ("msm_h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l")
FLAGS = {
    "tables": {"key_resident": True, "key_tables": True},
    "all": {
        "prestage": True,
        "pinned": True,
        "key_pinned": True,
        "overlap_uploads": True,
        "key_resident": True,
        "overlap_tails": True,
        "key_tables": True,
    },
}
FIRST_ONLY = {f"upload_{s}_points" for s in STAGES} | {f"{s}.table.build" for s in STAGES}


@pytest.fixture(autouse=True)
def _no_resident_key_left():
    from cuzk_sim.gpu.device import release_resident

    release_resident()
    yield
    release_resident()


@pytest.mark.parametrize("flags_kw", FLAGS.values(), ids=FLAGS.keys())
@pytest.mark.parametrize("reduction", ["bellman", "snarkjs"])
@pytest.mark.parametrize("seed", [1, 2])
def test_proofs_over_the_tables_equal_the_reference_partition_after_partition(
    flags_kw, reduction, seed
):
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import prove
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.serialize import proof_to_bytes

    pk, w, _ = random_circuit(seed, reduction)
    flags = ProverFlags(**flags_kw)
    for r, s in ((5, 6), (11, 12), (2**200 + 3, 2**190 + 7)):  # 2nd and 3rd: tables built
        got = prove(pk, w, r, s, flags=flags)
        assert proof_to_bytes(got) == proof_to_bytes(ref_prove(pk, w, r, s))


def _windows(n: int) -> int:
    """Tables of a precomputed MSM of n points, by the rule of docs/gpu.md: windows of
    c = ceil(log2 n) bits, 4 <= c <= 20, ceil(256 / c) of them."""
    c = 4
    while (1 << c) < n and c < 20:
        c += 1
    return -(-256 // c)


def test_two_partitions_trace_the_dry_run_plan_and_only_the_first_builds():
    from cuzk_sim.gpu.device import release_resident, resident_bytes
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan, prove_partition
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.serialize import proof_to_bytes

    pk, w, _ = random_circuit(4, "bellman", constraints=12)
    flags = ProverFlags(key_resident=True, key_tables=True)
    planned = dry_run_plan(PartitionShape.of_key(pk, compact=True), flags)
    p1, first = prove_partition(pk, w, 1, 2, flags=flags, mode="traced")
    p2, second = prove_partition(pk, w, 3, 4, flags=flags, mode="traced")
    assert first.plan("t").steps == planned.steps == second.plan("t").steps
    assert proof_to_bytes(p1) == proof_to_bytes(ref_prove(pk, w, 1, 2))
    assert proof_to_bytes(p2) == proof_to_bytes(ref_prove(pk, w, 3, 4))
    assert {name for name, _ in first.timings_ms} >= FIRST_ONLY
    assert not FIRST_ONLY & {name for name, _ in second.timings_ms}  # found on the device
    m, l, h = pk.num_vars, pk.num_public, len(pk.h_query)
    # a real key's A / B queries: the variables some A / B row enters, counted here
    a = len({v for row in pk.A for v, k in row if k})
    b = len({v for row in pk.B for v, k in row if k})
    sizes = {"msm_h": (96, h), "msm_a": (96, a), "msm_b_g1": (96, b), "msm_b_g2": (192, b)}
    sizes["msm_l"] = (96, m - l - 1)
    tables = sum(b * n * _windows(n) for b, n in sizes.values())
    assert resident_bytes(0) == tables  # no separate points buffer: table 0 holds them
    assert release_resident() == tables and resident_bytes(0) == 0


@pytest.mark.parametrize(("group", "n", "tables"), [("g1", 300, 29), ("g2", 40, 43)])
def test_a_table_built_in_place_gives_the_naive_sum(group, n, tables):
    import cupy as cp
    import py_ecc.optimized_bls12_381 as bls
    from cuzk_sim.gpu import encoding
    from cuzk_sim.gpu.device import Device
    from cuzk_sim.gpu.msm import SignedShape, msm
    from cuzk_sim.gpu.msm_tables import build_table
    from cuzk_sim.reference.field import R

    rng = random.Random(9)
    gen, inf = (bls.G1, bls.Z1) if group == "g1" else (bls.G2, bls.Z2)
    base = [bls.multiply(gen, rng.randrange(1, R)) for _ in range(5)]
    points = [rng.choice(base) for _ in range(n)]
    points[7] = inf
    scalars = [rng.randrange(R) for _ in range(n)]
    scalars[3], scalars[4], scalars[5] = 0, 1, R - 1
    to_limbs = encoding.g1_to_limbs if group == "g1" else encoding.g2_to_limbs
    limbs = to_limbs(points).reshape(-1)
    dev = Device("real")
    shape = SignedShape.of(group, n, precomputed=True)
    # 300 points: c = 9 bits, 29 tables; 40: c = 6, 43 tables (ceil(256 / c))
    assert shape.windows == _windows(n) == tables
    table = dev.alloc("t", shape.table_bytes())
    table.array[: limbs.size] = cp.asarray(limbs)  # table 0: the points themselves
    build_table(dev, "t.build", group, table, table, n)
    s = dev.alloc("s", 32 * n)
    s.array[:] = cp.asarray(encoding.scalars_to_limbs(scalars).reshape(-1))
    got = msm(dev, "m", group, table, s, n, algo="signed", table=table)
    dev.free_all()
    want = inf
    for p, k in zip(points, scalars, strict=True):
        want = bls.add(want, bls.multiply(p, k))
    back = encoding.g1_from_limbs(got) if group == "g1" else encoding.g2_from_limbs(got)
    assert bls.eq(back, want)
