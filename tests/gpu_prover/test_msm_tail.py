"""gpu/msm_tail.py (the MSM's Horner on the host, no GPU) against py_ecc: window sums given
as Jacobian Montgomery limbs with random Z, the result sum_j 2^(j c) S_j compared with
py_ecc's own multiply and add; the group law's edge cases (P + P, P + (-P), infinity)."""

from __future__ import annotations

import random

import numpy as np
import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.gpu import msm_tail
from cuzk_sim.gpu.encoding import FQ_MONT, FQ_MONT_INV, ints_to_limbs, limbs_to_ints
from cuzk_sim.reference.field import Q


def _coords(group: str, p) -> list:
    """py_ecc projective point -> affine standard ints (Fq: [x], Fq2: [(x0, x1)]...)."""
    x, y = bls.normalize(p)
    if group == "g1":
        return [int(x.n), int(y.n)]
    return [(int(x.coeffs[0]), int(x.coeffs[1])), (int(y.coeffs[0]), int(y.coeffs[1]))]


def _jacobian_words(group: str, p, rng: random.Random) -> np.ndarray:
    """Jacobian Montgomery limbs of p with a random Z (infinity: Z = 0)."""
    f = msm_tail.FQ if group == "g1" else msm_tail.FQ2
    if bls.is_inf(p):
        pt = (f.small(1, _one(group)), f.small(1, _one(group)), f.small(0, _one(group)))
    else:
        x, y = _coords(group, p)
        z = rng.randrange(1, Q) if group == "g1" else (rng.randrange(Q), rng.randrange(1, Q))
        z2 = f.mul(z, z)
        pt = (f.mul(x, z2), f.mul(y, f.mul(z2, z)), z)
    return msm_tail._words_from_point(group, pt)


def _one(group: str):
    return 1 if group == "g1" else (1, 0)


def _from_words(group: str, words: np.ndarray):
    """Jacobian Montgomery limbs -> py_ecc point (via affine)."""
    (pt,) = msm_tail._points_from_words(group, words)
    f = msm_tail.FQ if group == "g1" else msm_tail.FQ2
    if f.is_zero(pt[2]):
        return bls.Z1 if group == "g1" else bls.Z2
    if group == "g1":
        zi = pow(pt[2], -1, Q)
        x, y = pt[0] * zi * zi % Q, pt[1] * zi * zi * zi % Q
        return (bls.FQ(x), bls.FQ(y), bls.FQ.one())
    z0, z1 = pt[2]
    norm = pow((z0 * z0 + z1 * z1) % Q, -1, Q)
    zi = (z0 * norm % Q, -z1 * norm % Q)
    zi2 = f.mul(zi, zi)
    x, y = f.mul(pt[0], zi2), f.mul(pt[1], f.mul(zi2, zi))
    return (bls.FQ2(list(x)), bls.FQ2(list(y)), bls.FQ2.one())


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("c, windows", [(4, 3), (16, 4)])
def test_horner_equals_py_ecc(group, c, windows):
    rng = random.Random(c * 10 + windows)
    gen = bls.G1 if group == "g1" else bls.G2
    ks = [rng.randrange(1, 2**64) for _ in range(windows)]
    ks[1] = 0  # an empty window (infinity) in the middle
    sums = [bls.multiply(gen, k) if k else (bls.Z1 if group == "g1" else bls.Z2) for k in ks]
    words = np.concatenate([_jacobian_words(group, p, rng) for p in sums])
    got = _from_words(group, msm_tail.horner(group, words, c))
    expected = bls.multiply(gen, sum(k << (j * c) for j, k in enumerate(ks)))
    assert bls.eq(got, expected)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_add_edge_cases(group):
    rng = random.Random(7)
    f = msm_tail.FQ if group == "g1" else msm_tail.FQ2
    gen = bls.G1 if group == "g1" else bls.G2
    p = bls.multiply(gen, 12345)

    def pt(q):
        (v,) = msm_tail._points_from_words(group, _jacobian_words(group, q, rng))
        return v

    def back(v):
        return _from_words(group, msm_tail._words_from_point(group, v))

    assert bls.eq(back(msm_tail.add(f, pt(p), pt(p))), bls.double(p))  # H = 0, r = 0
    assert bls.is_inf(back(msm_tail.add(f, pt(p), pt(bls.neg(p)))))  # H = 0, r != 0
    inf = pt(bls.Z1 if group == "g1" else bls.Z2)
    assert bls.eq(back(msm_tail.add(f, inf, pt(p))), p)
    assert bls.eq(back(msm_tail.add(f, pt(p), inf)), p)
    assert bls.is_inf(back(msm_tail.dbl(f, inf)))


def test_words_round_trip_is_montgomery():
    """The limbs are x 2^384 mod q, as the kernels store them."""
    words = msm_tail._words_from_point("g1", (5, 7, 1))
    assert limbs_to_ints(words.reshape(3, 12)) == [5 * FQ_MONT % Q, 7 * FQ_MONT % Q, FQ_MONT % Q]
    assert ints_to_limbs([FQ_MONT_INV], 12).shape == (1, 12)


def test_deferred_window_sums_finish_in_msm_results_and_cross_processes():
    """A deferred MSM's WindowSums (what the pipeline sends to its assembler process):
    pickled and back, msm_results runs the Horner and sums the chunks of a stage; the
    expected point is py_ecc's multiply of the scalars the sums encode."""
    import pickle

    from cuzk_sim.gpu.msm import WindowSums
    from cuzk_sim.gpu.msm_results import msm_results

    rng = random.Random(5)
    c, out, expected = 6, {}, {}
    for stage, group, gen in [("msm_a", "g1", bls.G1), ("msm_b_g2", "g2", bls.G2)]:
        parts, total = [], 0
        for _ in range(2):  # two chunks of one stage
            ks = [rng.randrange(1, 2**40) for _ in range(3)]
            total += sum(k << (j * c) for j, k in enumerate(ks))
            words = np.concatenate([_jacobian_words(group, bls.multiply(gen, k), rng) for k in ks])
            parts.append(pickle.loads(pickle.dumps(WindowSums(group, c, words))))
        out[stage], expected[stage] = parts, bls.multiply(gen, total)
    got = msm_results(out)
    for stage in out:
        assert bls.eq(got[stage], expected[stage]), stage


def test_cpu_halves_split_physical_cores_with_their_hyperthreads(tmp_path):
    """A sysfs tree of 4 cores x 2 hyperthreads (cpu k and k + 4 share core k): the halves
    hold whole cores, {0, 1, 4, 5} and {2, 3, 6, 7}; CPUs the process may not use are
    left out; with fewer than 4 cores usable there is no split."""
    from cuzk_sim.gpu.assembler import cpu_halves

    for cpu in range(8):
        topo = tmp_path / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text("0\n")
        (topo / "core_id").write_text(f"{cpu % 4}\n")
    assert cpu_halves(str(tmp_path), set(range(8))) == ({0, 1, 4, 5}, {2, 3, 6, 7})
    assert cpu_halves(str(tmp_path), set(range(8)) - {7}) == ({0, 1, 4, 5}, {2, 3, 6})
    assert cpu_halves(str(tmp_path), {0, 1, 2, 4}) is None  # 3 cores
    assert cpu_halves(str(tmp_path / "nowhere"), set(range(8))) is None


def test_tail_groups_name_every_stage_once():
    from cuzk_sim.gpu.assembler import TAIL_GROUPS, tail_groups

    raw = {st: [st] for g in TAIL_GROUPS for st in g} | {"msm_extra": ["x"]}
    del raw["msm_a"]  # a stage the partition lacks: its group is smaller, not broken
    groups = tail_groups(raw)
    seen = [st for g in groups for st in g]
    assert sorted(seen) == sorted(raw)  # each stage in exactly one group
    assert {"msm_extra": ["x"]} in groups and {"msm_h": ["msm_h"]} in groups
    assert all(groups)


def test_tails_side_by_side_in_spawned_processes_assemble_the_same_proof():
    """What the pipeline does by default (`finish_in_pool`): the five MSM tails in three
    spawned processes, then the assembly in a fourth task. Expected: the assembly of the
    points py_ecc's multiply gives for the scalars the window sums encode."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from cuzk_sim.gpu.assembler import finish_in_pool
    from cuzk_sim.gpu.msm import WindowSums
    from cuzk_sim.gpu.prover import HostKey, assemble

    rng = random.Random(11)
    c, raw, points = 5, {}, {}
    stages = [("msm_h", "g1"), ("msm_a", "g1"), ("msm_b_g1", "g1"), ("msm_b_g2", "g2")]
    stages += [("msm_l", "g1")]
    for stage, group in stages:
        gen = bls.G1 if group == "g1" else bls.G2
        ks = [rng.randrange(1, 2**30) for _ in range(4)]
        words = np.concatenate([_jacobian_words(group, bls.multiply(gen, k), rng) for k in ks])
        raw[stage] = [WindowSums(group, c, words)]
        points[stage] = bls.multiply(gen, sum(k << (j * c) for j, k in enumerate(ks)))
    ends = tuple(bls.multiply(g, k) for g, k in [(bls.G1, 2), (bls.G1, 3), (bls.G2, 5)])
    ends += (bls.multiply(bls.G1, 7), bls.multiply(bls.G2, 7))
    r, s = 1234567, 7654321
    expected = assemble(HostKey({}, *ends), points, r, s)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:
        got = finish_in_pool(pool, ends, raw, r, s)
    for name in ("a", "b", "c"):
        assert bls.eq(getattr(got, name), getattr(expected, name)), name


def test_pipeline_tunes_parse_and_an_unknown_one_is_named(monkeypatch):
    from cuzk_sim.gpu.assembler import _tune_from_env

    monkeypatch.setenv("CUZK_SIM_PIPELINE_TUNE", "serialtail, noaffinity")
    assert _tune_from_env() == {"serialtail", "noaffinity"}
    monkeypatch.setenv("CUZK_SIM_PIPELINE_TUNE", "serialtail,fast")
    with pytest.raises(ValueError, match=r"CUZK_SIM_PIPELINE_TUNE: unknown \['fast'\]"):
        _tune_from_env()
