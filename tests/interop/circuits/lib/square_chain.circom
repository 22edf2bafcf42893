pragma circom 2.0.0;

// s_0 = x, s_{i+1} = s_i^2 + i: one constraint per step, out = s_N.
template SquareChain(N) {
    signal input x;
    signal output out;
    signal s[N + 1];
    s[0] <== x;
    for (var i = 0; i < N; i++) {
        s[i + 1] <== s[i] * s[i] + i;
    }
    out <== s[N];
}
