"""Pure-Python Groth16 over BLS12-381 (py_ecc): the oracle every other prover is checked against.

One stage per module: field, domain (NTT), r1cs, qap (bellman / snarkjs reductions), curve
(raw-int group law), fixed_base, msm (Pippenger), types, setup, prove, verify, serialize
(zcash encodings), circuits; formats/ reads and writes circom/snarkjs files.
See docs/reference.md for the conventions.
"""
