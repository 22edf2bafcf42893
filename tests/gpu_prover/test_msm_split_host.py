"""The split MSM's classification, kernels/msm_signed.cu's `split_scalars` compiled by the
host C++ compiler (FIELD_HOST_EMULATION) and run without a GPU: each emulated thread is a
warp of its own (the harness's __activemask, __ballot_sync, __shfl_sync), so one atomic
per thread and class. Checked against the scalars' values, written here: the ones'
positions at the index's front, the rest's (neither 0 nor 1) at its back, zeros nowhere."""

from __future__ import annotations

import subprocess

import pytest
from host_cxx import build
from hypothesis import given
from hypothesis import strategies as st

HARNESS = r"""
#define FIELD_HOST_EMULATION 1
#define HOST_WARP_INTRINSICS 1
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
// one emulated thread = one warp of one lane
#define __activemask() (1u << (threadIdx.x & 31))
static inline unsigned __ballot_sync(unsigned mask, bool p) { return p ? mask : 0u; }
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline unsigned __shfl_sync(unsigned, unsigned v, int) { return v; }
#include "msm_signed.cu"
// stdin: n threads, then n scalars of 8 words (hex); stdout: counts, then the index
int main() {
    long long n, launch;
    if (scanf("%lld %lld", &n, &launch) != 2) return 1;
    std::vector<u32> s(8 * (n > 0 ? n : 1)), index(n > 0 ? n : 1, 0xdeadbeefu), counts(3, 0);
    for (long long i = 0; i < 8 * n; i++) scanf("%x", &s[i]);
    blockDim.x = 32;
    gridDim.x = (unsigned)((launch + 31) / 32);
    for (long long gid = 0; gid < (long long)gridDim.x * blockDim.x; gid++) {
        blockIdx.x = (unsigned)(gid / blockDim.x);
        threadIdx.x = (unsigned)(gid % blockDim.x);
        split_scalars(s.data(), n, index.data(), counts.data());
    }
    printf("%x %x %x\n", counts[0], counts[1], counts[2]);
    for (long long i = 0; i < n; i++) printf("%x ", index[i]);
    printf("\n");
}
"""

POISON = 0xDEADBEEF


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return build(tmp_path_factory.mktemp("split_emu"), HARNESS, ["-w"])


def _limbs(v: int) -> list[int]:
    return [(v >> (32 * k)) & 0xFFFFFFFF for k in range(8)]


def _split(exe, scalars: list[int], launch: int) -> tuple[list[int], list[int]]:
    body = " ".join(f"{w:x}" for v in scalars for w in _limbs(v))
    out = subprocess.run(
        [str(exe)],
        input=f"{len(scalars)} {launch}\n{body}\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    counts = [int(v, 16) for v in out[0].split()]
    index = [int(v, 16) for v in out[1].split()] if len(out) > 1 else []
    return counts, index


# 0 and 1 mostly; values whose low limb is 0 or 1 with a high limb set (2^32, 2^32 + 1,
# 2^224 + 1) are neither, as is any other field element
SCALARS = st.one_of(
    st.sampled_from([0, 1]),
    st.sampled_from([0, 1]),
    st.sampled_from([2, 2**32, 2**32 + 1, 2**224 + 1, 2**254 - 1]),
    st.integers(2, 2**254),
)


@given(scalars=st.lists(SCALARS, max_size=200), launch=st.sampled_from([1, 7, 32, 96, 256]))
def test_the_ones_go_to_the_front_the_rest_to_the_back_zeros_nowhere(harness, scalars, launch):
    counts, index = _split(harness, scalars, launch)
    ones = {i for i, v in enumerate(scalars) if v == 1}
    rest = {i for i, v in enumerate(scalars) if v not in (0, 1)}
    n = len(scalars)
    assert counts == [0, len(ones), len(rest)]  # counts[0] stays 0: the ones' bucket start
    assert sorted(index[: len(ones)]) == sorted(ones)
    assert sorted(index[n - len(rest) :]) == sorted(rest)
    assert all(v == POISON for v in index[len(ones) : n - len(rest)])  # the zeros' room
