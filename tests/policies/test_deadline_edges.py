"""Rules of policies/deadline.py that a mutation audit found unpinned: a best-effort job's deadline is
never switched for; a run with no more than a changeover left stays; a run that ends exactly at its
deadline stays (the move would make it late); the switch's launch is budgeted at the remaining run
plus a boot."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Placement, Snapshot
from burster.plan import Checkpoint, Launch
from policies.cost import CostModel
from policies.deadline import switch_behind_schedule
from tests.policies.test_deadline import COST, MARGIN, NOW, OD, RISKY, SPOT, snapshot, started_on_spot


def with_job(snap: Snapshot, **changes: object) -> Snapshot:
    p = snap.running[0]
    return replace(snap, running=(replace(p, job=replace(p.job, **changes)),))


def left_on_spot(left_s: float) -> Snapshot:
    """A strict job started on spot an hour ago with ``left_s`` of its run left and a changeover's slack
    (360 s: behind, but a move would still make its deadline)."""
    start = NOW - timedelta(hours=1)
    job = Demand("dl", 1, start, 3600 + left_s, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=left_s + 360))
    p = Placement(job, ("spot-1",), start, True, Market.SPOT, SPOT.price_per_hour_usd)
    node = Node("spot-1", SPOT, NodeState.READY, start, "rq", job_id="dl", for_job="dl")
    return Snapshot(NOW, (), (p,), (), (node,), (SPOT, OD))


def test_a_best_effort_job_behind_its_deadline_is_not_switched() -> None:
    assert switch_behind_schedule(snapshot(1000), COST, MARGIN) != []
    assert switch_behind_schedule(with_job(snapshot(1000), job_class=JobClass.BEST_EFFORT), COST, MARGIN) == []
    assert switch_behind_schedule(with_job(snapshot(1000), job_class=JobClass.SOFT), COST, MARGIN) != []


def test_a_run_with_no_more_than_a_changeover_left_finishes_where_it_is() -> None:
    assert switch_behind_schedule(left_on_spot(360), COST, MARGIN) == []  # changeover: 60 s write + 300 s restart
    (launch,) = switch_behind_schedule(left_on_spot(361), COST, MARGIN)
    assert isinstance(launch, Launch) and launch.offering is OD


def test_a_run_ending_exactly_at_its_deadline_stays_where_the_move_would_make_it_late() -> None:
    """No slack: its estimate makes the deadline on spot, but not after the move's 360 s changeover, so
    it stays (a run past its deadline is weighed by ``price_late`` instead); a changeover's slack
    switches it."""
    assert switch_behind_schedule(snapshot(0), COST, MARGIN, price_late=True) == []
    assert switch_behind_schedule(snapshot(-1), COST, MARGIN, price_late=True) == []
    (launch,) = switch_behind_schedule(snapshot(360), COST, MARGIN, price_late=True)
    assert isinstance(launch, Launch) and launch.offering is OD


def test_the_switch_launch_is_budgeted_at_the_run_left_plus_a_boot() -> None:
    (launch,) = switch_behind_schedule(snapshot(1000), COST, MARGIN)
    assert isinstance(launch, Launch) and launch.est_hours == (7200 + 180) / 3600


def test_the_risk_switch_charges_the_move_its_changeover_run_on_on_demand() -> None:
    """The 34-min job on Azure spot at 0.5 interruptions/h with 1,500 s of slack: its expected miss is
    0.1027 of the miss $. Moving costs on-demand for the run left plus the 360 s changeover
    ($3.06/h x (2,400 + 180.5 s) = $2.19) less spot's $0.63: $1.56 (without the changeover, $1.25).
    A $14 miss ($1.44 expected) does not pay for it; a $20 one ($2.05) does."""
    def switches(miss_usd: float) -> bool:
        cost = CostModel(replace(RISKY.p, deadline_miss_usd=miss_usd))
        return switch_behind_schedule(started_on_spot(), cost, MARGIN, price_risk=True) != []
    assert not switches(14.0)
    assert switches(20.0)


def test_a_switch_checkpoint_is_due_after_its_write_and_as_long_again_whatever_the_restart() -> None:
    """A write's deadline leaves it time: write + max(write, 60 s). It used to be the restart time
    capped at five minutes, which a 10-minute write never met."""
    (cp,) = switch_behind_schedule(snapshot(1000, offerings=(SPOT,)), COST, MARGIN)  # no on-demand: requeue
    assert isinstance(cp, Checkpoint) and cp.deadline == NOW + timedelta(seconds=120)
    quick = CostModel(replace(COST.p, restart_overhead_s=30))
    (cp,) = switch_behind_schedule(snapshot(500, offerings=(SPOT,)), quick, MARGIN)
    assert isinstance(cp, Checkpoint) and cp.deadline == NOW + timedelta(seconds=120)
    slow = CostModel(replace(COST.p, checkpoint_write_s=600))
    (cp,) = switch_behind_schedule(snapshot(1000, offerings=(SPOT,)), slow, MARGIN)
    assert isinstance(cp, Checkpoint) and cp.deadline == NOW + timedelta(seconds=1200)
