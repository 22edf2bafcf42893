"""Shared by the fuzz tests: each case runs under a 10 s alarm and is counted, so a run
of the suite can report how many cases it tried, the slowest, and the peak RSS
(tests/fuzz/conftest.py prints them at the end)."""

from __future__ import annotations

import copy
import os
import resource
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import hypothesis.strategies as st
from hypothesis import settings

CASE_LIMIT_S = 10.0  # CPU seconds one case may take: more is a hang (a livelock spins)
CASE_WALL_LIMIT_S = 60.0  # wall seconds: catches a case blocked without spinning (a read
# of a FIFO); generous, since on a shared machine at nice 19 a case can wait for a core
# `thorough` gives every test 500 examples; the fuzz tests take three times that, so the
# suite's eight fuzz tests run >= 10,000 cases (docs/benchmarks.md records a run)
THOROUGH_SCALE = 3 if os.environ.get("CUZK_HYPOTHESIS_PROFILE") == "thorough" else 1


def fuzz_settings() -> settings:
    """The loaded profile's settings, with the fuzz suite's number of examples."""
    return settings(max_examples=settings.default.max_examples * THOROUGH_SCALE)


@dataclass
class FuzzStats:
    cases: int = 0
    slowest_cpu_s: float = 0.0
    slowest: str = ""
    slowest_wall_s: float = 0.0

    def peak_rss_bytes(self) -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


STATS = FuzzStats()


@contextmanager
def one_case(what: str) -> Iterator[None]:
    """A case that must end within CASE_LIMIT_S of CPU time and CASE_WALL_LIMIT_S of wall
    time (TimeoutError / AssertionError: a hang is a failure)."""

    def hang(*_: object) -> None:
        raise TimeoutError(f"{what}: still running after {CASE_WALL_LIMIT_S:.0f} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.setitimer(signal.ITIMER_REAL, CASE_WALL_LIMIT_S)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    cpu_s, wall_s = time.process_time() - cpu, time.perf_counter() - wall
    STATS.cases += 1
    STATS.slowest_wall_s = max(STATS.slowest_wall_s, wall_s)
    if cpu_s > STATS.slowest_cpu_s:
        STATS.slowest_cpu_s, STATS.slowest = cpu_s, what
    assert cpu_s <= CASE_LIMIT_S, f"{what}: {cpu_s:.1f} s of CPU (a hang)"


# Values a careless or hostile user writes where a number or a quantity belongs.
HOSTILE_TEXT = [
    "1e999 GiB",
    "1e308 TiB",
    "-1 GiB",
    "nan GiB",
    "inf s",
    "0 s",
    "1e8 s",
    "1e-300 s",
    "9" * 5000 + " B",
    "16 GiB/s",
    "[/]",
    "[bold]x",
    "",
    " ",
    "\x00",
    "false",
]
HOSTILE_NUMBERS = [
    0,
    -1,
    1,
    2**31,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    10**12,
    1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    0.5,
    True,
    False,
]

UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "GB", "ns", "ms", "s", "h", "GiB/s", "x"]
quantity_text = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.builds(
        lambda v, u: f"{v} {u}",
        st.one_of(
            st.integers(0, 10**20),
            st.floats(allow_nan=True, allow_infinity=True),
            st.text(alphabet="0123456789.eE+-", max_size=12),
        ),
        st.sampled_from(
            ["B", "KiB", "MiB", "GiB", "TiB", "GB", "ns", "ms", "s", "h", "GiB/s", "x"]
        ),
    ),
    st.text(max_size=30),
)

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from(HOSTILE_NUMBERS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    quantity_text,
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, prefix + (i,))
    return out


def edit_doc(doc: Any, data: st.DataObject) -> Any:
    """One hostile edit at a random key path: replace, delete, or add an unknown key."""
    doc = copy.deepcopy(doc)
    path = data.draw(st.sampled_from(paths(doc)[1:]))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    action = data.draw(st.sampled_from(["replace", "replace", "replace", "delete", "add"]))
    if action == "delete":
        del parent[path[-1]]
    elif action == "add" and isinstance(parent, dict):
        parent[data.draw(st.text(min_size=1, max_size=8))] = data.draw(json_value)
    else:
        parent[path[-1]] = data.draw(json_value)
    return doc
