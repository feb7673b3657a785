"""A pool that cannot be read (slurmctld or the API server down): the pass decides nothing but what the
hard budgets demand (``Policy.budget_stop``), and the nodes the stop ends are terminated at once,
without a checkpoint, a drain the pool refuses holding nothing up."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from burster.errors import TransientError
from burster.lifecycle import NodeState
from burster.model import Snapshot, Spend
from burster.reconciler import Reconciler
from policies.baselines import OnDemandPolicy, ReservedOnlyPolicy
from policies.budget_stop import blind_stop
from policies.guards import GuardParams
from tests.test_budget_under_faults import _budgeted_world
from tests.test_reconcile_failures import _running_on_a_burst_node
from tests.test_reconciler import CHEAP, DEAR, T0, World

DOWN = "pool: slurmctld not responding"


def _pass_with_the_pool_down(w: World, seconds: float = 10) -> object:
    w.clock.advance(seconds)
    w.pool.fail_pending = TransientError(DOWN)
    return w.rec.run_once()


def _billed_usd(w: World) -> float:
    now = w.clock.now()
    return float(sum(e.usd for e in w.rec.state.ledger)) + sum(u for _, u in w.rec.nodes.accrued_usd_all(now))


def test_an_idle_node_is_stopped_at_the_hard_budget_while_the_pool_is_down() -> None:
    """Before, such a pass decided nothing: a node adopted while the pool was down billed on past
    the budget for as long as the outage lasted."""
    w = _budgeted_world(budget_usd=1.0)
    w.cloud.launch(CHEAP, 1, request_id="earlier-run")  # $10/h, known only from its tag
    reports = [_pass_with_the_pool_down(w) for _ in range(60)]  # ten minutes of outage
    stops = [a for r in reports for a in r.plan.terminates]  # type: ignore[attr-defined]
    (stop,) = stops
    assert "hard budget $1.00/month reached" in stop.reason and "the pool could not be read" in stop.reason
    assert w.cloud.list_nodes() == []
    horizon_usd = 10.0 * (10 + 2 * GuardParams().stop_grace_s) / 3600  # the stop's reach: a tick and its grace
    assert _billed_usd(w) <= 1.0 + horizon_usd
    assert all(r.errors[-1] == f"pool unreadable, only the hard budgets decided: {DOWN}"  # type: ignore[attr-defined]
               for r in reports)


def test_a_busy_node_is_terminated_without_a_checkpoint_when_the_pool_refuses_its_drain() -> None:
    """The budget lowered (a restart with a new config) while the pool is down: b's node goes at
    once, its drain refused; nothing is asked of the pool that does not answer."""
    w = _budgeted_world(budget_usd=100.0)
    node_id = _running_on_a_burst_node(w)
    w.clock.advance(1800)
    w.rec.run_once()  # $5 spent on b's node by now
    lowered = replace(w.rec.policy.params, guards=GuardParams(total_budget_usd=4.0))  # type: ignore[attr-defined]
    w.rec = Reconciler(providers={"fake": w.cloud}, pool=w.pool, policy=type(w.rec.policy)(w.rec.policy.cost, lowered),
                       clock=w.clock, state=w.rec.state)
    w.pool.fail_drain = TransientError(DOWN)
    report = _pass_with_the_pool_down(w)
    (stop,) = report.plan.actions  # type: ignore[attr-defined]
    assert stop.node_ids == (node_id,) and "terminated without a checkpoint" in stop.reason
    assert w.rec.state.nodes[node_id].state is NodeState.TERMINATED and node_id not in w.rec.state.tickets
    assert w.cloud.list_nodes() == []


def test_under_the_budget_a_pool_down_pass_stops_nothing() -> None:
    w = _budgeted_world(budget_usd=100.0)
    node_id = _running_on_a_burst_node(w)
    for _ in range(3):
        assert _pass_with_the_pool_down(w, 600).plan.actions == ()  # type: ignore[attr-defined]
    assert w.rec.state.nodes[node_id].state is NodeState.READY


def test_the_blind_stop_terminates_what_the_stop_would_checkpoint_and_baselines_share_it() -> None:
    w = World()
    w.cloud.launch(DEAR, 1, request_id="x")
    w.rec.run_once()
    (node,) = w.rec.nodes.blind_nodes()
    busy = replace(node, state=NodeState.READY, job_id="j", team="vision")
    snap = Snapshot(now=T0 + timedelta(hours=1), pending=(), running=(), pool_nodes=(), cloud_nodes=(busy,),
                    offerings=(), spend=Spend(9.9))
    guards = GuardParams(total_budget_usd=10.0)
    (stop,) = blind_stop(snap, guards, 10.0).actions
    assert stop.node_ids == (node.node_id,) and "job" not in stop.reason.split(":")[0]
    assert OnDemandPolicy(guards=guards).budget_stop(snap).actions == (stop,)
    assert ReservedOnlyPolicy(guards=guards).budget_stop(snap).actions == ()
    assert blind_stop(replace(snap, spend=Spend(1.0)), guards, 10.0).actions == ()
