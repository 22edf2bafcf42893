"""Where the configurations run: a local process pool (default) or a Dask cluster.

Both call the same module-level function on the same plain-data tasks, so a row does not
depend on the executor. The pool sends tasks in small batches (one simulation takes a
few milliseconds; a round trip per task would cost as much). Dask gets one task per
configuration: its scheduler re-runs a task whose worker died (up to its
`distributed.scheduler.allowed-failures`, default 3); a task that exhausts those is
reported as lost, not stored, so the next run of the same sweep retries it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from cuzk_sim.io.errors import InputError

OnResult = Callable[[int, Any], None]


def _apply_batch(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    return [fn(x) for x in items]


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class PoolExecutor:
    """A process pool of `jobs` processes; jobs = 1 runs in this process."""

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs or default_jobs()
        self.lost: list[int] = []

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], on_result: OnResult) -> None:
        if self.jobs == 1 or len(items) <= 1:
            for i, item in enumerate(items):
                on_result(i, fn(item))
            return
        # ~8 batches per process balance the load; at most 16 tasks per batch keeps the
        # progress bar and the written rows moving.
        size = max(1, min(16, len(items) // (self.jobs * 8)))
        batches = [list(range(s, min(s + size, len(items)))) for s in range(0, len(items), size)]
        with ProcessPoolExecutor(max_workers=min(self.jobs, len(batches))) as pool:
            pending = {pool.submit(_apply_batch, fn, [items[i] for i in b]): b for b in batches}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        indices = pending.pop(fut)
                        for i, result in zip(indices, fut.result(), strict=True):
                            on_result(i, result)
            except BaseException:  # Ctrl-C or a failing callback: drop the queued batches
                for fut in pending:
                    fut.cancel()
                raise


class DaskExecutor:
    """Tasks on a Dask distributed cluster: `scheduler` is an address (tcp://host:8786)
    or a `distributed.Client` already connected (the API and the tests pass one)."""

    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self.lost: list[int] = []

    def _client(self):
        try:
            from distributed import Client
        except ImportError:
            raise InputError(
                "--scheduler: Dask is not installed; pip install 'cuzk-sim[dask]'"
            ) from None
        if isinstance(self.scheduler, Client):
            return self.scheduler, False
        try:
            return Client(self.scheduler, timeout="10s"), True
        except (OSError, TimeoutError, ValueError) as e:
            raise InputError(f"--scheduler {self.scheduler}: cannot connect ({e})") from None

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], on_result: OnResult) -> None:
        if not items:
            return
        from distributed import as_completed

        client, owned = self._client()
        try:
            keys = [f"cuzk-sweep-{_item_key(x)}-{i}" for i, x in enumerate(items)]
            futures = client.map(fn, list(items), key=keys, pure=False)
            index = {f.key: i for i, f in enumerate(futures)}
            for fut in as_completed(futures):
                i = index[fut.key]
                if fut.status == "error":
                    exc = fut.exception()
                    if type(exc).__name__ == "KilledWorker":
                        self.lost.append(i)
                        continue
                    raise exc
                on_result(i, fut.result())
                fut.release()
        finally:
            if owned:
                client.close()


def _item_key(item: Any) -> str:
    key = getattr(item, "key", None) or getattr(getattr(item, "task", None), "key", None)
    kind = getattr(item, "kind", "row")
    return f"{kind}-{key}"


def make_executor(jobs: int | None = None, scheduler: Any = None):
    if jobs is not None and jobs < 1:
        raise InputError(f"--jobs {jobs}: expected a positive number of processes")
    return DaskExecutor(scheduler) if scheduler is not None else PoolExecutor(jobs)
