"""Uniform Progress switches on hand-built snapshots: on-demand nodes first, then the move."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, Snapshot
from burster.plan import Checkpoint, Launch, Terminate
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


@pytest.mark.parametrize(("slack_s", "switched"), [(359.0, False), (0.0, False), (360.0, True)])
def test_a_job_whose_move_would_make_it_late_stays_on_spot(slack_s: float, switched: bool) -> None:
    """Under the 360 s changeover of slack, the move would miss the deadline for certain where staying
    misses it only if interrupted: it stays; from the changeover up it is behind and moves."""
    assert bool(switch_behind_schedule(snapshot(slack_s), COST, MARGIN)) == switched


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


@pytest.mark.parametrize("move_state", [NodeState.LAUNCHING, NodeState.READY])
def test_a_job_behind_on_spot_drops_a_move_to_cheaper_spot_for_on_demand(move_state: NodeState) -> None:
    """A move to a cheaper spot pool was under way (consolidation's node for the job) when the job
    fell behind: the switch does not take that spot node for its on-demand one (it would be behind
    there again, a second changeover later); it drops the move and launches on-demand, and the
    same pass does not move the job onto the spot node either."""
    from policies.burster import BursterPolicy

    cheap = Offering("aws", "us-west-2", "usw2-az2", "p3.2xlarge", "V100", 1, Market.SPOT, 0.5)
    job = Demand("dl", 1, NOW - timedelta(hours=1), 3600.0, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=3600 + 600))  # 600 s of slack: behind
    running = (Placement(job, ("old",), NOW, True, Market.SPOT, SPOT.price_per_hour_usd),)
    nodes = (Node("old", SPOT, NodeState.READY, NOW - timedelta(minutes=3), "r0", job_id="dl", for_job="dl"),
             Node("move", cheap, move_state, NOW - timedelta(seconds=200), "r1", for_job="dl",
                  idle_since=NOW if move_state is NodeState.READY else None))
    snap = Snapshot(NOW, (), running, (), nodes, (SPOT, cheap, OD))
    plan = BursterPolicy(COST).decide(snap)
    (drop,) = [a for a in plan.actions if isinstance(a, Terminate)]
    assert drop.node_ids == ("move",) and "drop its move to spot (move) for on-demand" in drop.reason
    (launch,) = plan.launches
    assert launch.job_id == "dl" and launch.offering == OD
    assert not [a for a in plan.actions if isinstance(a, Checkpoint)]


def test_a_job_switched_to_on_demand_gets_no_move_to_cheaper_spot_in_the_same_pass() -> None:
    """The risk switch launches on-demand for a job on a risky spot pool (a 30 s notice: no time to
    checkpoint); consolidation, later in the same pass, must not also launch a cheaper spot node for
    it (two nodes for one job: one idles and bills, and the switch is undone if it lands on spot)."""
    from policies.burster import BursterPolicy

    gcp = Offering("gcp", "us-central1", "us-central1-a", "n1-v100-1", "V100", 1, Market.SPOT, 2.0)
    cheap = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
    job = Demand("dl", 1, NOW - timedelta(minutes=10), 3 * 3600.0, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=3 * 3600 + 1700))
    running = (Placement(job, ("old",), NOW, True, Market.SPOT, gcp.price_per_hour_usd),)
    node = Node("old", gcp, NodeState.READY, NOW - timedelta(minutes=3), "rq", job_id="dl", for_job="dl")
    snap = Snapshot(NOW + timedelta(seconds=60), (), running, (), (node,), (gcp, cheap, OD))
    plan = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.01))).decide(snap)
    assert [(a.job_id, a.offering) for a in plan.launches] == [("dl", OD)]
