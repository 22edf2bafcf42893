pragma circom 2.0.0;

// No public inputs and no outputs: the verifier checks the proof against wire 0 alone.
template NoPublic() {
    signal input x;
    signal input y;
    signal xy;
    signal z;
    xy <== x * y;
    z <== xy * (x + 7);
}

component main = NoPublic();
