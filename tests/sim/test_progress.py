"""The progress-reporting run loop gives the same result as the plain one."""

from __future__ import annotations

from pathlib import Path

from cuzk_sim.scenario import load_scenario
from cuzk_sim.simulate.runner import simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_progress_run_matches_the_plain_run_and_counts_up_to_the_proofs(tmp_path):
    text = (SCENARIOS / "phase9-single-worker.toml").read_text()
    assert "count = 10\n" in text
    path = tmp_path / "many.toml"
    path.write_text(text.replace("count = 10\n", "count = 400\n"))
    scn = load_scenario(path)
    calls: list[tuple[float, float]] = []
    reported = simulate(scn, progress=lambda done, total: calls.append((done, total)))
    plain = simulate(scn)
    assert reported.to_dict() == plain.to_dict() and plain.proofs_completed == 400
    assert calls, "a run of this size reports progress"
    assert all(total == 400 for _, total in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[0] >= 0 and done[-1] <= 400


def test_an_endless_workload_reports_simulated_time_against_duration(tmp_path):
    calls: list[tuple[float, float]] = []
    text = (SCENARIOS / "farm-8gpu-24h.toml").read_text().replace('"24 h"', '"1 h"')
    path = tmp_path / "farm.toml"
    path.write_text(text)
    simulate(load_scenario(path), progress=lambda d, t: calls.append((d, t)))
    assert calls and all(t == 3600.0 and 0 <= d <= 3600.0 for d, t in calls)
