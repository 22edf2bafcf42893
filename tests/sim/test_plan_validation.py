"""Plan.validate: static checks that keep every plan terminating and its mutexes balanced."""

import json

import pytest

from cuzk_sim.plan.contract import Plan, PlanError


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


LOCK = {"op": "lock", "mutex": "gpu"}
UNLOCK = {"op": "unlock", "mutex": "gpu"}
KERNEL = {"op": "kernel", "name": "k", "kind": "ntt", "size": 8}


def test_a_lock_never_unlocked_is_refused_naming_step_and_mutex():
    msg = plan_error([KERNEL, LOCK, KERNEL])
    assert "steps[1] (lock): mutex 'gpu' is still held at the end of the plan" in msg


def test_an_unlock_of_a_mutex_not_held_is_refused():
    msg = plan_error([KERNEL, UNLOCK])
    assert "steps[1] (unlock): mutex 'gpu' is not held" in msg


def test_a_lock_left_held_on_the_fallback_path_only_is_refused():
    # straight path: lock, alloc ok, unlock; fallback path skips the unlock
    msg = plan_error(
        [
            LOCK,
            {"op": "alloc", "buffer": "a", "bytes": 8, "fallback": "oom"},
            UNLOCK,
            {"op": "goto", "label": "end"},
            {"op": "label", "name": "oom"},
            {"op": "label", "name": "end"},
        ]
    )
    assert "steps[0] (lock): mutex 'gpu' is still held" in msg


def test_locking_a_mutex_twice_is_refused():
    msg = plan_error([LOCK, LOCK, UNLOCK, UNLOCK])
    assert "steps[1] (lock): mutex 'gpu' is already held (locked at steps[0])" in msg


def test_balanced_locks_on_both_paths_and_scope_none_are_accepted():
    steps = [
        LOCK,
        {"op": "alloc", "buffer": "a", "bytes": 8, "fallback": "oom"},
        UNLOCK,
        {"op": "goto", "label": "end"},
        {"op": "label", "name": "oom"},
        UNLOCK,
        {"op": "label", "name": "end"},
        {"op": "lock", "mutex": "x", "scope": "none"},  # no-op: nothing to release
    ]
    assert len(Plan.from_json(json.dumps({"steps": steps})).steps) == 8


def test_the_mutex_replay_plan_without_its_unlocks_is_refused():
    from pathlib import Path

    path = Path(__file__).parents[2] / "scenarios/plans/ours-porep-partition.json"
    data = json.loads(path.read_text())
    assert any(s["op"] == "unlock" for s in data["steps"])
    data["steps"] = [s for s in data["steps"] if s["op"] != "unlock"]
    with pytest.raises(PlanError, match="still held at the end of the plan"):
        Plan.from_dict(data, "nounlock.json")
