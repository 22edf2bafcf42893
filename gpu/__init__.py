"""CuPy Groth16 prover. CuPy is imported lazily, only by the code paths that touch a GPU."""
