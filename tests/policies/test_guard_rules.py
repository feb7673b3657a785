"""Guard rules no policy exercises on its own (found by mutation testing): the soft threshold, the
last-line refusals of busy and protected nodes, and the budget stop's sparing of protected and
leaving nodes. Each is the only test that fails when its rule is removed."""

from __future__ import annotations

from datetime import timedelta

from burster.lifecycle import NodeState
from burster.model import Node, PoolNode, Snapshot, Spend
from burster.plan import Drain, Launch, Plan, Terminate
from policies.budget_stop import enforce_budget
from policies.guards import GuardParams, apply_guards
from tests.policies.test_guards import NOW, OD, SPOT


def _snap(*nodes: Node, spend: Spend | None = None) -> Snapshot:
    return Snapshot(NOW, (), (), (PoolNode("onprem-0", "V100", 8, 0),), nodes, (SPOT, OD), spend=spend or Spend())


def test_past_the_soft_threshold_only_spot_launches_go() -> None:
    guards = GuardParams(total_budget_usd=100.0, soft_fraction=0.8)
    on_demand = Launch(OD, 1, "burst", "rq-od", job_id="a", est_hours=1.0)  # $3.06
    spot = Launch(SPOT, 1, "burst", "rq-sp", job_id="b", est_hours=1.0)  # $0.90
    plan = apply_guards(Plan((on_demand, spot)), _snap(spend=Spend(total_usd=79.0)), guards)
    assert [a.request_id for a in plan.launches] == ["rq-sp"]
    assert "soft threshold" in plan.refused[0][1]


def test_the_guards_refuse_terminating_a_busy_node_and_draining_a_protected_one() -> None:
    busy = Node("c1", SPOT, NodeState.READY, NOW - timedelta(hours=1), "rq1", job_id="j")
    idle = Node("c2", SPOT, NodeState.READY, NOW - timedelta(hours=1), "rq2", idle_since=NOW)
    plan = apply_guards(Plan((Terminate(("c1",), "x", "t1"), Drain("c2", "y"))), _snap(busy, idle),
                        GuardParams(protected_node_ids=frozenset({"c2"})))
    assert not plan.actions and len(plan.refused) == 2


def test_the_budget_stop_spares_protected_nodes_and_nodes_already_leaving() -> None:
    """A node left draining for its cloud to take back free must not be terminated (billed) by us."""
    protected = Node("c1", OD, NodeState.READY, NOW - timedelta(hours=1), "rq1", idle_since=NOW, protected=True)
    leaving = Node("c2", OD, NodeState.DRAINING, NOW - timedelta(hours=1), "rq2")
    stop = enforce_budget(_snap(protected, leaving, spend=Spend(total_usd=1000.0)),
                          GuardParams(total_budget_usd=10.0), 10.0)
    assert stop == []


def test_an_idle_azure_node_goes_at_the_end_of_a_billed_minute_not_the_start() -> None:
    """Azure bills whole minutes: a node idle past its TTL 5 s into a new minute has it paid for."""
    from burster.model import Market, Offering
    from policies.reclaim import ReclaimParams, idle_ttl

    azure = Offering("azure", "eastus", "eastus-1", "NC6", "V100", 1, Market.ON_DEMAND, 3.0)

    def run_for(run_s: float) -> Node:
        return Node("a1", azure, NodeState.READY, NOW - timedelta(seconds=run_s), "r",
                    idle_since=NOW - timedelta(seconds=run_s - 1))

    params = ReclaimParams(idle_ttl_s=300, tick_s=10)
    assert idle_ttl(_snap(run_for(60 * 10 + 55)), params)  # 55 s into a minute: go before the next
    assert not idle_ttl(_snap(run_for(60 * 10 + 5)), params)  # 5 s into a new one: use it up
