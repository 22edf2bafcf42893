"""Seconds per proof and proofs per hour: the one throughput of a run (the definition a
user reads is cuzk_sim.results.sim_result.THROUGHPUT_DEFINITION), for a whole run
(results/sim_result.py) and per proof kind (results/metrics.py) alike. Its own module so that
results/metrics.py need not import results/sim_result.py, which holds the metrics."""

from __future__ import annotations


def seconds_per_proof(completions: list[float], first_submitted: float) -> float | None:
    """The steady-state seconds per proof of a run, the same for the model and the real
    pipeline: the mean gap between proof completions (times in seconds); with one proof,
    its latency from the first submission; None when no proof completed. See
    cuzk_sim.results.sim_result.THROUGHPUT_DEFINITION; `per_hour` gives the same figure in proofs
    per hour."""
    times = sorted(completions)
    if len(times) >= 2:
        return (times[-1] - times[0]) / (len(times) - 1)
    if times:
        return times[0] - first_submitted
    return None


def per_hour(seconds: float | None) -> float | None:
    """Proofs per hour from seconds per proof (3600 / s): the same quantity, another unit;
    None when there is no seconds per proof (none completed, or 0 s: a dry run)."""
    return 3600.0 / seconds if seconds else None
