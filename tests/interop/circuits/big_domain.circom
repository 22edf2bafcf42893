pragma circom 2.0.0;

include "lib/square_chain.circom";

// 3000 constraints + 2 input rows: the snarkjs domain is 2^12.
component main = SquareChain(3000);
