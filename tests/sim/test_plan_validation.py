"""Plan.validate: static checks that keep every plan terminating and its mutexes balanced."""

import json

import pytest

from cuzk_sim.plan import Plan, PlanError


def plan_error(steps: list[dict]) -> str:
    with pytest.raises(PlanError) as e:
        Plan.from_json(json.dumps({"name": "p", "steps": steps}), "p.json")
    return str(e.value)


def test_goto_to_an_earlier_label_is_refused():
    msg = plan_error([{"op": "label", "name": "top"}, {"op": "goto", "label": "top"}])
    assert "p.json: steps[1] (goto): jumps backwards to label 'top' (steps[0])" in msg
    assert "forward progress" in msg


def test_alloc_fallback_to_an_earlier_label_is_refused():
    msg = plan_error(
        [
            {"op": "label", "name": "retry"},
            {"op": "alloc", "buffer": "a", "bytes": 8, "fallback": "retry"},
        ]
    )
    assert "steps[1] (alloc): jumps backwards to label 'retry' (steps[0])" in msg


def test_forward_jumps_are_accepted():
    plan = Plan.from_json(
        json.dumps(
            {
                "steps": [
                    {"op": "alloc", "buffer": "a", "bytes": 8, "fallback": "skip"},
                    {"op": "goto", "label": "skip"},
                    {"op": "label", "name": "skip"},
                ]
            }
        )
    )
    assert len(plan.steps) == 3
