"""Regressions: each hostile input the CLI attack found is refused with exit 2 and one
line naming the file and key (or handled right), fast. Every case here failed before the
fix (a traceback, a hang, a wrong answer or gigabytes of memory)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from cubic_files import cubic_files
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.plan.contract import Plan, PlanError

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
BASE = (SCENARIOS / "phase9-single-worker.toml").read_text()
runner = CliRunner()


def cli(*args: object):
    result = runner.invoke(app, [str(a) for a in args])
    assert not result.exception or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def one_error_line(out: str, *needles: str) -> str:
    (line,) = out.strip().splitlines()
    assert line.startswith("error: ") and "Traceback" not in line
    for n in needles:
        assert n in line, line
    return line


def scenario(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------- sizes and numbers


@pytest.mark.parametrize("key", ["vram", "host_ram", "context_overhead"])
def test_a_size_of_1e999_gib_is_one_line_exit_2(tmp_path: Path, key: str) -> None:
    """Before: OverflowError (float('1e999') is inf; int(inf) raises)."""
    lines = [x for x in BASE.splitlines() if not x.startswith(f"{key} =")]
    text = "\n".join(lines).replace("[hardware]", f'[hardware]\n{key} = "1e999 GiB"', 1)
    code, out = cli("run", scenario(tmp_path, text))
    assert code == 2
    one_error_line(out, "s.toml", f"hardware.{key}", "finite")


def test_a_profile_size_of_1e999_gib_is_one_line_exit_2(tmp_path: Path) -> None:
    profile = (ROOT / "cuzk_sim" / "profiles" / "rtx5070ti.toml").read_text()
    assert 'vram = "16 GiB"' in profile
    (tmp_path / "p.toml").write_text(profile.replace('vram = "16 GiB"', 'vram = "1e999 GiB"', 1))
    code, out = cli("run", scenario(tmp_path, BASE.replace('"rtx5070ti"', '"p.toml"')))
    assert code == 2
    one_error_line(out, "p.toml", "gpu.vram")


@pytest.mark.parametrize(
    "edit",
    [
        ("seed = 1", "seed = " + "9" * 5000),  # over Python's 4,300-digit limit
        ("seed = 1", "seed = 18446744073709551616"),  # beyond TOML's 64 bits
        ("seed = 1", "seed = 1\nx = " + "[" * 100_000 + "]" * 100_000),
        ("seed = 1", "seed = inf"),
    ],
    ids=["5000-digit int", "2^64", "nested 10^5", "inf"],
)
def test_numbers_the_toml_parser_cannot_or_should_not_hold(tmp_path: Path, edit) -> None:
    code, out = cli("run", scenario(tmp_path, BASE.replace(*edit)))
    assert code == 2
    one_error_line(out, "s.toml")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("synthesis_concurrency", 2147483648),
        ("synthesis_lookahead", 10**9),
        ("max_parallel_synthesis", 10**9),
    ],
)
def test_concurrency_has_an_upper_limit(tmp_path: Path, key: str, value: int) -> None:
    """Before: synthesis_concurrency = 2147483648 grew past 1 GiB in seconds."""
    text = BASE + f"\n[engine.pipeline]\n{key} = {value}\n"
    start = time.perf_counter()
    code, out = cli("run", scenario(tmp_path, text))
    assert code == 2 and time.perf_counter() - start < 5
    one_error_line(out, f"engine.pipeline.{key}", "1024")


def test_endless_arrivals_with_no_gap_are_refused(tmp_path: Path) -> None:
    """Before: duration = "0 s" with every = "0 s" grew past 1 GiB in seconds."""
    text = BASE.replace("count = 10", 'every = "0 s"').replace(
        "seed = 1", 'seed = 1\nduration = "0 s"'
    )
    code, out = cli("run", scenario(tmp_path, text))
    assert code == 2
    one_error_line(out, "workload[0].every")


def test_gpu_threads_beyond_any_host_are_refused(tmp_path: Path) -> None:
    text = BASE + "\n[engine.gpus]\ngpu_threads = 1000000000000\n"
    text = text.replace("[engine.gpus]\ngpu_workers_per_device = 1\n", "")
    text = text.replace("gpu_threads", "gpu_workers_per_device = 1\ngpu_threads")
    code, out = cli("run", scenario(tmp_path, text))
    assert code == 2
    one_error_line(out, "engine.gpus.gpu_threads")


# ---------------------------------------------------------------- plan JSON


def plan_error(raw: dict) -> str:
    with pytest.raises(PlanError) as e:
        Plan.from_dict(raw, "p.json")
    assert "\n" not in str(e.value)
    return str(e.value)


ALLOC = {"op": "alloc", "buffer": "d", "bytes": 8}


@pytest.mark.parametrize(
    ("steps", "needle"),
    [
        ([dict(ALLOC, persistent="false")], "steps[0] (alloc).persistent"),  # was truthy
        ([dict(ALLOC, per_device="no")], "steps[0] (alloc).per_device"),
        ([dict(ALLOC, allocator="bogus")], "steps[0] (alloc).allocator"),  # AssertionError
        ([{"op": "lock", "mutex": "m", "scope": "bogus"}], "steps[0] (lock).scope"),  # accepted
        ([{"op": "copy", "name": "c", "bytes": 1, "direction": "up"}], "(copy).direction"),
        ([{"op": "label", "name": ["x"]}], "steps[0] (label).name"),  # a label as a list
        ([ALLOC, {"op": "goto", "label": {"a": 1}}], "steps[1] (goto).label"),
        ([dict(ALLOC, bytes=2**60)], "steps[0] (alloc).bytes"),
        ([dict(ALLOC, bytes=1.5)], "steps[0] (alloc).bytes"),
        ([dict(ALLOC, margin="1 GiB")], "steps[0] (alloc).margin"),
        (
            [{"op": "cpu", "name": "c", "kind": "synthesis", "size": 1, "threads": 10**12}],
            "threads",
        ),
        ([{"op": "kernel", "name": "k", "kind": 5, "size": 1}], "steps[0] (kernel).kind"),
        ([{"op": ["alloc"]}], "steps[0].op"),
    ],
)
def test_plan_fields_are_typed_and_bounded(steps: list, needle: str) -> None:
    assert needle in plan_error({"steps": steps})


def test_plan_meta_and_name_are_typed() -> None:
    """Before: "meta": "ab" crashed in dict('ab')."""
    assert "p.json: meta:" in plan_error({"meta": "ab", "steps": [ALLOC]})
    assert "p.json: name:" in plan_error({"name": ["x"], "steps": [ALLOC]})


def test_a_plan_file_with_a_bad_field_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text(
        json.dumps({"steps": [dict(ALLOC, persistent="false"), {"op": "free", "buffer": "d"}]})
    )
    text = BASE.replace("[[workload]]", '[plan]\nfile = "plan.json"\n\n[[workload]]')
    code, out = cli("run", scenario(tmp_path, text))
    assert code == 2
    one_error_line(out, "s.toml: plan.file:", "steps[0] (alloc).persistent")


@pytest.mark.parametrize(
    "text",
    [
        '{"steps": [' + "[" * 100_000 + "]" * 100_000 + "]}",
        '{"steps": [], "x": ' + "9" * 5000 + "}",
    ],
    ids=["nested 10^5", "5000 digits"],
)
def test_plan_json_the_parser_cannot_hold_is_one_line(tmp_path: Path, text: str) -> None:
    (tmp_path / "plan.json").write_text(text)
    scn = BASE.replace("[[workload]]", '[plan]\nfile = "plan.json"\n\n[[workload]]')
    code, out = cli("run", scenario(tmp_path, scn))
    assert code == 2
    one_error_line(out, "plan.file")


# ---------------------------------------------------------------- text that reaches rich


def test_markup_in_a_scenario_name_and_log_contains_is_printed_as_text(tmp_path: Path) -> None:
    """Before: rich raised MarkupError for a name or expectation holding `[/]`."""
    text = BASE.replace('name = "phase9-single-worker"', 'name = "[/]odd[bold]"')
    text = text.replace("[expect]\n", '[expect]\nlog_contains = ["[/]never"]\n')
    path = scenario(tmp_path, text)
    code, out = cli("check", path)
    assert code == 1  # the log line is absent: an expectation mismatch, not a crash
    assert "[/]odd[bold]" in out
    code, out = cli("run", path)
    assert code == 0 and "[/]odd[bold]" in out


def test_a_buffer_named_markup_in_an_oom_post_mortem(tmp_path: Path) -> None:
    plan = {"steps": [{"op": "alloc", "buffer": "[/]", "bytes": 2**50}]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    text = BASE.replace("[[workload]]", '[plan]\nfile = "plan.json"\n\n[[workload]]')
    text = text.replace("oom = false", 'oom = false\nfirst_oom_buffer = "[/]"')
    path = scenario(tmp_path, text)
    code, out = cli("check", path)
    assert code == 1 and "[/]" in out  # oom expected false: a mismatch with its post-mortem
    code, out = cli("run", path)
    assert code == 1 and "[/] (1024.00 TiB)" in out


# ---------------------------------------------------------------- special files


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "folder"])
def test_readers_refuse_special_files_at_once(tmp_path: Path, special: str) -> None:
    """Before: `groth16 verify /dev/zero ...` read for ever."""
    if special == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
    elif special == "folder":
        path = tmp_path / "dir.json"
        path.mkdir()
    else:
        path = Path(special)
    ok = tmp_path / "ok.json"
    ok.write_text('["1"]')
    start = time.perf_counter()
    for args in (
        ("groth16", "verify", path, ok, ok),
        ("groth16", "verify", ok, path, ok),
        ("groth16", "check", path, path),
        ("groth16", "prove", path, path, tmp_path / "p.json", tmp_path / "q.json"),
        ("run", path),
        ("gate", SCENARIOS / "gate" / "ours-h200-2workers.toml", "--baseline", path),
    ):
        code, out = cli(*args)
        assert code == 2, (args, out)
        one_error_line(out, str(path))
    profile = BASE.replace('"rtx5070ti"', f'"{path}"')
    plan = BASE.replace("[[workload]]", f'[plan]\nfile = "{path}"\n\n[[workload]]')
    for text in (profile, plan):
        code, out = cli("run", scenario(tmp_path, text))
        assert code == 2
        one_error_line(out, str(path))
    assert time.perf_counter() - start < 30


def test_a_vk_for_another_input_count_is_refused_before_its_subgroup_checks(
    tmp_path: Path,
) -> None:
    """Before: a vk with 10,000 IC points was subgroup-checked (31 s) before the count
    mismatch with public.json was reported."""
    files = cubic_files(tmp_path)
    vk = json.loads(files["vk"].read_text())
    vk["IC"] = vk["IC"][:1] * 10_001
    vk["nPublic"] = 10_000
    big = tmp_path / "big_vk.json"
    big.write_text(json.dumps(vk))
    start = time.perf_counter()
    code, out = cli("groth16", "verify", big, files["public"], files["proof"])
    took = time.perf_counter() - start
    assert code == 2
    one_error_line(out, "public.json: 1 public inputs", "expects 10000")
    assert took < 3, f"{took:.1f} s"


def test_a_profile_name_longer_than_any_path_is_one_line(tmp_path: Path) -> None:
    """Found by the thorough fuzz run: `profile = "[[[...` (10,000 characters) made
    Path.is_file() raise ENAMETOOLONG (a traceback)."""
    long_name = BASE.replace('"rtx5070ti"', '"' + "[" * 10_000 + '"')
    code, out = cli("run", scenario(tmp_path, long_name))
    assert code == 2
    one_error_line(out, "s.toml: profile")


@pytest.mark.parametrize("command", [("check",), ("gate", "--baseline")])
def test_a_path_too_long_for_the_os_is_one_line(command: tuple) -> None:
    code, out = cli(*command, "x" * 5000)
    assert code == 2
    one_error_line(out, "File name too long")


def test_a_fifo_in_a_searched_folder_does_not_block_check(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(BASE)
    os.mkfifo(tmp_path / "pipe.toml")
    code, out = cli("check", tmp_path)
    assert code == 2 and "pipe" in out  # its row: ERROR, the path is not a regular file
