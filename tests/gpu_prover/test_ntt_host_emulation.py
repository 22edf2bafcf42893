"""kernels/ntt.cu itself (not a model of it) compiled by the host C++ compiler and run lane by
lane in CI without a GPU: the launches that gpu/ntt.py's ntt_launches makes (recorded with
numpy arrays in place of device arrays) replayed by a harness that runs each block's lanes
as threads taking turns (one runs at a time; __syncwarp / __syncthreads are barriers), with
shared memory shared by the block's lanes. The transforms against the reference domain.
Skipped when no C++ compiler is installed."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cuzk_sim.gpu import encoding
from cuzk_sim.gpu import ntt as gntt
from cuzk_sim.gpu.module import KERNEL_DIR, MAX_BLOCKS
from cuzk_sim.reference.domain import Domain
from cuzk_sim.reference.field import R
from host_cxx import build

HARNESS = Path(__file__).with_name("ntt_host_harness.cpp")


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    d = tmp_path_factory.mktemp("ntt_emu")
    src = (KERNEL_DIR / "ntt.cu").read_text()
    # shared memory: one array per block (blocks run one after another), lanes share it
    src = src.replace("extern __shared__", "extern").replace("__shared__", "static")
    (d / "ntt_host.cu").write_text(src)
    return build(d, HARNESS.read_text(), ["-pthread"], std="c++20", include=[d])


class _Recorder:
    """Stands in for gpu.module's kernel() and launch(): records each launch's name, shape
    and arguments (numpy views into the two buffers, numpy integers)."""

    def __init__(self, buffers: list[np.ndarray]):
        self.buffers = buffers
        self.launches: list[tuple[str, int, int, tuple]] = []

    def kernel(self, file: str, name: str):
        def run(grid, block, args, shared_mem=0):
            self.launches.append((name, grid[0], block[0], args))

        return run

    def launch(self, file: str, name: str, work_items: int, *args, threads: int = 256):
        blocks = max(1, min(MAX_BLOCKS, -(-work_items // threads)))
        self.launches.append((name, blocks, threads, args))

    def arg(self, x) -> str:
        if isinstance(x, np.ndarray):
            for b, buf in enumerate(self.buffers):
                off = (x.ctypes.data - buf.ctypes.data) // 4
                if 0 <= off < buf.size:
                    return f"p{b}:{off}"
            raise AssertionError("a pointer into neither buffer")
        return f"i{int(x)}"

    def script(self) -> str:
        lines = []
        for name, grid, block, args in self.launches:
            lines.append(f"{name} {grid} {block} {len(args)} " + " ".join(map(self.arg, args)))
        return "\n".join(lines) + "\n"


def _run(harness, monkeypatch, fn, values, log_n, g, kernel_name, bitrev=None):
    n = 1 << log_n
    dom = Domain(n)
    tables = gntt.domain_tables(log_n, dom.omega, g, 1).pack().reshape(-1).copy()
    a = np.asarray(encoding.fr_to_mont_limbs(values), dtype=np.uint32).reshape(-1).copy()
    rec = _Recorder([a, tables])
    import cuzk_sim.gpu.module as module

    monkeypatch.setattr(module, "kernel", rec.kernel)
    monkeypatch.setattr(module, "launch", rec.launch)
    fn(a, gntt.DeviceTables.from_buffer(tables, log_n), kernel_name=kernel_name, bitrev=bitrev)
    stdin = f"{a.size} {tables.size}\n" + " ".join(f"{w:x}" for w in a) + "\n"
    stdin += " ".join(f"{w:x}" for w in tables) + "\n" + rec.script()
    out = subprocess.run([str(harness)], input=stdin, capture_output=True, text=True, check=True)
    words = [int(w, 16) for w in out.stdout.split()]
    assert len(words) == 8 * n
    r_inv = pow(2**256, -1, R)
    limbs = np.array(words, dtype=np.uint32).reshape(n, 8)
    return [x * r_inv % R for x in encoding.limbs_to_ints(limbs)], rec


TRANSFORMS = ["ntt", "intt", "coset_ntt", "coset_intt"]


def _want(dom: Domain, name: str, values: list[int], g: int) -> list[int]:
    return {
        "ntt": lambda: dom.ntt(values),
        "intt": lambda: dom.intt(values),
        "coset_ntt": lambda: dom.coset_ntt(values, g),
        "coset_intt": lambda: dom.coset_intt(values, g),
    }[name]()


@pytest.mark.parametrize("log_n", [1, 2, 3, 5, 8, 9, 11])
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_register_kernel_source_matches_reference(harness, monkeypatch, log_n, transform):
    """fr_ntt_reg8 / reg4 / reg2, the bit reversals (tiled from 2^8, scaled or not) and the
    folded factors, as written in kernels/ntt.cu and launched by ntt_launches."""
    rng = random.Random(log_n * 7 + len(transform))
    dom = Domain(1 << log_n)
    g = dom.default_coset
    values = [rng.randrange(R) for _ in range(1 << log_n)]
    values[0] = R - 1
    got, rec = _run(harness, monkeypatch, getattr(gntt, transform), values, log_n, g, "fr_ntt_reg8")
    assert got == _want(dom, transform, values, g), (transform, log_n)
    names = {name for name, *_ in rec.launches}
    assert ("fr_bitrev_tiled" in names) == (log_n >= 8)


@pytest.mark.parametrize("bitrev", ["tiled", "scatter"])
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_default_kernel_source_matches_reference(harness, monkeypatch, transform, bitrev):
    """The default, fr_ntt_group_tw after fr_bitrev_tiled (or fr_bitrev), at 2^9 (two
    launches of the group kernel)."""
    log_n = 9
    rng = random.Random(len(transform) + len(bitrev))
    dom = Domain(1 << log_n)
    g = dom.default_coset
    values = [rng.randrange(R) for _ in range(1 << log_n)]
    fn = getattr(gntt, transform)
    got, rec = _run(harness, monkeypatch, fn, values, log_n, g, "fr_ntt_group_tw", bitrev)
    assert got == _want(dom, transform, values, g), (transform, bitrev)
    assert rec.launches[0][0] in {"fr_bitrev_tiled", "fr_bitrev", "fr_coset_scale", "fr_scale"}


@pytest.mark.slow
@pytest.mark.slowtier  # 2^17 through the host-compiled kernel: seconds
def test_register_kernel_source_three_launches(harness, monkeypatch):
    """2^17: fr_ntt_reg8 in three launches (6, 6, 5 stages), the coset iNTT (both factors)."""
    log_n = 17
    rng = random.Random(17)
    dom = Domain(1 << log_n)
    g = dom.default_coset
    values = [rng.randrange(R) for _ in range(1 << log_n)]
    got, rec = _run(harness, monkeypatch, gntt.coset_intt, values, log_n, g, "fr_ntt_reg8")
    assert [name for name, *_ in rec.launches].count("fr_ntt_reg8") == 3
    assert got == dom.coset_intt(values, g)


@pytest.fixture(scope="module")
def plain_pass_harness(tmp_path_factory):
    """The harness with fr_ntt_pass's four switches the other way from their defaults
    (planes in shared memory, fr_mul.cuh's product, every twiddle from the two-level
    tables, each stage's twiddles behind a barrier of their own)."""
    d = tmp_path_factory.mktemp("ntt_emu_plain")
    src = (KERNEL_DIR / "ntt.cu").read_text()
    src = src.replace("extern __shared__", "extern").replace("__shared__", "static")
    (d / "ntt_host.cu").write_text(src)
    flags = ["-pthread", "-DNTT_PASS_PLANES=1", "-DNTT_PASS_FR_MUL=1", "-DNTT_PASS_TABLE=0"]
    flags.append("-DNTT_PASS_TW_STAGE=1")
    return build(d, HARNESS.read_text(), flags, std="c++20", include=[d])


@pytest.mark.parametrize("log_n", [1, 2, 3, 9, 10, 12])
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_pass_kernel_source_matches_reference(harness, monkeypatch, log_n, transform):
    """fr_ntt_pass, the default, as written and launched: one pass (2^1 .. 2^9, every
    twiddle from the per-pass table), two (2^10, 2^12: the first pass's twiddles from the
    table, the last pass's products), after the tiled or the scattered bit reversal."""
    rng = random.Random(log_n * 11 + len(transform))
    dom = Domain(1 << log_n)
    g = dom.default_coset
    values = [rng.randrange(R) for _ in range(1 << log_n)]
    values[-1] = R - 1
    got, rec = _run(harness, monkeypatch, getattr(gntt, transform), values, log_n, g, "fr_ntt_pass")
    assert got == _want(dom, transform, values, g), (transform, log_n)
    passes = [name for name, *_ in rec.launches if name == "fr_ntt_pass"]
    assert len(passes) == -(-log_n // 9)


@pytest.mark.parametrize("name", ["fr_ntt_pass", "fr_ntt_pass_c2"])
@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize("transform", ["ntt", "coset_intt"])
def test_pass_kernel_middle_pass_from_table(
    harness, plain_pass_harness, monkeypatch, transform, plain, name
):
    """Passes of at most 4 stages at 2^12 (PASS_LOG patched: 0-4, 4-8, 8-12), so that a
    middle pass (st = 4) takes its twiddles from the per-pass table of 2^7 entries, as the
    second of 2^24's three passes does; with its switches flipped; and with two
    adjacent groups per block after the first pass (fr_ntt_pass_c2)."""
    monkeypatch.setattr(gntt, "PASS_LOG", 4)
    log_n = 12
    assert gntt.pass_groups(log_n) == [(0, 4), (4, 4), (8, 4)]
    assert gntt.pass_log(log_n) == 8
    rng = random.Random(12 + plain)
    dom = Domain(1 << log_n)
    g = dom.default_coset
    values = [rng.randrange(R) for _ in range(1 << log_n)]
    exe = plain_pass_harness if plain else harness
    got, rec = _run(exe, monkeypatch, getattr(gntt, transform), values, log_n, g, name)
    assert got == _want(dom, transform, values, g), (transform, plain)
    assert [label for label, *_ in rec.launches].count("fr_ntt_pass") == 3
    columns = [args[-1] for label, _, _, args in rec.launches if label == "fr_ntt_pass"]
    assert columns == ([0, 1, 1] if name == "fr_ntt_pass_c2" else [0, 0, 0])


FR_MUL_HARNESS = r"""
#define FIELD_HOST_EMULATION 1
#include <cstdio>
#include "fr_mul.cuh"
// stdin: pairs of Fr elements (8 hex limbs each); stdout: fr_mul(a, b), then mont_mul_wide
int main() {
    Fr a, b;
    while (true) {
        for (int i = 0; i < 8; i++) if (scanf("%x", &a.v[i]) != 1) return 0;
        for (int i = 0; i < 8; i++) if (scanf("%x", &b.v[i]) != 1) return 1;
        Fr p = fr_mul(a, b), q = mont_mul_wide(a, b);
        for (int i = 0; i < 8; i++) printf("%x ", p.v[i]);
        for (int i = 0; i < 8; i++) printf("%x ", q.v[i]);
        printf("\n");
    }
}
"""


def test_fr_mul_matches_python_ints(tmp_path):
    """fr_mul (fr_mul.cuh: r's limbs folded into adds) is a * b / 2^256 mod r, as Python
    ints say and as field.cuh's mont_mul_wide gives, on edges (0, 1, r - 1, limb 0 zero, so
    that a round's u is 0; limbs 2^32 - 1) and random elements."""
    exe = build(tmp_path, FR_MUL_HARNESS)
    rng = random.Random(5)
    edges = [0, 1, 2, R - 1, R - 2, 2**32, (R - 1) >> 32 << 32, 2**255 % R, (2**254 - 1) % R]
    edges += [sum(0xFFFFFFFF << (32 * i) for i in range(j, 8)) % R for j in range(8)]
    xs = edges + [rng.randrange(R) for _ in range(40)]
    pairs = [(a, b) for a in edges for b in edges] + [
        (rng.choice(xs), rng.choice(xs)) for _ in range(300)
    ]
    pairs += [(a << 32 * (a % 3) % R, rng.randrange(R)) for a in range(1, 50)]  # low limbs 0
    stdin = "\n".join(
        " ".join(f"{(x >> (32 * i)) & 0xFFFFFFFF:x}" for x in (a, b) for i in range(8))
        for a, b in pairs
    )
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True)
    lines = out.stdout.split("\n")[: len(pairs)]
    r_inv = pow(2**256, -1, R)
    for (a, b), line in zip(pairs, lines, strict=True):
        w = [int(x, 16) for x in line.split()]
        got = sum(v << (32 * i) for i, v in enumerate(w[:8]))
        wide = sum(v << (32 * i) for i, v in enumerate(w[8:]))
        assert got == a * b * r_inv % R, (a, b)
        assert got == wide, (a, b)
