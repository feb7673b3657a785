"""The budget stop of a run younger than a checkpoint write: due at once, with no write. The pool gives
another team's idle node to a queued job of a team at its hard budget; the node's bill is that team's
from the job's start (burster/node_bills.py). Given the stop's grace, each such start billed the team a
checkpoint write and more past its budget (a fuzzed simulation: $3.17 on a $2.00 daily budget)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, Market, Node, Placement, Snapshot, Spend
from burster.plan import Checkpoint
from policies.budget_stop import enforce_budget, enforce_team_budgets
from policies.guards import GuardParams
from tests.policies.test_guards import NOW, OD

GUARDS = GuardParams(team_budget_usd={"ml": 2.0}, stop_grace_s=600.0, checkpoint_write_s=300.0)


def _running(age_s: float | None, *, team: str = "ml", spent: float = 2.0) -> Snapshot:
    """Team ``team`` at ``spent`` of its $2.00; its job j on node c1 (launched for another team's job),
    begun ``age_s`` ago (None: the pool reports no run there)."""
    job = Demand("j", 8, NOW - timedelta(hours=1), 3600.0, nodes=1, gpu_model="V100", team=team)
    node = Node("c1", OD, NodeState.READY, NOW - timedelta(hours=1), "rq-c1", job_id="j", for_job=None, team=team)
    begun = None if age_s is None else NOW - timedelta(seconds=age_s)
    running = () if begun is None else (Placement(job, ("c1",), begun, True, Market.ON_DEMAND),)
    return Snapshot(NOW, (), running, (), (node,), (OD,), spend=Spend(total_usd=spent, by_team_usd=((team, spent),)))


def test_a_run_younger_than_a_checkpoint_write_is_stopped_without_one() -> None:
    (stop,) = enforce_team_budgets(_running(8.0), GUARDS, 10.0)
    assert isinstance(stop, Checkpoint) and stop.deadline == NOW and stop.node_id == "c1"
    assert stop.reason == ("team ml's hard budget $2.00 reached: stop c1 (job j began there 8s ago, less than "
                           "a checkpoint write: drained without one)")


@pytest.mark.parametrize("age_s", [300.0, 3000.0, None])
def test_an_older_run_or_one_the_pool_does_not_report_is_given_the_grace(age_s: float | None) -> None:
    (stop,) = enforce_team_budgets(_running(age_s), GUARDS, 10.0)
    assert isinstance(stop, Checkpoint) and stop.deadline == NOW + timedelta(seconds=600)
    assert stop.reason == "team ml's hard budget $2.00 reached: stop c1"


@pytest.mark.parametrize(("age_s", "tick_s", "due_now"), [(200.0, 10.0, True), (320.0, 600.0, True),
                                                        (320.0, 300.0, False), (300.0, 300.0, False)])
def test_a_run_begun_since_the_last_pass_is_stopped_without_one_whatever_the_write(
        age_s: float, tick_s: float, due_now: bool) -> None:
    """Passes a tick apart: a run younger than a tick was started by the pool since the last pass (a
    write of 300 s here; with passes ten minutes apart, a run of 320 s is one of them too)."""
    (stop,) = enforce_team_budgets(_running(age_s), GUARDS, tick_s)
    assert isinstance(stop, Checkpoint)
    assert stop.deadline == (NOW if due_now else NOW + timedelta(seconds=600))
    if due_now and age_s >= GUARDS.checkpoint_write_s:
        assert stop.reason.endswith(f"began there {age_s:.0f}s ago, less than a tick: drained without one)")


def test_the_global_budget_stops_a_young_run_alike() -> None:
    guards = replace(GUARDS, team_budget_usd={}, total_budget_usd=2.0)
    (stop,) = enforce_budget(_running(30.0, team=""), guards, 10.0)
    assert isinstance(stop, Checkpoint) and stop.deadline == NOW and "began there 30s ago" in stop.reason


def test_a_team_with_room_is_not_stopped() -> None:
    assert enforce_team_budgets(_running(8.0, spent=0.9), GUARDS, 10.0) == []  # 0.90 + 3.06/h x 1210 s fits
