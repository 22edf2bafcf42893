"""cuzk-sim: a Groth16 oracle, a CuPy GPU prover and a SimPy model of cuzk-style provers.

Importing this package never imports CuPy; only the GPU code paths do, lazily.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cuzk-sim")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
