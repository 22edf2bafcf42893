"""`scenario-from-log` recovers the configuration a log ran: a round trip over generated
configurations (model run -> `run --log` -> `scenario-from-log` -> the same keys), the
same through `gpu-run --device dry-run --log`, and logs that lack the start-up lines.

The oracle is the configuration the test wrote, never the reader: each generated
scenario's keys are compared with the keys written back. Keys the log cannot state (the
card's VRAM) are passed with `--vram` and must be listed as assumed without it.
"""

from __future__ import annotations

import random
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()
KINDS = ("porep", "snapdeals", "window_post", "winning_post")
# (prestage, free_d_bc_after_ntt + margin): Phase 9's engines
PRESTAGES = (
    ("off", False),
    ("outside_mutex", False),
    ("under_mutex", False),
    ("under_mutex", True),
)


def configurations(n: int = 24, seed: int = 25) -> list[dict]:
    """n configurations that together cover 1-4 workers, 1-2 GPUs, every kind and every
    value of the variant keys a log states (seeded: the same list every run)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        gpus = 1 + i % 2
        workers = 1 + (i // 2) % 4
        prestage, fix = PRESTAGES[(i // 3) % 4]
        kinds = [KINDS[i % 4]] + ([KINDS[(i + 1) % 4]] if i % 3 == 0 else [])
        out.append(
            {
                "gpus": gpus,
                "workers": workers,
                "prestage": prestage,
                "fix": fix,
                # no mutex: staged buffers of two workers meet; the card is big enough
                "mutex_scope": "none" if i % 5 == 1 else "device",
                "routing": "device0" if gpus == 2 and i % 4 == 3 else "assigned",
                "b_g2_msm": "gpu" if i % 7 == 2 else "cpu",
                "pool": "0 B" if i % 6 == 4 else "max",
                "d_a_cache": i % 8 != 5,
                "cached": i % 2 == 0,
                "workload": [
                    {
                        "kind": k,
                        "count": rng.randint(1, 3),
                        # the second kind arrives once the first is done (an idle engine:
                        # its synthesis starts when it arrives, so the log dates it)
                        "start": float(j * 2000 + rng.randint(0, 40)),
                        **({"partitions": 2} if k == "porep" and i % 4 == 0 else {}),
                    }
                    for j, k in enumerate(kinds)
                ],
            }
        )
    return out


def scenario_text(c: dict) -> str:
    kinds = sorted({w["kind"] for w in c["workload"]})
    fix = 'free_d_bc_after_ntt = true\nmemory_aware_margin = "512 MiB"\n' if c["fix"] else ""
    work = "".join(
        f'[[workload]]\nkind = "{w["kind"]}"\ncount = {w["count"]}\nstart = "{w["start"]} s"\n'
        + (f"partitions = {w['partitions']}\n" if "partitions" in w else "")
        for w in c["workload"]
    )
    return f"""
name = "rt"
seed = 7
profile = "rtx5070ti"
on_oom = "continue"
[hardware]
gpus = {c["gpus"]}
vram = "96 GiB"
host_cores = 1024
[engine.gpus]
gpu_workers_per_device = {c["workers"]}
[engine.pce]
cached = {kinds if c["cached"] else []}
[variant]
prestage = "{c["prestage"]}"
{fix}mutex_scope = "{c["mutex_scope"]}"
routing = "{c["routing"]}"
b_g2_msm = "{c["b_g2_msm"]}"
pool_release_threshold = "{c["pool"]}"
d_a_cache = {str(c["d_a_cache"]).lower()}
{work}""".replace("'", '"')


def said(doc: dict) -> tuple[dict[str, str], dict[str, str]]:
    """The stated and the assumed keys the written description lists."""
    desc = doc["description"]
    assumed_part = desc.split("Assumed")[1].split("Stated by the log")[0]
    stated_part = desc.split("Stated by the log")[1]

    def keys(part: str) -> dict[str, str]:
        rows = [line[2:].split(": ", 1) for line in part.splitlines() if line.startswith("- ")]
        return {k: v for k, v in rows}

    return keys(stated_part), keys(assumed_part)


def round_trip(tmp_path: Path, text: str, extra: list[str] = ()) -> dict:
    scn, log, out = tmp_path / "s.toml", tmp_path / "m.log", tmp_path / "back.toml"
    scn.write_text(text)
    r = runner.invoke(app, ["run", str(scn), "--log", str(log)])
    assert r.exit_code in (0, 1), r.output
    r = runner.invoke(app, ["scenario-from-log", str(log), "-o", str(out), *extra])
    assert r.exit_code == 0, r.output
    return tomllib.loads(out.read_text()) | {"_stdout": r.stdout}


def test_the_configurations_cover_what_the_issue_asks():
    cs = configurations()
    assert len(cs) >= 20
    assert {c["workers"] for c in cs} == {1, 2, 3, 4}
    assert {c["gpus"] for c in cs} == {1, 2}
    assert {w["kind"] for c in cs for w in c["workload"]} == set(KINDS)
    for key in ("prestage", "fix", "mutex_scope", "routing", "b_g2_msm", "pool", "d_a_cache"):
        assert len({c[key] for c in cs}) >= 2, key


@pytest.mark.parametrize("i", range(24))
def test_run_log_round_trips_to_the_same_configuration(tmp_path, i):
    c = configurations()[i]
    back = round_trip(tmp_path, scenario_text(c), ["--vram", "96 GiB"])
    assert back["hardware"] == {"gpus": c["gpus"], "vram": "96 GiB"}
    assert back["engine"]["gpus"]["gpu_workers_per_device"] == c["workers"]
    v = back["variant"]
    stated, assumed = said(back)
    # the log always states these
    assert "hardware.gpus" in stated and "engine.gpus.gpu_workers_per_device" in stated
    assert "hardware.vram" not in assumed  # given with --vram
    assert v.get("free_d_bc_after_ntt", False) == c["fix"]
    assert v["b_g2_msm"] == c["b_g2_msm"] and "variant.b_g2_msm" in stated
    d_a_line = c["prestage"] == "off" and c["d_a_cache"]  # the unstaged path ran with it
    # a key is either stated, and then it is the configuration's, or assumed where the
    # log truly cannot tell (the reason in each case)
    may_assume = {
        # no mutex: no pre_lock line to place the staging by (and the two are one)
        "variant.prestage": c["mutex_scope"] == "none" and c["prestage"] != "off",
        # only the per-GPU d_a cache / pool lines name the GPU that ran
        "variant.routing": c["gpus"] == 2 and not d_a_line,
        "variant.pool_release_threshold": not d_a_line,
        "variant.d_a_cache": c["prestage"] != "off",  # every section staged: cache unused
        # two GPUs that never held their mutexes at once: one global mutex looks the same
        "variant.mutex_scope": c["gpus"] == 2 and c["mutex_scope"] == "device",
    }
    want = {
        "variant.prestage": c["prestage"],
        "variant.routing": c["routing"],
        "variant.pool_release_threshold": c["pool"],
        "variant.d_a_cache": c["d_a_cache"],
        "variant.mutex_scope": c["mutex_scope"],
    }
    for key, value in want.items():
        if key in assumed:
            assert may_assume[key], (key, assumed[key])
        else:
            assert key in stated, key
            assert v[key.split(".")[1]] == value, key
    want = sorted(
        (w["kind"], w["count"], f"{w['start']:.3f} s", w.get("partitions")) for w in c["workload"]
    )
    got = sorted((w["kind"], w["count"], w["start"], w.get("partitions")) for w in back["workload"])
    assert got == want
    assert set(back["engine"]["pce"]["cached"]) == (
        {w["kind"] for w in c["workload"]} if c["cached"] else set()
    )


def test_vram_is_named_as_assumed_when_not_given(tmp_path):
    back = round_trip(tmp_path, scenario_text(configurations()[1]))
    assumed = back["description"].split("Assumed")[1].split("Stated")[0]
    assert "hardware.vram" in assumed and "vram" not in back["hardware"]
    assert "assumed: hardware.vram" in back["_stdout"]


def test_idle_workers_still_count(tmp_path):
    """Four workers on one GPU, one single-partition proof: three workers never run a
    partition, and the log still states four (cuzk prints every worker at start)."""
    text = scenario_text(configurations()[6]).replace(
        "gpu_workers_per_device = 4", "gpu_workers_per_device = 4"
    )
    c = configurations()[6]
    assert c["workers"] == 4 and c["gpus"] == 1
    text = text.split("[[workload]]")[0] + '[[workload]]\nkind = "winning_post"\ncount = 1\n'
    back = round_trip(tmp_path, text)
    assert back["engine"]["gpus"]["gpu_workers_per_device"] == 4


@pytest.mark.parametrize(
    ("workers", "gpus", "mutex"),
    [(1, 1, "device"), (2, 1, "none"), (3, 1, "device"), (2, 2, "device")],
)
def test_gpu_run_dry_run_log_round_trips(tmp_path, workers, gpus, mutex):
    """Our pipeline's log (gpu-run on the dry-run device: no GPU) reads back as the
    configuration it ran: GPUs, workers per GPU, kinds, counts, partitions; the mutex
    when the log shows it. (It writes no SYNTH or CUZK_TIMING lines: its partitions are
    pre-synthesized and its step lines are CUZK_SIM_STEP, which the dry run does not time.)"""
    log, out = tmp_path / "g.log", tmp_path / "back.toml"
    base = ROOT / "scenarios/validation/base.toml"
    sets = [
        f"engine.gpus.gpu_workers_per_device={workers}",
        f"hardware.gpus={gpus}",
        f"variant.mutex_scope={mutex}",
        "workload[0].count=3",
    ]
    args = ["gpu-run", str(base), "--device", "dry-run", "--log", str(log)]
    r = runner.invoke(app, args + [a for s in sets for a in ("--set", s)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app, ["scenario-from-log", str(log), "-o", str(out), "--plan-from", str(base)]
    )
    assert r.exit_code == 0, r.output
    back = tomllib.loads(out.read_text())
    assert back["hardware"]["gpus"] == gpus
    assert back["engine"]["gpus"]["gpu_workers_per_device"] == workers
    assert [(w["kind"], w["count"], w.get("partitions")) for w in back["workload"]] == [
        ("porep", 3, 4)
    ]
    stated, assumed = said(back)
    # the dry run's sections last about a millisecond and print no timing line: the
    # mutex is stated only when two sections of one GPU overlapped, else named assumed
    if "variant.mutex_scope" in stated:
        assert back["variant"]["mutex_scope"] == mutex
    else:
        assert "variant.mutex_scope" in assumed
        assert "assumed: variant.mutex_scope" in r.stdout


def _without_startup_lines(src: Path, dst: Path) -> None:
    keep = [
        line
        for line in src.read_text().splitlines(keepends=True)
        if "GPU worker started" not in line and "initializing GPU workers" not in line
    ]
    dst.write_text("".join(keep))


def test_a_two_worker_incident_without_startup_lines_still_replays_its_oom(tmp_path):
    """The RTX 4000 Ada incident (two workers, no mutex, one 20 GB card) with its start-up
    lines cut away (a rotated log): the TIMELINE worker ids still say two workers, the
    replay predicts the OOM, and the written scenario says the worker count was assumed."""
    log, out = tmp_path / "cut.log", tmp_path / "inc.toml"
    _without_startup_lines(FIXTURES / "incident-rtx4000ada-snapdeals.log", log)
    r = runner.invoke(app, ["scenario-from-log", str(log), "-o", str(out), "--vram", "20 GB"])
    assert r.exit_code == 0, r.output
    back = tomllib.loads(out.read_text())
    assert back["engine"]["gpus"]["gpu_workers_per_device"] == 2
    assert back["variant"]["mutex_scope"] == "none"
    assert "assumed: engine.gpus.gpu_workers_per_device" in r.stdout
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.simulate.runner import simulate

    assert simulate(load_scenario(out)).oom


def test_the_engines_layout_line_is_read(tmp_path):
    """cuzk's `initializing GPU workers` line (engine.rs, Engine::start) alone states the
    GPUs and workers per GPU, even with no worker start line and no job."""
    log, out = tmp_path / "l.log", tmp_path / "o.toml"
    log.write_text(
        "2026-03-02T08:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine "
        "pipeline_enabled=true\n"
        "2026-03-02T08:00:00.001000Z  INFO cuzk_core::engine: initializing GPU workers "
        "num_gpus=2 gpu_workers_per_device=3 total_workers=6 gpus=[0, 1]\n"
    )
    r = runner.invoke(app, ["scenario-from-log", str(log), "-o", str(out)])
    assert r.exit_code == 0, r.output
    back = tomllib.loads(out.read_text())
    assert back["hardware"]["gpus"] == 2
    assert back["engine"]["gpus"]["gpu_workers_per_device"] == 3
