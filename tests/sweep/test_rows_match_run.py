"""Every sweep row equals `cuzk-sim run --json` of the same resolved configuration.

The resolved configuration is written out as a scenario TOML file by a writer local to
this test (independent of the sweep's override code: the axis values are set by hand in
the dict) and run through the real command line.
"""

from __future__ import annotations

import json
import tomllib

from sweep_fixtures import BASE
from typer.testing import CliRunner

from cuzk_sim.cli import app

runner = CliRunner()


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def to_toml(raw: dict) -> str:
    """Scalars first, then tables (dotted headers), then arrays of tables."""
    lines: list[str] = []

    def table(prefix: str, d: dict) -> None:
        subs = {k: v for k, v in d.items() if isinstance(v, dict)}
        arrays = {
            k: v for k, v in d.items() if isinstance(v, list) and v and isinstance(v[0], dict)
        }
        if prefix:
            lines.append(f"[{prefix}]")
        for k, v in d.items():
            if k not in subs and k not in arrays:
                lines.append(f"{k} = {_toml_value(v)}")
        for k, v in subs.items():
            table(f"{prefix}.{k}" if prefix else k, v)
        for k, items in arrays.items():
            for item in items:
                lines.append(f"[[{prefix + '.' if prefix else ''}{k}]]")
                for ik, iv in item.items():
                    lines.append(f"{ik} = {_toml_value(iv)}")

    table("", raw)
    return "\n".join(lines) + "\n"


def test_every_row_equals_run_json(small_outcome, tmp_path):
    base = tomllib.loads(BASE.read_text())
    assert len(small_outcome.rows) == 18
    for row in small_outcome.rows:
        raw = json.loads(json.dumps(base))  # a deep copy made without the sweep's code
        raw["engine"]["gpus"]["gpu_workers_per_device"] = row["engine.gpus.gpu_workers_per_device"]
        raw["hardware"]["vram"] = row["hardware.vram"]
        raw["variant"]["prestage"] = row["variant.prestage"]
        path = tmp_path / f"config-{row['index']}.toml"
        path.write_text(to_toml(raw))
        assert tomllib.loads(path.read_text()) == raw  # the writer round-trips
        result = runner.invoke(app, ["run", str(path), "--json"])
        assert result.exit_code in (0, 1), result.output
        ran = json.loads(result.output)
        assert result.exit_code == (1 if ran["oom"] or ran["stalled"] else 0)
        for key in (
            "oom",
            "first_oom_buffer",
            "first_oom_where",
            "stalled",
            "stall",
            "seconds_per_proof",
            "proofs_submitted",
            "proofs_completed",
            "proofs_failed",
            "peak_vram_bytes",
            "vram_total_bytes",
            "peak_host_bytes",
            "sim_time_s",
            "proofs_per_hour",
            "bottleneck",
        ):
            assert row[key] == ran[key], (row["index"], key)
        assert row["proofs_per_hour_by_kind"] == {
            kind: k["proofs_per_hour"] for kind, k in ran["kinds"].items()
        }
        assert row["error"] is None
        assert row["safe"] == (not ran["oom"] and not ran["stalled"])
        total, peak = ran["vram_total_bytes"]["0"], ran["peak_vram_bytes"]["0"]
        assert row["headroom_bytes"] == total - peak
        assert row["vram_bytes"] == total
        assert row["priced_by"] == ran["profile"] == "rtx5070ti"  # the profile that was used


def test_the_small_sweep_has_both_verdicts(small_outcome):
    verdicts = {r["safe"] for r in small_outcome.rows}
    assert verdicts == {True, False}
