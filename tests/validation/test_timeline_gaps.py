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
