"""A real run whose partitions fail (issue 24, grid call 1808): an out-of-memory error of
any layer outside our allocations is an OOM of the run with where it happened, any other
failure an error, never a fit; a failed worker frees its buffers before it gives the GPU
lock back; the ballast leaves room for a context the driver shrank to grow back. On the
dry-run device (the pipeline on the model's ledger) and a stand-in CuPy backend."""

from __future__ import annotations

import pytest
from cuzk_sim.gpu import card
from cuzk_sim.gpu.backends import CupyBackend, LedgerBackend
from cuzk_sim.gpu.card import BALLAST_GRANULE, CardSetup
from cuzk_sim.gpu.device import Device
from cuzk_sim.gpu.faults import FaultPlan
from cuzk_sim.gpu.pipeline import RealRun
from cuzk_sim.gpu.run_spec import RunSpec
from validation_fixtures import BASE, small_scenario

from cuzk_sim.plan.contract import Free, Unlock
from cuzk_sim.scenario import load_scenario
from cuzk_sim.validation.outcome import real_verdict

MIB = 1 << 20


class CUDADriverError(RuntimeError):
    """Stands in for cuda.bindings' error (its name and text are what the pipeline sees)."""


class _RaiseAt(FaultPlan):
    """Raises `error` at the first allocation of `buffer` (as a kernel launch after it
    would: outside our allocator's own OOM path)."""

    def __init__(self, buffer: str, error: Exception) -> None:
        super().__init__()
        self.buffer, self.error = buffer, error

    def at_alloc(self, buffer, nbytes, free, gpu):  # noqa: ANN001
        if buffer == self.buffer:
            raise self.error


def _run(tmp_path, faults: FaultPlan) -> tuple[RealRun, dict]:
    body = BASE.format(vram="140 GiB", workers=1, on_oom="continue", count=1, partitions=2)
    spec = RunSpec.from_scenario(load_scenario(small_scenario(tmp_path, body)))
    run = RealRun(spec, LedgerBackend(spec.vram, spec.context, spec.gpus), faults)
    result = run.execute()
    return run, {"real": result.to_dict(), "details": run.details()}


def test_a_driver_oom_outside_an_allocation_is_an_oom_of_the_run(tmp_path):
    """w1-chunk-27@+1% in call 1808: every partition failed with `CUDADriverError:
    CUDA_ERROR_OUT_OF_MEMORY` after upload_ntt_tables and the run said oom: false."""
    err = CUDADriverError("CUDA_ERROR_OUT_OF_MEMORY: out of memory")
    run, rec = _run(tmp_path, _RaiseAt("d_ntt_tables", err))
    assert rec["real"]["oom"] is True
    assert rec["real"]["partitions_completed"] == 0
    first = rec["real"]["oom_events"][0]
    assert first["fatal"] and first["reason"] == "launch"
    # the step that raised it: d_ntt_tables' allocation had not been recorded yet, the
    # upload of b and c before it had
    assert first["buffer"] == "upload_bc (CUDADriverError)"
    assert real_verdict(rec) == (True, "upload_bc (CUDADriverError)", None)


def test_a_partition_that_failed_otherwise_makes_the_run_an_error(tmp_path):
    run, rec = _run(tmp_path, _RaiseAt("d_ntt_tables", ValueError("a bad witness")))
    assert rec["real"]["oom"] is False and rec["real"]["partitions_failed"] >= 1
    oom, buffer, error = real_verdict(rec)
    assert (oom, buffer) == (False, None)
    assert error == "worker exception: ValueError: a bad witness"


def test_a_failed_worker_frees_its_buffers_before_it_gives_the_lock_back():
    """cuzk drops a failed worker's buffers before its lock guard (taken before them);
    call 1808's w2-chunk-27@+1%: the other worker took the lock while 9.4 GiB were live."""
    dev = Device("dry-run", 0, "caching")
    with pytest.raises(RuntimeError, match="launch failed"), dev.critical_section():
        dev.lock()
        dev.alloc("d_a", 4 * MIB)
        dev.alloc("d_bc", 8 * MIB)
        raise RuntimeError("launch failed")
    tail = dev.steps[-3:]
    assert {s.buffer for s in tail[:2] if isinstance(s, Free)} == {"d_a", "d_bc"}
    assert isinstance(tail[2], Unlock) and dev.live == {}


class _Card(CupyBackend):
    """A stand-in GPU: `total` bytes, a context of `context` bytes, raw ballasts."""

    def __init__(self, total: int, context: int) -> None:
        super().__init__()
        self.total, self.context, self.raw = total, context, {}

    def mem_info(self, gpu):  # noqa: ANN001
        return self.total - self.context - sum(self.raw.values()), self.total

    def raw_malloc(self, gpu, nbytes):  # noqa: ANN001
        self.raw[len(self.raw) + 1] = nbytes
        return len(self.raw)

    def raw_free(self, gpu, ptr):  # noqa: ANN001
        self.raw.pop(ptr)

    def reset(self, gpu):  # noqa: ANN001
        pass

    def release_threshold(self, gpu):  # noqa: ANN001
        return 0

    def set_release_threshold(self, gpu, value):  # noqa: ANN001
        pass

    def used_by_buffers(self, gpu):  # noqa: ANN001
        return 0

    def pools(self, gpu):  # noqa: ANN001
        return {}


class _Setup(CardSetup):
    def __init__(self, backend: _Card, vram: int, context: int) -> None:
        from types import SimpleNamespace

        self.spec = SimpleNamespace(
            routing="device0", devices=[0], vram=vram, context=context, pool_release_threshold=0
        )
        self.backend, self.lines = backend, []
        self.context_real, self.context_room, self.context_end = {}, {}, {}
        self.threshold_before, self.ballast, self.ballast_bytes = {}, {}, {}
        self.ballast_placed, self.start_free = {}, {}

    def log(self, line: str) -> None:
        self.lines.append(line)


def test_the_ballast_leaves_room_for_a_context_the_driver_shrank(monkeypatch):
    """Call 1808: the grid process's context was 1178.8 MiB, then 196.8 MiB after the
    driver gave its kernels' local memory back; a ballast placed against 196.8 left the
    card 982 MiB short once the local memory grew back at the next launch. The process
    remembers the largest context it measured and leaves the difference free."""
    monkeypatch.setattr(card, "_CONTEXT_SEEN", {})
    gib, model_ctx = 1 << 30, 1450 * MIB
    gpu = _Card(141 * gib, 1178 * MIB)
    first = _Setup(gpu, 20 * gib, model_ctx)
    first._prepare()
    assert first.context_room[0] == 0
    assert 0 <= first.start_free[0] - (20 * gib - model_ctx) < BALLAST_GRANULE
    first._teardown()
    gpu.context = 196 * MIB  # the driver gave the local memory back
    second = _Setup(gpu, 20 * gib, model_ctx)
    second._prepare()
    assert second.context_room[0] == 982 * MIB
    free = second.start_free[0]
    assert 0 <= free - (20 * gib - model_ctx + 982 * MIB) < BALLAST_GRANULE
    gpu.context = 1178 * MIB  # it grows back into the room: the prover's free is the card's
    assert 0 <= gpu.mem_info(0)[0] - (20 * gib - model_ctx) < BALLAST_GRANULE


def test_room_the_context_never_took_back_counts_as_the_provers_card(monkeypatch):
    """The achieved card subtracts only the room the context grew back into by the end: a
    context that stayed small left the prover that much more (the model is then asked at
    the larger card)."""
    monkeypatch.setattr(card, "_CONTEXT_SEEN", {0: 1178 * MIB})
    run = object.__new__(RealRun)
    run.context_room, run.context_real = {0: 982 * MIB}, {0: 196 * MIB}
    run.context_end = {0: 1178 * MIB}
    assert run._room_taken(0) == 982 * MIB  # all grown back: the stated card
    run.context_end = {0: 696 * MIB}
    assert run._room_taken(0) == 500 * MIB  # 482 MiB of the room stayed the prover's
    run.context_end = {}
    assert run._room_taken(0) == 982 * MIB  # not measured (the dry-run ledger): as placed
