"""Rules of policies/consolidate.py that a mutation audit found unpinned: staying is priced with the
current pool's rework, moving with the restart run again on the target; the last node slot goes to
the job on the priciest nodes; and the wake for a deadline job's spot pool (none without room, and
the pool strictly above the rework limit, as one at the limit qualifies already), each
hand-computed."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, Snapshot
from burster.plan import Checkpoint
from policies.consolidate import consolidate, spot_qualifies_at
from policies.cost import CostModel, CostParams
from policies.guards import NodeRoom
from policies.offers import offer_book
from tests.policies.test_consolidate import CHEAP, NOW, PARAMS, PRICEY, launched

CALM = CostModel(CostParams(spot_interruptions_per_hour=0.0, wait_value_usd_per_gpu_hour=0.0))


def running_on(current: Offering, job_id: str = "cj", hours_left: float = 10.0) -> tuple[Placement, Node]:
    """A 1-GPU job started on ``current`` 2 h ago with ``hours_left`` of its run left."""
    job = Demand(job_id, 1, NOW - timedelta(hours=12), (2 + hours_left) * 3600, gpu_model="V100")
    p = Placement(job, (f"{job_id}-1",), NOW - timedelta(hours=2), True, Market.SPOT, current.price_per_hour_usd)
    return p, Node(f"{job_id}-1", current, NodeState.READY, NOW - timedelta(hours=2), "rq", job_id=job_id)


def alone(current: Offering, target: Offering) -> Snapshot:
    p, n = running_on(current)
    return Snapshot(NOW, (), (p,), (), (n,), (current, target))


def test_staying_on_a_flaky_pool_is_priced_with_its_rework() -> None:
    """$0.50/h AWS spot at 2 interruptions/h (a 60 s write on notice and a 300 s restart each: rework
    1/5): 10 h there cost $0.50 x 10 x 6/5 = $6.00; calm Azure at $0.55/h costs $0.55 x (36,000 + 300
    restart + 180 boot - 30 Azure rounding) s = $5.57, plus the $0.01 checkpoint write: the move saves
    $0.42 (without the rework, staying is $5.00)."""
    flaky_pool = replace(PRICEY, price_per_hour_usd=0.5)
    cost = CostModel(replace(CALM.p, interruption_rates={flaky_pool.key: 2.0}))
    calm_target = replace(CHEAP, price_per_hour_usd=0.55)
    assert launched(consolidate(alone(flaky_pool, calm_target), cost, PARAMS)) == [("cj", calm_target.key)]


def test_a_move_pays_for_running_the_restart_again_on_its_target() -> None:
    """Staying: $1.01/h x 10 h = $10.10. Moving to Azure at $1.00/h: (36,000 + 300 restart + 180 boot
    - 30) s = $10.125, plus the old node's 60 s write ($0.017): $10.14, no saving. At $0.99/h: $10.04."""
    assert launched(consolidate(alone(PRICEY, replace(CHEAP, price_per_hour_usd=1.0)), CALM, PARAMS)) == []
    cheaper = replace(CHEAP, price_per_hour_usd=0.99)
    assert launched(consolidate(alone(PRICEY, cheaper), CALM, PARAMS)) == [("cj", cheaper.key)]


def test_with_one_node_slot_left_the_job_on_the_priciest_nodes_moves_first() -> None:
    mid = replace(PRICEY, zone="usw2-az2", price_per_hour_usd=0.8)
    (a, na), (b, nb) = running_on(mid, "a"), running_on(PRICEY, "b")
    snap = Snapshot(NOW, (), (a, b), (), (na, nb), (PRICEY, mid, CHEAP))
    assert launched(consolidate(snap, CALM, PARAMS)) == [("b", CHEAP.key), ("a", CHEAP.key)]
    room = NodeRoom(snap, max_nodes=3)  # two live nodes: one slot
    assert launched(consolidate(snap, CALM, PARAMS, room=room)) == [("b", CHEAP.key)]
    assert [launch.job_id for launch, _ in room.held] == ["a"]


def spot(zone: str) -> Offering:
    return Offering("aws", "us-west-2", zone, "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)


AT_LIMIT, QUARTER = spot("usw2-az1"), spot("usw2-az2")
RATES = CostModel(CostParams(interruption_rates={AT_LIMIT.key: 1.25, QUARTER.key: 2.5}))  # x 360 s / 3600 s: 1/8, 1/4


def deadline_job(room_s: float, left_s: float = 3 * 3600.0) -> Demand:
    """``room_s`` over a changeover (300 s restart + 180 s boot) and the 900 s margin, after a boot."""
    return Demand("dl", 1, NOW, left_s, gpu_model="V100", job_class=JobClass.STRICT,
                  deadline=NOW + timedelta(seconds=left_s + 180 + 1380 + room_s))


def test_the_wake_is_for_the_pool_strictly_above_the_limit_one_at_it_qualifies_now() -> None:
    """Room 1,350 s over 10,800 s left: limit 1/8, the first pool's fraction exactly. The next to
    qualify is the 1/4 pool, at remaining = 1,350 x 4 = 5,400 s."""
    job = deadline_job(1350)
    book = offer_book(Snapshot(NOW, (job,), (), (), (), (AT_LIMIT, QUARTER)), RATES)
    assert spot_qualifies_at(job, NOW, RATES, PARAMS, book) == NOW + timedelta(seconds=10_800 - 5400)


def test_no_wake_for_a_job_with_no_room_for_spot_rework() -> None:
    """No room now, none ever (its slack stays as it runs): no spot pool comes within a limit of 0."""
    job = deadline_job(0)
    book = offer_book(Snapshot(NOW, (job,), (), (), (), (AT_LIMIT, QUARTER)), RATES)
    assert spot_qualifies_at(job, NOW, RATES, PARAMS, book) is None


def test_a_move_that_pays_through_the_current_pools_interruption_pauses_is_not_cut_by_the_bound() -> None:
    """$1.00/h AWS spot at 2 interruptions/h (each a 60 s write on notice and a 300 s restart) runs at
    $1.20 per useful hour; calm Azure at $1.16/h is barely cheaper per hour, but staying also waits out
    20 boots over the 10 h (20 x 180 s x $2.50/GPU-h = $2.50): staying $14.50 against moving $11.75 +
    the $0.02 write + $0.25 for the 360 s pause."""
    flaky_pool = replace(PRICEY, price_per_hour_usd=1.0)
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.0, interruption_rates={flaky_pool.key: 2.0}))
    target = replace(CHEAP, price_per_hour_usd=1.16)
    assert launched(consolidate(alone(flaky_pool, target), cost, PARAMS)) == [("cj", target.key)]


def test_a_deadline_job_moves_while_its_slack_keeps_the_margin_after_the_pause_ties_included() -> None:
    """Slack after a boot of 1,260 s: the 360 s pause (60 s write + 300 s restart) leaves the 900 s margin."""
    def with_slack(slack_s: float) -> Snapshot:
        snap = alone(PRICEY, CHEAP)
        p = snap.running[0]
        job = replace(p.job, job_class=JobClass.STRICT, deadline=NOW + timedelta(seconds=36_000 + 180 + slack_s))
        return replace(snap, running=(replace(p, job=job),))
    assert launched(consolidate(with_slack(1260), CALM, PARAMS)) == [("cj", CHEAP.key)]
    assert launched(consolidate(with_slack(1259), CALM, PARAMS)) == []


def test_a_move_checkpoints_within_its_write_and_as_long_again_at_least_a_minute() -> None:
    slow_write = CostModel(replace(CALM.p, checkpoint_write_s=120.0))
    p, n = running_on(PRICEY)
    up = Node("new", CHEAP, NodeState.READY, NOW - timedelta(minutes=3), "rq9", for_job="cj", idle_since=NOW)
    snap = Snapshot(NOW, (), (p,), (), (n, up), (PRICEY, CHEAP))
    (cp,) = consolidate(snap, slow_write, PARAMS)
    assert isinstance(cp, Checkpoint) and cp.deadline == NOW + timedelta(seconds=240)
    (cp,) = consolidate(snap, CALM, PARAMS)
    assert isinstance(cp, Checkpoint) and cp.deadline == NOW + timedelta(seconds=120)


def test_a_flaky_pools_pauses_are_valued_at_the_jobs_priority_as_the_moves_own_pause_is() -> None:
    """A priority-1 job (waits valued x2), 2 h left on $1.00/h AWS spot at 2 interruptions/h: staying
    costs $1.00 x 2 h x 6/5 = $2.40 plus 4 boots' waits (4 x 180 s x $2.50/GPU-h x 2 = $1.00): $3.40.
    Moving to calm Azure at $1.16/h: $1.16 x (7,200 + 300 + 180 - 30) s = $2.47, the $0.02 write
    and the 360 s pause x $2.50 x 2 = $0.50: $2.98. It moves (with the boots valued x1, $2.90: it stays)."""
    flaky_pool = replace(PRICEY, price_per_hour_usd=1.0)
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.0, interruption_rates={flaky_pool.key: 2.0}))
    target = replace(CHEAP, price_per_hour_usd=1.16)
    p, n = running_on(flaky_pool, hours_left=2.0)
    snap = Snapshot(NOW, (), (replace(p, job=replace(p.job, priority=1)),), (), (n,), (flaky_pool, target))
    assert launched(consolidate(snap, cost, PARAMS)) == [("cj", target.key)]
