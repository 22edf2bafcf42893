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


@pytest.mark.parametrize("bitrev", ["tiled", "scatter"])
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_baseline_kernel_source_matches_reference(harness, monkeypatch, transform, bitrev):
    """The NTT family's baseline, fr_ntt_group_tw, after fr_bitrev_tiled (or fr_bitrev), at
    2^9 (two launches of the group kernel)."""
    log_n = 9
    rng = random.Random(len(transform) + len(bitrev))
    dom = Domain(1 << log_n)
    g = dom.default_coset
    values = [rng.randrange(R) for _ in range(1 << log_n)]
    fn = getattr(gntt, transform)
    got, rec = _run(harness, monkeypatch, fn, values, log_n, g, "fr_ntt_group_tw", bitrev)
    assert got == _want(dom, transform, values, g), (transform, bitrev)
    assert rec.launches[0][0] in {"fr_bitrev_tiled", "fr_bitrev", "fr_coset_scale", "fr_scale"}


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


@pytest.mark.parametrize("transform", ["ntt", "coset_intt"])
def test_pass_kernel_middle_pass_from_table(harness, monkeypatch, transform):
    """Passes of at most 4 stages at 2^12 (PASS_LOG patched: 0-4, 4-8, 8-12), so that a
    middle pass (st = 4) takes its twiddles from the per-pass table of 2^7 entries, as the
    second of 2^24's three passes does."""
    monkeypatch.setattr(gntt, "PASS_LOG", 4)
    log_n = 12
    assert gntt.pass_groups(log_n) == [(0, 4), (4, 4), (8, 4)]
    assert gntt.pass_log(log_n) == 8
    rng = random.Random(12)
    dom = Domain(1 << log_n)
    g = dom.default_coset
    values = [rng.randrange(R) for _ in range(1 << log_n)]
    got, rec = _run(harness, monkeypatch, getattr(gntt, transform), values, log_n, g, "fr_ntt_pass")
    assert got == _want(dom, transform, values, g), transform
    assert [label for label, *_ in rec.launches].count("fr_ntt_pass") == 3
    columns = [args[-1] for label, _, _, args in rec.launches if label == "fr_ntt_pass"]
    assert columns == [0, 0, 0]
