// Synthetic proving keys (gpu/keygen.py): out_i = affine(s_i G) for the pseudo-random
// scalar s_i = lo + 2^64 hi, lo = splitmix64(seed + 2k) | 1, hi = splitmix64(seed + 2k + 1),
// k = first + i, by a fixed-base comb: table[256 w + d] = affine(d 2^(8 w) G) for the 16
// bytes w of s (entry d = 0 unused), so a point costs at most 16 mixed additions. No
// degenerate addition occurs: every partial sum is a multiple j G with 0 < j < 2^(8 w) of
// G's order-r group (r > 2^128) and the next entry is d 2^(8 w) G with d > 0. Each thread
// makes K points and turns them affine with one inversion (Montgomery's trick).
// Macros expected: none.
#include "curve.cuh"

__device__ __forceinline__ u64 splitmix64(u64 x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

template <class F, int K>
__device__ void fixed_base(const u32* table, u32* out, long long n, long long first, u64 seed) {
    const int W = sizeof(F) / 4;
    long long groups = (n + K - 1) / K;
    for (long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x; g < groups;
         g += (long long)blockDim.x * gridDim.x) {
        Jacobian<F> acc[K];
        F pre[K];
        F run = F::one();
        for (int j = 0; j < K; j++) {
            long long i = g * K + j;
            acc[j] = Jacobian<F>::inf();
            if (i < n) {
                u64 k = (u64)(first + i);
                u64 lo = splitmix64(seed + 2 * k) | 1ull;
                u64 hi = splitmix64(seed + 2 * k + 1);
                for (int w = 0; w < 16; w++) {
                    u32 d = (u32)(((w < 8 ? lo : hi) >> (8 * (w & 7))) & 0xffu);
                    if (d) acc[j] = add_mixed(acc[j], load_affine<F>(table + (u64)(256 * w + d) * 2 * W));
                }
            } else {
                acc[j].z = F::one();  // a padding lane: z = 1 keeps the product invertible
            }
            pre[j] = run;  // the product of the z before j
            run = run * acc[j].z;
        }
        F inv = inverse(run);
        for (int j = K - 1; j >= 0; j--) {
            F zi = inv * pre[j];  // 1 / z_j
            inv = inv * acc[j].z;
            long long i = g * K + j;
            if (i >= n) continue;
            F zi2 = sqr(zi);
            Affine<F> a = {acc[j].x * zi2, acc[j].y * zi2 * zi};
            store_affine(out + (u64)i * 2 * W, a);
        }
    }
}

extern "C" __global__ void g1_fixed_base(const u32* table, u32* out, long long n, long long first,
                                         unsigned long long seed) {
    fixed_base<Fq, 8>(table, out, n, first, seed);
}

extern "C" __global__ void g2_fixed_base(const u32* table, u32* out, long long n, long long first,
                                         unsigned long long seed) {
    fixed_base<Fq2, 4>(table, out, n, first, seed);
}
