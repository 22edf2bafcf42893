"""`gpu-plan` refuses the options its plan would not read (the new-user review of
2026-12-03): `--margin` and `--assume-free-bytes` are read only by the memory-aware
pre-staging check (`--prestage --memory-aware`), and `--memory-aware` only decides whether
to pre-stage. Before, each was accepted and the plan printed was the one without it
(`gpu-plan --domain-log2 27 --margin "1 GiB"`: the default plan, exit 0)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app


def _plan(*args: str):
    return CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "12", "--json", *args])


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--margin", "1 GiB"), "--margin"),
        (("--margin-bytes", "5"), "--margin"),
        (("--prestage", "--margin", "1 GiB"), "--margin"),
        (("--assume-free-bytes", "1000"), "--assume-free-bytes"),
        (("--prestage", "--assume-free-bytes", "1000"), "--assume-free-bytes"),
        (("--memory-aware",), "--memory-aware"),
        (("--memory-aware", "--assume-free-bytes", "1000"), "--memory-aware"),
    ],
)
def test_an_option_the_plan_would_not_read_is_refused(args, named):
    res = _plan(*args)
    assert res.exit_code == 2, res.output
    assert named in res.output and "--prestage" in res.output
    assert "Traceback" not in res.output


def test_the_memory_aware_options_together_are_read():
    # 1000 free bytes are fewer than the buffers + the margin: the pre-staging is declined,
    # so the plan differs from the one with enough free memory
    aware = ("--prestage", "--memory-aware", "--margin", "1 MiB")
    short, enough = _plan(*aware, "--assume-free-bytes", "1000"), _plan(*aware)
    assert short.exit_code == 0 and enough.exit_code == 0, short.output + enough.output
    assert short.output != enough.output
