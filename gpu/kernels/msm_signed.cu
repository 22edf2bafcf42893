// Pippenger MSM sum_i s_i P_i with signed digits and balanced bucket accumulation, G1 and G2.
//
// Scalars: standard-form Fr limbs (8 u32, s < r < 2^255). Points: affine Montgomery,
// (0, 0) = infinity. Windows: nw windows of c bits each, nw c >= 256. Digits (Booth
// recoding): d_w = raw_w + carry_w; d_w > 2^(c-1) -> d_w - 2^c with a carry into w + 1, so
// |d_w| <= 2^(c-1) and, since s < 2^255 <= 2^(c (nw - 1) + c - 1), the top window never
// carries out. A digit of magnitude m goes to bucket m - 1 of its bucket set, negated when
// d < 0: 2^(c-1) buckets per set instead of 2^c.
// Precomputed bases (optional): table t holds 2^(t g c) P_i (t < T, g = nw / T windows per
// table); window w = t g + j uses table t and bucket set j, so only g sets are reduced and
// the final Horner runs over g windows (g = 1: no doublings at all).
// Steps:
// 1. signed_count / signed_scatter: counting sort of entries (point index | sign << 31) by
//    bucket (set j, magnitude);
// 2. *_acc_balanced: thread t adds entries [t L, (t + 1) L) of the sorted list, whatever
//    buckets they belong to (every thread does L mixed additions: no divergence from bucket
//    sizes); a bucket wholly inside one thread's range is written to `buckets`, the pieces
//    of a bucket that crosses a range boundary go to per-thread slots (2t: the bucket began
//    before t's range; 2t + 1: it continues after), each with its bucket as key;
//    *_acc_level: the same over the slots, C per thread, level after level until one
//    thread holds them all (a bucket of 2^20 entries -- witnesses are mostly 0 and 1 --
//    takes log_8 levels of 16 additions, not one thread's serial chain); *_acc_empty;
// 3. *_set_reduce: per segment of a set, sum_k (k + 1) B_k by running sums;
// 4. *_sum_groups (tree over segments); the Horner over the g sets (c-bit shifts) runs on
//    the host (gpu/msm_tail.py), which also makes the Jacobian result affine.
// Launch bound: g1_acc_balanced (128 threads) runs at least 3 blocks per SM, which caps it
// at 170 registers (12 warps per SM): G1 precomputed 2^20 11.70 against 12.19 ms with no cap
// (255 registers) side by side on the H200 (docs/benchmarks.md). A boundary piece is stored
// when its run ends, not held in registers to the end of the thread (fewer registers).
// The switches measured against these (G1_ACC_MIN_BLOCKS, ACC_FLUSH_SLOTS=0, ACC_XYZZ=1,
// ACC_AFFINE=1 with msm_affine.cuh, the one-thread *_combine Horner) lost on the H200 and
// were retired (issue 29; figures: docs/history/2026-12-01-benchmarks.md, docs/benchmarks.md).
#include "curve.cuh"

__device__ __forceinline__ u32 window_raw(const u32* s, int bit, int c) {
    int word = bit >> 5, off = bit & 31;
    u64 lo = s[word];
    u64 hi = (word + 1 < 8) ? s[word + 1] : 0;
    return (u32)(((lo | (hi << 32)) >> off) & ((1u << c) - 1));
}

// For each window of scalar s: magnitude (0 = skip) and sign, calling f(w, mag, neg).
template <class Fn>
__device__ __forceinline__ void signed_digits(const u32* s, int c, int nw, Fn f) {
    u32 carry = 0, half = 1u << (c - 1);
    for (int w = 0; w < nw; w++) {
        u32 d = window_raw(s, w * c, c) + carry;
        carry = d > half;
        u32 mag = carry ? (1u << c) - d : d;
        if (mag) f(w, mag, carry);
    }
}

// sel (when use_sel): entry i is scalar / point sel[i] (the rest of a split MSM), else i
extern "C" __global__ void signed_count(const u32* scalars, u32* counts, long long n, int c,
                                        int nw, int g, const u32* sel, int use_sel) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        long long p = use_sel ? (long long)sel[i] : i;
        signed_digits(scalars + p * 8, c, nw, [&](int w, u32 mag, u32) {
            atomicAdd(&counts[((u32)(w % g) << (c - 1)) + mag - 1], 1u);
        });
    }
}

// cursor: exclusive prefix sum of counts (advanced here); order[pos] = table index | sign,
// table index = (w / g) stride + point (stride: the points per table)
extern "C" __global__ void signed_scatter(const u32* scalars, u32* cursor, u32* order,
                                          long long n, int c, int nw, int g, const u32* sel,
                                          int use_sel, long long stride) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        long long p = use_sel ? (long long)sel[i] : i;
        signed_digits(scalars + p * 8, c, nw, [&](int w, u32 mag, u32 neg) {
            u32 entry = (u32)((w / g) * stride + p) | (neg << 31);
            order[atomicAdd(&cursor[((u32)(w % g) << (c - 1)) + mag - 1], 1u)] = entry;
        });
    }
}

// warp intrinsics: in a host C++ emulation only where its harness supplies them
// (tests/gpu_prover/test_msm_split_host.py: each thread a warp of its own)
#if !defined(FIELD_HOST_EMULATION) || defined(HOST_WARP_INTRINSICS)
// The split of a split MSM (gpu/msm_split.py): positions of the scalars equal to 1 to
// index[0, 1, ...), of the rest (not 0, not 1) to index[n - 1, n - 2, ...); counts[1] and
// counts[2] count them (counts zeroed before; counts[0] = 0 is the ones' bucket start).
// One atomic per warp and class (ballot, popc); the order within a class is the
// atomics', which a sum does not see.
extern "C" __global__ void split_scalars(const u32* scalars, long long n, u32* index,
                                         u32* counts) {
    const int lane = threadIdx.x & 31;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        const u32* s = scalars + i * 8;
        u32 high = s[1] | s[2] | s[3] | s[4] | s[5] | s[6] | s[7];
        bool one = high == 0 && s[0] == 1u;
        bool rest = high != 0 || s[0] > 1u;
        unsigned active = __activemask();
        unsigned ones = __ballot_sync(active, one), rests = __ballot_sync(active, rest);
        int leader = __ffs(active) - 1;
        u32 base_one = 0, base_rest = 0;
        if (lane == leader) {
            if (ones) base_one = atomicAdd(&counts[1], (u32)__popc(ones));
            if (rests) base_rest = atomicAdd(&counts[2], (u32)__popc(rests));
        }
        base_one = __shfl_sync(active, base_one, leader);
        base_rest = __shfl_sync(active, base_rest, leader);
        unsigned below = (1u << lane) - 1u;
        if (one) index[base_one + __popc(ones & below)] = (u32)i;
        if (rest) index[n - 1 - (base_rest + __popc(rests & below))] = (u32)i;
    }
}
#endif

// 16-byte loads of an affine point (G1: 6, G2: 12); points are 96 / 192 bytes apart.
template <class F>
__device__ __forceinline__ Affine<F> load_affine_vec(const u32* p) {
    const int W = sizeof(F) / 4;
    u32 w[2 * W];
    const uint4* src = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int k = 0; k < W / 2; k++) {
        uint4 v = __ldg(src + k);
        w[4 * k] = v.x;
        w[4 * k + 1] = v.y;
        w[4 * k + 2] = v.z;
        w[4 * k + 3] = v.w;
    }
    return {F::load(w), F::load(w + W)};
}

// A slot: a Jacobian partial sum with kv[2 p] = its bucket (key), kv[2 p + 1] = 1 when it
// holds a sum (0: empty; its key still keeps the slots' keys non-decreasing).
template <class F>
__device__ __forceinline__ void put_slot(u32* slots, u32* kv, long long p, u32 key, bool ok,
                                         const Jacobian<F>& v) {
    const int W = sizeof(F) / 4;
    kv[2 * p] = key;
    kv[2 * p + 1] = ok;
    if (ok) store_jacobian(slots + p * 3 * W, v);
}


// Level 0. starts: exclusive prefix sum of the counts, nbuckets + 1 entries.
template <class F>
__device__ void acc_balanced(const u32* points, const u32* order, const u32* starts,
                             long long nbuckets, long long L, u32* buckets, u32* slots, u32* kv,
                             long long nthreads) {
    const int W = sizeof(F) / 4;
    const long long total = starts[nbuckets];  // on the device: no host sync for the count
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < nthreads;
         t += (long long)blockDim.x * gridDim.x) {
        long long lo = t * L, hi = min(lo + L, total);
        Jacobian<F> head = Jacobian<F>::inf(), tail = Jacobian<F>::inf();
        if (lo >= hi) {  // past the last entry: empty slots with the sentinel key
            put_slot<F>(slots, kv, 2 * t, (u32)nbuckets, false, head);
            put_slot<F>(slots, kv, 2 * t + 1, (u32)nbuckets, false, tail);
            continue;
        }
        long long a = 0, z = nbuckets;  // last b with starts[b] <= lo
        while (z - a > 1) {
            long long mid = (a + z) >> 1;
            if ((long long)starts[mid] <= lo) a = mid;
            else z = mid;
        }
        long long b = a, b_first = a;
        long long bstart = starts[b], bend = starts[b + 1];
        bool head_ok = false, tail_ok = false;
        Jacobian<F> acc = Jacobian<F>::inf();
        bool fresh = true;
        for (long long j = lo; j < hi; j++) {
            u32 e = order[j];
            Affine<F> p = load_affine_vec<F>(points + (u64)(e & 0x7fffffffu) * 2 * W);
            if (e >> 31) p.y = -p.y;
            acc = fresh ? Jacobian<F>::from_affine(p) : add_mixed(acc, p);
            fresh = false;
            if (j + 1 == bend || j + 1 == hi) {
                Jacobian<F> sum = acc;
                if (bstart < lo) {
                    store_jacobian(slots + (2 * t) * 3 * W, sum);
                    head_ok = true;
                } else if (bend > hi) {
                    store_jacobian(slots + (2 * t + 1) * 3 * W, sum);
                    tail_ok = true;
                } else {
                    store_jacobian(buckets + b * 3 * W, sum);
                }
                fresh = true;
                if (j + 1 < hi) {
                    do {
                        b++;
                        bstart = starts[b];
                        bend = starts[b + 1];
                    } while (bend <= j + 1);
                }
            }
        }
        put_slot<F>(slots, kv, 2 * t, (u32)b_first, false, head);
        kv[4 * t + 1] = head_ok;
        put_slot<F>(slots, kv, 2 * t + 1, (u32)b, false, tail);
        kv[4 * t + 3] = tail_ok;
    }
}

// Level k >= 1: the same over the N slots of the level before, C per thread. A run of one
// key that no neighbouring thread shares is that bucket's whole sum: written (if it holds
// any sum); the first / last run, when shared, goes on as this thread's slot 2u / 2u + 1.
// Levels repeat until one thread holds every slot (C >= 4: each level shrinks N).
template <class F>
__device__ void acc_level(const u32* items, const u32* kv_in, long long N, long long C,
                          long long nbuckets, u32* buckets, u32* out, u32* kv_out,
                          long long nthreads) {
    const int W = sizeof(F) / 4;
    for (long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x; u < nthreads;
         u += (long long)blockDim.x * gridDim.x) {
        long long lo = u * C, hi = min(lo + C, N);
        u32 kfirst = kv_in[2 * lo], klast = kv_in[2 * (hi - 1)];
        bool before = lo > 0 && kv_in[2 * (lo - 1)] == kfirst;
        bool after = hi < N && kv_in[2 * hi] == klast;
        Jacobian<F> head = Jacobian<F>::inf(), tail = Jacobian<F>::inf();
        Jacobian<F> acc = Jacobian<F>::inf();
        bool head_ok = false, tail_ok = false, any = false;
        for (long long q = lo; q < hi; q++) {
            u32 k = kv_in[2 * q];
            if (kv_in[2 * q + 1]) {
                Jacobian<F> v = load_jacobian<F>(items + q * 3 * W);
                acc = any ? add(acc, v) : v;
                any = true;
            }
            if (q + 1 == hi || kv_in[2 * (q + 1)] != k) {
                if (k == kfirst && before) {
                    head = acc;
                    head_ok = any;
                } else if (k == klast && after) {
                    tail = acc;
                    tail_ok = any;
                } else if (any && k < nbuckets) {
                    store_jacobian(buckets + (u64)k * 3 * W, acc);
                }
                acc = Jacobian<F>::inf();
                any = false;
            }
        }
        put_slot<F>(out, kv_out, 2 * u, kfirst, head_ok, head);
        put_slot<F>(out, kv_out, 2 * u + 1, klast, tail_ok, tail);
    }
}

// Empty buckets hold infinity.
template <class F>
__device__ void acc_empty(const u32* starts, long long nbuckets, u32* buckets) {
    const int W = sizeof(F) / 4;
    for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < nbuckets;
         b += (long long)blockDim.x * gridDim.x) {
        if (starts[b] == starts[b + 1]) store_jacobian(buckets + b * 3 * W, Jacobian<F>::inf());
    }
}

// seg_out[j S + s] = sum over k in segment s of set j of (k + 1) B_{j,k}
template <class F>
__device__ void set_reduce(const u32* buckets, u32* seg_out, int c, int g, int segs) {
    const int W = sizeof(F) / 4;
    int per_set = 1 << (c - 1);
    int seg_len = per_set / segs;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < (long long)g * segs;
         t += (long long)blockDim.x * gridDim.x) {
        int j = (int)(t / segs), s = (int)(t % segs);
        int lo = s * seg_len;
        Jacobian<F> run = Jacobian<F>::inf(), acc = Jacobian<F>::inf();
        for (int k = lo + seg_len - 1; k >= lo; k--) {
            run = add(run, load_jacobian<F>(buckets + ((u64)j * per_set + k) * 3 * W));
            acc = add(acc, run);  // acc = sum_k (k - lo + 1) B_k
        }
        if (lo > 0) acc = add(acc, mul_u32(run, (u32)lo));  // + lo sum_k B_k
        store_jacobian(seg_out + t * 3 * W, acc);
    }
}

// out[q] = sum_{j < len} in[q len + j]
template <class F>
__device__ void sum_groups(const u32* in, u32* out, long long groups, int len) {
    const int W = sizeof(F) / 4;
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < groups;
         q += (long long)blockDim.x * gridDim.x) {
        Jacobian<F> acc = Jacobian<F>::inf();
        for (int j = 0; j < len; j++)
            acc = add(acc, load_jacobian<F>(in + ((u64)q * len + j) * 3 * W));
        store_jacobian(out + (u64)q * 3 * W, acc);
    }
}

// table[t n + i] = affine(2^(t shift) P_i), t < T (fixed-base tables; built once per key)
template <class F>
__device__ void precompute(const u32* points, u32* table, long long n, int shift, int T) {
    const int W = sizeof(F) / 4;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        Affine<F> p = load_affine<F>(points + i * 2 * W);
        store_affine(table + i * 2 * W, p);
        Jacobian<F> acc = Jacobian<F>::from_affine(p);
        for (int t = 1; t < T; t++) {
            for (int k = 0; k < shift; k++) acc = dbl(acc);
            store_affine(table + ((u64)t * n + i) * 2 * W, to_affine(acc));
        }
    }
}

#define DEFINE_SIGNED_MSM(G, F, MIN_BLOCKS)                                                    \
    extern "C" __global__ void __launch_bounds__(128, MIN_BLOCKS)                              \
        G##_acc_balanced(const u32* points, const u32* order, const u32* starts,               \
                         long long nbuckets, long long L, u32* buckets, u32* slots, u32* kv,   \
                         long long nthreads) {                                                 \
        acc_balanced<F>(points, order, starts, nbuckets, L, buckets, slots, kv, nthreads);     \
    }                                                                                          \
    extern "C" __global__ void G##_acc_level(const u32* items, const u32* kv_in, long long N,  \
                                             long long C, long long nbuckets, u32* buckets,    \
                                             u32* out, u32* kv_out, long long nthreads) {      \
        acc_level<F>(items, kv_in, N, C, nbuckets, buckets, out, kv_out, nthreads);            \
    }                                                                                          \
    extern "C" __global__ void G##_acc_empty(const u32* starts, long long nbuckets,            \
                                             u32* buckets) {                                   \
        acc_empty<F>(starts, nbuckets, buckets);                                               \
    }                                                                                          \
    extern "C" __global__ void G##_set_reduce(const u32* buckets, u32* seg_out, int c, int g,  \
                                              int segs) {                                      \
        set_reduce<F>(buckets, seg_out, c, g, segs);                                           \
    }                                                                                          \
    extern "C" __global__ void G##_sum_groups(const u32* in, u32* out, long long groups,       \
                                              int len) {                                       \
        sum_groups<F>(in, out, groups, len);                                                   \
    }                                                                                          \
    extern "C" __global__ void G##_precompute(const u32* points, u32* table, long long n,      \
                                              int shift, int T) {                              \
        precompute<F>(points, table, n, shift, T);                                             \
    }

DEFINE_SIGNED_MSM(g1, Fq, 3)  // 3 blocks per SM: 170 registers (header)
DEFINE_SIGNED_MSM(g2, Fq2, 1)

