// Radix-2 decimation-in-time NTT over Fr (Montgomery limbs, 8 u32 per element).
// The caller bit-reverses, runs `fr_ntt_block` for the first stages (all butterflies
// inside one block's shared memory), then one `fr_ntt_stage` launch per remaining stage.
// Twiddle w^k = hi[k >> lo_bits] * lo[k & (2^lo_bits - 1)]: two tables of ~sqrt(n) entries.
// Macros expected: none.
#include "field.cuh"

#define BLOCK_LOG 10  // 1024 elements (32 KiB) per block in fr_ntt_block

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

// Stages half = 1 .. 2^(stages-1) on chunks of 2^stages contiguous elements, one chunk per
// block (blockDim.x = 2^(stages-1) threads).
extern "C" __global__ void fr_ntt_block(u32* a, const u32* hi, const u32* lo, int lo_bits,
                                        int log_n, int stages) {
    __shared__ Fr s[1 << BLOCK_LOG];
    long long chunk = 1LL << stages;
    long long base = (long long)blockIdx.x * chunk;
    int t = threadIdx.x;
    s[2 * t] = Fr::load(a + (base + 2 * t) * 8);
    s[2 * t + 1] = Fr::load(a + (base + 2 * t + 1) * 8);
    __syncthreads();
    for (int st = 0; st < stages; st++) {
        int half = 1 << st;
        int k = t & (half - 1);
        int i = ((t >> st) << (st + 1)) + k;
        Fr w = twiddle(hi, lo, lo_bits, (long long)k << (log_n - st - 1));
        Fr u = s[i];
        Fr v = s[i + half] * w;
        s[i] = u + v;
        s[i + half] = u - v;
        __syncthreads();
    }
    s[2 * t].store(a + (base + 2 * t) * 8);
    s[2 * t + 1].store(a + (base + 2 * t + 1) * 8);
}

// One stage with butterfly span `half` = 2^st over the whole array (n/2 butterflies).
extern "C" __global__ void fr_ntt_stage(u32* a, const u32* hi, const u32* lo, int lo_bits,
                                        int log_n, int st) {
    long long half = 1LL << st;
    long long n2 = 1LL << (log_n - 1);
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n2;
         t += (long long)blockDim.x * gridDim.x) {
        long long k = t & (half - 1);
        long long i = ((t >> st) << (st + 1)) + k;
        Fr w = twiddle(hi, lo, lo_bits, k << (log_n - st - 1));
        Fr u = Fr::load(a + i * 8);
        Fr v = Fr::load(a + (i + half) * 8) * w;
        (u + v).store(a + i * 8);
        (u - v).store(a + (i + half) * 8);
    }
}
