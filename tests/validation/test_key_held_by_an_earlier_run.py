"""A gpu-run whose key an earlier run of its process made (benchmarks/production_runs.py
runs the grid, then a gpu-run on the grid's key) reported that earlier run's making time
as its own: `--details` host.key_seconds and the table's "setup, before proof 1" (the
key's page-locking, SimResult.setup_s) came from the store's stats of the key, kept
while it is held (grid-v2/runs/w2-26: data_seconds 3e-05, yet key_seconds 17.97 and
setup_s 3.18). Without a GPU: the dry-run pipeline on a store that makes its keys as the
real one does (a stand-in key maker with known stats)."""

from __future__ import annotations

from cuzk_sim.gpu import hostdata, partition_data
from cuzk_sim.gpu.backends import LedgerBackend
from cuzk_sim.gpu.keygen import KeyStats
from cuzk_sim.gpu.pipeline import RealRun
from cuzk_sim.gpu.run_spec import RunSpec

from cuzk_sim.scenario import load_scenario

ALLOC_S, GENERATE_S = 3.0, 15.0


def _run(path) -> RealRun:
    spec = RunSpec.from_scenario(load_scenario(path))
    return RealRun(spec, LedgerBackend(spec.vram, spec.context, spec.gpus))


def test_a_held_key_has_no_making_time_and_no_setup(scenario_file, monkeypatch):
    made = []

    def make_key(sizes, pinned):
        made.append(sizes)
        return None, KeyStats(bytes=1 << 20, alloc_s=ALLOC_S, generate_s=GENERATE_S)

    store = hostdata.SyntheticStore(make_key)  # books and stats as the real device's
    monkeypatch.setattr(partition_data, "DRY_SYNTHETIC", store)
    path = scenario_file(workers=1, count=1, partitions=2)

    first = _run(path)
    result = first.execute()
    host = first.host_report()
    assert len(made) == 1
    assert host["key_seconds"] == ALLOC_S + GENERATE_S
    assert result.setup_s == ALLOC_S
    assert not host.get("key_held_bytes") and not host.get("held_bytes")
    assert "key made in 18.0 s" in hostdata.report_line(host)

    second = _run(path)  # the same shape: the key and inputs are held, nothing is made
    result = second.execute()
    host = second.host_report()
    assert len(made) == 1
    assert host["key_seconds"] == 0 and not host["key_made_bytes"]
    assert result.setup_s == 0  # no page-locking in this run
    key = store.nbytes[next(iter(store.keys))]
    assert host["key_held_bytes"] == key > 0
    assert host["held_bytes"] == sum(store.nbytes.values())  # the key and the inputs
    line = hostdata.report_line(host)
    assert "key made in" not in line, line
    assert "made by an earlier run of this process" in line, line
