"""A run that ends with proofs neither completed nor failed is reported as a stall."""

from __future__ import annotations

from cuzk_sim.model.compiled import compile_plan
from cuzk_sim.model.engine import Arrivals, EngineConfig, Simulation
from cuzk_sim.plan.builders.circuits import CircuitShape
from cuzk_sim.plan.contract import Kernel, Lock, Plan, Unlock
from cuzk_sim.results.expectations import check_expectations
from cuzk_sim.scenario import Expect
from tests.sim.sim_toys import run_plan, toy_profile


def locks_in_order(first: str, second: str) -> Plan:
    return Plan(
        f"{first}-then-{second}",
        (
            Lock(first, "global"),
            Kernel("k1", "ntt", 100),
            Lock(second, "global"),
            Kernel("k2", "ntt", 1),
            Unlock(second, "global"),
            Unlock(first, "global"),
        ),
    )


def abba_deadlock(progress=None):
    """Two kinds whose plans take two global mutexes in opposite orders. By hand (toy
    profile: a kernel or synthesis costs its size in seconds, a PCE load 1 s; one
    synthesizer): w0 gets ab at t=1+10=11, takes A, its 100 s kernel runs 11-111; w1 gets
    ba at t=11+1+10=22, takes B, its kernel queues behind on the one GPU: 111-211. At 111
    w0 waits on B, at 211 w1 waits on A: nothing can happen any more."""
    profile = toy_profile()
    shapes = {k: CircuitShape(k, 10, 4, 1, 2, 1) for k in ("ab", "ba")}
    plans = {
        "ab": compile_plan(locks_in_order("A", "B"), profile),
        "ba": compile_plan(locks_in_order("B", "A"), profile),
    }
    config = EngineConfig(
        gpus=1,
        vram=2**30,
        context_overhead=0,
        host_ram_budget=10**6,
        gpu_workers_per_device=2,
        on_oom="continue",
        pce_on_disk=("ab", "ba"),
        arrivals=(Arrivals("ab", 1), Arrivals("ba", 1)),
    )
    return Simulation("abba", config, plans, shapes, profile).run(progress)


def test_lock_order_deadlock_is_reported_with_who_waits_on_what():
    result = abba_deadlock()
    assert (result.proofs_completed, result.proofs_failed, result.proofs_submitted) == (0, 0, 2)
    assert result.stalled
    assert result.sim_time_s == 211.0
    assert "2 of 2 proofs neither completed nor failed" in result.stall
    assert "gpu0-w0 waits on mutex 'B' held by gpu0-w1" in result.stall
    assert "gpu0-w1 waits on mutex 'A' held by gpu0-w0" in result.stall
    assert result.to_dict()["stalled"] is True


def test_a_stall_fails_check_whatever_the_expectations():
    result = abba_deadlock()
    checks = check_expectations(Expect(oom=False, proofs_failed=0), result)
    assert [c.key for c in checks if not c.passed] == ["stalled"]


def test_a_proof_too_big_for_host_ram_is_a_stall_naming_host_ram():
    # the toy proof reserves 1 byte of host RAM for synthesis; a 0-byte budget never has it
    plan = Plan("k", (Kernel("k", "ntt", 1),))
    _, result = run_plan(plan, host_ram_budget=0)
    assert result.stalled and result.proofs_completed == 0
    assert "waits on host RAM for 1 B (0 B free of 0 B)" in result.stall


def test_a_run_that_finishes_is_not_a_stall():
    _, result = run_plan(Plan("k", (Kernel("k", "ntt", 1),)), proofs=3)
    assert result.proofs_completed == 3 and not result.stalled
    assert result.to_dict()["stall"] is None


def test_the_run_table_shows_the_stall():
    from rich.console import Console

    from cuzk_sim.results.tables import print_run

    console = Console(record=True, width=200)
    print_run(abba_deadlock(), console)
    text = console.export_text()
    assert "stalled (deadlock)" in text and "gpu0-w0 waits on mutex 'B'" in text


def test_the_progress_reporting_run_reports_the_same_stall():
    assert abba_deadlock(progress=lambda done, total: None).stall == abba_deadlock().stall
