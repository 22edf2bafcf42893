pragma circom 2.0.0;

include "lib/square_chain.circom";

// The benchmark circuit: 700 constraints (domain 2^10).
component main = SquareChain(700);
