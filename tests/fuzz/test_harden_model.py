"""Regressions: the model ends, and ends right, at large simulated times and thread counts.

Expected end times are hand arithmetic: a task of `s` full-speed seconds on `t` threads
of a host with `c` cores ends `s * max(1, t / c)` after it starts.
"""

from __future__ import annotations

import math
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import simpy

from cuzk_sim.model.cores import HostCores
from cuzk_sim.scenario import load_scenario
from cuzk_sim.simulate.runner import simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture
def ten_second_alarm() -> Iterator[None]:
    """A livelock fails the test instead of hanging the suite."""

    def stop(*_: object) -> None:
        raise TimeoutError("still running after 10 s: livelock")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(10)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _run_one(t0: float, cores: int, seconds: float, threads: float) -> float:
    env = simpy.Environment(initial_time=t0)
    host = HostCores(env, cores)
    done = host.run(seconds, threads)
    env.run()
    assert done.triggered
    return done.value


@pytest.mark.parametrize("t0", [1e8, 3e8, 1e9])
def test_a_task_at_1e8_s_ends_instead_of_livelocking(ten_second_alarm: None, t0: float) -> None:
    """Before: one 3.3 s task on a 4-core host at t = 1e8 s spun forever (the timer's
    `now + wait` rounded; waits below half a float step fired at the same instant)."""
    end = _run_one(t0, 4, 3.3, 1)
    assert end == pytest.approx(t0 + 3.3, abs=4 * math.ulp(t0))


def test_a_task_of_10_to_the_12_threads_ends_at_its_time_sliced_length(
    ten_second_alarm: None,
) -> None:
    # 3.3 s of work on 10^12 threads over 96 cores runs at 96 / 10^12 of full speed
    end = _run_one(0.0, 96, 3.3, 1e12)
    assert end == pytest.approx(3.3 * 1e12 / 96, rel=1e-9)


def test_a_scenario_starting_at_1e8_s_predicts_what_it_does_at_0_s(
    ten_second_alarm: None, tmp_path: Path
) -> None:
    """Before: `start = "1e8 s"` hung `cuzk-sim run`. The model is time-invariant, so the
    late run's seconds per proof equals the run that starts at 0 (to float rounding)."""
    text = (SCENARIOS / "phase9-single-worker.toml").read_text()
    assert "count = 10" in text
    runs = {}
    for start in ("0 s", "1e8 s"):
        path = tmp_path / f"start-{start.split()[0]}.toml"
        path.write_text(text.replace("count = 10", f'count = 1\nstart = "{start}"'))
        runs[start] = simulate(load_scenario(path))
    early, late = runs["0 s"], runs["1e8 s"]
    assert late.proofs_completed == early.proofs_completed == 1
    assert late.seconds_per_proof == pytest.approx(early.seconds_per_proof, rel=1e-6)
