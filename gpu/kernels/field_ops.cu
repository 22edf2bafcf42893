// Elementwise field kernels: Montgomery conversion, products, the pointwise steps of H.
// Elements are arrays of N little-endian u32 limbs (Fr: 8, Fq: 12, Fq2: 24 as c0 | c1).
// Macros expected: none.
#include "field.cuh"

#define GRID_STRIDE(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

template <class F>
__device__ __forceinline__ void binop(u32* out, const u32* a, const u32* b, long long n, int op) {
    const int W = sizeof(F) / 4;
    GRID_STRIDE(i, n) {
        F x = F::load(a + i * W);
        F y = F::load(b + i * W);
        F r;
        switch (op) {
            case 0: r = x + y; break;
            case 1: r = x - y; break;
            case 2: r = x * y; break;
            case 3: r = to_mont(x); break;
            case 4: r = from_mont(x); break;
            case 5: r = inverse(x); break;
            default: r = -x; break;
        }
        r.store(out + i * W);
    }
}

// op: 0 add, 1 sub, 2 mul (Montgomery), 3 to_mont(a), 4 from_mont(a), 5 inverse(a), 6 neg(a)
extern "C" __global__ void fr_binop(u32* out, const u32* a, const u32* b, long long n, int op) {
    binop<Fr>(out, a, b, n, op);
}
extern "C" __global__ void fq_binop(u32* out, const u32* a, const u32* b, long long n, int op) {
    binop<Fq>(out, a, b, n, op);
}
extern "C" __global__ void fq2_binop(u32* out, const u32* a, const u32* b, long long n, int op) {
    binop<Fq2>(out, a, b, n, op);
}

// In place: a <- a R mod m (to_mont) or a R^-1 (from_mont); words = limbs per element.
extern "C" __global__ void fr_convert(u32* a, long long n, int to) {
    GRID_STRIDE(i, n) {
        Fr x = Fr::load(a + i * 8);
        (to ? to_mont(x) : from_mont(x)).store(a + i * 8);
    }
}
extern "C" __global__ void fq_convert(u32* a, long long n, int to) {
    GRID_STRIDE(i, n) {
        Fq x = Fq::load(a + i * 12);
        (to ? to_mont(x) : from_mont(x)).store(a + i * 12);
    }
}

// out[i] = base^i for i < n (Montgomery); base is one Montgomery element in device memory.
extern "C" __global__ void fr_powers(u32* out, const u32* base, long long n) {
    Fr b = Fr::load(base);
    GRID_STRIDE(i, n) { pow_u32(b, (u32)i).store(out + i * 8); }
}

// a[i] <- a[i] * s (s one Montgomery element)
extern "C" __global__ void fr_scale(u32* a, const u32* s, long long n) {
    Fr k = Fr::load(s);
    GRID_STRIDE(i, n) { (Fr::load(a + i * 8) * k).store(a + i * 8); }
}

// a[i] <- a[i] * g^i * s with g^i = hi[i >> lo_bits] * lo[i & (2^lo_bits - 1)]: the coset
// shift (and, for the inverse, the 1/n factor) without an n-element table.
extern "C" __global__ void fr_coset_scale(u32* a, const u32* hi, const u32* lo, int lo_bits,
                                          const u32* s, long long n) {
    Fr k = Fr::load(s);
    long long mask = (1LL << lo_bits) - 1;
    GRID_STRIDE(i, n) {
        Fr g = Fr::load(hi + (i >> lo_bits) * 8) * Fr::load(lo + (i & mask) * 8);
        (Fr::load(a + i * 8) * g * k).store(a + i * 8);
    }
}

// H on the coset (bellman): a[i] <- (a[i] b[i] - c[i]) * zinv, zinv = 1 / (g^n - 1)
extern "C" __global__ void fr_h_quotient(u32* a, const u32* b, const u32* c, const u32* zinv,
                                         long long n) {
    Fr z = Fr::load(zinv);
    GRID_STRIDE(i, n) {
        Fr ab = Fr::load(a + i * 8) * Fr::load(b + i * 8);
        ((ab - Fr::load(c + i * 8)) * z).store(a + i * 8);
    }
}

// H on the odd coset (snarkjs): a[i] <- a[i] b[i] - c[i] (no division by Z)
extern "C" __global__ void fr_h_product(u32* a, const u32* b, const u32* c, long long n) {
    GRID_STRIDE(i, n) {
        Fr ab = Fr::load(a + i * 8) * Fr::load(b + i * 8);
        (ab - Fr::load(c + i * 8)).store(a + i * 8);
    }
}
