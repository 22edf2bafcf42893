// Radix-2 decimation-in-time NTT over Fr (Montgomery limbs, 8 u32 per element).
// The caller bit-reverses, then runs the log n stages in groups of at most 10, one
// `fr_ntt_group_tw` (or, the earlier kernel, `fr_ntt_group`) launch per group (three passes
// over memory at 2^24).
// Twiddle w^k = hi[k >> lo_bits] * lo[k & (2^lo_bits - 1)]: two tables of ~sqrt(n) entries.
// Macros: NTT_TW_INLINE (default 0) 1 inlines the butterfly's product in fr_ntt_group_tw.
#include "field.cuh"
#ifndef NTT_TW_INLINE
#define NTT_TW_INLINE 0
#endif

#define BLOCK_LOG 10  // at most 1024 elements (32 KiB) per block in fr_ntt_group

__device__ __forceinline__ Fr twiddle(const u32* hi, const u32* lo, int lo_bits, long long k) {
    long long mask = (1LL << lo_bits) - 1;
    return Fr::load(hi + (k >> lo_bits) * 8) * Fr::load(lo + (k & mask) * 8);
}

extern "C" __global__ void fr_bitrev(u32* a, long long n, int log_n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        long long j = (long long)(__brevll((unsigned long long)i) >> (64 - log_n));
        if (i < j) {
            Fr x = Fr::load(a + i * 8);
            Fr y = Fr::load(a + j * 8);
            y.store(a + i * 8);
            x.store(a + j * 8);
        }
    }
}

// Stages st .. st + k - 1 (butterfly spans 2^st .. 2^(st+k-1)) in one launch. These stages
// only mix elements whose indices agree outside bits [st, st + k): each block loads one such
// group of 2^k elements (stride 2^st; a 32-byte element is one memory sector, so strided
// loads waste no bandwidth) into shared memory, runs the k stages there, and writes back.
// blockDim.x = 2^(k-1), gridDim.x = n / 2^k.
extern "C" __global__ void fr_ntt_group(u32* a, const u32* hi, const u32* lo, int lo_bits,
                                        int log_n, int st, int k) {
    __shared__ Fr s[1 << BLOCK_LOG];
    long long b = blockIdx.x;
    long long low = b & ((1LL << st) - 1);
    long long base = ((b >> st) << (st + k)) | low;
    int t = threadIdx.x, half_block = 1 << (k - 1);
    s[t] = Fr::load(a + (base + ((long long)t << st)) * 8);
    s[t + half_block] = Fr::load(a + (base + ((long long)(t + half_block) << st)) * 8);
    __syncthreads();
    for (int sl = 0; sl < k; sl++) {
        int h = 1 << sl;
        int kk = t & (h - 1);
        int i = ((t >> sl) << (sl + 1)) + kk;
        // global index g = base + i 2^st; at global stage st + sl, g mod 2^(st+sl) = low + kk 2^st
        long long e = (low + ((long long)kk << st)) << (log_n - st - sl - 1);
        Fr w = twiddle(hi, lo, lo_bits, e);
        Fr u = s[i];
        Fr v = s[i + h] * w;
        s[i] = u + v;
        s[i + h] = u - v;
        __syncthreads();
    }
    s[t].store(a + (base + ((long long)t << st)) * 8);
    s[t + half_block].store(a + (base + ((long long)(t + half_block) << st)) * 8);
}

// fr_ntt_group with each stage's twiddles computed once per block into shared memory (a
// stage of span h needs h distinct twiddles; fr_ntt_group computes one per butterfly):
// 2^k - 1 twiddle products per block instead of k 2^(k-1). Same launch shape, plus dynamic
// shared memory of 3 2^(k-1) elements (sized by k: more blocks per SM for small groups).
extern "C" __global__ void fr_ntt_group_tw(u32* a, const u32* hi, const u32* lo, int lo_bits,
                                           int log_n, int st, int k) {
    extern __shared__ Fr dyn[];
    Fr* s = dyn;                // 2^k elements
    Fr* tw = dyn + (1 << k);  // 2^(k-1) twiddles
    long long b = blockIdx.x;
    long long low = b & ((1LL << st) - 1);
    long long base = ((b >> st) << (st + k)) | low;
    int t = threadIdx.x, half_block = 1 << (k - 1);
    s[t] = Fr::load(a + (base + ((long long)t << st)) * 8);
    s[t + half_block] = Fr::load(a + (base + ((long long)(t + half_block) << st)) * 8);
    for (int sl = 0; sl < k; sl++) {
        int h = 1 << sl;
        if (t < h)
            tw[t] = twiddle(hi, lo, lo_bits, (low + ((long long)t << st)) << (log_n - st - sl - 1));
        __syncthreads();  // tw written; the previous stage's butterflies done
        int kk = t & (h - 1);
        int i = ((t >> sl) << (sl + 1)) + kk;
        Fr u = s[i];
#if NTT_TW_INLINE
        Fr v = mul_inline(s[i + h], tw[kk]);
#else
        Fr v = s[i + h] * tw[kk];
#endif
        s[i] = u + v;
        s[i + h] = u - v;
        __syncthreads();
    }
    s[t].store(a + (base + ((long long)t << st)) * 8);
    s[t + half_block].store(a + (base + ((long long)(t + half_block) << st)) * 8);
}

// fr_ntt_group_tw with two butterflies per thread and stage (butterflies t and t + 2^(k-2))
// and the product inlined, so two independent products are in flight in each thread.
// blockDim.x = 2^(k-2) (k >= 2); grid and dynamic shared memory as fr_ntt_group_tw.
extern "C" __global__ void fr_ntt_group_x2(u32* a, const u32* hi, const u32* lo, int lo_bits,
                                           int log_n, int st, int k) {
    extern __shared__ Fr dyn[];
    Fr* s = dyn;                // 2^k elements
    Fr* tw = dyn + (1 << k);  // 2^(k-1) twiddles
    long long b = blockIdx.x;
    long long low = b & ((1LL << st) - 1);
    long long base = ((b >> st) << (st + k)) | low;
    const int t = threadIdx.x, q = 1 << (k - 2);
#pragma unroll
    for (int r = 0; r < 4; r++) s[t + r * q] = Fr::load(a + (base + ((long long)(t + r * q) << st)) * 8);
    for (int sl = 0; sl < k; sl++) {
        const int h = 1 << sl;
        for (int j = t; j < h; j += q)
            tw[j] = twiddle(hi, lo, lo_bits, (low + ((long long)j << st)) << (log_n - st - sl - 1));
        __syncthreads();  // tw written; the previous stage's butterflies done
        const int k0 = t & (h - 1), i0 = ((t >> sl) << (sl + 1)) + k0;
        const int k1 = (t + q) & (h - 1), i1 = (((t + q) >> sl) << (sl + 1)) + k1;
        Fr u0 = s[i0], u1 = s[i1];
        Fr v0 = mul_inline(s[i0 + h], tw[k0]);
        Fr v1 = mul_inline(s[i1 + h], tw[k1]);
        s[i0] = u0 + v0;
        s[i0 + h] = u0 - v0;
        s[i1] = u1 + v1;
        s[i1 + h] = u1 - v1;
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 4; r++) s[t + r * q].store(a + (base + ((long long)(t + r * q) << st)) * 8);
}
