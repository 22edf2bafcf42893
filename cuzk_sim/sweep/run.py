"""A whole sweep: expand, skip what the output folder already holds, run the rest on an
executor, search the boundaries, summarise, plot.

Outputs in the folder (all rewritten atomically): results.json / results.csv (one row
per configuration, grid order), boundaries.json (searches), summary.json, summary.md
(the printed tables in Markdown), heatmap.png, frontier.png. The rows are the same
whichever executor ran them and however often the sweep was interrupted and resumed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.units import parse_size
from cuzk_sim.scenario.overrides import apply_overrides
from cuzk_sim.sweep.configs import Configuration, config_key, expand
from cuzk_sim.sweep.evaluate import METRIC_COLUMNS, Task, evaluate
from cuzk_sim.sweep.executors import make_executor
from cuzk_sim.sweep.fingerprint import code_fingerprint
from cuzk_sim.sweep.search import SearchTask, run_search
from cuzk_sim.sweep.spec import CARD_KEY, VRAM_KEY, WORKERS_KEY, SweepSpec
from cuzk_sim.sweep.store import RowStore, prepare_out

Progress = Callable[[int, int], None]  # (done, total)


@dataclass
class SweepOutcome:
    spec: SweepSpec
    rows: list[dict[str, Any]]
    boundaries: list[dict[str, Any]]
    summary: dict[str, Any]
    resumed: int = 0  # rows and searches taken from the output folder
    ran: int = 0  # rows and searches computed now
    lost: int = 0  # tasks lost with their workers (not stored; rerun to retry)
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # stored rows not trusted, recomputed


def columns(spec: SweepSpec) -> list[str]:
    return ["index", *(a.path for a in spec.axes), *METRIC_COLUMNS]


def check_replicas(replicas: int, jitter: float) -> None:
    from cuzk_sim.model.jitter import MAX_JITTER
    from cuzk_sim.simulate.replicas import MAX_REPLICAS

    if isinstance(replicas, bool) or not 1 <= replicas <= MAX_REPLICAS:
        raise InputError(f"--replicas {replicas}: expected 1 to {MAX_REPLICAS}")

    if not 0.0 <= jitter <= MAX_JITTER:
        raise InputError(f"--jitter {jitter * 100:g}%: must lie between 0 % and {MAX_JITTER:.0%}")
    if jitter > 0 and replicas < 2:
        raise InputError("--jitter: needs --replicas R with R >= 2 (the perturbed runs)")


def _task(spec: SweepSpec, raw: dict, key: str, replicas: int, jitter: float) -> Task:
    # the folder absolute: a Dask worker may run in another working directory
    folder = str(spec.base_path.parent.resolve())
    return Task(key, raw, str(spec.base_path), folder, replicas, jitter, code_fingerprint())


def search_tasks(spec: SweepSpec, replicas: int, jitter: float) -> list[SearchTask]:
    """One search per combination of the axes other than the one searched (the full
    product of their values, also when the rows are a sample)."""
    s = spec.search
    out: list[SearchTask] = []
    lo, hi = (parse_size(v) for v in s.vram_range)
    for kind, enabled, drop in (
        ("min_vram", s.min_vram, {VRAM_KEY, CARD_KEY}),
        ("max_workers", s.max_workers, {WORKERS_KEY}),
    ):
        if not enabled:
            continue
        others = [a for a in spec.axes if a.path not in drop]
        for values in itertools.product(*(a.values for a in others)):
            group = {a.path: v for a, v in zip(others, values, strict=True)}
            raw = apply_overrides(spec.base_raw, group)
            what = {"search": kind, "raw": raw, "vram": [lo, hi], "limit": s.workers_limit}
            key = config_key(what, replicas, jitter)
            task = _task(spec, raw, key, replicas, jitter)
            out.append(SearchTask(kind, group, task, lo, hi, s.workers_limit))
    return out


def run_sweep(
    spec: SweepSpec,
    out: Path | None = None,
    *,
    jobs: int | None = None,
    scheduler: Any = None,
    replicas: int = 1,
    jitter: float = 0.0,
    progress: Progress | None = None,
    plots: bool = True,
) -> SweepOutcome:
    """Run (or resume) a sweep; with `out`, write its files there as rows finish."""
    check_replicas(replicas, jitter)
    executor = make_executor(jobs, scheduler)
    if out is not None:
        prepare_out(out)
    configs = expand(spec, replicas, jitter)
    searches = search_tasks(spec, replicas, jitter)
    header = {
        "sweep": spec.name,
        "spec": spec.source,
        "base": str(spec.base_path),
        "axes": {a.path: list(a.values) for a in spec.axes},
        "replicas": replicas,
        "jitter": jitter,
    }
    rows_store = RowStore(out, "results", header, columns(spec))  # locks the folder
    try:
        bounds_store = RowStore(out, "boundaries", header, None)
    except BaseException:
        rows_store.close()
        raise
    try:
        return _run_stored(
            spec, out, executor, configs, searches, rows_store, bounds_store, progress, plots
        )
    finally:
        rows_store.close()
        bounds_store.close()


def _run_stored(
    spec: SweepSpec,
    out: Path | None,
    executor: Any,
    configs: list[Configuration],
    searches: list[SearchTask],
    rows_store: RowStore,
    bounds_store: RowStore,
    progress: Progress | None,
    plots: bool,
) -> SweepOutcome:
    from cuzk_sim.sweep.summary import summarize

    replicas, jitter = rows_store.header["replicas"], rows_store.header["jitter"]
    notes = [n for n in (rows_store.note(), bounds_store.note()) if n]

    pending = [c for c in configs if rows_store.done(c.key) is None]
    pending_search = [s for s in searches if bounds_store.done(s.task.key) is None]
    for c in configs:
        if (prev := rows_store.done(c.key)) is not None:
            rows_store.add(_row(spec, c, prev), c.index)
    for i, s in enumerate(searches):
        if (prev := bounds_store.done(s.task.key)) is not None:
            bounds_store.add(prev, i)
    search_order = {st.task.key: i for i, st in enumerate(searches)}
    resumed = len(configs) - len(pending) + len(searches) - len(pending_search)
    total, done = len(pending) + len(pending_search), 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    if progress is not None:
        progress(0, total)

    def on_row(i: int, metrics: dict[str, Any]) -> None:
        c = pending[i]
        rows_store.add(_row(spec, c, metrics), c.index)
        tick()

    def on_bound(i: int, bound: dict[str, Any]) -> None:
        bounds_store.add(bound, search_order[pending_search[i].task.key])
        tick()

    tasks = [_task(spec, c.raw, c.key, replicas, jitter) for c in pending]
    try:
        executor.map(evaluate, tasks, on_row)
        executor.map(run_search, pending_search, on_bound)
    finally:
        rows_store.flush()
        if spec.search.min_vram or spec.search.max_workers:
            bounds_store.flush()
    rows = rows_store.sorted_rows()
    boundaries = bounds_store.sorted_rows()
    summary = summarize(spec, rows, boundaries)
    outcome = SweepOutcome(
        spec, rows, boundaries, summary, resumed, total - len(executor.lost), len(executor.lost)
    )
    outcome.notes = notes
    if out is not None:
        outcome.files = _write_outputs(out, outcome, plots)
    return outcome


def _row(spec: SweepSpec, c: Configuration, metrics: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"index": c.index}
    row.update({a.path: v for a, v in zip(spec.axes, c.values, strict=True)})
    row.update({k: metrics.get(k) for k in METRIC_COLUMNS})
    return row


def _write_outputs(out: Path, outcome: SweepOutcome, plots: bool) -> list[Path]:
    import json

    from cuzk_sim.sweep.store import write_atomic

    files = [out / "results.json", out / "results.csv"]
    if outcome.boundaries:
        files.append(out / "boundaries.json")
    summary_path = out / "summary.json"
    write_atomic(summary_path, json.dumps(outcome.summary, indent=1, allow_nan=False) + "\n")
    files.append(summary_path)
    from cuzk_sim.sweep.table import summary_markdown

    write_atomic(out / "summary.md", summary_markdown(outcome.summary))
    files.append(out / "summary.md")
    if plots and outcome.rows:
        from cuzk_sim.sweep.plots import write_frontier, write_heatmap

        for path, write in (
            (out / "heatmap.png", write_heatmap),
            (out / "frontier.png", write_frontier),
        ):
            if write(outcome.spec, outcome.rows, outcome.summary, path):
                files.append(path)
    return files
