"""The fuzz suite's summary line: cases tried, the slowest, peak RSS of the process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fuzz_cases import STATS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Also written as JSON to $CUZK_FUZZ_REPORT when set (for docs/benchmarks.md)."""
    if STATS.cases and os.environ.get("CUZK_FUZZ_REPORT"):
        report = {
            "cases": STATS.cases,
            "slowest_cpu_s": STATS.slowest_cpu_s,
            "slowest": STATS.slowest,
            "slowest_wall_s": STATS.slowest_wall_s,
            "peak_rss_bytes": STATS.peak_rss_bytes(),
        }
        Path(os.environ["CUZK_FUZZ_REPORT"]).write_text(json.dumps(report, indent=2) + "\n")
    if STATS.cases:
        terminalreporter.write_line(
            f"fuzz: {STATS.cases} cases, slowest {STATS.slowest_cpu_s:.2f} s CPU "
            f"({STATS.slowest}), slowest {STATS.slowest_wall_s:.2f} s wall, "
            f"peak RSS {STATS.peak_rss_bytes() / 2**20:.0f} MiB"
        )
