"""logs/jitter_fit.py: the variance components and the family of CUZK_SIM_STEP durations,
recovered from logs generated here with known noise."""

import math
import random

import pytest

from cuzk_sim.logs.calibrate import base_raw
from cuzk_sim.logs.jitter_fit import decompose, fit_jitter, jitter_table, read_timings
from cuzk_sim.profiles.profile import profile_from_raw

STEPS = [
    ("intt_a", "ntt", 2**20, 800.0),
    ("intt_b", "ntt", 2**20, 800.0),
    ("coset_ntt_a", "ntt", 2**20, 600.0),
    ("msm_a", "msm_g1", 2**20, 14000.0),
]


def write_logs(tmp_path, runs, parts, sd_run, sd_part, sd_step, family="lognormal", seed=1):
    """`runs` logs of `parts` partitions: each duration = mean x run x partition x step
    factor (run and partition lognormal; step from `family`), one assemble per partition."""
    rng = random.Random(seed)
    paths = []
    for r in range(runs):
        run_f = {k: math.exp(rng.gauss(0, sd_run)) for _, k, _, _ in STEPS}
        lines = ["TIMELINE,0,GPU_START,porep-0,worker=0,partition=0"]
        for _ in range(parts):
            part_f = {k: math.exp(rng.gauss(0, sd_part)) for _, k, _, _ in STEPS}
            for name, kind, size, us in STEPS:
                if family == "lognormal":
                    f = math.exp(rng.gauss(0, sd_step))
                else:
                    f = max(rng.gauss(1, sd_step), 0.05)
                d = round(us * run_f[kind] * part_f[kind] * f)
                lines.append(
                    f"CUZK_SIM_STEP: {name} kind={kind} size={size} bytes=0 pinned=0 us={d}"
                )
            lines.append("CUZK_SIM_STEP: assemble kind=assemble size=1 bytes=0 pinned=0 us=9")
        p = tmp_path / f"run{r}.log"
        p.write_text("\n".join(lines) + "\n")
        paths.append(p)
    return paths


def test_timings_are_read_by_run_partition_and_kind(tmp_path):
    paths = write_logs(tmp_path, 2, 3, 0.0, 0.0, 0.0)
    ts = read_timings(paths)
    # 2 runs x 3 partitions x 4 steps; the 9 us assembles are below MIN_US: left out
    assert len(ts) == 24
    assert {t.kind for t in ts} == {"kernel.ntt", "kernel.msm_g1"}
    assert sorted({(t.run, t.partition) for t in ts}) == [(r, p) for r in (0, 1) for p in (0, 1, 2)]


def test_the_three_variance_components_are_recovered(tmp_path):
    # sd 0.10 per run, 0.06 per partition, 0.08 per step (of ln d), 40 runs x 30 partitions
    paths = write_logs(tmp_path, 40, 30, 0.10, 0.06, 0.08)
    f = decompose("kernel.ntt", [t for t in read_timings(paths) if t.kind == "kernel.ntt"])
    assert f is not None
    # 40 run means: the variance's standard error is ~ sqrt(2/39) = 23 % of it
    assert math.sqrt(f.run_var) == pytest.approx(0.10, rel=0.3)
    assert math.sqrt(f.partition_var) == pytest.approx(0.06, rel=0.2)
    assert math.sqrt(f.step_var) == pytest.approx(0.08, rel=0.15)


def test_runs_of_different_code_do_not_count_as_run_noise(tmp_path):
    # no noise between runs of one code; two codes whose steps differ by a factor of 2
    paths = write_logs(tmp_path, 4, 10, 0.0, 0.0, 0.05)
    for p in paths[2:]:
        text = p.read_text()
        fast = [
            line.replace(f"us={u}", f"us={int(u) * 2}")
            if (u := line.rsplit("us=", 1)[-1]) and "kind=ntt" in line
            else line
            for line in text.splitlines()
        ]
        p.write_text("\n".join(fast) + "\n")
    ntt = [t for t in read_timings(paths, [0, 0, 1, 1]) if t.kind == "kernel.ntt"]
    assert math.sqrt(decompose("kernel.ntt", ntt).run_var) < 0.03
    one = [t for t in read_timings(paths) if t.kind == "kernel.ntt"]  # all one code
    assert math.sqrt(decompose("kernel.ntt", one).run_var) > 0.3  # ln 2 / 2 = 0.35


@pytest.mark.parametrize("family", ["lognormal", "normal"])
def test_the_family_that_made_the_noise_wins_on_held_out_runs(tmp_path, family):
    paths = write_logs(tmp_path, 10, 150, 0.0, 0.0, 0.35, family=family)
    fits = {f.kind: f for f in fit_jitter(paths)}
    assert fits["kernel.ntt"].family == family
    assert fits["kernel.ntt"].step_rel == pytest.approx(
        0.35 if family == "normal" else math.sqrt(math.expm1(0.35**2)), rel=0.1
    )


def test_the_table_loads_as_a_profile_and_pools_kernels(tmp_path):
    paths = write_logs(tmp_path, 4, 20, 0.05, 0.0, 0.05)
    table = jitter_table(paths)
    assert table is not None
    assert {"kernel.ntt", "kernel.msm_g1", "kernel", "default"} <= set(table["kind"])
    raw, _ = base_raw("h200")
    raw["jitter"] = table
    p = profile_from_raw(raw, "t.toml")
    assert p.jitter is not None
    assert p.jitter.component("kernel.msm_g1").step == table["kind"]["kernel.msm_g1"]["step"]


def test_no_step_lines_no_table(tmp_path):
    p = tmp_path / "empty.log"
    p.write_text("TIMELINE,0,GPU_START,porep-0,worker=0,partition=0\n")
    assert jitter_table([p]) is None
