"""Every input surface as a seeded fuzz case: `case(surface, seed)` builds one hostile
input from a valid one and feeds it to the reader a command uses. Shared by the fuzz
tests (hypothesis draws the seeds) and benchmarks/fuzz_campaign.py (seeds 0..N, each in
a watched child process).

A case ends as `accepted` or `refused` (one line of bad input: InputError, PlanError,
FormatError, UnitError); any other exception is a failure. Some cases are *oracle*
cases: a known-bad input of a class the issue-30 attack found silently accepted (`true`
as a count, `"yes"` as a switch, a cap of -100 %, timestamps running backwards, ...)
planted in a valid input; for those `accepted` is a failure too.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gzip
import io
import json
import random
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
SCENARIO = SCENARIOS / "phase9-single-worker.toml"
LOGS = ROOT / "tests" / "logs" / "fixtures"

# tokens a careless or hostile user writes; inserted into text and set as values
TOKENS = [
    "true", "false", '"yes"', '"no"', "1e999", "-1", "0", "1.5", "nan", "inf", "9" * 30,
    "9" * 5000, "[" * 200, "{", "}", '"1..1000000000"', '"\\u0000"', '"16 GiB"', '"1e9 s"',
    "=", "\n[x]\n", '"' + "a" * 70_000 + '"', "\x00", "\\", "'", '"', "..", ",", "\t",
]  # fmt: skip
HOSTILE_VALUES: list[Any] = [
    True, False, "yes", "", -1, 0, 1.5, 2**63 - 1, 10**18, 1e300, -1e300, "1e999 GiB",
    "1..1000000000", "0..99999999999999999999", "\x00", [], {}, [[[[[]]]]], "a" * 5000,
    {"x": 1}, ["a", 1, True], 1024, "-100",
]  # fmt: skip


@dataclass
class Case:
    surface: str
    seed: int
    oracle: str | None  # the bad class planted (it must be refused), or None
    run: Callable[[Path], str]  # returns "accepted" or "refused"; raises on a failure


def refused_kinds() -> tuple[type[BaseException], ...]:
    from cuzk_sim.reference.formats import FormatError

    from cuzk_sim.io.errors import InputError
    from cuzk_sim.io.units import UnitError
    from cuzk_sim.plan.contract import PlanError

    return (InputError, PlanError, FormatError, UnitError)


def outcome(fn: Callable[[], Any]) -> str:
    """`refused` for one clean line of bad input (checked: one line), else `accepted`."""
    try:
        fn()
    except refused_kinds() as e:
        text = str(e)
        if "\n" in text.strip() or not text.strip():
            raise AssertionError(f"a refusal that is not one line: {text[:300]!r}") from None
        return "refused"
    return "accepted"


# --- mutation ------------------------------------------------------------------------


def mutate_text(text: str, rng: random.Random) -> str:
    """One to three edits: a token inserted, a range deleted or duplicated, a byte
    flipped, the end cut off, two lines swapped."""
    for _ in range(rng.randint(1, 3)):
        n = len(text)
        at = rng.randrange(n + 1)
        op = rng.randrange(6)
        if op == 0:
            text = text[:at] + rng.choice(TOKENS) + text[at:]
        elif op == 1 and n:
            text = text[:at] + text[at + rng.randint(1, 40) :]
        elif op == 2 and n:
            text = text[:at] + text[at : at + rng.randint(1, 200)] * rng.randint(2, 50) + text[at:]
        elif op == 3 and n:
            i = rng.randrange(n)
            text = text[:i] + chr((ord(text[i]) ^ (1 << rng.randrange(7))) or 1) + text[i + 1 :]
        elif op == 4:
            text = text[:at]
        else:
            lines = text.split("\n")
            if len(lines) > 1:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


def paths_of(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths_of(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths_of(v, prefix + (i,))
    return out


def mutate_doc(doc: Any, rng: random.Random) -> Any:
    """One edit at a random key path: a hostile value, a deletion, or an unknown key."""
    doc = copy.deepcopy(doc)
    paths = paths_of(doc)[1:]
    if not paths:
        return doc
    path = rng.choice(paths)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    op = rng.randrange(5)
    if op == 0:
        del parent[path[-1]]
    elif op == 1 and isinstance(parent, dict):
        parent[rng.choice(["x", "extra", "count", "caps"])] = rng.choice(HOSTILE_VALUES)
    else:
        parent[path[-1]] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    return doc


def set_at(doc: dict, path: tuple, value: Any) -> dict:
    doc = copy.deepcopy(doc)
    node = doc
    for k in path[:-1]:
        node = node.setdefault(k, {}) if isinstance(k, str) else node[k]
    node[path[-1]] = value
    return doc


def toml_text(doc: dict) -> str | None:
    """A document back to TOML text (our writer), None if TOML cannot hold it."""
    from cuzk_sim.logs.toml_out import dumps

    try:
        text = dumps(doc)
        tomllib.loads(text)
    except Exception:
        return None
    return text


def write(folder: Path, name: str, data: str | bytes) -> Path:
    path = folder / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_bytes(data)
    return path


# --- surfaces ------------------------------------------------------------------------


def _scenario(rng: random.Random, seed: int) -> Case:
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.simulate.runner import simulate

    doc = tomllib.loads(SCENARIO.read_text())
    oracle = None
    if rng.random() < 0.25:
        oracle, path, value = rng.choice(
            [
                ("bool-as-count", ("workload", 0, "count"), True),
                ("bool-as-count", ("hardware", "gpus"), True),
                ("string-as-bool", ("expect", "oom"), "yes"),
                ("float-as-count", ("engine", "gpus", "gpu_workers_per_device"), 1.0),
            ]
        )
        text = toml_text(set_at(doc, path, value))
    elif rng.random() < 0.5:
        text = toml_text(mutate_doc(doc, rng))
    else:
        text = mutate_text(SCENARIO.read_text(), rng)
    text = text or SCENARIO.read_text()

    def run(d: Path) -> str:
        path = write(d, "s.toml", text)

        def go() -> None:
            scn = load_scenario(path)
            if sum(w.count * (w.partitions or 10) for w in scn.spec.workload if w.count) <= 100:
                simulate(scn)

        return outcome(go)

    return Case("scenario", seed, oracle, run)


def _set(rng: random.Random, seed: int) -> Case:
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.scenario.overrides import parse_assignment

    keys = ["workload[0].count", "hardware.vram", "hardware.gpus", "seed", "expect.oom",
            "engine.gpus.gpu_workers_per_device", "variant.prestage", "workload[7].count",
            "no.such.key", "workload[99999999].count", "a" * 300]  # fmt: skip
    key = rng.choice(keys)
    oracle = None
    if rng.random() < 0.3:
        oracle, key, value = rng.choice(
            [
                ("bool-as-count", "workload[0].count", "true"),
                ("string-as-bool", "expect.oom", '"yes"'),
                ("huge-literal", "seed", "9" * rng.randint(20, 6000)),
                ("deep-nesting", "hardware.vram", "[" * rng.randint(9, 200_000)),
            ]
        )
    else:
        value = mutate_text(rng.choice(TOKENS + ["2", '"20 GiB"', "[1, 2]", "{a = 1}"]), rng)

    def run(d: Path) -> str:
        def go() -> None:
            k, v = parse_assignment(f"{key}={value}")
            load_scenario(SCENARIO, {k: v})

        return outcome(go)

    return Case("set", seed, oracle, run)


def _sweep(rng: random.Random, seed: int) -> Case:
    from cuzk_sim.sweep.configs import expand
    from cuzk_sim.sweep.spec import load_sweep

    doc: dict[str, Any] = {
        "name": "f",
        "base": str(SCENARIO),
        "axes": {"engine.gpus.gpu_workers_per_device": "1..2", "hardware.vram": ["16 GiB"]},
        "search": {"max_workers": False, "workers_limit": 2},
    }
    oracle = None
    r = rng.random()
    if r < 0.3:
        oracle, path, value = rng.choice(
            [
                ("huge-range", ("axes", "seed"), f"0..{rng.choice([10**9, 10**30, 2**63])}"),
                ("bool-as-count", ("sample", "count"), True),
                ("string-as-bool", ("search", "min_vram"), "yes"),
                ("search-groups", ("axes", "seed"), "0..1023"),
            ]
        )
        doc = set_at(doc, path, value)
        if oracle == "search-groups":
            doc["axes"]["workload[0].count"] = "1..1024"
            doc["search"]["min_vram"] = True
    elif r < 0.7:
        doc = mutate_doc(doc, rng)
    text = toml_text(doc) or ""
    # a planted bad value is not mutated away (the campaign would count the clean rest
    # as a silent acceptance: sweep seed 72 lost its [search] table this way)
    if rng.random() < 0.3 and oracle is None:
        text = mutate_text(text, rng)

    def run(d: Path) -> str:
        path = write(d, "sweep.toml", text)

        def go() -> None:
            spec = load_sweep(path)
            if spec.grid_size <= 16:
                expand(spec)

        return outcome(go)

    return Case("sweep", seed, oracle, run)


def _validation(rng: random.Random, seed: int) -> Case:
    from cuzk_sim.validation.spec import load_spec

    base = "ours.toml"
    doc: dict[str, Any] = {
        "name": "f",
        "base": base,
        "caps": [-3, 3],
        "config": [{"name": "a", "set": {"engine.gpus.gpu_workers_per_device": 1}}],
    }
    oracle = None
    if rng.random() < 0.3:
        oracle, path, value = rng.choice(
            [
                ("too-many-caps", ("caps",), [1.0] * rng.randint(33, 2000)),
                ("cap-out-of-range", ("config", 0, "caps"), [rng.choice([-100, -95, 1e300])]),
                ("string-as-bool", ("generous",), "yes"),
                ("bool-as-count", ("repeats",), True),
                ("nul-in-path", ("base",), "ours\x00.toml"),
            ]
        )
        doc = set_at(doc, path, value)
    else:
        doc = mutate_doc(doc, rng)
    text = toml_text(doc) or ""

    def run(d: Path) -> str:
        write(d, base, OURS)
        path = write(d, "v.toml", text)
        return outcome(lambda: load_spec(path))

    return Case("validation", seed, oracle, run)


OURS = """
seed = 1
profile = "h200"
[hardware]
gpus = 1
vram = "140 GiB"
[plan]
gpu_prover = { domain_log2 = 10 }
[plan.host]
synthesis = "0 s"
pce = false
[[workload]]
kind = "porep"
count = 1
partitions = 2
"""


def _json_doc(surface: str, rng: random.Random, seed: int) -> Case:
    """Plan JSON, a gate baseline, snarkjs proof / public / verification key."""
    from cuzk_sim.reference.formats import read_proof, read_public, read_verification_key

    from cuzk_sim.gate.verdicts import load_baseline
    from cuzk_sim.plan.contract import Plan

    if surface == "plan":
        text = (SCENARIOS / "plans" / "ours-porep-partition.json").read_text()
        read = lambda p: Plan.from_json(p.read_text(), str(p))  # noqa: E731
    elif surface == "baseline":
        text = (SCENARIOS / "gate" / "baseline.json").read_text()
        read = load_baseline
    else:
        name = rng.choice(["proof", "public", "vk"])
        text = cubic_bytes()[name].decode()
        read = {"proof": read_proof, "public": read_public, "vk": read_verification_key}[name]
    oracle = None
    r = rng.random()
    if r < 0.1:
        oracle = "deep-json"
        depth = rng.choice([65, 1000, 100_000])
        text = text[:1] + "[" * depth + "]" * depth + "," + text[1:]
    elif r < 0.2:
        at = text.find('"') if '"' in text else 0
        text = text[:at] + '"' + "a" * rng.choice([1 << 20, 12 << 20]) + '",' + text[at:]
    elif r < 0.6:
        with contextlib.suppress(ValueError):
            text = json.dumps(mutate_doc(json.loads(text), rng))
    else:
        text = mutate_text(text, rng)

    def run(d: Path) -> str:
        if surface == "plan" and len(text) > 64 << 20:
            return "refused"
        path = write(d, f"{surface}.json", text)
        if surface == "plan":  # a plan file is read through load_json (bounded, depth)
            from cuzk_sim.io.inputs import load_json

            return outcome(lambda: (load_json(path, "plan file"), read(path)))
        return outcome(lambda: read(path))

    return Case(surface, seed, oracle, run)


def _calibrate(rng: random.Random, seed: int) -> Case:
    """`calibrate`: a fixture log against a mutated base profile (a kernel whose time is
    its fixed cost among the mutations: nothing to scale, once a division by zero)."""
    from cuzk_sim.logs.analyze import analyze_logs
    from cuzk_sim.logs.calibrate import calibrated_profile, cuzk_plans
    from cuzk_sim.logs.scenario_out import logged_config
    from cuzk_sim.logs.toml_out import dumps
    from cuzk_sim.profiles.profile import load_profile

    base_text = (ROOT / "cuzk_sim" / "profiles" / "rtx5070ti.toml").read_text()
    doc = tomllib.loads(base_text)
    r = rng.random()
    if r < 0.4:
        kernel = rng.choice(["msm_g1", "ntt", "msm_g2", "pointwise"])
        k = doc["kernel"][kernel]
        k["fixed"] = k.get("fixed", "1 ms") if rng.random() < 0.5 else k["time"]
        k["time"] = k["fixed"]
        text = toml_text(doc) or base_text
    elif r < 0.8:
        text = toml_text(mutate_doc(doc, rng)) or base_text
    else:
        text = mutate_text(base_text, rng)
    log = rng.choice(
        ["mutex-contention.log", "synthesis-bound.log", "phase9-prestage-fallback.log"]
    )
    kind = rng.choice([None, "porep"])

    def run(d: Path) -> str:
        base = write(d, "base.toml", text)

        def go() -> None:
            a, _, _ = analyze_logs([LOGS / log], kind=kind)
            profile = load_profile(str(base))
            plans = cuzk_plans(logged_config(a), profile.vram)
            doc, _, _ = calibrated_profile(a, str(base), plans, [log], "out")
            out = write(d, "out.toml", dumps(doc))
            load_profile(str(out))  # what calibrate writes must load

        return outcome(go)

    return Case("calibrate", seed, None, run)


@functools.cache
def cubic_bytes() -> dict[str, bytes]:
    """The cubic circuit's vk / proof / public JSON and witness, made once."""
    from cubic_files import cubic_files

    with tempfile.TemporaryDirectory() as d:
        return {k: p.read_bytes() for k, p in cubic_files(Path(d)).items()}


def _log(rng: random.Random, seed: int) -> Case:
    from rich.console import Console

    from cuzk_sim.logs.analyze import analyze_logs
    from cuzk_sim.logs.report import print_report, to_dict

    name = rng.choice(sorted(p.name for p in LOGS.iterdir()))
    text = (LOGS / name).read_text(errors="replace")
    oracle = None
    r = rng.random()
    if r < 0.1:
        oracle = "backwards-time"
        text = "TIMELINE,90000,GPU_QUEUE,j1,partition=0\nTIMELINE,5,GPU_PICKUP,j1,partition=0\n"
    elif r < 0.15:
        oracle = "open-sections"
        n = rng.randint(1100, 30_000)
        text = "".join(f"TIMELINE,{i},GPU_START,j{i},worker=0,partition=0\n" for i in range(n))
    elif r < 0.25:
        digits = "9" * rng.choice([19, 400, 4000, 20_000])
        text += f"CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms={digits}\nTIMELINE,{digits},GPU_END,j\n"
    elif r < 0.3:
        text += "x" * rng.choice([1 << 20, 3 << 20]) + "\n"
    else:
        text = mutate_text(text, rng)
    data = text.encode("utf-8", "surrogatepass")
    packed = rng.random() < 0.3
    if packed:
        data = bytearray(gzip.compress(data))
        if rng.random() < 0.5:  # a damaged byte or a cut
            if rng.random() < 0.5:
                data[rng.randrange(10, len(data))] ^= 1 << rng.randrange(8)
            else:
                data = data[: rng.randrange(len(data))]
            oracle = oracle or "damaged-gzip"

    def run(d: Path) -> str:
        path = write(d, "daemon.log", bytes(data))

        def go() -> None:
            a, parser, lines = analyze_logs([path])
            json.dumps(to_dict(a, parser, lines))
            print_report(a, parser, lines, Console(file=io.StringIO(), width=160, highlight=False))

        got = outcome(go)
        if oracle == "damaged-gzip" and got == "accepted":
            return "refused"  # a flip in gzip's header padding can be harmless: not ours
        return got

    return Case("log", seed, oracle, run)


def _binary(rng: random.Random, seed: int) -> Case:
    from cuzk_sim.reference.formats import read_wtns

    data = bytearray(cubic_bytes()["wtns"])
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(3)
        if op == 0 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 1:
            data = data[: rng.randrange(len(data) + 1)]
        else:
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.randbytes(rng.randint(1, 64))

    def run(d: Path) -> str:
        path = write(d, "w.wtns", bytes(data))
        return outcome(lambda: read_wtns(path))

    return Case("wtns", seed, None, run)


def _resume(rng: random.Random, seed: int) -> Case:
    """A sweep's results.json or a validation's real.jsonl / predictions.json, damaged."""
    from cuzk_sim.sweep.store import FORMAT, RowStore, rows_json
    from cuzk_sim.validation.compare import compare_runs
    from cuzk_sim.validation.grid import load_predictions, scan_reals

    kind = rng.choice(["results", "real", "predictions"])
    header = {"sweep": "f", "axes": {"seed": [1, 2]}, "replicas": 1, "jitter": 0.0}
    if kind == "results":
        rows = [{"key": f"{i:016x}", "index": i, "seed": i, "safe": True} for i in range(3)]
        text = rows_json({"format": FORMAT, **header}, rows)
    elif kind == "real":
        rec = {"key": "a@+1%", "config": "a", "date": "d", "real": RESULT, "details": {},
               "repeat": 0, "achieved_vram": 2**30, "model_at_achieved": None}  # fmt: skip
        text = "".join(json.dumps({**rec, "repeat": i}) + "\n" for i in range(3))
    else:
        text = json.dumps(PREDICTIONS)
    text = mutate_text(text, rng)

    def run(d: Path) -> str:
        if kind == "results":
            write(d, "results.json", text)

            def go() -> None:
                store = RowStore(d, "results", header)
                store.close()

            return outcome(go)
        if kind == "real":  # read, then compared with predictions (what the report does)
            path = write(d, "real.jsonl", text)
            return outcome(lambda: compare_runs(PREDICTIONS["runs"], scan_reals(path)[0]))
        path = write(d, "predictions.json", text)
        real = {**RESULT, "seconds_per_proof": 2.0}
        return outcome(lambda: compare_runs(load_predictions(path)["runs"], [
            {"key": "a@+1%", "repeat": 0, "real": real}]))  # fmt: skip

    return Case("resume", seed, None, run)


RESULT = {"oom": False, "first_oom_buffer": None, "seconds_per_proof": 1.5,
          "peak_vram_bytes": {"0": 2**30}}  # fmt: skip
PREDICTIONS = {
    "spec": "t", "source": "s", "commit": "c", "date": "d", "configs": [],
    "runs": [{"key": "a@+1%", "config": "a", "cap": "+1%", "vram": 2**30, "partitions": 4,
              "model": RESULT}],
}  # fmt: skip


def _options(rng: random.Random, seed: int) -> Case:
    """Option values: --window, --jitter, quantities."""
    from cuzk_sim.io.units import parse_bandwidth, parse_duration, parse_size
    from cuzk_sim.results.recording import parse_window
    from cuzk_sim.simulate.replicas import parse_fraction

    text = mutate_text(rng.choice(["2h..3h", "5%", "0.05", "16 GiB", "690 ms", "24 GiB/s"]), rng)
    fn = rng.choice(
        [
            lambda: parse_window(text, "--window"),
            lambda: parse_fraction(text),
            lambda: parse_size(text),
            lambda: parse_duration(text),
            lambda: parse_bandwidth(text),
        ]
    )
    return Case("options", seed, None, lambda d: outcome(fn))


SURFACES: dict[str, Callable[[random.Random, int], Case]] = {
    "scenario": _scenario,
    "set": _set,
    "sweep": _sweep,
    "validation": _validation,
    "plan": lambda rng, s: _json_doc("plan", rng, s),
    "baseline": lambda rng, s: _json_doc("baseline", rng, s),
    "snarkjs": lambda rng, s: _json_doc("snarkjs", rng, s),
    "log": _log,
    "calibrate": _calibrate,
    "wtns": _binary,
    "resume": _resume,
    "options": _options,
}


def case(surface: str, seed: int) -> Case:
    """The case of `surface` for `seed` (the same case on every machine)."""
    return SURFACES[surface](random.Random(f"{surface}:{seed}"), seed)


def check(c: Case, folder: Path) -> str:
    """Run a case; AssertionError when it ends in a failure of ours (an oracle case
    accepted); any other exception propagates (a traceback)."""
    got = c.run(folder)
    if c.oracle is not None and got == "accepted":
        raise AssertionError(f"{c.surface} seed {c.seed}: silently accepted ({c.oracle})")
    return got
