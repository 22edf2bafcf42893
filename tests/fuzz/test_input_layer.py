"""The input layer (issue 30, item 1): every failure class the attack on main found, each
as it was found, now one line of bad input (exit 2) or a bounded, correct answer.

Expected messages are what the user must be told (file, key path or line), written here
from the input, not copied from the code."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.io.errors import InputError

ROOT = Path(__file__).parents[2]
SCENARIO = ROOT / "scenarios" / "phase9-single-worker.toml"
LOGS = ROOT / "tests" / "logs" / "fixtures"
runner = CliRunner()


def one_error_line(result, *needles: str) -> str:
    """Exit 2, no traceback, and one `error:` line holding every needle."""
    out = result.output
    assert result.exit_code == 2, out
    assert (
        "Traceback" not in out
        and result.exception is None
        or isinstance(result.exception, SystemExit)
    ), out
    lines = [x for x in out.splitlines() if x.startswith("error:")]
    assert len(lines) == 1, out
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


# --- --set values --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("9" * 5000, "characters"),  # beyond any value we take; was a ValueError traceback
        ("9" * 4000, "64-bit"),  # parses, but no key takes a 4,000-digit integer
        ("[" * 100_000 + "]" * 100_000, "characters"),  # was a RecursionError
        ("[[[[[[[[[[1]]]]]]]]]]", "nested deeper"),
        ("inf", "finite"),
    ],
    ids=["5000-digits", "4000-digits", "100000-brackets", "nested-10", "inf"],
)
def test_a_set_value_is_bounded_before_the_toml_parser(value: str, needle: str) -> None:
    r = runner.invoke(app, ["run", str(SCENARIO), "--set", f"workload[0].count={value}"])
    one_error_line(r, "--set workload[0].count", needle)


@pytest.mark.parametrize(
    ("assignment", "key"),
    [
        ("workload[0].count=true", "workload[0].count"),  # a boolean is no count
        ("hardware.gpus=1.0", "hardware.gpus"),  # nor is a float
        ('expect.oom="yes"', "expect.oom"),  # a string is no boolean
        ("seed=false", "seed"),
    ],
)
def test_types_are_strict(assignment: str, key: str) -> None:
    one_error_line(runner.invoke(app, ["run", str(SCENARIO), "--set", assignment]), key)


# --- sweep specs ---------------------------------------------------------------------


def sweep_spec(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(f'base = "{SCENARIO}"\n{body}')
    return path


@pytest.mark.parametrize(
    ("axes", "needle"),
    [
        ('"engine.gpus.gpu_workers_per_device" = "1..1000000000"', "1000000000 values"),
        ('"seed" = "0..99999999999999999999999"', "expected a non-empty list"),
        ('"seed" = "0..9223372036854775807"', "values (at most"),
    ],
)
def test_a_huge_axis_range_is_refused_before_it_is_built(tmp_path, axes, needle) -> None:
    from cuzk_sim.sweep.spec import load_sweep

    with pytest.raises(InputError, match="sweep.toml: axes") as e:
        load_sweep(sweep_spec(tmp_path, f"[axes]\n{axes}\n"))
    assert needle in str(e.value)


def test_a_search_over_a_million_groups_is_refused_before_any_is_built(tmp_path) -> None:
    """Three axes of 1,024 values with a min-VRAM search: 1,024^3 groups of the other
    axes were all built (> 1 GiB). Refused from the counts, before the values are even
    validated (a value that would fail validation is not reached)."""
    from cuzk_sim.sweep.spec import load_sweep

    spec = sweep_spec(
        tmp_path,
        '[search]\nmin_vram = true\n[axes]\n"seed" = "0..1023"\n'
        '"workload[0].count" = "1..1024"\n"hardware.host_cores" = "1..1024"\n',
    )
    with pytest.raises(InputError, match="search.min_vram: .* 1073741824 searches"):
        load_sweep(spec)


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ('[axes]\n"seed" = [1, 2]\n[sample]\ncount = true\n', "sample.count"),
        ('[axes]\n"seed" = [1, 2]\n[search]\nmin_vram = "yes"\n', "search.min_vram"),
    ],
)
def test_sweep_spec_types_are_strict(tmp_path, body: str, key: str) -> None:
    from cuzk_sim.sweep.spec import load_sweep

    with pytest.raises(InputError, match=f"sweep.toml: {key}"):
        load_sweep(sweep_spec(tmp_path, body))


def test_sweep_replicas_beyond_the_limit_is_refused_not_a_row_of_errors(tmp_path) -> None:
    spec = sweep_spec(tmp_path, '[axes]\n"seed" = [1]\n')
    r = runner.invoke(
        app, ["sweep", str(spec), "--out", str(tmp_path / "o"), "--replicas", "1000000"]
    )
    one_error_line(r, "--replicas 1000000")
    assert not (tmp_path / "o" / "results.json").exists()


# --- validation specs ----------------------------------------------------------------


def validation_spec(tmp_path: Path, text: str) -> Path:
    (tmp_path / "base.toml").write_text(SCENARIO.read_text())
    path = tmp_path / "v.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (f'base = "base.toml"\ncaps = {[1.0] * 1000}\n[[config]]\nname = "a"\n', "caps"),
        ('base = "base.toml"\n[[config]]\nname = "a"\ncaps = [-100]\n', "config[0].caps"),
        ('base = "base.toml"\n[[config]]\nname = "a"\ncaps = [1e300]\n', "config[0].caps"),
        ('base = "base.toml"\ngenerous = "yes"\n[[config]]\nname = "a"\n', "generous"),
        ('base = "base.toml"\nrepeats = true\n[[config]]\nname = "a"\n', "repeats"),
        ('base = "base\\u0000.toml"\n[[config]]\nname = "a"\n', "base"),  # a NUL byte
    ],
)
def test_validation_specs_are_bounded_and_typed(tmp_path, text: str, key: str) -> None:
    """1,000 caps (each a real run) had no bound; a per-configuration cap of -100 % (a
    0-byte card) or 1e300 % passed where the spec-level caps were held to [-90, 1000]."""
    from cuzk_sim.validation.spec import load_spec

    with pytest.raises(InputError, match=re.escape(f"v.toml: {key}")) as e:
        load_spec(validation_spec(tmp_path, text))
    assert "\n" not in str(e.value)


# --- JSON inputs ---------------------------------------------------------------------


def test_a_12_mib_string_in_a_baseline_costs_memory_in_proportion(tmp_path) -> None:
    """The depth check's regex held memory per character of a long string (> 1 GiB for
    12 MiB); now the whole load stays within a few copies of the text."""
    from cuzk_sim.gate.verdicts import load_baseline

    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"format": "x", "note": "a" * (12 << 20)}))
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="baseline.json"):
            load_baseline(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * (12 << 20), peak  # was > 1 GiB


def test_groth16_verify_on_json_nested_100000_deep_is_one_line_not_a_segfault(tmp_path):
    """py_ecc raises the recursion limit, so the C JSON parser overflowed the C stack
    (SIGSEGV). In a subprocess: a signal would kill it."""
    deep = tmp_path / "vk.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "public.json").write_text("[]")
    (tmp_path / "proof.json").write_text("{}")
    r = subprocess.run(
        [sys.executable, "-m", "cuzk_sim", "groth16", "verify", str(deep),
         str(tmp_path / "public.json"), str(tmp_path / "proof.json")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "vk.json" in r.stderr and "nested deeper" in r.stderr
    assert "Traceback" not in r.stderr


def test_json_depth_is_counted_outside_strings_only() -> None:
    from cuzk_sim.reference.formats.files import json_depth_exceeds

    assert not json_depth_exceeds('{"a": "[[[[[[[[[["}', 2)
    assert not json_depth_exceeds('["\\"[[[[[["]', 2)  # an escaped quote inside
    assert json_depth_exceeds("[[[1]]]", 2) and not json_depth_exceeds("[[[1]]]", 3)
    assert json_depth_exceeds('{"a": [{"b": [1]}]}', 3)


# --- logs ----------------------------------------------------------------------------


def test_a_gzip_log_with_one_corrupt_byte_is_one_line_in_every_command(tmp_path) -> None:
    data = bytearray(gzip.compress((LOGS / "mutex-contention.log").read_bytes()))
    data[len(data) // 2] ^= 0xFF  # one byte in the deflate stream
    bad = tmp_path / "rotated.log.1"
    bad.write_bytes(bytes(data))
    for args in (
        ["logs", str(bad)],
        ["calibrate", str(bad), "--base", "h200", "-o", str(tmp_path / "p.toml")],
        ["scenario-from-log", str(bad), "-o", str(tmp_path / "s.toml")],
    ):
        line = one_error_line(runner.invoke(app, args), "rotated.log.1", "cannot read the log")
        assert "gzip" in line or "CRC" in line
    assert not (tmp_path / "p.toml").exists() and not (tmp_path / "s.toml").exists()


def test_values_too_large_for_a_float_are_malformed_lines_not_a_traceback(tmp_path) -> None:
    log = tmp_path / "big.log"
    huge = "9" * 400
    log.write_text(
        f"TIMELINE,0,GPU_START,j1,worker=0,partition=0\n"
        f"CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms={huge}\n"
        f"TIMELINE,{huge},GPU_END,j1,worker=0,partition=0,gpu_ms=5\n"
    )
    r = runner.invoke(app, ["logs", str(log), "--json"])
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    assert doc["lines"]["malformed"] == 2


def test_a_line_longer_than_the_cap_is_one_malformed_line(tmp_path) -> None:
    from cuzk_sim.logs.analyze import analyze_logs
    from cuzk_sim.logs.parse import MAX_LINE_BYTES

    log = tmp_path / "long.log.gz"
    body = b"TIMELINE,0,SYNTH_START,j1,partition=0\n" + b"x" * (3 * MAX_LINE_BYTES) + b"\nend\n"
    log.write_bytes(gzip.compress(body))
    a, parser, _ = analyze_logs([log])
    assert parser.counts.lines == 3 and parser.counts.malformed == 1
    assert a.malformed[0][0] == 2 and "longer than" in a.malformed[0][1]


def test_30000_unended_gpu_sections_stop_at_the_cap_with_the_line(tmp_path) -> None:
    from cuzk_sim.logs.timeline import MAX_OPEN_SECTIONS

    log = tmp_path / "open.log"
    log.write_text(
        "".join(f"TIMELINE,{i},GPU_START,j{i},worker=0,partition=0\n" for i in range(30_000))
    )
    line = one_error_line(runner.invoke(app, ["logs", str(log)]), "GPU sections open")
    assert f"open.log:{MAX_OPEN_SECTIONS + 1}:" in line


def test_timestamps_running_backwards_are_an_error_not_negative_durations(tmp_path):
    log = tmp_path / "back.log"
    log.write_text(
        "TIMELINE,50000,GPU_QUEUE,j1,partition=0\nTIMELINE,100,GPU_PICKUP,j1,worker=0,partition=0\n"
    )
    one_error_line(runner.invoke(app, ["logs", str(log)]), "back.log:2:", "backwards")


def test_calibrate_against_a_base_whose_msm_time_is_its_fixed_cost(tmp_path) -> None:
    """msm_g1 time = fixed = 1 ms: nothing scales with the size, and the fit divided by
    that zero. Now the figure is kept from the base."""
    text = (ROOT / "cuzk_sim" / "profiles" / "rtx5070ti.toml").read_text()
    start = text.index("[kernel.msm_g1]")
    end = text.index("[kernel.msm_g2]")
    section = text[start:end].replace('time = "350 ms"', 'time = "1 ms"')
    assert 'fixed = "1 ms"' in section and 'time = "1 ms"' in section
    base = tmp_path / "flat.toml"
    base.write_text(text[:start] + section + text[end:])
    out = tmp_path / "p.toml"
    r = runner.invoke(
        app,
        ["calibrate", str(LOGS / "mutex-contention.log"), "--base", str(base), "-o", str(out),
         "--kind", "porep"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "kernel.msm_g1" not in r.stdout.split("every other figure")[0].split("fitted figures")[1]


def test_the_text_report_prints_huge_values_without_the_highlighter(tmp_path) -> None:
    """rich's highlighter took > 20 s on a 1 MB report of 20,000-digit values; the
    report's lines are printed as plain text, so markup in a log line is text too."""
    log = tmp_path / "digits.log"
    digits = "9" * 20_000
    log.write_text(f"CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms={digits} [bold]x[/bold]\n" * 20)
    r = runner.invoke(app, ["logs", str(log)])
    assert r.exit_code == 0, r.output
    assert "digits.log:1:" in r.output and len(r.output) < 20_000


def test_a_path_with_a_nul_byte_is_one_line(tmp_path) -> None:
    from cuzk_sim.io.inputs import load_toml

    with pytest.raises(InputError, match="not a usable path"):
        load_toml(Path(f"{tmp_path}/a\0b.toml"), "scenario file")


def test_the_readers_refuse_before_parsing_not_after(tmp_path) -> None:
    """A size limit is checked on the open descriptor: a file over it is not read."""
    from cuzk_sim.io.inputs import load_toml

    path = tmp_path / "big.toml"
    with open(path, "wb") as f:
        f.truncate((16 << 20) + 1)  # sparse: no disk used
    with pytest.raises(InputError, match="larger than the limit"):
        load_toml(path, "scenario file")
    os.unlink(path)
