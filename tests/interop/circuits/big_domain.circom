pragma circom 2.0.0;

// A squaring chain of N constraints: with N = 3000 the snarkjs domain is 2^12.
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

component main = SquareChain(3000);
