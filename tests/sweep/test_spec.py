"""The sweep spec: ranges, validation, and bad input as one line with exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sweep_fixtures import BASE, SMALL_SPEC, write_spec
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.io.errors import InputError
from cuzk_sim.sweep.configs import expand, values_at
from cuzk_sim.sweep.spec import load_sweep

runner = CliRunner()


def spec_with(tmp_path, axes: str, extra: str = ""):
    return write_spec(tmp_path, f'base = "{BASE}"\n{extra}\n[axes]\n{axes}\n', "s.toml")


def test_range_expands_inclusive(tmp_path):
    spec = load_sweep(spec_with(tmp_path, '"engine.gpus.gpu_workers_per_device" = "2..5"'))
    assert spec.axes[0].values == (2, 3, 4, 5)


def test_grid_order_last_axis_fastest(tmp_path):
    spec = load_sweep(write_spec(tmp_path))
    # 3 workers x 3 VRAM x 2 prestage: position (i, j, k) is index i*6 + j*2 + k, so
    # (1, 1, 1) is 9 and index 7 is (1, 0, 1)
    assert values_at(spec, 9) == (2, "16 GiB", "outside_mutex")
    assert values_at(spec, 7) == (2, "12 GiB", "outside_mutex")
    configs = expand(spec)
    assert [c.index for c in configs] == list(range(18))
    assert len({c.key for c in configs}) == 18
    assert configs[9].raw["hardware"]["vram"] == "16 GiB"
    assert configs[9].raw["engine"]["gpus"]["gpu_workers_per_device"] == 2


def test_sample_is_seeded_and_without_replacement(tmp_path):
    text = SMALL_SPEC + "[sample]\ncount = 5\nseed = 3\n"
    a = [c.index for c in expand(load_sweep(write_spec(tmp_path, text, "a.toml")))]
    b = [c.index for c in expand(load_sweep(write_spec(tmp_path, text, "b.toml")))]
    assert a == b and len(set(a)) == 5 and a == sorted(a)
    other = text.replace("seed = 3", "seed = 4")
    assert [c.index for c in expand(load_sweep(write_spec(tmp_path, other, "c.toml")))] != a


@pytest.mark.parametrize(
    ("axes", "extra", "expected"),
    [
        ('"engine.gpus.gpu_workers_per_devce" = [1, 2]', "", "gpu_workers_per_devce"),
        ('"hardware.vram" = ["16 GiB", "16 gigs"]', "", 'axes."hardware.vram"[1]'),
        ('"engine.gpus.gpu_workers_per_device" = "4..1"', "", "lo <= hi"),
        ('"engine.gpus.gpu_workers_per_device" = 3', "", "non-empty list"),
        ('"engine.gpus.gpu_workers_per_device" = []', "", "non-empty list"),
        ('"hardware.vram" = ["16 GiB", "16 GiB"]', "", "listed twice"),
        ('"variant.prestage" = ["sometimes"]', "", 'axes."variant.prestage"[0]'),
        ('"hardware.vram" = ["16 GiB"]', '[plot]\nx = "hardware.gpus"', "plot.x"),
        ('"hardware.vram" = ["16 GiB"]', "colour = 1", "colour: unknown key"),
    ],
)
def test_bad_spec_is_one_line_naming_file_and_key(tmp_path, axes, extra, expected):
    path = spec_with(tmp_path, axes, extra)
    with pytest.raises(InputError) as e:
        load_sweep(path)
    assert str(e.value).startswith(str(path)) and expected in str(e.value)
    result = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.output
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_unknown_axis_suggests_the_key(tmp_path):
    path = spec_with(tmp_path, '"engine.gpus.gpu_workers_per_devce" = [1, 2]')
    with pytest.raises(InputError, match="did you mean gpu_workers_per_device"):
        load_sweep(path)


def test_missing_base_names_it(tmp_path):
    path = write_spec(tmp_path, 'base = "nope.toml"\n[axes]\n"hardware.vram" = ["16 GiB"]\n')
    with pytest.raises(InputError, match=r"base: .*nope\.toml: no such scenario file"):
        load_sweep(path)


def test_bad_axis_from_the_shell_is_one_line_exit_2(tmp_path):
    """The installed entry point (no traceback, nothing on stdout)."""
    path = spec_with(tmp_path, '"hardware.vramm" = ["16 GiB"]')
    proc = subprocess.run(
        [sys.executable, "-m", "cuzk_sim", "sweep", str(path), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "hardware.vramm" in lines[0] and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--jitter", "5%"], "--jitter: needs --replicas"),
        (["--jitter", "lots"], "--jitter 'lots'"),
        (["--replicas", "0"], "--replicas 0"),
        (["--jobs", "0"], "--jobs 0"),
        (["--jobs", "2", "--scheduler", "tcp://x:1"], "--jobs and --scheduler"),
    ],
)
def test_bad_options_are_one_line_exit_2(tmp_path, small_spec_path, args, expected):
    result = runner.invoke(
        app, ["sweep", str(small_spec_path), "--out", str(tmp_path / "o"), *args]
    )
    assert result.exit_code == 2
    assert expected in result.output and len(result.output.strip().splitlines()) == 1


def test_out_that_is_a_file_is_refused(tmp_path, small_spec_path):
    (tmp_path / "f").write_text("")
    result = runner.invoke(app, ["sweep", str(small_spec_path), "--out", str(tmp_path / "f")])
    assert result.exit_code == 2 and "is a file" in result.output


def test_unusable_combination_is_a_row_not_a_crash(tmp_path):
    """VRAM below the CUDA context passes the schema (a size) but not resolution: a row
    with `error`, and the other rows still run."""
    path = spec_with(tmp_path, '"hardware.vram" = ["100 MiB", "16 GiB"]')
    from cuzk_sim import api

    rows = api.sweep(path, jobs=1).rows
    assert "must exceed the CUDA context" in rows[0]["error"]
    assert rows[0]["safe"] is False and rows[0]["oom"] is None
    assert rows[1]["error"] is None and rows[1]["safe"] is True
