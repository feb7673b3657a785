"""Which checkpoints cordon their node (``Checkpoint.cordon``): those of a node that goes whatever its
job does, a spot notice's and a budget stop's. A job the pool started there as the checkpointed one
left would be cut short by the take-back, or would bill past the budget."""

from __future__ import annotations

from datetime import timedelta

from burster.lifecycle import NodeState
from burster.model import Interruption, Node, Snapshot, Spend
from burster.plan import Checkpoint, Terminate
from policies.budget_stop import enforce_budget
from policies.deadline import handle_interruptions
from policies.guards import GuardParams
from tests.policies.test_guards import NOW, OD, SPOT


def _node(node_id: str, job_id: str | None, offering: object = SPOT) -> Node:
    return Node(node_id, offering, NodeState.READY, NOW - timedelta(hours=1), f"rq-{node_id}",  # type: ignore[arg-type]
                job_id=job_id)


def test_a_notice_checkpoints_a_busy_node_cordoned_and_terminates_an_idle_one() -> None:
    busy, idle = _node("s1", "j"), _node("s2", None)
    notices = tuple(Interruption(n.node_id, "aws", "spot-interruption", NOW, NOW + timedelta(minutes=2))
                    for n in (busy, idle))
    ask, end = handle_interruptions(Snapshot(NOW, (), (), (), (busy, idle), (SPOT,), interruptions=notices))
    assert isinstance(ask, Checkpoint) and (ask.node_id, ask.job_id, ask.cordon) == ("s1", "j", True)
    assert isinstance(end, Terminate) and end.node_ids == ("s2",)


def test_the_hard_budget_stop_cordons_the_nodes_it_checkpoints() -> None:
    snapshot = Snapshot(NOW, (), (), (), (_node("c1", "j", OD),), (OD,), spend=Spend(total_usd=100.0))
    (stop,) = enforce_budget(snapshot, GuardParams(total_budget_usd=100.0, stop_grace_s=600.0), 10.0)
    assert isinstance(stop, Checkpoint) and stop.cordon and stop.deadline == NOW + timedelta(seconds=600)
