"""Fuzz: every simulator input (quantities, TOML and JSON text, plan files, scenarios,
baselines, the CLI over them) either works or is refused with one InputError / PlanError
line naming its source — never another exception, never a hang (10 s per case).

Each case is built from a valid input by one hostile edit (a value replaced by something
from fuzz_cases' strategies, a key dropped or added, bytes of the text changed), so most
cases get past the first checks and reach the deeper ones. Mutated scenarios that still
load are simulated when they ask for at most 200 partitions (the run time of larger
ones is bounded by scenario/bounds.py, not a hang).
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import hypothesis.strategies as st
import pytest
from fuzz_cases import edit_doc, fuzz_settings, one_case, quantity_text
from hypothesis import given
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.gate.verdicts import load_baseline
from cuzk_sim.io.errors import InputError
from cuzk_sim.io.inputs import check_numbers, parse_json, parse_toml
from cuzk_sim.io.units import (
    MAX_BANDWIDTH,
    MAX_DURATION_S,
    MAX_SIZE_BYTES,
    UnitError,
    parse_bandwidth,
    parse_duration,
    parse_size,
)
from cuzk_sim.plan.contract import Plan, PlanError
from cuzk_sim.scenario import scenario_from_dict
from cuzk_sim.simulate.runner import simulate

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
SMALL_SCENARIOS = [  # each simulates in well under a second
    "phase9-single-worker.toml",
    "phase9-dual-worker-prestage-under-mutex.toml",
    "host-pinned-prestage-two-workers-small-ram.toml",
    "routing-band-aid-global-mutex.toml",
    "pce-param-cache-not-writable.toml",
    "replay-ours-porep-mutex.toml",
]
runner = CliRunner()


# ---------------------------------------------------------------- quantities


@fuzz_settings()
@given(quantity_text)
def test_quantities_parse_in_bounds_or_say_what_was_expected(text: str) -> None:
    for parse, limit in (
        (parse_size, MAX_SIZE_BYTES),
        (parse_duration, MAX_DURATION_S),
        (parse_bandwidth, MAX_BANDWIDTH),
    ):
        with one_case(f"{parse.__name__}({text!r:.40})"):
            try:
                value = parse(text)
            except UnitError:
                continue
            assert math.isfinite(value) and 0 <= value <= limit


# ---------------------------------------------------------------- JSON and TOML text


def _edit_text(text: str, data: st.DataObject) -> str:
    kind = data.draw(st.sampled_from(["cut", "insert", "replace", "nest", "digits"]))
    i = data.draw(st.integers(0, len(text)))
    if kind == "cut":
        return text[:i]
    if kind == "nest":
        n = data.draw(st.sampled_from([100, 10_000, 200_000]))
        return text[:i] + "[" * n + text[i:]
    if kind == "digits":
        return text[:i] + "9" * data.draw(st.sampled_from([19, 4301, 6000])) + text[i:]
    piece = data.draw(st.text(max_size=10) | st.sampled_from(["Infinity", "NaN", "inf", "nan"]))
    j = i if kind == "insert" else min(len(text), i + data.draw(st.integers(0, 10)))
    return text[:i] + piece + text[j:]


@fuzz_settings()
@given(st.data())
def test_json_text_parses_or_is_one_input_error(data: st.DataObject) -> None:
    base = (SCENARIOS / "gate" / "baseline.json").read_text()[:3000]
    text = _edit_text(base, data)
    with one_case("parse_json"):
        try:
            parse_json(text, "f.json")
        except InputError as e:
            assert str(e).startswith("f.json: ") and "\n" not in str(e)


@fuzz_settings()
@given(st.data(), st.sampled_from(SMALL_SCENARIOS))
def test_toml_text_parses_or_is_one_input_error(data: st.DataObject, name: str) -> None:
    text = _edit_text((SCENARIOS / name).read_text(), data)
    with one_case("parse_toml"):
        try:
            parse_toml(text, "f.toml")
        except InputError as e:
            assert str(e).startswith("f.toml: ") and "\n" not in str(e)


# ---------------------------------------------------------------- edits of a document


# ---------------------------------------------------------------- plans

PLAN = Plan.from_json((SCENARIOS / "plans" / "ours-porep-partition.json").read_text())
PROFILE_TOY = """
name = "fuzz-toy"
provenance = "fuzz: every kind 1 us per unit"
[gpu]
model = "toy"
vram = "16 GiB"
context_overhead = "400 MiB"
[copy_engine]
pinned = "16 GiB/s"
pageable = "8 GiB/s"
[pce]
extract = { time = "0 s", size = 1 }
load = "0 s"
host_bytes = "1 GiB"
""" + "".join(
    f'[{t}.{k}]\ntime = "1 us"\nsize = 1\n'
    for t, kinds in (
        ("kernel", ("ntt", "pointwise", "msm_g1", "msm_g2", "batch_add_g1", "batch_add_g2")),
        ("cpu", ("synthesis", "prep_msm", "msm_g2_cpu", "assemble")),
    )
    for k in kinds
)
PLAN_SCENARIO = """
profile = "profile.toml"
on_oom = "continue"
[hardware]
host_cores = 4
[engine.pce]
cached = ["porep"]
[plan]
file = "plan.json"
[[workload]]
kind = "porep"
count = 2
partitions = 2
"""


@pytest.fixture(scope="module")
def plan_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fuzz-plan")
    (d / "profile.toml").write_text(PROFILE_TOY)
    (d / "s.toml").write_text(PLAN_SCENARIO)
    return d


@fuzz_settings()
@given(data=st.data())
def test_plan_json_is_a_plan_or_one_plan_error_and_a_plan_simulates(
    data: st.DataObject, plan_dir: Path
) -> None:
    raw = edit_doc(PLAN.to_dict(), data)
    with one_case("plan"):
        try:
            text = json.dumps(raw)
        except ValueError:  # an integer json cannot write: not a file anyone could have
            return
        try:
            plan = Plan.from_json(text, "p.json")
        except PlanError as e:
            assert str(e).startswith("p.json") and "\n" not in str(e)
            return
        (plan_dir / "plan.json").write_text(plan.to_json())
        from cuzk_sim.scenario import load_scenario

        try:
            simulate(load_scenario(plan_dir / "s.toml"))
        except InputError as e:  # e.g. a kernel kind the profile cannot price
            assert "\n" not in str(e)


# ---------------------------------------------------------------- scenarios


def _small_enough(raw: dict) -> bool:
    """At most 200 partitions in all (a bound on this test's run time, not the model's)."""
    total = 0
    for w in raw.get("workload", []):
        count, parts = w.get("count"), w.get("partitions", 10)
        if not isinstance(count, int) or not isinstance(parts, int):
            return False
        total += count * parts
    return total <= 200 and "duration" not in raw


@fuzz_settings()
@given(st.data(), st.sampled_from(SMALL_SCENARIOS))
def test_a_mutated_scenario_loads_and_simulates_or_is_one_input_error(
    data: st.DataObject, name: str
) -> None:
    raw = edit_doc(tomllib.loads((SCENARIOS / name).read_text()), data)
    with one_case(f"scenario {name}"):
        try:
            check_numbers(raw, "s.toml")  # what load_toml does for a file
            scn = scenario_from_dict(raw, "s.toml", SCENARIOS)
        except InputError as e:
            assert str(e).startswith("s.toml")
            return
        if _small_enough(raw):
            simulate(scn)


# ---------------------------------------------------------------- baselines


@fuzz_settings()
@given(data=st.data())
def test_a_mutated_baseline_loads_or_is_one_input_error(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    doc = json.loads((SCENARIOS / "gate" / "baseline.json").read_text())
    doc["scenarios"] = dict(list(doc["scenarios"].items())[:2])
    raw = edit_doc(doc, data)
    path = tmp_path_factory.mktemp("baseline") / "b.json"
    try:
        path.write_text(json.dumps(raw))
    except ValueError:
        return
    with one_case("baseline"):
        try:
            entries = load_baseline(path)
        except InputError as e:
            assert str(e).startswith(str(path))
            return
        for e in entries.values():
            spp = e.seconds_per_proof
            assert spp is None or (math.isfinite(spp) and 0 < spp <= MAX_DURATION_S)


# ---------------------------------------------------------------- the command line


@fuzz_settings()
@given(data=st.data(), name=st.sampled_from(SMALL_SCENARIOS[:3]))
def test_run_and_check_exit_0_1_or_2_with_one_error_line(
    data: st.DataObject, name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    text = _edit_text((SCENARIOS / name).read_text(), data)
    path = tmp_path_factory.mktemp("cli") / "s.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    for command in ("run", "check"):
        with one_case(f"cli {command}"):
            result = runner.invoke(app, [command, str(path)])
        assert result.exit_code in (0, 1, 2), result.output
        assert not result.exception or isinstance(result.exception, SystemExit), result.exception
        if result.exit_code == 2 and command == "run":
            (line,) = result.output.strip().splitlines()
            assert line.startswith(f"error: {path}")
