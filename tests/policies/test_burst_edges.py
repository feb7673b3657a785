"""Edges of the burst rule (policies/burst.py, policies/offers.py) a mutation audit found unpinned:
boundaries, gang and GPU-model limits, held nodes, the projection's order, caches and market rules."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Signal, Snapshot
from policies.burst import BurstParams, burst
from policies.cost import CostModel, CostParams
from policies.offers import ANY, ON_DEMAND_ONLY, SPOT_ONLY, OfferBook
from policies.standby import Standby

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
QUAD = Offering("aws", "us-west-2", "usw2-az1", "p3.8xlarge", "V100", 4, Market.SPOT, 3.6)
A100 = Offering("aws", "us-west-2", "usw2-az1", "p4d.24xlarge", "A100", 8, Market.SPOT, 9.0)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0, restart_overhead_s=300, launch_latency_s=180,
                            wait_value_usd_per_gpu_hour=0.0, deadline_miss_usd=0.0))
PARAMS = BurstParams(max_wait_s=600, wait_fraction=0.25, deadline_margin_s=900, prewarm=False, cost_trigger=False)


def job(job_id: str = "j", gpus: int = 1, *, waited_s: float = 0.0, runtime_s: float = 3_600, nodes: int = 1,
        queued_s: float | None = None, **kw: Any) -> Demand:
    """A V100 job submitted ``waited_s`` ago (budget max(600, runtime / 4)), queued ``queued_s`` ago."""
    queued = None if queued_s is None else NOW - timedelta(seconds=queued_s)
    return Demand(job_id, gpus, NOW - timedelta(seconds=waited_s), runtime_s, nodes=nodes, gpu_model="V100",
                  queued_at=queued, **kw)


def busy_pool(*pending: Demand, busy_for_s: float = 100_000, free: int = 0, held_for: tuple[str, ...] = (),
              offerings: tuple[Offering, ...] = (SPOT, OD)) -> Snapshot:
    """One 8-GPU V100 node, ``free`` GPUs free, the rest run by a job that ends in ``busy_for_s``."""
    hog = Demand("hog", 8 - free, NOW - timedelta(hours=1), 3_600 + busy_for_s, gpu_model="V100")
    running = (Placement(hog, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED),) if free < 8 else ()
    return Snapshot(NOW, pending, running, (PoolNode("onprem-0", "V100", 8, free, held_for),), (), offerings)


def idle(offering: Offering = SPOT, node_id: str = "idle-0") -> Node:
    return Node(node_id, offering, NodeState.READY, NOW - timedelta(hours=1), "rq-0", idle_since=NOW)


def ids(snap: Snapshot, cost: CostModel = COST, params: BurstParams = PARAMS) -> list[str | None]:
    return [launch.job_id for launch in burst(snap, cost, params)]


# --- markets --------------------------------------------------------------------------------------

def test_a_market_order_with_nothing_launchable_in_it_launches_nothing() -> None:
    """``market_order`` (spot only here) is the whole choice: with no spot offering the job stays
    queued, it does not fall back to the unrestricted cheapest (on-demand)."""
    snap = busy_pool(job(waited_s=2_000), offerings=(OD,))
    assert ids(snap, params=replace(PARAMS, market_order=(SPOT_ONLY,))) == []
    assert ids(snap, params=replace(PARAMS, market_order=(SPOT_ONLY, ON_DEMAND_ONLY))) == ["j"]


# --- idle burst nodes -----------------------------------------------------------------------------

def test_a_two_node_gang_does_not_count_on_one_idle_node() -> None:
    """A gang gets a fresh, co-located launch of all its nodes, even with an idle 4-GPU node that fits it all."""
    (launch,) = burst(replace(busy_pool(job("gang", 2, nodes=2)), cloud_nodes=(idle(QUAD),)), COST, PARAMS)
    assert launch.count == 2


def test_an_idle_node_of_another_gpu_model_is_not_counted_on() -> None:
    """A V100 job past its budget is launched for, though an (8-GPU) A100 node sits idle."""
    assert ids(replace(busy_pool(job()), cloud_nodes=(idle(A100),))) == ["j"]
    assert ids(replace(busy_pool(job()), cloud_nodes=(idle(),))) == []  # a V100 one takes it


def test_a_job_the_pool_starts_now_leaves_the_idle_node_to_one_that_must_burst() -> None:
    """The pool's one free GPU goes to ``a`` (first in the queue, requeued 10 s ago: fresh, no claim on
    idle nodes); ``b`` queues behind it for 100000 s, past its 900 s budget, and takes the idle node.
    Had ``a`` claimed the node, ``b`` (now first for the free GPU, but with 2 GPUs of demand on 1 free,
    not surely started) would launch."""
    a = job("a", waited_s=2_000, queued_s=10)
    b = job("b", waited_s=1_500)
    taken: set[str] = set()
    snap = replace(busy_pool(a, b, free=1), cloud_nodes=(idle(),))
    assert burst(snap, COST, PARAMS, taken=taken) == [] and taken == {"idle-0"}


# --- jobs the pool surely starts --------------------------------------------------------------------

def test_a_job_is_surely_started_when_free_gpus_exactly_cover_it_and_the_queue() -> None:
    """Queued for long and past its budget, a 2-GPU job on a node with exactly 2 free GPUs (all the
    pending demand, and one node fits it) is left to the pool: no launch."""
    assert ids(busy_pool(job(gpus=2, waited_s=2_000), free=2)) == []
    assert ids(busy_pool(job(gpus=2, waited_s=2_000), free=1)) == ["j"]  # 1 free: no wait of 0


def test_a_held_nodes_free_gpus_do_not_make_another_job_surely_start() -> None:
    """A second, 8-GPU node is free but held for ``big`` (queued behind ``j``); the 4 unheld free GPUs
    fit ``j`` now, but not all the pending demand (2 + 4): past its budget, ``j`` bursts."""
    j, big = job(gpus=2, waited_s=2_000), job("big", 4, waited_s=100)
    snap = busy_pool(j, big, free=4)
    snap = replace(snap, pool_nodes=(*snap.pool_nodes, PoolNode("onprem-1", "V100", 8, 8, ("big",))))
    assert ids(snap) == ["j"]


def test_a_gang_is_never_surely_started() -> None:
    """A 2-node gang whose wait projects to 0 (8 free GPUs), queued long and past its budget, bursts."""
    (launch,) = burst(busy_pool(job("gang", 2, nodes=2, waited_s=2_000), free=8), COST, PARAMS)
    assert launch.count == 2 and "look free" in launch.reason


def test_a_job_queued_exactly_a_scheduler_cycle_ago_counts_as_stuck() -> None:
    """``stuck_after_s`` (60 s) is a strict bound: queued 60 s, on fragmented GPUs, past its budget, it bursts."""
    frag = Snapshot(NOW, (job(gpus=2, waited_s=2_000, queued_s=60),), (),
                    (PoolNode("onprem-0", "V100", 8, 1), PoolNode("onprem-1", "V100", 8, 1)), (), (SPOT, OD))
    assert ids(frag) == ["j"]
    assert ids(replace(frag, pending=(job(gpus=2, waited_s=2_000, queued_s=59),))) == []


def test_a_higher_priority_job_is_projected_first_though_submitted_later() -> None:
    """Both 8-GPU, 10 h jobs (budget 9000 s) want the one node, free in 3000 s. ``hi`` (priority 1,
    submitted later) is projected first and waits; ``lo`` queues behind it, beyond the horizon, and bursts."""
    lo, hi = job("lo", 8, waited_s=200, runtime_s=36_000), job("hi", 8, waited_s=100, runtime_s=36_000, priority=1)
    assert ids(busy_pool(lo, hi, busy_for_s=3_000)) == ["lo"]


# --- nodes held for a job ----------------------------------------------------------------------------

def held(j: Demand, free: int, busy_for_s: float = 100_000) -> Snapshot:
    return busy_pool(j, busy_for_s=busy_for_s, free=free, held_for=(j.job_id,))


def test_a_job_whose_held_node_has_room_exactly_a_boot_away_waits_for_it() -> None:
    """The held node frees in 180 s, the launch latency: it waits (past its budget); in 181 s, it bursts."""
    assert ids(held(job(waited_s=2_000), free=0, busy_for_s=180)) == []
    assert ids(held(job(waited_s=2_000), free=0, busy_for_s=181)) == ["j"]


def test_a_job_whose_held_node_has_exactly_its_gpus_free_waits_for_it() -> None:
    """8 of 8 GPUs free on the node held for an 8-GPU job: it starts there, past its budget or not."""
    assert ids(held(job(gpus=8, waited_s=2_000), free=8)) == []


# --- deferral ------------------------------------------------------------------------------------------

DEFER = replace(PARAMS, defer_to_budget=True, cost_trigger=True)
PRICED = CostModel(replace(COST.p, wait_value_usd_per_gpu_hour=10.0))


def test_a_deferring_job_past_its_deferral_waits_for_the_pool_exactly_a_boot_away() -> None:
    """10 h job (budget 9000 s), waited 8800 s: 100 s past its deferral. Reserved GPUs in exactly a
    boot (180 s): the pool starts it no later than a launch would, so it waits."""
    assert ids(busy_pool(job(waited_s=8_800, runtime_s=36_000), busy_for_s=180), PRICED, DEFER) == []
    assert ids(busy_pool(job(waited_s=8_800, runtime_s=36_000), busy_for_s=181), PRICED, DEFER) == ["j"]


def test_a_deferring_job_with_no_deferral_left_wakes_the_simulation_now() -> None:
    """Waited 8700 s of 9000: 9000 - 8700 - boot 180 - margin 120 = 0 s left. It still waits (the rule
    fires strictly past it), and asks for a pass now, where it first may."""
    wakes: list[datetime] = []
    j = job(waited_s=8_700, runtime_s=36_000)
    assert burst(busy_pool(j, busy_for_s=1_300), PRICED, DEFER, wakes=wakes) == [] and wakes == [NOW]


# --- wait budget, spot slack, deadline margin, cost -----------------------------------------------------

def test_a_wait_that_ends_exactly_at_the_budget_is_within_it() -> None:
    """1 h job, budget 900 s: reserved GPUs in 900 s keep it queued; in 901 s, it bursts."""
    assert ids(busy_pool(job(), busy_for_s=900)) == []
    assert ids(busy_pool(job(), busy_for_s=901)) == ["j"]


def dl(slack: float, runtime_s: float = 3_600, gpus: int = 1, waited_s: float = 0.0) -> Demand:
    """A strict V100 job whose deadline slack (``slack_s``: deadline - now - work - boot) is ``slack``."""
    return Demand("dl", gpus, NOW - timedelta(seconds=waited_s), runtime_s, gpu_model="V100",
                  job_class=JobClass.STRICT, deadline=NOW + timedelta(seconds=runtime_s + slack + 180))


def test_the_spot_slack_rule_fires_at_zero_spare_and_not_when_the_wait_uses_it_exactly() -> None:
    """Spot slack = slack - changeover 480 - margin 900 (no rework). A 300 s wait: at 0 s of spot slack
    it bursts to spot; with exactly 300 s it waits (leaving 1380 s of slack, over the margin)."""
    (launch,) = burst(busy_pool(dl(1_380), busy_for_s=300), COST, PARAMS)
    assert launch.offering == SPOT and "too little deadline slack to run on spot" in launch.reason
    assert ids(busy_pool(dl(1_680), busy_for_s=300)) == []
    assert ids(busy_pool(dl(1_680), busy_for_s=301)) == ["dl"]


def test_a_stuck_job_is_taken_to_wait_a_scheduler_cycle_against_its_spot_slack() -> None:
    """Projected wait 0 but stuck on fragmented GPUs, with 30 s of spot slack: it would wait a cycle
    (60 s) at least, past the spot slack, so it bursts, though within its budget and its margin."""
    frag = Snapshot(NOW, (dl(1_410, gpus=2, waited_s=100),), (),
                    (PoolNode("onprem-0", "V100", 8, 1), PoolNode("onprem-1", "V100", 8, 1)), (), (SPOT, OD))
    (launch,) = burst(frag, COST, PARAMS)
    assert launch.offering == SPOT and "waiting 60s" in launch.reason


def test_a_wait_that_leaves_exactly_the_deadline_margin_is_allowed() -> None:
    """On-demand only: slack 3900 s, wait 3000 s leaves exactly the 900 s margin: it waits; 3001 s: it bursts."""
    assert ids(busy_pool(dl(3_900, runtime_s=36_000), busy_for_s=3_000, offerings=(OD,))) == []
    assert ids(busy_pool(dl(3_900, runtime_s=36_000), busy_for_s=3_001, offerings=(OD,))) == ["dl"]


def test_the_cost_trigger_needs_waiting_to_cost_strictly_more_than_the_cloud() -> None:
    """Spot: 0.9 $/h x (3419.5 s + boot 180 + half a second's billing) = $0.90; waiting 1800 s at
    1.8 $/GPU-h = $0.90 too: it waits. At 1.81 $/GPU-h waiting costs more: it bursts."""
    params = replace(PARAMS, cost_trigger=True, max_wait_s=5_000)
    j = job(runtime_s=3_419.5)
    for value, want in ((1.8, []), (1.81, ["j"])):
        cost = CostModel(replace(COST.p, wait_value_usd_per_gpu_hour=value))
        assert ids(busy_pool(j, busy_for_s=1_800), cost, params) == want


def test_a_launch_budgets_the_remaining_work_and_the_boot() -> None:
    (launch,) = burst(busy_pool(job(runtime_s=3_600, done_s=1_800)), COST, PARAMS)
    assert launch.est_hours == (1_800 + 180) / 3_600


# --- wakes of a job stuck at a projected wait of 0 -------------------------------------------------------

def fragmented(*pending: Demand) -> Snapshot:
    """Two 8-GPU nodes with 1 GPU free each: a wait of 0 for a 2-GPU job, but no node fits it."""
    return Snapshot(NOW, pending, (), (PoolNode("onprem-0", "V100", 8, 1), PoolNode("onprem-1", "V100", 8, 1)),
                    (), (SPOT, OD))


def test_a_stuck_deadline_job_wakes_at_its_budget_its_spot_slack_and_its_margin() -> None:
    """Waited 300 s of 900; slack 2000 s, spot slack 620 s: wakes at 600 s (budget), 620 - a cycle 60 s
    (spot slack), 2000 - 60 - 900 (margin)."""
    wakes: list[datetime] = []
    assert burst(fragmented(dl(2_000, gpus=2, waited_s=300)), COST, PARAMS, wakes=wakes) == []
    assert sorted(wakes) == [NOW + timedelta(seconds=s) for s in (560, 600, 1_040)]


def test_a_stuck_job_exactly_at_its_budget_wakes_the_simulation_now() -> None:
    wakes: list[datetime] = []
    assert burst(fragmented(job(gpus=2, waited_s=900)), COST, PARAMS, wakes=wakes) == [] and wakes == [NOW]


def test_a_wake_is_rounded_down_to_the_microsecond() -> None:
    """Budget 0.25 x 3600.0000004 s = 900.0000001 s: waited 300 s, it wakes at 600 s, not 600.000001 s."""
    wakes: list[datetime] = []
    assert burst(fragmented(job(gpus=2, waited_s=300, runtime_s=3_600.0000004)), COST, PARAMS, wakes=wakes) == []
    assert wakes == [NOW + timedelta(seconds=600)]


# --- nodes launched for a job, idle nodes -------------------------------------------------------------------

def test_a_job_whose_node_failed_is_launched_for_again() -> None:
    """A node launched for ``j`` serves it while it boots or is up, not once it failed or went."""
    base = busy_pool(job(waited_s=2_000))
    for state, want in ((NodeState.JOINING, []), (NodeState.FAILED, ["j"]), (NodeState.TERMINATED, ["j"])):
        node = Node("n-j", SPOT, state, NOW - timedelta(minutes=5), "rq-j", for_job="j")
        assert ids(replace(base, cloud_nodes=(node,))) == want


def test_a_stuck_job_that_must_burst_takes_an_idle_node_instead_of_a_launch() -> None:
    """Stuck on fragmented GPUs and past its budget, a 2-GPU job takes an idle 4-GPU V100 node."""
    taken: set[str] = set()
    snap = replace(fragmented(job(gpus=2, waited_s=2_000)), cloud_nodes=(idle(QUAD),))
    assert burst(snap, COST, PARAMS, taken=taken) == [] and taken == {"idle-0"}


# --- idle exclusive nodes handed out instead of a launch (``_may_take``), pre-warm ---------------------------

def exclusive(offering: Offering = SPOT) -> Node:
    return replace(idle(offering, "excl-0"), exclusive=True)


def taken_by(snap: Snapshot, cost: CostModel = COST) -> tuple[list[str | None], list[str]]:
    """(jobs launched for, jobs given the idle exclusive node) with that node free."""
    sb = Standby(free=list(snap.cloud_nodes))
    return [a.job_id for a in burst(snap, cost, PARAMS, standby=sb)], [h.job_id for h in sb.holds]


def test_an_idle_node_costing_exactly_the_launch_is_taken() -> None:
    """Same offering, no value on waiting: the node costs what the launch would; it is taken."""
    assert taken_by(replace(busy_pool(job()), cloud_nodes=(exclusive(),))) == ([], ["j"])


def test_an_idle_node_dearer_by_less_than_a_boots_wait_is_taken() -> None:
    """$1.00/h against spot's $0.90/h: $0.105 more for the hour and a boot; a 180 s wait at
    $2.50/GPU-h costs $0.125: the dearer node is taken. At $1.05/h ($0.158 more) it is not."""
    cost = CostModel(replace(COST.p, wait_value_usd_per_gpu_hour=2.5))
    for price, want in ((1.0, ([], ["j"])), (1.05, (["j"], []))):
        node = exclusive(replace(SPOT, zone="usw2-az9", price_per_hour_usd=price))
        assert taken_by(replace(busy_pool(job()), cloud_nodes=(node,)), cost) == want


def test_a_job_with_exactly_no_slack_is_not_late_and_keeps_its_market() -> None:
    """Slack 0: a launch now just makes it, so it is not ``late``; on-demand is its market (no spot
    slack), and an idle spot node is left alone."""
    assert taken_by(replace(busy_pool(dl(0)), cloud_nodes=(exclusive(),))) == (["dl"], [])
    assert taken_by(replace(busy_pool(dl(-1)), cloud_nodes=(exclusive(),))) == ([], ["dl"])  # late: any node


def test_an_idle_spot_node_whose_rework_is_exactly_the_limit_may_take_a_deadline_job() -> None:
    """As ``test_a_spot_pool_whose_rework_is_exactly_the_limit_qualifies``: rework 0.1 = the limit."""
    cost = CostModel(replace(COST.p, interruption_rates={SPOT.key: 1.0}))
    assert taken_by(replace(busy_pool(dl(1_740)), cloud_nodes=(exclusive(),)), cost) == ([], ["dl"])


def test_pre_warm_counts_idle_exclusive_nodes_as_warm() -> None:
    """4 GPU-h over the hour from 300 s on, the pool full: 4 GPUs wanted, one idle exclusive V100 node
    already warm: 3 nodes are pre-warmed."""
    sig = Signal("sprint", 4.0, NOW + timedelta(seconds=300), NOW + timedelta(seconds=3_900), gpu_model="V100")
    snap = replace(busy_pool(), signals=(sig,), cloud_nodes=(exclusive(),))
    (launch,) = burst(snap, PRICED, replace(PARAMS, prewarm=True), standby=Standby(free=list(snap.cloud_nodes)))
    assert launch.count == 3 and launch.reason.startswith("pre-warm")


def test_a_spot_pool_over_the_rework_limit_does_not_end_the_search() -> None:
    """Ranked by rate: ``q1`` ($0.50, its risk $100), ``r`` ($0.60, rework 0.1 over the 0.05 limit), SPOT
    ($0.90): SPOT, past the one it skips, beats on-demand."""
    q1 = replace(SPOT, zone="usw2-az7", price_per_hour_usd=0.5)
    r = replace(SPOT, zone="usw2-az8", price_per_hour_usd=0.6)
    cost = CostModel(replace(COST.p, interruption_rates={r.key: 1.0}))
    book = OfferBook(busy_pool(offerings=(q1, r, SPOT, OD)), cost)
    assert book.best_for_deadline(dl(50_000), ANY, 0.05, 50_000, risk=lambda o: 100.0 if o is q1 else 0.0) == SPOT


def test_until_when_a_stuck_jobs_launch_or_a_held_jobs_launch_stays_wanted() -> None:
    """A stuck job's (projected wait 0) stays wanted for good; a job with held nodes gets no such instant."""
    stays: dict[str, Callable[[], datetime | None]] = {}
    (launch,) = burst(fragmented(job(gpus=2, waited_s=2_000)), COST, PARAMS, stays=stays)
    assert stays[launch.request_id]() == datetime.max.replace(tzinfo=UTC)
    stays.clear()
    assert len(burst(held(job(waited_s=2_000), free=0, busy_for_s=181), COST, PARAMS, stays=stays)) == 1
    assert stays == {}
