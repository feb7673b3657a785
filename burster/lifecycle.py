"""The node lifecycle: one explicit table of legal transitions.

``requested -> launching -> joining -> ready -> checkpointing -> draining -> terminating -> terminated``,
with ``failed`` reachable from any live state; a failed node is ended like a terminated one (it may
only be marked terminated). An idle node skips ``checkpointing``.
State changes go through :func:`transition`, which raises on an illegal move.
"""

from __future__ import annotations

import enum

from burster.errors import IllegalTransitionError


class NodeState(enum.StrEnum):
    REQUESTED = "requested"
    LAUNCHING = "launching"
    JOINING = "joining"
    READY = "ready"
    CHECKPOINTING = "checkpointing"
    DRAINING = "draining"
    TERMINATING = "terminating"
    TERMINATED = "terminated"
    FAILED = "failed"


_S = NodeState
TRANSITIONS: dict[NodeState, frozenset[NodeState]] = {
    _S.REQUESTED: frozenset({_S.LAUNCHING, _S.FAILED, _S.TERMINATING}),
    _S.LAUNCHING: frozenset({_S.JOINING, _S.FAILED, _S.TERMINATING}),
    _S.JOINING: frozenset({_S.READY, _S.FAILED, _S.TERMINATING}),
    _S.READY: frozenset({_S.CHECKPOINTING, _S.DRAINING, _S.TERMINATING, _S.FAILED}),
    # back to ready: the job checkpointed left the node and another started there (handshake called off)
    _S.CHECKPOINTING: frozenset({_S.READY, _S.DRAINING, _S.TERMINATING, _S.FAILED}),
    _S.DRAINING: frozenset({_S.TERMINATING, _S.FAILED}),
    _S.TERMINATING: frozenset({_S.TERMINATED, _S.FAILED}),
    _S.TERMINATED: frozenset(),
    _S.FAILED: frozenset({_S.TERMINATED}),  # ended, as terminated: never live again
}

LIVE_STATES = frozenset(s for s in NodeState if s not in (_S.TERMINATED, _S.FAILED))
BILLED_STATES = frozenset(LIVE_STATES - {_S.REQUESTED})
PENDING_STATES = frozenset({_S.REQUESTED, _S.LAUNCHING, _S.JOINING})


def transition(current: NodeState, target: NodeState) -> NodeState:
    """Return ``target`` if ``current -> target`` is legal, else raise IllegalTransitionError."""
    if target not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(s.value for s in TRANSITIONS[current])) or "none"
        raise IllegalTransitionError(
            f"node cannot go from {current.value} to {target.value} (allowed: {allowed})"
        )
    return target
