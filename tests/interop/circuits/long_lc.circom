pragma circom 2.0.0;

// One constraint whose left side is a linear combination of N private wires with distinct
// coefficients, so a coefficient section with long rows is exercised.
template LongLc(N) {
    signal input x[N];
    signal input k;
    signal output out;
    var acc = 0;
    for (var i = 0; i < N; i++) {
        acc += (i + 3) * x[i];
    }
    out <== acc * k;
}

component main {public [k]} = LongLc(64);
