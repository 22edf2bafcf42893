"""Hypothesis mutations of real circom/snarkjs files: only our typed errors come out.

Each example truncates, flips bytes of, or writes a huge count into a file snarkjs made;
the reader must then either parse it or raise FormatError, and do so in bounded time
and memory (a count of 2^32 - 1 must not allocate 2^32 of anything). The bounds are
generous sanity limits against hangs and runaway allocation, not speed targets.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from cuzk_sim.reference.formats import (
    FormatError,
    read_proof,
    read_public,
    read_r1cs,
    read_verification_key,
    read_wtns,
    read_zkey,
)
from hypothesis import given
from hypothesis import strategies as st
from snarkjs_toolchain import CircuitFiles, snarkjs

pytestmark = pytest.mark.interop

MAX_SECONDS = 30.0
MAX_EXTRA_BYTES = 64 << 20  # peak Python allocation beyond the parsed result's own size
HUGE = (0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 2**63, 2**64 - 1, 10**9)
READERS: dict[str, Callable[[Path], object]] = {
    "r1cs": read_r1cs,
    "wtns": read_wtns,
    "zkey": read_zkey,
    "proof": read_proof,
    "public": read_public,
    "vk": read_verification_key,
}


@pytest.fixture(scope="module")
def originals(circuit: Callable[[str], CircuitFiles]) -> dict[str, bytes]:
    files = circuit("multi_public")
    snarkjs("groth16", "prove", files.zkey, files.wtns, "fuzz_proof.json", "fuzz_public.json",
            cwd=files.directory)  # fmt: skip
    return {
        "r1cs": files.r1cs.read_bytes(),
        "wtns": files.wtns.read_bytes(),
        "zkey": files.zkey.read_bytes(),
        "proof": files.path("fuzz_proof.json").read_bytes(),
        "public": files.path("fuzz_public.json").read_bytes(),
        "vk": files.vk_json.read_bytes(),
    }


# (section type, offset in the section, width) of the counts each format keeps, from the
# format descriptions (iden3 r1cs/wtns specs, snarkjs zkey_utils.js), not from our reader.
COUNT_FIELDS = {
    b"r1cs": [(1, 0, 4), (1, 36, 4), (1, 40, 4), (1, 44, 4), (1, 48, 4), (1, 52, 8), (1, 60, 4),
              (2, 0, 4)],
    b"wtns": [(1, 0, 4), (1, 36, 4)],
    b"zkey": [(1, 0, 4), (2, 0, 4), (2, 52, 4), (2, 88, 4), (2, 92, 4), (2, 96, 4), (4, 0, 4)],
}  # fmt: skip


def section_fields(data: bytes) -> list[tuple[int, int]]:
    """(file offset, width) of every count or size field of an iden3 container: the
    section count, each section's size, and the per-format counts above."""
    if len(data) < 12 or data[:4] not in COUNT_FIELDS:
        return []
    fields = [(8, 4)]
    starts: dict[int, int] = {}
    pos, (count,) = 12, struct.unpack_from("<I", data, 8)
    for _ in range(count):
        if pos + 12 > len(data):
            break
        kind, size = struct.unpack_from("<IQ", data, pos)
        fields.append((pos + 4, 8))
        starts.setdefault(kind, pos + 12)
        pos += 12 + size
    for kind, offset, width in COUNT_FIELDS[data[:4]]:
        if kind in starts and starts[kind] + offset + width <= len(data):
            fields.append((starts[kind] + offset, width))
    return fields


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    data = bytearray(original)
    kind = draw(st.sampled_from(["truncate", "flip", "huge", "huge-anywhere"]))
    if kind == "truncate":
        return bytes(data[: draw(st.integers(0, len(data) - 1))])
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= draw(st.integers(1, 255))
        return bytes(data)
    fields = section_fields(original)
    if kind == "huge" and fields:
        offset, width = draw(st.sampled_from(fields))
    else:
        width = draw(st.sampled_from([4, 8]))
        offset = draw(st.integers(0, max(0, len(data) - width)))
    value = draw(st.sampled_from(HUGE)) % (1 << (8 * width))
    data[offset : offset + width] = value.to_bytes(width, "little")
    return bytes(data[: len(original)])


def parse_bounded(reader: Callable[[Path], object], path: Path) -> None:
    tracemalloc.start()
    start = time.perf_counter()
    try:
        reader(path)
    except FormatError as e:
        assert str(path) in str(e)  # the message names the file
    finally:
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert seconds < MAX_SECONDS, f"{seconds:.1f} s"
    assert peak < MAX_EXTRA_BYTES + 200 * path.stat().st_size, f"peak {peak} bytes"


@pytest.mark.parametrize("kind", list(READERS))
def test_mutated_files_raise_only_format_errors(
    kind: str, originals: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory
) -> None:
    directory = tmp_path_factory.mktemp(f"fuzz-{kind}")

    @given(data=mutated(originals[kind]))
    def check(data: bytes) -> None:
        path = directory / f"mutated.{kind}"
        path.write_bytes(data)
        parse_bounded(READERS[kind], path)

    check()


@pytest.mark.parametrize("kind", ["r1cs", "wtns", "zkey"])
def test_every_count_field_set_huge_is_refused_cheaply(
    kind: str, originals: dict[str, bytes], tmp_path: Path
) -> None:
    """Exhaustively: each count/size field at 2^32 - 1 (u32) or 2^64 - 1 (u64)."""
    original = originals[kind]
    for offset, width in section_fields(original):
        data = bytearray(original)
        data[offset : offset + width] = b"\xff" * width
        path = tmp_path / f"huge_{offset}.{kind}"
        path.write_bytes(bytes(data))
        parse_bounded(READERS[kind], path)
