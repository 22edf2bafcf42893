pragma circom 2.0.0;

// Several public inputs and two public outputs: out0 = a*b + c, out1 = (a + d) * out0.
template MultiPublic() {
    signal input a;
    signal input b;
    signal input c;
    signal input d;
    signal input secret;
    signal output out0;
    signal output out1;
    signal ab;
    ab <== a * b;
    out0 <== ab + c + secret * 0;
    out1 <== (a + d) * out0;
    signal sq;
    sq <== secret * secret;
}

component main {public [a, b, c]} = MultiPublic();
