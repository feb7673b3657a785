"""Nodes launched for a job that are too few for its gang (one ended before the job started there:
a budget stop, its cloud, a console) are given back at once, and the job launches whole again; a
move (deadline switch, consolidation) does not checkpoint a job onto such a set."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Snapshot
from burster.plan import Checkpoint, Launch, Terminate
from policies.burster import BursterParams, BursterPolicy
from policies.consolidate import consolidate
from policies.cost import CostModel, CostParams
from policies.deadline import holds_gang, switch_behind_schedule
from policies.guards import GuardParams
from policies.reclaim import give_back_short

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
X8 = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
X4 = Offering("aws", "us-west-2", "usw2-az1", "p3.8xlarge", "V100", 4, Market.ON_DEMAND, 12.24)
GANG = Demand("g", 16, NOW - timedelta(minutes=4), 1800.0, nodes=2, gpu_model="V100")
COST = CostModel()


def node(node_id: str, state: NodeState = NodeState.READY, offering: Offering = X8, *,
         for_job: str = "g", protected: bool = False) -> Node:
    idle = NOW - timedelta(seconds=30) if state is NodeState.READY else None
    return Node(node_id, offering, state, NOW - timedelta(minutes=3), "rq-g", for_job=for_job, idle_since=idle,
                protected=protected)


def pending(*nodes: Node, job: Demand = GANG) -> Snapshot:
    """``job`` pending (no reserved GPUs for it) with ``nodes`` launched for it."""
    return Snapshot(NOW, (job,), (), (PoolNode("onprem-0", "V100", 8, 0),), nodes, (X8, X4))


def terminated(plan_actions: tuple[object, ...]) -> list[tuple[str, ...]]:
    return [a.node_ids for a in plan_actions if isinstance(a, Terminate)]


@pytest.mark.parametrize("state", [NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY])
def test_a_pending_gang_left_one_of_its_two_nodes_gives_it_back_at_once(state: NodeState) -> None:
    """One of the gang's two nodes ended while booting: the other goes now, not at the join timeout
    (17 minutes on), and the gang is launched whole on the next pass, once it has gone."""
    plan = BursterPolicy().decide(pending(node("c1", state)))
    (give_back,) = [a for a in plan.actions if isinstance(a, Terminate)]
    assert give_back.node_ids == ("c1",) and not plan.refused
    assert ("job g's gang lost a node before the job started there: 1 of 2 left; giving it back to relaunch whole"
            in give_back.reason)
    assert not [a for a in plan.actions if isinstance(a, Launch)]  # not under the old request id while c1 is up
    (launch,) = [a for a in BursterPolicy().decide(pending()).actions if isinstance(a, Launch)]
    assert (launch.job_id, launch.count) == ("g", 2)


@pytest.mark.parametrize("other", [NodeState.LAUNCHING, NodeState.READY])
def test_a_gang_whose_other_node_is_still_on_its_way_is_left_to_start(other: NodeState) -> None:
    plan = BursterPolicy().decide(pending(node("c1"), node("c2", other)))
    assert terminated(plan.actions) == [] and not [a for a in plan.actions if isinstance(a, Launch)]


def test_a_single_job_needing_two_smaller_nodes_is_short_with_one() -> None:
    one = Demand("one", 8, NOW - timedelta(minutes=4), 1800.0, gpu_model="V100")
    assert give_back_short(pending(node("c1", offering=X4, for_job="one"), job=one), COST)
    assert not give_back_short(pending(node("c1", offering=X4, for_job="one"), node("c2", offering=X4, for_job="one"),
                                       job=one), COST)
    assert holds_gang(GANG, [node("a", offering=X8), node("b", offering=X4), node("c", offering=X4)])
    assert not holds_gang(GANG, [node("a", offering=X4)] * 3)


def test_a_node_stopped_in_the_same_pass_is_not_counted() -> None:
    (give_back,) = give_back_short(pending(node("c1"), node("c2")), COST, gone=frozenset({"c1"}))
    assert give_back.node_ids == ("c2",)


@pytest.mark.parametrize("how", ["node", "guards"])
def test_a_short_set_with_a_protected_node_is_left_alone(how: str) -> None:
    snap = pending(node("c1", protected=how == "node"))
    guards = GuardParams(protected_node_ids=frozenset({"c1"}) if how == "guards" else frozenset())
    plan = BursterPolicy(params=BursterParams(guards=guards)).decide(snap)
    assert terminated(plan.actions) == [] and not plan.refused


def test_a_switch_to_on_demand_does_not_move_a_gang_onto_one_of_its_two_nodes() -> None:
    """A strict 2-node gang behind schedule on spot: one of its two on-demand nodes ended while
    booting. It stays on spot (a checkpoint would leave it waiting on the lone node) and the lone
    node is given back, so the switch launches two again."""
    spot = Offering("azure", "eastus", "eastus", "Standard_NC24s_v3", "V100", 8, Market.SPOT, 8.0)
    job = Demand("dl", 16, NOW - timedelta(hours=1), 3 * 3600.0, nodes=2, gpu_model="V100",
                 job_class=JobClass.STRICT, deadline=NOW + timedelta(hours=2, seconds=1000))
    run = Placement(job, ("s1", "s2"), NOW - timedelta(hours=1), True, Market.SPOT, 2 * spot.price_per_hour_usd)
    on_spot = tuple(Node(i, spot, NodeState.READY, NOW - timedelta(hours=1), "rq", job_id="dl", for_job="dl")
                    for i in ("s1", "s2"))
    snap = Snapshot(NOW, (), (run,), (), (*on_spot, node("od1", for_job="dl")), (spot, X8))
    cost = CostModel(CostParams(restart_overhead_s=300, launch_latency_s=180, checkpoint_write_s=60))
    assert switch_behind_schedule(snap, cost, 900.0) == []
    (give_back,) = give_back_short(snap, cost)
    assert give_back.node_ids == ("od1",)
    assert "job dl's move's new set lost a node before the job moved there" in give_back.reason


def test_consolidation_does_not_move_a_gang_onto_one_of_its_two_new_nodes() -> None:
    pricey = Offering("azure", "eastus", "eastus", "Standard_NC24s_v3", "V100", 8, Market.ON_DEMAND, 30.0)
    job = Demand("cj", 16, NOW - timedelta(hours=12), 12 * 3600.0, nodes=2, gpu_model="V100")
    run = Placement(job, ("p1", "p2"), NOW - timedelta(hours=2), True, Market.ON_DEMAND,
                    2 * pricey.price_per_hour_usd)
    old = tuple(Node(i, pricey, NodeState.READY, NOW - timedelta(hours=2), "rq", job_id="cj", for_job="cj")
                for i in ("p1", "p2"))
    snap = Snapshot(NOW, (), (run,), (), (*old, node("n1", for_job="cj")), (pricey, X8))
    def moved(s: Snapshot) -> list[str]:
        return [a.node_id for a in consolidate(s, COST, BursterParams().burst) if isinstance(a, Checkpoint)]
    assert moved(snap) == []
    whole = Snapshot(NOW, (), (run,), (), (*old, node("n1", for_job="cj"), node("n2", for_job="cj")), (pricey, X8))
    assert moved(whole) == ["p1", "p2"]
    assert terminated(tuple(BursterPolicy().decide(snap).actions)) == [("n1",)]
