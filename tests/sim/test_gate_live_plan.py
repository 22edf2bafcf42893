"""`[plan] gpu_prover`: the gate replays our prover's CURRENT dry-run plan.

Oracles: the plan's own Alloc/Free steps walked with plain integers (2 MiB cudaMalloc
rounding) plus the context; the prover's buffer sizes by hand (d_bc = 2 x 2^27 x 32 B).
"""

import dataclasses
import textwrap
from pathlib import Path

import cuzk_sim.gpu.flags as prover_flags  # no CuPy needed: the dry run is plain Python
import cuzk_sim.gpu.prover as prover
import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.io.errors import InputError
from cuzk_sim.plan.contract import Alloc, Cpu, Free, Lock, Plan
from cuzk_sim.profiles.profile import load_profile
from cuzk_sim.scenario import load_scenario
from cuzk_sim.simulate.runner import simulate

runner = CliRunner()
GATE = Path(__file__).resolve().parents[2] / "scenarios" / "gate"
MIB, GIB = 2**20, 2**30
CONTEXT = load_profile("h200").context_overhead  # measured by the real pipeline


def scenario(tmp_path: Path, plan_table: str, extra: str = "") -> Path:
    path = tmp_path / "live.toml"
    path.write_text(
        textwrap.dedent(f"""
        profile = "h200"
        on_oom = "continue"
        [engine.gpus]
        gpu_workers_per_device = 1
        [engine.pce]
        cached = ["porep"]
        [plan]
        gpu_prover = {plan_table}
        [[workload]]
        kind = "porep"
        count = 1
        partitions = 1
        """)
        + extra
    )
    return path


def walked_peak(plan: Plan, granule: int = 2 * MIB) -> int:
    """max over the steps of the live bytes, each allocation rounded up to `granule`."""
    live, peak, sizes = 0, 0, {}
    for s in plan.steps:
        if isinstance(s, Alloc):
            sizes[s.buffer] = -(-s.bytes // granule) * granule
            live += sizes[s.buffer]
            peak = max(peak, live)
        elif isinstance(s, Free) and s.buffer in sizes:
            live -= sizes.pop(s.buffer)
    return peak


def test_free_bc_early_false_raises_the_peak_by_exactly_d_bc(tmp_path):
    peaks, plans = {}, {}
    for early in (True, False):
        table = f'{{ domain_log2 = 27, allocator = "sync", free_bc_early = {str(early).lower()} }}'
        scn = load_scenario(scenario(tmp_path, table))
        plans[early] = scn.plans["porep"]
        result = simulate(scn)
        assert not result.oom
        peaks[early] = result.peak_vram_bytes[0]
    d_bc = 2 * 2**27 * 32  # b and c, 2^27 Fr elements of 32 B each: 8 GiB
    assert dict(plans[False].buffers())["d_bc"] == d_bc
    for early in (True, False):
        assert peaks[early] == CONTEXT + walked_peak(plans[early])
    assert peaks[False] - peaks[True] == d_bc


def test_flags_reach_the_replayed_plan(tmp_path):
    table = '{ domain_log2 = 20, prestage = true, pinned = true, allocator = "async" }'
    plan = load_scenario(scenario(tmp_path, table)).plans["porep"]
    assert plan.meta["flags"]["prestage"] is True
    lock = next(i for i, s in enumerate(plan.steps) if isinstance(s, Lock))
    before = [s for s in plan.steps[:lock] if isinstance(s, Alloc)]
    assert [(s.buffer, s.bytes, s.allocator) for s in before] == [
        ("d_a", 2**20 * 32, "async"),
        ("d_bc", 2 * 2**20 * 32, "async"),
    ]
    default = load_scenario(scenario(tmp_path, "{ domain_log2 = 20 }")).plans["porep"]
    lock = next(i for i, s in enumerate(default.steps) if isinstance(s, Lock))
    assert not any(isinstance(s, Alloc) for s in default.steps[:lock])


def test_the_engine_synthesizes_so_the_plan_has_no_synthesis_step(tmp_path):
    plan = load_scenario(scenario(tmp_path, "{ domain_log2 = 16 }")).plans["porep"]
    assert not any(isinstance(s, Cpu) and s.kind == "synthesis" for s in plan.steps)
    assert any(isinstance(s, Cpu) and s.kind == "assemble" for s in plan.steps)


@pytest.mark.parametrize(
    "table, message",
    [
        ("{ domian_log2 = 27 }", "plan.gpu_prover.domian_log2: unknown key"),
        ("{ prestage = true }", "plan.gpu_prover.domain_log2: required key is missing"),
        ("{ domain_log2 = 40 }", "plan.gpu_prover.domain_log2"),
        ('{ domain_log2 = 27, margin = "5 gigs" }', "plan.gpu_prover.margin"),
        ('{ domain_log2 = 27, allocator = "bump" }', "plan.gpu_prover.allocator"),
        ("{ domain_log2 = 4, num_vars = 5, num_public = 4 }", "plan.gpu_prover.num_public"),
        ("{ domain_log2 = 16, msm_chunk = 0 }", "plan.gpu_prover.msm_chunk"),
    ],
)
def test_bad_live_plan_keys_name_file_and_key(tmp_path, table, message):
    path = scenario(tmp_path, table)
    with pytest.raises(InputError) as e:
        load_scenario(path)
    assert str(path) in str(e.value) and message in str(e.value)


def test_file_and_gpu_prover_are_exclusive(tmp_path):
    both = scenario(tmp_path, '{ domain_log2 = 16 }\nfile = "plan.json"')
    with pytest.raises(InputError, match="plan: give exactly one of `file` or `gpu_prover`"):
        load_scenario(both)
    neither = tmp_path / "neither.toml"
    neither.write_text(
        both.read_text().replace('gpu_prover = { domain_log2 = 16 }\nfile = "plan.json"', "")
    )
    with pytest.raises(InputError, match="exactly one"):
        load_scenario(neither)


def with_extra_alloc_in_the_lock(real_dry_run, buffer: str, nbytes: int):
    """A prover 'change': the same plan with one more buffer allocated under the lock."""

    def changed(*args, **kwargs):
        plan = real_dry_run(*args, **kwargs)
        lock = next(i for i, s in enumerate(plan.steps) if isinstance(s, Lock))
        steps = plan.steps[: lock + 1] + (Alloc(buffer, nbytes),) + plan.steps[lock + 1 :]
        return Plan(plan.name, steps, plan.meta)

    return changed


def test_a_prover_change_reaches_the_gate(monkeypatch):
    # 100 GiB more under the lock: 40.32 + 100 + 0.39 GiB > 140.40 GiB on the H200.
    monkeypatch.setattr(
        prover,
        "dry_run_plan",
        with_extra_alloc_in_the_lock(prover.dry_run_plan, "d_new_table", 100 * GIB),
    )
    result = runner.invoke(
        app,
        [
            "gate",
            str(GATE / "ours-h200-2workers.toml"),
            "--baseline",
            str(GATE / "baseline.json"),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "unexpected OOM" in result.output and "msm_b_g2.points" in result.output


def test_a_streaming_prover_flips_the_known_16_gib_oom(monkeypatch):
    real = prover.dry_run_plan

    def streaming(*args, **kwargs):  # every MSM buffer at most 256 MiB (chunked upload)
        plan = real(*args, **kwargs)
        steps = tuple(
            dataclasses.replace(s, bytes=min(s.bytes, 256 * MIB))
            if isinstance(s, Alloc) and s.buffer.startswith("msm_")
            else s
            for s in plan.steps
        )
        return Plan(plan.name, steps, plan.meta)

    monkeypatch.setattr(prover, "dry_run_plan", streaming)
    result = runner.invoke(
        app,
        [
            "gate",
            str(GATE / "ours-16gib-incident-card.toml"),
            "--baseline",
            str(GATE / "baseline.json"),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "expect.oom: expected True, got False" in result.output


def test_a_prover_api_change_is_an_input_error_not_a_traceback(tmp_path, monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class FlagsWithoutPinned:  # as if the prover renamed `pinned`
        prestage: bool = False

    monkeypatch.setattr(prover_flags, "ProverFlags", FlagsWithoutPinned)
    path = scenario(tmp_path, "{ domain_log2 = 16 }")
    with pytest.raises(InputError, match=r"plan.gpu_prover: the prover's .*changed"):
        load_scenario(path)


def test_memory_aware_prestage_replays_both_branches(tmp_path):
    """free <= 140.40 GiB < 12 GiB + 200 GiB margin: every partition skips pre-staging and
    takes the fallback (allocate inside the lock); 512 MiB: it never does."""
    flags = "domain_log2 = 20, prestage = true, pinned = true, memory_aware = true"
    skipped = load_scenario(scenario(tmp_path, f'{{ {flags}, margin = "200 GiB" }}'))
    result = simulate(skipped)
    assert not result.oom and result.proofs_completed == 1
    assert [e.buffer for e in result.oom_events] == ["d_a"]
    assert any("prestage=skip_vram" in line for _, line in result.log)
    staged = simulate(load_scenario(scenario(tmp_path, f'{{ {flags}, margin = "512 MiB" }}')))
    assert not staged.oom_events and not any("skip_vram" in line for _, line in staged.log)


def test_the_replayed_memory_aware_plan_is_one_dry_run_with_both_branches(tmp_path, monkeypatch):
    """The prover runs once (no second run spliced in): its margin allocations fall back to
    the declined branch, which frees them and allocates inside the lock, and the branches
    join before the rest of the partition."""
    from cuzk_sim.plan.contract import Goto, Label

    calls = []
    real = prover.dry_run_plan

    def counted(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(prover, "dry_run_plan", counted)
    table = "{ domain_log2 = 16, prestage = true, memory_aware = true }"
    plan = load_scenario(scenario(tmp_path, table)).plans["porep"]
    assert len(calls) == 1 and calls[0]["both_branches"] is True

    def what(s) -> str:
        return next(
            (getattr(s, a) for a in ("buffer", "label", "name", "mutex") if hasattr(s, a)), ""
        )

    ops = [(type(s).__name__, what(s)) for s in plan.steps]
    fallback = ops.index(("Label", "prestage_declined"))
    assert ops[fallback - 1] == ("Goto", "prestage_declined_done")
    assert ops[fallback + 1 : fallback + 5] == [
        ("Free", "d_a"),
        ("Free", "d_bc"),
        ("Lock", "gpu0"),
        ("Alloc", "d_a"),
    ]
    assert sum(isinstance(s, Label) for s in plan.steps) == 2
    assert sum(isinstance(s, Goto) for s in plan.steps) == 1


def test_an_assumed_free_memory_keeps_the_one_branch_it_implies(tmp_path):
    table = '{ domain_log2 = 16, prestage = true, memory_aware = true, assume_free = "0 B" }'
    plan = load_scenario(scenario(tmp_path, table)).plans["porep"]
    lock = next(i for i, s in enumerate(plan.steps) if isinstance(s, Lock))
    assert not any(isinstance(s, Alloc) for s in plan.steps[:lock])  # declined: no prestage
    assert not any(getattr(s, "fallback", None) for s in plan.steps)


def test_msm_chunk_reaches_the_plan(tmp_path):
    plan = load_scenario(scenario(tmp_path, "{ domain_log2 = 20, msm_chunk = 4096 }")).plans[
        "porep"
    ]
    points = dict(plan.buffers())
    assert points["msm_h.points"] == 4096 * 96  # one chunk of G1 affine points, 96 B each
    assert points["msm_b_g2.points"] == 4096 * 192


def _freed_before_the_msms(plan: Plan, buffer: str) -> bool:
    """Is `buffer` freed before the first MSM kernel of the plan?"""
    first_msm = next(i for i, s in enumerate(plan.steps) if getattr(s, "kind", "") == "msm_g1")
    free = next(i for i, s in enumerate(plan.steps) if isinstance(s, Free) and s.buffer == buffer)
    return free < first_msm


def test_flipping_a_prover_flags_default_changes_what_the_gate_replays(monkeypatch):
    """`[plan] gpu_prover` takes its defaults from ProverFlags itself: with free_bc_early's
    default flipped, the gate scenario that does not state it replays a plan that keeps
    d_bc (2 x 2^27 x 32 B = 8 GiB) through the MSMs, and the gate sees the peak grow."""
    gate_file = GATE / "ours-h200-2workers.toml"
    assert "free_bc_early" not in gate_file.read_text()  # the scenario relies on the default
    before = load_scenario(gate_file)
    assert _freed_before_the_msms(before.plans["porep"], "d_bc")
    peak_before = simulate(before).peak_vram_bytes[0]

    @dataclasses.dataclass(frozen=True)
    class Flipped(prover_flags.ProverFlags):
        free_bc_early: bool = False

    monkeypatch.setattr(prover_flags, "ProverFlags", Flipped)
    after = load_scenario(gate_file)
    plan = after.plans["porep"]
    assert plan.meta["flags"]["free_bc_early"] is False
    assert not _freed_before_the_msms(plan, "d_bc")
    assert dict(plan.buffers())["d_bc"] == 2 * 2**27 * 32
    assert simulate(after).peak_vram_bytes[0] > peak_before
    result = runner.invoke(app, ["gate", str(gate_file), "--baseline", str(GATE / "baseline.json")])
    assert "peak VRAM on gpu0" in result.output  # the gate reports the growth


def test_a_new_prover_flag_is_a_scenario_key_without_a_schema_edit(tmp_path, monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class WithNewFlag(prover_flags.ProverFlags):
        scratch_bytes: int = 0  # a size flag: its key is `scratch`, a size text

    monkeypatch.setattr(prover_flags, "ProverFlags", WithNewFlag)
    table = '{ domain_log2 = 16, scratch = "3 MiB" }'
    plan = load_scenario(scenario(tmp_path, table)).plans["porep"]
    assert plan.meta["flags"]["scratch_bytes"] == 3 * MIB
    with pytest.raises(InputError, match=r"plan.gpu_prover.scratch: "):
        load_scenario(scenario(tmp_path, "{ domain_log2 = 16, scratch = 3 }"))
