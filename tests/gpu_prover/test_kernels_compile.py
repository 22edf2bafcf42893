"""Every kernel file compiles with NVRTC for sm_90 (no GPU needed), when NVRTC is importable."""

from __future__ import annotations

import pytest
from cuzk_sim.gpu.module import KERNEL_DIR

# NVRTC compiles take seconds each: the slow tier (.ci/run runs it after the README command)
pytestmark = pytest.mark.slowtier

nvrtc = pytest.importorskip(
    "cuda.bindings.nvrtc",
    reason="NVRTC not installed (pip install cuda-bindings nvidia-cuda-nvrtc)",
)


@pytest.mark.parametrize("name", sorted(p.name for p in KERNEL_DIR.glob("*.cu")))
def test_kernel_compiles(name):
    headers = sorted(KERNEL_DIR.glob("*.cuh"))
    src = (KERNEL_DIR / name).read_bytes()
    err, prog = nvrtc.nvrtcCreateProgram(
        src,
        name.encode(),
        len(headers),
        [h.read_bytes() for h in headers],
        [h.name.encode() for h in headers],
    )
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    opts = [b"--gpu-architecture=compute_90", b"--std=c++17"]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode()
