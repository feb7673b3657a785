"""The node lifecycle table."""

from __future__ import annotations

import pytest

from burster.errors import IllegalTransitionError
from burster.lifecycle import TRANSITIONS, NodeState, transition


def test_the_happy_path_is_legal() -> None:
    path = ["requested", "launching", "joining", "ready", "checkpointing", "draining", "terminating",
            "terminated"]
    state = NodeState(path[0])
    for nxt in path[1:]:
        state = transition(state, NodeState(nxt))
    assert state is NodeState.TERMINATED


@pytest.mark.parametrize(("a", "b"), [
    (NodeState.TERMINATED, NodeState.READY),
    (NodeState.REQUESTED, NodeState.READY),
    (NodeState.DRAINING, NodeState.READY),
    (NodeState.READY, NodeState.LAUNCHING),
])
def test_illegal_moves_raise_with_the_allowed_ones(a: NodeState, b: NodeState) -> None:
    with pytest.raises(IllegalTransitionError, match="allowed"):
        transition(a, b)


def test_every_live_state_can_fail_and_terminated_is_final() -> None:
    for state, targets in TRANSITIONS.items():
        if state not in (NodeState.TERMINATED, NodeState.FAILED):
            assert NodeState.FAILED in targets
    assert TRANSITIONS[NodeState.TERMINATED] == frozenset()
    assert TRANSITIONS[NodeState.FAILED] == frozenset({NodeState.TERMINATED})  # an end: never live again
