"""Level 0 of the signed MSM's accumulation, kernels/msm_signed.cu compiled by the host C++
compiler (FIELD_HOST_EMULATION, one emulated thread after another), run in CI without a
GPU: the affine batch kernel (ACC_AFFINE=1, msm_affine.cuh; divsteps, binary and Fermat
inverses)
and the balanced one, against py_ecc. Each bucket's pieces (its value in `buckets`, its
slots) must add up to the sum of its entries' points (negated where the sign bit is set).
Buckets are built to hit the edges: P + P, P + (-P), infinity, runs crossing batches and
threads, empty buckets, a range that is not a multiple of the batch, passes cut short by
min_pairs. Skipped when no C++ compiler is installed."""

from __future__ import annotations

import random
import subprocess

import numpy as np
import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.gpu import encoding
from cuzk_sim.gpu.module import KERNEL_DIR
from cuzk_sim.gpu.msm import jacobian_to_affine
from cuzk_sim.reference.field import R
from host_cxx import build

HARNESS = r"""
#define FIELD_HOST_EMULATION 1
#include <algorithm>
#include <cstdio>
#include <vector>
using std::max;
using std::min;
struct uint4 { unsigned x, y, z, w; };
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
    return {x, y, z, w};
}
struct dim3_ { unsigned x = 0, y = 0, z = 0; };
static dim3_ blockIdx, threadIdx, blockDim, gridDim;
#define __ldg(p) (*(p))
#define __launch_bounds__(a, b)
static inline unsigned atomicAdd(unsigned* p, unsigned v) { unsigned o = *p; *p += v; return o; }
#include "msm_signed.cu"
// stdin: mode (a: affine, b: balanced) group (g|h) nbuckets total npoints L nthreads B
// min_pairs launch, then starts, order, point words (hex); stdout: buckets, slots, keys
int main() {
    char mode[4], grp[4];
    long long nb, total, np_, L, nt; int B, minp; long long launch;
    if (scanf("%3s %3s %lld %lld %lld %lld %lld %d %d %lld", mode, grp, &nb, &total, &np_, &L,
              &nt, &B, &minp, &launch) != 10) return 1;
    const int W = grp[0] == 'g' ? 12 : 24;
    std::vector<u32> starts(nb + 1), order(total > 0 ? total : 1), pts(np_ * 2 * W);
    for (auto& v : starts) scanf("%x", &v);
    for (long long i = 0; i < total; i++) scanf("%x", &order[i]);
    for (auto& v : pts) scanf("%x", &v);
    std::vector<u32> buckets(nb * 3 * W, 0xdeadbeefu), slots(2 * nt * 3 * W, 0xdeadbeefu);
    std::vector<u32> kv(4 * nt, 0xdeadbeefu);
    std::vector<u32> scratch(launch * ((long long)B * 2 * W + (long long)(B / 2) * W) + 4);
    blockDim.x = launch < 128 ? (unsigned)launch : 128;
    gridDim.x = (unsigned)((launch + blockDim.x - 1) / blockDim.x);
    for (long long gid = 0; gid < (long long)gridDim.x * blockDim.x; gid++) {
        blockIdx.x = (unsigned)(gid / blockDim.x);
        threadIdx.x = (unsigned)(gid % blockDim.x);
        u32 *p = pts.data(), *o = order.data(), *st = starts.data(), *bk = buckets.data();
        u32 *sl = slots.data(), *k = kv.data(), *sc = scratch.data();
        if (mode[0] == 'a' && W == 12) g1_acc_affine(p, o, st, nb, L, bk, sl, k, nt, sc, B, minp);
        if (mode[0] == 'a' && W == 24) g2_acc_affine(p, o, st, nb, L, bk, sl, k, nt, sc, B, minp);
        if (mode[0] == 'b' && W == 12) g1_acc_balanced(p, o, st, nb, L, bk, sl, k, nt);
        if (mode[0] == 'b' && W == 24) g2_acc_balanced(p, o, st, nb, L, bk, sl, k, nt);
    }
    for (auto v : buckets) printf("%x ", v);
    printf("\n");
    for (auto v : slots) printf("%x ", v);
    printf("\n");
    for (auto v : kv) printf("%x ", v);
    printf("\n");
}
"""

POISON = 0xDEADBEEF


def _build(tmp_path_factory, flags: list[str]):
    return build(tmp_path_factory.mktemp("acc_emu"), HARNESS, ["-w", *flags])


@pytest.fixture(scope="module", params=["ACC_AFFINE_INV=2", "ACC_AFFINE_INV=1", "ACC_AFFINE_INV=0"])
def harness(request, tmp_path_factory):
    """The harness with the affine kernel compiled in: divsteps, binary or Fermat inverse."""
    return _build(tmp_path_factory, ["-DACC_AFFINE=1", f"-D{request.param}"])


def _case(group: str, seed: int):
    """(base points, bucket -> list of (point index, negative)) with the edge cases in it."""
    rng = random.Random(seed)
    gen, inf = (bls.G1, bls.Z1) if group == "g1" else (bls.G2, bls.Z2)
    base = [bls.multiply(gen, rng.randrange(1, R)) for _ in range(6)] + [inf]
    p = 0  # index of one base point, used for P + P and P + (-P)
    buckets: list[list[tuple[int, int]]] = [
        [(p, 0), (p, 0)],  # P + P
        [(p, 0), (p, 1)],  # P + (-P)
        [(p, 0), (p, 1), (1, 0)],
        [(6, 0), (p, 0)],  # infinity first
        [(p, 0), (6, 0), (6, 1), (1, 0)],
        [],  # empty
        [(2, 0)],
        [(p, 0)] * 8,  # a run of one point: doublings at every level
        [(p, i % 2) for i in range(7)],  # alternating signs: infinities mid-tree
        [],
    ]
    big = 70 if group == "g1" else 40  # crosses batches and threads
    buckets += [[(rng.randrange(7), rng.randrange(2)) for _ in range(big)]]
    for _ in range(30 if group == "g1" else 12):
        size = rng.choice([0, 1, 1, 2, 3, 5, 9, 17, 33])
        buckets.append([(rng.randrange(7), rng.randrange(2)) for _ in range(size)])
    rng.shuffle(buckets)
    return base, buckets


def _run(exe, mode, group, base, buckets, L, B, min_pairs, launch):
    to_limbs = encoding.g1_to_limbs if group == "g1" else encoding.g2_to_limbs
    starts, order = [0], []
    for entries in buckets:
        order += [i | (neg << 31) for i, neg in entries]
        starts.append(len(order))
    total, nb = len(order), len(buckets)
    nthreads = max(1, -(-total // L))
    words = to_limbs(base).reshape(-1)
    head = f"{mode} {'g' if group == 'g1' else 'h'} {nb} {total} {len(base)} {L} {nthreads} "
    head += f"{B} {min_pairs} {launch}\n"
    body = " ".join(f"{v:x}" for v in [*starts, *order, *(int(w) for w in words)])
    out = subprocess.run(
        [str(exe)], input=head + body + "\n", capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return [np.array([int(v, 16) for v in line.split()], dtype=np.uint64) for line in out]


def _check(group, base, buckets, outputs):
    from_limbs = encoding.g1_from_limbs if group == "g1" else encoding.g2_from_limbs
    inf = bls.Z1 if group == "g1" else bls.Z2
    jw = 36 if group == "g1" else 72
    bucket_words, slot_words, kv = outputs

    def point(words):
        return from_limbs(jacobian_to_affine(group, words.astype(np.uint32)))

    pieces: dict[int, list] = {b: [] for b in range(len(buckets))}
    for s in range(len(kv) // 2):
        key, ok = int(kv[2 * s]), int(kv[2 * s + 1])
        assert ok in (0, 1), f"slot {s} flag unwritten"
        if ok:
            pieces[key].append(point(slot_words[s * jw : (s + 1) * jw]))
    for b, entries in enumerate(buckets):
        words = bucket_words[b * jw : (b + 1) * jw]
        if not (words == POISON).all():
            pieces[b].append(point(words))
        want = inf
        for i, neg in entries:
            want = bls.add(want, bls.neg(base[i]) if neg else base[i])
        got = inf
        for pc in pieces[b]:
            got = bls.add(got, pc)
        assert bls.eq(got, want), f"bucket {b} ({len(entries)} entries)"
        if not entries:
            assert not pieces[b], f"empty bucket {b} got a value"


# (L entries per thread, B batch, min_pairs, launched threads): several batches per thread,
# a range not a multiple of the batch, passes cut short, no passes at all, grid-stride reuse
SHAPES = [(64, 16, 1, 128), (50, 8, 2, 3), (37, 32, 1, 128), (40, 16, 1000, 2)]


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_affine_accumulation_matches_py_ecc(harness, group):
    from cuzk_sim.gpu.msm import AFFINE_BATCH, AFFINE_MIN_PAIRS

    base, buckets = _case(group, 3)
    production = (AFFINE_BATCH, AFFINE_BATCH, AFFINE_MIN_PAIRS[group], 128)  # gpu/msm.py's
    shapes = [production] + (SHAPES if group == "g1" else SHAPES[:2])
    for L, B, min_pairs, launch in shapes:
        _check(
            group, base, buckets, _run(harness, "a", group, base, buckets, L, B, min_pairs, launch)
        )


def test_balanced_accumulation_matches_py_ecc(harness):
    """The harness itself, on the kernel the affine one replaces."""
    base, buckets = _case("g1", 4)
    _check("g1", base, buckets, _run(harness, "b", "g1", base, buckets, 30, 16, 1, 128))


@pytest.mark.slowtier  # an NVRTC compile of msm_signed.cu: seconds
def test_affine_kernels_compile_with_nvrtc():
    """msm_signed.cu with the affine kernels in, as gpu/module.py compiles it (NVRTC, sm_90),
    beside test_kernels_compile.py's default build."""
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC not installed")
    headers = sorted(KERNEL_DIR.glob("*.cuh"))
    err, prog = nvrtc.nvrtcCreateProgram(
        (KERNEL_DIR / "msm_signed.cu").read_bytes(),
        b"msm_signed.cu",
        len(headers),
        [h.read_bytes() for h in headers],
        [h.name.encode() for h in headers],
    )
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    opts = [b"--gpu-architecture=compute_90", b"--std=c++17", b"-DACC_AFFINE=1"]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode()
    names = [b"g1_acc_affine", b"g2_acc_affine"]
    _, ptx_size = nvrtc.nvrtcGetPTXSize(prog)
    ptx = b" " * ptx_size
    nvrtc.nvrtcGetPTX(prog, ptx)
    assert all(n in ptx for n in names)
