"""The rows do not depend on the executor: in-process, process pool, Dask LocalCluster;
a Dask task lost with its worker is run again."""

from __future__ import annotations

import os
import sys

import pytest

from cuzk_sim import api
from cuzk_sim.sweep.evaluate import evaluate

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed")


def test_pool_rows_equal_in_process_rows(small_outcome, small_spec_path):
    pooled = api.sweep(small_spec_path, jobs=2, plots=False)
    assert pooled.rows == small_outcome.rows
    assert pooled.summary == small_outcome.summary


@pytest.fixture(scope="module")
def cluster():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as c,
        distributed.Client(c) as client,
    ):
        yield c, client


def test_dask_rows_equal_pool_rows(cluster, small_outcome, small_spec_path):
    _, client = cluster
    on_dask = api.sweep(small_spec_path, scheduler=client, plots=False)
    assert on_dask.rows == small_outcome.rows
    assert on_dask.lost == 0


def test_dask_by_address(cluster, small_outcome, small_spec_path, tmp_path):
    c, _ = cluster
    on_dask = api.sweep(
        small_spec_path, tmp_path / "out", scheduler=c.scheduler_address, plots=False
    )
    assert on_dask.rows == small_outcome.rows
    assert (tmp_path / "out" / "results.csv").exists()


def die_once_then_evaluate(task, marker: str):
    """Kill this worker process the first time any worker runs a task (the marker file
    records it), then behave like `evaluate`."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return evaluate(task)
    os.close(fd)
    os._exit(1)


def test_task_lost_with_its_worker_is_retried(cluster, small_outcome, small_spec_path, tmp_path):
    """Last in this module: it kills one worker of the shared cluster (its nanny starts
    a new one; the scheduler hands the lost task to a live worker)."""
    import functools

    import cloudpickle

    from cuzk_sim.sweep.executors import DaskExecutor
    from cuzk_sim.sweep.run import _task, expand

    _, client = cluster
    marker = tmp_path / "died"
    spec = api.load_sweep(small_spec_path)
    tasks = [_task(spec, c.raw, c.key, 1, 0.0) for c in expand(spec)][:4]
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        got: dict[int, dict] = {}
        ex = DaskExecutor(client)
        fn = functools.partial(die_once_then_evaluate, marker=str(marker))
        ex.map(fn, tasks, got.__setitem__)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert marker.exists()  # a worker did die
    assert ex.lost == []
    assert [got[i]["key"] for i in range(4)] == [r["key"] for r in small_outcome.rows[:4]]
    for i in range(4):
        row = small_outcome.rows[i]
        assert {k: row[k] for k in got[i]} == got[i]
