// Pippenger MSM sum_i s_i P_i for G1 (over Fq) and G2 (over Fq2).
//
// Scalars: standard (not Montgomery) Fr limbs, 8 u32 each, s < r. Points: affine Montgomery,
// (0, 0) = infinity. nw windows of c or c - 1 bits (c = ceil(255 / nw)); key = w 2^c + digit.
// 1. msm_count / msm_scatter: counting sort of (window, digit) keys -> point order per bucket
//    (digit 0 is counted but never accumulated);
// 2. *_bucket_acc: one thread per bucket sums its points (mixed additions);
// 3. *_bucket_reduce: one thread per segment of a window's buckets computes
//    sum_b b B_b over its segment via running sums;
// 4. *_group_sum (a tree over segments) + *_horner over windows.
// Macros expected: none.
#include "curve.cuh"

// Window w covers bits [start(w), start(w + 1)) with start(w) = floor(255 w / nw): the
// widths differ by at most one, so the top window is never a few bits wide (a narrow top
// window sends every point to a handful of buckets, each summed by one thread).
__device__ __forceinline__ int window_start(int w, int nw) { return (w * 255) / nw; }

__device__ __forceinline__ u32 scalar_digit(const u32* s, int w, int nw) {
    int bit = window_start(w, nw);
    int width = window_start(w + 1, nw) - bit;
    int word = bit >> 5, off = bit & 31;
    u64 lo = s[word];
    u64 hi = (word + 1 < 8) ? s[word + 1] : 0;
    u64 both = lo | (hi << 32);
    return (u32)((both >> off) & ((1u << width) - 1));
}

extern "C" __global__ void msm_count(const u32* scalars, u32* counts, long long n, int c, int nw) {
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n * nw;
         t += (long long)blockDim.x * gridDim.x) {
        long long i = t % n;
        int w = (int)(t / n);
        u32 d = scalar_digit(scalars + i * 8, w, nw);
        if (d) atomicAdd(&counts[((u32)w << c) + d], 1u);
    }
}

// cursor: exclusive prefix sum of counts (advanced by this kernel); order[pos] = point index
extern "C" __global__ void msm_scatter(const u32* scalars, u32* cursor, u32* order, long long n,
                                       int c, int nw) {
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n * nw;
         t += (long long)blockDim.x * gridDim.x) {
        long long i = t % n;
        int w = (int)(t / n);
        u32 d = scalar_digit(scalars + i * 8, w, nw);
        if (d) order[atomicAdd(&cursor[((u32)w << c) + d], 1u)] = (u32)i;
    }
}

// starts: exclusive prefix sum of counts, nw 2^c + 1 entries
template <class F>
__device__ void bucket_acc(const u32* points, const u32* order, const u32* starts, u32* buckets,
                           long long nbuckets) {
    const int W = sizeof(F) / 4;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < nbuckets;
         k += (long long)blockDim.x * gridDim.x) {
        Jacobian<F> acc = Jacobian<F>::inf();
        for (u32 j = starts[k]; j < starts[k + 1]; j++) {
            acc = add_mixed(acc, load_affine<F>(points + (u64)order[j] * 2 * W));
        }
        store_jacobian(buckets + k * 3 * W, acc);
    }
}

// seg_out[w S + s] = sum over b in segment s of window w of b B_b
template <class F>
__device__ void bucket_reduce(const u32* buckets, u32* seg_out, int c, int nw, int segs) {
    const int W = sizeof(F) / 4;
    int seg_len = (1 << c) / segs;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < (long long)nw * segs;
         t += (long long)blockDim.x * gridDim.x) {
        int w = (int)(t / segs), s = (int)(t % segs);
        int lo = s * seg_len;
        Jacobian<F> run = Jacobian<F>::inf(), acc = Jacobian<F>::inf();
        for (int b = lo + seg_len - 1; b >= lo; b--) {
            if (b > 0) run = add(run, load_jacobian<F>(buckets + (((u64)w << c) + b) * 3 * W));
            acc = add(acc, run);  // acc = sum_b (b - lo + 1) B_b
        }
        // sum_b b B_b = acc + (lo - 1) run; lo = 0 only for s = 0, where B_0 is skipped: then
        // acc counts every bucket once too many.
        Jacobian<F> fix = lo > 0 ? mul_u32(run, (u32)(lo - 1)) : Jacobian<F>{run.x, -run.y, run.z};
        store_jacobian(seg_out + t * 3 * W, add(acc, fix));
    }
}

// out[g] = sum_{j < len} in[g len + j]: one level of a tree sum of Jacobian points.
template <class F>
__device__ void group_sum(const u32* in, u32* out, long long groups, int len) {
    const int W = sizeof(F) / 4;
    for (long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x; g < groups;
         g += (long long)blockDim.x * gridDim.x) {
        Jacobian<F> acc = Jacobian<F>::inf();
        for (int j = 0; j < len; j++)
            acc = add(acc, load_jacobian<F>(in + ((u64)g * len + j) * 3 * W));
        store_jacobian(out + (u64)g * 3 * W, acc);
    }
}

// out = sum_w 2^start(w) win[w] (one thread, Horner from the top window)
template <class F>
__device__ void horner(const u32* win_out, u32* out, int nw) {
    const int W = sizeof(F) / 4;
    if (blockIdx.x * blockDim.x + threadIdx.x != 0) return;
    Jacobian<F> acc = Jacobian<F>::inf();
    for (int w = nw - 1; w >= 0; w--) {
        int width = window_start(w + 1, nw) - window_start(w, nw);
        for (int i = 0; i < width; i++) acc = dbl(acc);
        acc = add(acc, load_jacobian<F>(win_out + (u64)w * 3 * W));
    }
    store_affine(out, to_affine(acc));
}

// out_i = affine(s_i G): synthetic keys and tests (double and add over 256 bits).
template <class F>
__device__ void scalar_mul(const u32* base, const u32* scalars, u32* out, long long n) {
    const int W = sizeof(F) / 4;
    Affine<F> g = load_affine<F>(base);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        Jacobian<F> acc = Jacobian<F>::inf();
        for (int bit = 255; bit >= 0; bit--) {
            acc = dbl(acc);
            if ((scalars[i * 8 + (bit >> 5)] >> (bit & 31)) & 1) acc = add_mixed(acc, g);
        }
        store_affine(out + i * 2 * W, to_affine(acc));
    }
}

// Group law checks: out = affine(op(p, q)) with op 0 add (Jacobian), 1 mixed add, 2 double p.
template <class F>
__device__ void group_op(const u32* p, const u32* q, u32* out, long long n, int op) {
    const int W = sizeof(F) / 4;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        Affine<F> a = load_affine<F>(p + i * 2 * W), b = load_affine<F>(q + i * 2 * W);
        Jacobian<F> ja = Jacobian<F>::from_affine(a), jb = Jacobian<F>::from_affine(b);
        Jacobian<F> r = op == 0 ? add(ja, jb) : op == 1 ? add_mixed(ja, b) : dbl(ja);
        store_affine(out + i * 2 * W, to_affine(r));
    }
}

#define DEFINE_MSM(G, F)                                                                         \
    extern "C" __global__ void G##_bucket_acc(const u32* points, const u32* order,               \
                                              const u32* starts, u32* buckets, long long nb) {   \
        bucket_acc<F>(points, order, starts, buckets, nb);                                       \
    }                                                                                            \
    extern "C" __global__ void G##_bucket_reduce(const u32* buckets, u32* seg_out, int c, int nw, \
                                                 int segs) {                                     \
        bucket_reduce<F>(buckets, seg_out, c, nw, segs);                                         \
    }                                                                                            \
    extern "C" __global__ void G##_group_sum(const u32* in, u32* out, long long groups,         \
                                             int len) {                                          \
        group_sum<F>(in, out, groups, len);                                                      \
    }                                                                                            \
    extern "C" __global__ void G##_horner(const u32* win_out, u32* out, int nw) {                \
        horner<F>(win_out, out, nw);                                                             \
    }                                                                                            \
    extern "C" __global__ void G##_scalar_mul(const u32* base, const u32* scalars, u32* out,     \
                                              long long n) {                                     \
        scalar_mul<F>(base, scalars, out, n);                                                    \
    }                                                                                            \
    extern "C" __global__ void G##_group_op(const u32* p, const u32* q, u32* out, long long n,   \
                                            int op) {                                            \
        group_op<F>(p, q, out, n, op);                                                           \
    }

DEFINE_MSM(g1, Fq)
DEFINE_MSM(g2, Fq2)
