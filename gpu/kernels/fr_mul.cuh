// The Fr Montgomery product specialised to r (the NTT's butterflies): field.cuh's
// mont_mul_wide_body with the modulus folded in. r's limb 0 is 1 and limb 1 is 2^32 - 1, and
// -r^-1 mod 2^32 is 2^32 - 1, so in each CIOS round u = -ev[0] and
//   u * r_0 = u: ev[0] + u = 0 with carry (ev[0] != 0) - an add, not a multiply-add;
//   u * r_1 = 2^32 u - u = (hi, lo) with lo = ev[0], hi = ev[0] ? ~ev[0] : 0 - two adds;
// the other six limbs are immediates. 14 instead of 16 64-bit multiply-adds per round (112
// against 128 per product) on the IMAD pipe; the rest is the same carry-chain layout (the
// bounds of mont_mul_wide_body hold unchanged: the partial sums are the same numbers).
// Host-emulated with field.cuh's carry steps (tests/gpu_prover/test_ntt_host_emulation.py).
// Measured on the H200 (docs/benchmarks.md "NTT passes"): 48.2 against 47.8 G products/s
// for mul_inline (fr_mul_rate_r / fr_mul_rate), and fr_ntt_pass 1.5% slower with it (5.93
// against 5.84 ms at 2^24): the SASS trades 17 IMAD-pipe instructions per product for 32
// others (an ISETP + SEL for u = 0 and the adds each round). So it is opt-in
// (NTT_PASS_FR_MUL=1).
#pragma once
#include "field.cuh"

__device__ __forceinline__ Fr fr_mul(const Fr& a, const Fr& b) {
    // r's limbs 2..7 (limbs 0, 1 = 1, 2^32 - 1 are folded into adds below)
    const u32 R2 = 0xfffe5bfeu, R3 = 0x53bda402u, R4 = 0x09a1d805u, R5 = 0x3339d808u,
              R6 = 0x299d7d48u, R7 = 0x73eda753u;
    u32 ev[9], od[8];
    ev[8] = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        mont_product_round<8>(ev, od, a.v, b.v[i], i == 0);
        const u32 e0 = ev[0], u = 0u - e0;
        // ev += u r_even: (ev1:ev0) += u, then limbs 2, 4, 6
        add_cc(ev[0], e0, u);
        addc_cc(ev[1], ev[1], 0u);
        madw_cc(ev[2], ev[3], R2, u);
        madw_cc(ev[4], ev[5], R4, u);
        madw_cc(ev[6], ev[7], R6, u);
        add_carry(ev[8]);
        // od += u r_odd: (od1:od0) += u (2^32 - 1) = (hi, lo), then limbs 3, 5, 7
        const u32 hi = e0 ? ~e0 : 0u;
        add_cc(od[0], od[0], e0);
        addc_cc(od[1], od[1], hi);
        madw_cc(od[2], od[3], R3, u);
        madw_cc(od[4], od[5], R5, u);
        madw_last(od[6], od[7], R7, u);
        add_cc(ev[0], od[0], ev[1]);
#pragma unroll
        for (int k = 1; k < 7; k++) addc_cc(ev[k], od[k], ev[k + 1]);
        addc(ev[7], od[7], ev[8]);
        ev[8] = 0;
    }
    Fr r;
#pragma unroll
    for (int i = 0; i < 8; i++) r.v[i] = ev[i];
    r.reduce_once(0);
    return r;
}
