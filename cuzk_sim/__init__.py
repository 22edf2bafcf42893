"""cuzk-sim: a Groth16 oracle, a CuPy GPU prover and a SimPy model of cuzk-style provers.

Importing this package never imports CuPy; only the GPU code paths do, lazily.
"""

from importlib.metadata import PackageNotFoundError, version

from cuzk_sim.source_tree import claim_checkout_trees

# In a checkout, cuzk_sim.gpu / cuzk_sim.reference are this checkout's gpu/ and reference/,
# whatever checkout an editable install points at (cuzk_sim/source_tree.py).
claim_checkout_trees()

try:
    __version__ = version("cuzk-sim")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
