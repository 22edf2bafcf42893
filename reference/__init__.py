"""Pure-Python Groth16 over BLS12-381 (py_ecc): the oracle every other prover is checked against."""
