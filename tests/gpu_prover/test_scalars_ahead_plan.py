"""With overlap_uploads (not streamed), a compact shape's witness scalars go up one stage
ahead on the key_upload stream, beside the MSM before their stage (gpu/scalars.py
`ahead`): d_scalars_a beside msm_h, d_scalars_b beside msm_a, d_witness beside
msm_b_g2; each waited for by a `sync key_upload` before its stage's first kernel. Without
the flag, and for a dense shape's witness, they stay on the compute stream. Dry-run
plans, no GPU."""

from __future__ import annotations

import pytest
from cuzk_sim.gpu.flags import ProverFlags
from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan
from cuzk_sim.gpu.schedule import overlap

# upload -> (the stage it feeds, the stage whose MSM it runs beside)
AHEAD = {
    "upload_scalars_a": ("msm_a", "msm_h"),
    "upload_scalars_b": ("msm_b_g1", "msm_a"),
    "upload_witness": ("msm_l", "msm_b_g2"),
}


def _first_kernel(steps, stage: str) -> int:
    return next(i for i, s in enumerate(steps) if s.op == "kernel" and s.name.startswith(stage))


def _copy(steps, name: str) -> tuple[int, object]:
    hits = [(i, s) for i, s in enumerate(steps) if s.op == "copy" and s.name == name]
    assert len(hits) == 1, name
    return hits[0]


@pytest.mark.parametrize("resident", [False, True])
def test_the_witness_scalars_go_up_beside_the_msm_before_their_stage(resident):
    shape = PartitionShape.synthetic(12, witness="porep")
    assert shape.a_count is not None and shape.b_count is not None  # compact queries
    flags = ProverFlags(key_pinned=True, overlap_uploads=True, split_msm=True)
    if resident:
        flags = ProverFlags(**{**flags.__dict__, "key_resident": True})
    steps = dry_run_plan(shape, flags).steps
    rows = {"upload_scalars_a": shape.a_count, "upload_scalars_b": shape.b_count}
    rows["upload_witness"] = shape.num_vars
    for name, (stage, beside) in AHEAD.items():
        i, c = _copy(steps, name)
        assert c.stream == "key_upload"
        assert c.bytes == 32 * rows[name]  # Fr scalars, 32 bytes each
        # issued before the MSM it runs beside, and waited for before its own stage
        assert i < _first_kernel(steps, beside)
        first = _first_kernel(steps, stage)
        assert [s for s in steps[i:first] if s.op == "sync" and s.stream == "key_upload"]
    # the upload stream: 4 key copies (H's are on the compute stream) + 3 scalar copies
    o = overlap(dry_run_plan(shape, flags))
    assert o.copies == 7
    assert o.overlapped == 7


def test_without_overlap_uploads_the_scalars_stay_on_the_compute_stream():
    shape = PartitionShape.synthetic(12, witness="porep")
    steps = dry_run_plan(shape, ProverFlags(key_pinned=True, split_msm=True)).steps
    for name, (stage, _) in AHEAD.items():
        i, c = _copy(steps, name)
        assert c.stream == "compute"
        # right before their own stage: after the MSM before it
        assert _first_kernel(steps, AHEAD[name][1]) < i < _first_kernel(steps, stage)


def test_a_dense_witness_still_goes_up_before_msm_h_on_the_compute_stream():
    shape = PartitionShape.synthetic(12)
    steps = dry_run_plan(shape, ProverFlags(key_pinned=True, overlap_uploads=True)).steps
    i, c = _copy(steps, "upload_witness")
    assert c.stream == "compute"
    assert i < _first_kernel(steps, "msm_h")
    assert not [s for s in steps if s.op == "copy" and s.name.startswith("upload_scalars")]


def test_the_resident_plan_at_2_27_keeps_its_peak():
    """The ahead scalars live beside a smaller MSM than msm_l's: the peak (msm_l, with
    d_witness, d_a and the key) does not move. By hand: the key's points (porep counts),
    d_a, d_witness and msm_l's split index are all live at msm_l's kernels."""
    shape = PartitionShape.synthetic(27, witness="porep")
    flags = ProverFlags(key_pinned=True, overlap_uploads=True, split_msm=True, key_resident=True)
    plan = dry_run_plan(shape, flags)
    live, peak, at = {}, 0, None
    for s in plan.steps:
        if s.op == "alloc" and s.memory == "device":
            live[s.buffer] = s.bytes
            if sum(live.values()) > peak:
                peak, at = sum(live.values()), set(live)
        elif s.op == "free" and s.memory == "device":
            live.pop(s.buffer, None)
    assert {"d_a", "d_witness", "msm_l.split_index", "msm_l.order"} <= at
    assert "d_scalars_a" not in at and "d_scalars_b" not in at
