"""Two VRAM totals of the H200 (the new-user walkthrough of 2026-12-03: "a calibrated
profile says 139.80 GiB, the bundled one 140.40"). They are two figures of one card:
nvidia-smi's memory.total, 143771 MiB (the bundled h200's `vram`, given to calibrate as
--vram), and CUDA's total, cudaGetDeviceProperties' totalGlobalMem = cudaMemGetInfo's
total, 150109880320 B (the CUZK_SIM_DEVICE line of the committed 2^27 run's log, which
`calibrate` writes). Neither figure changes (docs/profiles.md, "Two totals of one card":
changing the bundled one moves the stated card of three scenarios); each now says which
total it is, and gpu-run's no-ballast line says the card's total is the reason where it is
(it blamed the context)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).parents[2]
LOG = ROOT / "docs" / "validation" / "h200-2026-12-03-production" / "rerun" / "w2-27.log"
MIB = 2**20
SMI = 143771 * MIB  # nvidia-smi --query-gpu=memory.total on the device machine
CUDA = 150109880320  # the log's CUZK_SIM_DEVICE line (cudaGetDeviceProperties)


def test_the_log_names_cudas_total():
    line = next(x for x in LOG.read_text().splitlines() if "CUZK_SIM_DEVICE" in x)
    assert f"bytes={CUDA} " in line
    # by hand: 150109880320 / 2^30 = 139.80 GiB; 143771 MiB - it = 644939776 B = 615.06 MiB
    assert round(CUDA / 2**30, 2) == 139.80 and round(SMI / 2**30, 2) == 140.40
    assert SMI - CUDA == 644939776


def test_calibrate_says_which_total_it_wrote(tmp_path: Path):
    out = tmp_path / "mine.toml"
    res = CliRunner().invoke(
        app, ["calibrate", str(LOG), "--base", "h200", "-o", str(out)], env={"COLUMNS": "400"}
    )
    assert res.exit_code == 0, res.output
    gpu = tomllib.loads(out.read_text())["gpu"]
    assert gpu["vram"] == f"{CUDA} B"
    assert "totalGlobalMem: CUDA's total" in gpu["source"], gpu["source"]
    assert "not the base h200's 143771 MiB (615 MiB more" in gpu["source"], gpu["source"]
    said = " ".join(res.output.split())  # rich wraps the printed line
    card = said[said.index("card: NVIDIA H200") :]
    assert card.startswith(f"card: NVIDIA H200, {CUDA} B ("), card[:300]
    assert "CUDA's total" in card[:400] and "143771 MiB" in card[:400], card[:400]


def test_the_bundled_profile_says_its_total_is_nvidia_smis():
    from cuzk_sim.profiles.profile import load_profile

    assert load_profile("h200").vram == SMI  # the figure is kept
    text = (ROOT / "cuzk_sim" / "profiles" / "h200.toml").read_text()
    source = tomllib.loads(text)["gpu"]["source"]
    assert source.startswith("vram 143771 MiB: nvidia-smi's memory.total"), source[:200]
    assert f"{CUDA} B = 139.80 GiB, 615 MiB less" in source
    assert "as given to calibrate" not in source  # it read as the logs' card


def test_gpu_runs_no_ballast_line_names_the_cards_total():
    """The real device's card setup (gpu/card.py) with a stand-in CUDA: a scenario whose
    hardware.vram is nvidia-smi's total on a GPU whose CUDA total is 615 MiB less."""
    from cuzk_sim.gpu import card
    from cuzk_sim.gpu.backends import CupyBackend
    from cuzk_sim.gpu.pipeline import RealRun
    from cuzk_sim.gpu.run_spec import RunSpec

    from cuzk_sim.scenario import load_scenario

    spec = RunSpec.from_scenario(load_scenario(ROOT / "scenarios" / "validation" / "base.toml"))
    assert spec.vram == SMI
    context = spec.context  # the CUDA context as the model has it, measured the same here

    class StandIn(CupyBackend):
        def mem_info(self, gpu: int) -> tuple[int, int]:
            return CUDA - context, CUDA

        def reset(self, gpu: int) -> None:
            pass

        def release_threshold(self, gpu: int) -> int:
            return 0

        def set_release_threshold(self, gpu: int, value: int) -> None:
            pass

        def raw_malloc(self, gpu: int, nbytes: int) -> int:
            raise AssertionError("no ballast on a card smaller than hardware.vram")

    card._CONTEXT_SEEN.pop(0, None)
    run = RealRun(spec, StandIn())
    try:
        run._prepare()
    finally:
        card._CONTEXT_SEEN.pop(0, None)
    said = " ".join(text for _, text in run.lines)
    assert "644939776 bytes fewer free than hardware.vram - context" in said, said
    assert f"hardware.vram is 644939776 bytes over CUDA's total {CUDA}" in said, said
    assert "real context is" not in said, said  # the context is the model's here
