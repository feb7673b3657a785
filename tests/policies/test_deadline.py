"""Uniform Progress switches on hand-built snapshots: on-demand nodes first, then the move."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, Snapshot
from burster.plan import Checkpoint, Launch
from policies.cost import CostModel, CostParams
from policies.deadline import switch_behind_schedule

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(restart_overhead_s=300, launch_latency_s=180, checkpoint_write_s=60))
# changeover: checkpoint write + restart = 360 s (the job runs on spot while its on-demand node boots)
MARGIN = 900.0


def snapshot(slack_s: float, *, offerings: tuple[Offering, ...] = (SPOT, OD),
             extra: tuple[Node, ...] = ()) -> Snapshot:
    """A strict deadline job with 2 h left on a spot node, ``slack_s`` of slack."""
    left = 2 * 3600.0
    job = Demand("dl", 1, NOW - timedelta(hours=1), 3600 + left, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=left + slack_s))
    p = Placement(job, ("spot-1",), NOW - timedelta(hours=1), True, Market.SPOT, SPOT.price_per_hour_usd)
    node = Node("spot-1", SPOT, NodeState.READY, NOW - timedelta(hours=1), "rq", job_id="dl", for_job="dl")
    return Snapshot(NOW, (), (p,), (), (node, *extra), offerings)


def test_a_job_ahead_of_schedule_stays_on_spot() -> None:
    assert switch_behind_schedule(snapshot(360 + MARGIN), COST, MARGIN) == []


def test_a_job_behind_schedule_gets_on_demand_nodes_launched_while_it_keeps_running() -> None:
    (launch,) = switch_behind_schedule(snapshot(1000), COST, MARGIN)
    assert isinstance(launch, Launch)
    assert (launch.offering, launch.count, launch.job_id) == (OD, 1, "dl")
    assert "1000s slack < changeover 360s + margin 900s" in launch.reason


def test_it_waits_for_its_nodes_and_moves_once_all_are_up() -> None:
    booting = Node("od-1", OD, NodeState.LAUNCHING, NOW, "rq-switch", for_job="dl")
    assert switch_behind_schedule(snapshot(1000, extra=(booting,)), COST, MARGIN) == []
    up = replace(booting, state=NodeState.READY, idle_since=NOW)
    (cp,) = switch_behind_schedule(snapshot(1000, extra=(up,)), COST, MARGIN)
    assert isinstance(cp, Checkpoint) and (cp.node_id, cp.job_id) == ("spot-1", "dl")
    assert "on-demand nodes are up" in cp.reason


def test_with_no_on_demand_launchable_it_checkpoints_and_requeues_at_once() -> None:
    (cp,) = switch_behind_schedule(snapshot(1000, offerings=(SPOT,)), COST, MARGIN)
    assert isinstance(cp, Checkpoint) and "no on-demand offering launchable" in cp.reason


RISKY = CostModel(CostParams(restart_overhead_s=300, launch_latency_s=180, checkpoint_write_s=60,
                             spot_interruptions_per_hour=0.5))


def started_on_spot(job_class: JobClass = JobClass.STRICT, offering: Offering = SPOT) -> Snapshot:
    """A 34-min job the pool just started on an idle spot node, 1500 s of slack (not behind)."""
    job = Demand("dl", 1, NOW, 2040.0, gpu_model="V100", job_class=job_class,
                 deadline=NOW + timedelta(seconds=2040 + 1500))
    p = Placement(job, ("spot-1",), NOW, True, Market.SPOT, offering.price_per_hour_usd)
    node = Node("spot-1", offering, NodeState.READY, NOW - timedelta(hours=1), "rq", job_id="dl", for_job="s0")
    return Snapshot(NOW, (), (p,), (), (node,), (offering, OD))


def test_a_run_whose_interruption_risk_costs_more_than_on_demand_moves_there() -> None:
    (launch,) = switch_behind_schedule(started_on_spot(), RISKY, MARGIN, price_risk=True)
    assert isinstance(launch, Launch) and (launch.offering, launch.job_id) == (OD, "dl")
    assert "risks its deadline" in launch.reason and "expected miss $" in launch.reason
    assert switch_behind_schedule(started_on_spot(), RISKY, MARGIN) == []  # the rule is opt-in here


def test_no_risk_move_when_the_risk_is_cheap_or_a_notice_saves_the_work() -> None:
    calm = CostModel(replace(RISKY.p, spot_interruptions_per_hour=0.001))
    assert switch_behind_schedule(started_on_spot(), calm, MARGIN, price_risk=True) == []
    aws_spot = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
    assert switch_behind_schedule(started_on_spot(offering=aws_spot), RISKY, MARGIN, price_risk=True) == []
    assert switch_behind_schedule(started_on_spot(JobClass.BEST_EFFORT), RISKY, MARGIN, price_risk=True) == []
