"""The fuzz suite's summary line: cases tried, the slowest, peak RSS of the process."""

from __future__ import annotations

import pytest
from fuzz_cases import STATS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if STATS.cases:
        terminalreporter.write_line(
            f"fuzz: {STATS.cases} cases, slowest {STATS.slowest_s:.2f} s ({STATS.slowest}), "
            f"peak RSS {STATS.peak_rss_bytes() / 2**20:.0f} MiB"
        )
