"""A deadline switch whose reason lapsed while its on-demand nodes booted: at the break the job
moves only if that still pays, else the nodes go back (a move to cheaper capacity is made as
launched). Through the whole policy (``BursterPolicy.decide``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, Snapshot
from burster.plan import Checkpoint, Terminate
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import GuardParams

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)
CHEAP = Offering("aws", "us-east-2", "use2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.48)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(restart_overhead_s=300, launch_latency_s=180, checkpoint_write_s=60))
# the switch's threshold: changeover 360 s (write + restart) + margin 900 s of slack


def snapshot(slack_s: float, new: Offering = OD, *, left: float = 2 * 3600.0) -> Snapshot:
    """A strict deadline job with ``left`` seconds of work left (2 h) on a spot node, ``slack_s`` of
    slack, and the node launched for it on ``new`` up and idle."""
    job = Demand("dl", 1, NOW - timedelta(hours=1), 3600 + left, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=left + slack_s))
    p = Placement(job, ("spot-1",), NOW - timedelta(hours=1), True, Market.SPOT, SPOT.price_per_hour_usd)
    on_spot = Node("spot-1", SPOT, NodeState.READY, NOW - timedelta(hours=1), "rq", job_id="dl", for_job="dl")
    up = Node("new-1", new, NodeState.READY, NOW - timedelta(minutes=3), "rq-new", for_job="dl", idle_since=NOW)
    return Snapshot(NOW, (), (p,), (), (on_spot, up), (SPOT, CHEAP, OD))


def decide(snap: Snapshot) -> list[object]:
    return list(BursterPolicy(COST).decide(snap).actions)


def test_a_lapsed_switch_gives_its_on_demand_nodes_back_and_the_job_stays_on_spot() -> None:
    actions = decide(snapshot(3000))
    (drop,) = [a for a in actions if isinstance(a, Terminate)]
    assert drop.node_ids == ("new-1",) and not [a for a in actions if isinstance(a, Checkpoint)]
    assert "the nodes launched to move job dl to aws/usw2-az1/p3.2xlarge/on_demand are up" in drop.reason
    assert "no longer pays" in drop.reason and "it stays on azure/eastus/Standard_NC6s_v3/spot" in drop.reason


def test_a_job_still_behind_schedule_moves_onto_its_on_demand_nodes() -> None:
    actions = decide(snapshot(1000))
    (cp,) = [a for a in actions if isinstance(a, Checkpoint)]
    assert cp.node_id == "spot-1" and "on-demand nodes are up, move it there" in cp.reason
    assert not [a for a in actions if isinstance(a, Terminate) and "new-1" in a.node_ids]


def test_a_move_to_cheaper_spot_is_made_as_launched() -> None:
    (cp,) = [a for a in decide(snapshot(3000, CHEAP)) if isinstance(a, Checkpoint)]
    assert cp.node_id == "spot-1" and "cheaper capacity" in cp.reason


def test_protected_nodes_launched_for_the_switch_are_not_given_back() -> None:
    policy = BursterPolicy(COST, BursterParams(guards=GuardParams(protected_node_ids=frozenset({"new-1"}))))
    actions = list(policy.decide(snapshot(3000)).actions)
    assert not [a for a in actions if isinstance(a, Terminate)]
    (cp,) = [a for a in actions if isinstance(a, Checkpoint)]
    assert cp.node_id == "spot-1"


@pytest.mark.parametrize(("slack_s", "dropped"), [(1000.0, False), (1500.0, False), (3000.0, True), (8000.0, True)])
def test_the_nodes_go_back_only_where_no_switch_rule_wants_the_move(slack_s: float, dropped: bool) -> None:
    """Behind schedule (1000 s) or with a spot run that risks the deadline more than on-demand costs
    (1500 s: ``price_risk``), the switch moves the job itself; ahead of both, the nodes go back."""
    actions = decide(snapshot(slack_s))
    assert [a.node_ids for a in actions if isinstance(a, Terminate)] == ([("new-1",)] if dropped else [])
    assert [a.node_id for a in actions if isinstance(a, Checkpoint)] == ([] if dropped else ["spot-1"])


def test_a_job_near_its_believed_end_still_moves() -> None:
    """Under a changeover of work left the switch leaves a job be (the move would make it late), but
    behind schedule it still moves onto the nodes launched for it: an overrun job is believed to end
    soon, then runs on (dropping them cost a second switch launch minutes later)."""
    actions = decide(snapshot(1000, left=300.0))
    assert [a.node_id for a in actions if isinstance(a, Checkpoint)] == ["spot-1"]
    assert not [a for a in actions if isinstance(a, Terminate)]
