"""The plan contract: JSON round trip and validation errors that name the step and field."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuzk_sim.plan.contract import (
    Alloc,
    Copy,
    Free,
    Goto,
    Kernel,
    Label,
    Lock,
    Plan,
    PlanError,
    Unlock,
)

names = st.text("abcdefgh_", min_size=1, max_size=8)
sizes = st.integers(min_value=0, max_value=2**40)
steps = st.one_of(
    st.builds(
        Alloc,
        buffer=names,
        bytes=sizes,
        allocator=st.sampled_from(["sync", "async", "caching"]),
        persistent=st.booleans(),
    ),
    st.builds(Free, buffer=names),
    st.builds(Copy, name=names, bytes=sizes, pinned=st.booleans()),
    st.builds(Kernel, name=names, kind=st.sampled_from(["ntt", "msm_g1"]), size=sizes),
)


@st.composite
def valid_step_lists(draw):
    """Steps with an optional critical section (a valid plan releases every lock it takes)."""
    body = draw(st.lists(steps, max_size=20))
    if draw(st.booleans()):
        i, j = sorted(draw(st.integers(0, len(body))) for _ in range(2))
        mutex = draw(names)
        body = [*body[:i], Lock(mutex), *body[i:j], Unlock(mutex), *body[j:]]
    return body


@given(valid_step_lists())
def test_json_round_trip(step_list):
    plan = Plan("p", tuple(step_list))
    assert Plan.from_json(plan.to_json()) == plan


def test_unknown_op_is_named():
    with pytest.raises(PlanError, match=r"steps\[1\]\.op"):
        Plan.from_dict({"steps": [{"op": "free", "buffer": "a"}, {"op": "teleport"}]})


def test_unknown_field_is_named():
    with pytest.raises(PlanError, match=r"steps\[0\] \(alloc\): unknown field.*'byts'"):
        Plan.from_dict({"steps": [{"op": "alloc", "buffer": "a", "byts": 3}]})


def test_negative_bytes_rejected():
    with pytest.raises(PlanError, match=r"steps\[0\] \(alloc\)\.bytes"):
        Plan("p", (Alloc("a", -1),)).validate()


def test_undefined_fallback_label_rejected():
    with pytest.raises(PlanError, match="undefined label 'nope'"):
        Plan("p", (Alloc("a", 1, fallback="nope"),)).validate()
    Plan("p", (Alloc("a", 1, fallback="x"), Goto("x"), Label("x"))).validate()
