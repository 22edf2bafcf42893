"""benchmarks/timeline_gaps.py and reprice_grid.py's makespan, on timelines worked by hand."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import reprice_grid  # noqa: E402
import timeline_gaps  # noqa: E402

# one worker: partition p0 0-10 s (upload_a 0-3, k1 3-5, k2 4-8 overlapping k1, a result
# copy 8-8.5), partition p1 11-20 s (k3 12-14)
SPANS = [
    ("w0", "p0", "partition", 0.0, 10.0),
    ("w0", "upload_a", "copy", 0.0, 3.0),
    ("w0", "k1", "kernel", 3.0, 5.0),
    ("w0", "k2", "kernel", 4.0, 8.0),
    ("w0", "r.result", "copy", 8.0, 8.5),
    ("w0", "p1", "partition", 11.0, 20.0),
    ("w0", "k3", "kernel", 12.0, 14.0),
]


PAGEABLE_A = {"upload_a": False}


def test_partition_categories_by_hand():
    p0, p1 = timeline_gaps.partitions(SPANS, PAGEABLE_A)
    assert p0["length"] == 10.0 and p0["pageable upload"] == 3.0
    assert p0["kernel"] == 6.0  # 2 + 4, overlapping kernels each counted
    assert p0["copy"] == 0.5
    assert p0["idle in partition"] == pytest.approx(1.5)  # busy union 0-8.5
    assert p0["before partition"] == 0.0
    assert p1["before partition"] == 1.0  # 10 -> 11
    assert p1["idle in partition"] == pytest.approx(7.0)  # 9 s long, 2 s busy
    assert timeline_gaps.makespan(SPANS) == 20.0


def _plan(*copies):
    from cuzk_sim.plan.contract import Plan
    from cuzk_sim.steps.copy import Copy

    return Plan("p", tuple(Copy(n, 1 << 20, d, pinned=pin) for n, d, pin in copies), {})


def test_uploads_follow_the_plans_pinning_not_their_name():
    # grid-v3's streamed plans upload a/b/c pinned: a copy named upload_* is no pageable
    # upload when the plan pins it; the key's chunk uploads (pinned) neither
    plan = _plan(
        ("upload_a", "HtoD", True),
        ("upload_witness", "HtoD", False),
        ("upload_msm_h_points", "HtoD", True),
        ("msm_h.result", "DtoH", False),
    )
    pinning = timeline_gaps.upload_pinning([plan])
    assert pinning == {"upload_a": True, "upload_witness": False, "upload_msm_h_points": True}
    spans = [
        ("w0", "p0", "partition", 0.0, 10.0),
        ("w0", "upload_a", "copy", 0.0, 2.0),
        ("w0", "upload_witness", "copy", 2.0, 2.5),
        ("w0", "upload_msm_h_points", "copy", 3.0, 4.0),
        ("w0", "msm_h.result", "copy", 5.0, 5.25),
        ("w0", "upload_unknown", "copy", 6.0, 6.125),
    ]
    (p0,) = timeline_gaps.partitions(spans, pinning)
    assert p0["pinned upload"] == 3.0  # 2 + 1
    assert p0["pageable upload"] == 0.5
    assert p0["copy"] == 0.375  # the result copy and a name the plan lacks
    # the same name pageable in one plan and pinned in another: pageable
    mixed = timeline_gaps.upload_pinning([plan, _plan(("upload_a", "HtoD", False))])
    assert mixed["upload_a"] is False


def test_step_means_average_each_name():
    spans = [*SPANS, ("w0", "k3", "kernel", 15.0, 19.0)]
    assert timeline_gaps.step_means(spans)["k3"] == 3.0  # (2 + 4) / 2


def test_real_makespan_reads_microseconds_and_needs_partitions():
    rec = {
        "details": {
            "timeline": {
                "spans": [
                    ["w0", "p0", "partition", 500, 2_000_500],
                    ["w1", "p1", "partition", 1_000_000, 4_500_000],
                    ["w0", "k", "kernel", 0, 9_000_000],
                ]
            }
        }
    }
    assert reprice_grid.real_makespan(rec) == pytest.approx(4.4995)
    assert reprice_grid.real_makespan({"details": {}}) is None


def test_an_upload_counts_from_when_the_copy_engine_takes_it():
    # gpu0: a key chunk 1-4 s beside the queue; the queue reaches upload_scalars_a at
    # 1.5 s, the engine takes it at 4 (the chunk's end), it ends at 6: 2.5 s wait, 2 s
    # on the engine. gpu1's upload 2-3 shares no engine with gpu0's; a DtoH result copy
    # (not an upload of the plan) is never cut; a later upload 7-8 on gpu0 waits for none
    pinning = {"upload_msm_b_g1_points": True, "upload_scalars_a": True}
    spans = [
        ("gpu0-w0", "p0", "partition", 0.0, 10.0),
        ("gpu0-w0", "upload_msm_b_g1_points", "copy", 1.0, 4.0),
        ("gpu0-w0", "upload_scalars_a", "copy", 1.5, 6.0),
        ("gpu0-w0", "msm_a.result", "copy", 3.0, 3.5),
        ("gpu1-w0", "upload_scalars_a", "copy", 2.0, 3.0),
        ("gpu0-w0", "upload_scalars_a", "copy", 7.0, 8.0),
    ]
    cut, waits = timeline_gaps.on_engine(spans, pinning)
    assert cut[2] == ("gpu0-w0", "upload_scalars_a", "copy", 4.0, 6.0)
    assert cut[3] == spans[3] and cut[4] == spans[4] and cut[5] == spans[5]
    assert waits == [("upload_scalars_a", "upload_msm_b_g1_points", 2.5, 2.0)]
    (p0,) = timeline_gaps.partitions([s for s in cut if s[0] == "gpu0-w0"], pinning)
    assert p0["pinned upload"] == 3.0 + 2.0 + 1.0  # not 3 + 4.5 + 1
    assert p0["idle in partition"] == pytest.approx(10.0 - 5.0 - 1.0)  # busy 1-6, 7-8
    (line,) = timeline_gaps.wait_means(
        waits + [("upload_scalars_a", "upload_msm_b_g1_points", 0.5, 4.0)]
    )
    assert line == (
        "upload_scalars_a 1500.0 behind upload_msm_b_g1_points, then 3000.0 on the engine (2x)"
    )
