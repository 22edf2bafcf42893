"""Readers and writers for circom / snarkjs files (.r1cs, .wtns, .zkey, proof/public/vk JSON).

Every reader is bounded (counts are checked against the bytes present before anything is
built) and raises only FormatError (UnsupportedCurve for a non-BLS12-381 file), naming the
file and the byte offset or JSON field at fault.
"""

from .errors import FormatError, UnsupportedCurve
from .r1cs import CircomR1cs, R1csHeader, read_r1cs
from .snarkjs_json import (
    read_proof,
    read_public,
    read_verification_key,
    write_proof,
    write_public,
    write_verification_key,
)
from .wtns import read_wtns, write_wtns, wtns_bytes
from .zkey import read_zkey

__all__ = [
    "CircomR1cs",
    "FormatError",
    "R1csHeader",
    "UnsupportedCurve",
    "read_proof",
    "read_public",
    "read_r1cs",
    "read_verification_key",
    "read_wtns",
    "read_zkey",
    "write_proof",
    "write_public",
    "write_verification_key",
    "write_wtns",
    "wtns_bytes",
]
