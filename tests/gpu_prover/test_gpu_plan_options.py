"""`cuzk-sim gpu-plan`'s prover options come from ProverFlags' fields (cli/gpu_plan.py): every
flag is an option, a new flag is one with no edit, and a refused value names its option."""

import dataclasses
import json

import cuzk_sim.gpu.flags as prover_flags
import pytest
import typer
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.cli import gpu_plan as gpu_plan_cli

MIB = 1 << 20


def _meta_flags(application, *args):
    res = CliRunner().invoke(application, ["gpu-plan", "--domain-log2", "10", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["meta"]["flags"]


def test_every_flag_has_an_option():
    text = CliRunner().invoke(app, ["gpu-plan", "--help"], env={"COLUMNS": "200"}).output
    for f in dataclasses.fields(prover_flags.ProverFlags):
        assert f"--{f.name.removesuffix('_bytes').replace('_', '-')}" in text, f.name
    # the two the hand-written command lacked reach the plan
    flags = _meta_flags(app, "--msm-algo", "unsigned", "--overlap-tails")
    assert flags["msm_algo"] == "unsigned" and flags["overlap_tails"] is True


def test_sizes_take_a_size_text_or_bytes_and_a_count_takes_zero_for_none():
    aware = ("--prestage", "--memory-aware")  # the margin is read only with both
    assert _meta_flags(app, *aware, "--margin", "3 MiB")["margin_bytes"] == 3 * MIB
    assert _meta_flags(app, *aware, "--margin-bytes", "1000")["margin_bytes"] == 1000
    assert _meta_flags(app, "--msm-chunk", "0")["msm_chunk"] is None
    assert _meta_flags(app, "--msm-chunk", "256")["msm_chunk"] == 256


def test_a_new_flag_is_an_option_without_an_edit(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class WithNewFlags(prover_flags.ProverFlags):
        scratch_bytes: int = 0  # a size flag: --scratch / --scratch-bytes
        fancy: bool = False

    monkeypatch.setattr(prover_flags, "ProverFlags", WithNewFlags)
    fresh = typer.Typer()
    fresh.command("other")(lambda: None)  # two commands: gpu-plan stays a subcommand
    gpu_plan_cli.register(fresh)
    flags = _meta_flags(fresh, "--scratch", "2 MiB", "--fancy")
    assert flags["scratch_bytes"] == 2 * MIB and flags["fancy"] is True


def test_a_refused_combination_names_its_option():
    res = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "10", "--key-tables"])
    assert res.exit_code == 2 and "--key-tables" in res.output
    res = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "10", "--allocator", "bump"])
    assert res.exit_code == 2 and "--allocator" in res.output and "caching" in res.output


def test_the_benchmarks_flag_texts_take_every_field():
    """`--flag NAME=VALUE` of gpu_bench / production_bench (gpu/flags.py `with_texts`)."""
    base = prover_flags.ProverFlags()
    got = prover_flags.with_texts(
        base, ["key_pinned=true", "overlap_uploads=true", "vram_budget=14 GiB", "margin=1000"]
    )
    assert got.key_pinned and got.overlap_uploads
    assert got.vram_budget_bytes == 14 * 1024 * MIB and got.margin_bytes == 1000
    assert prover_flags.with_texts(got, ["vram_budget_bytes=none"]).vram_budget_bytes is None
    for bad, why in [
        ("nope=1", "NAME one of"),
        ("pinned=yes", "true or false"),
        ("overlap_uploads=true", "needs key_pinned"),  # ProverFlags' own check
    ]:
        with pytest.raises(ValueError, match=why):
            prover_flags.with_texts(base, [bad])

    @dataclasses.dataclass(frozen=True)
    class WithNewFlag(prover_flags.ProverFlags):
        scratch_bytes: int = 0

    assert prover_flags.with_texts(WithNewFlag(), ["scratch=1 MiB"]).scratch_bytes == MIB
