"""Exclusive nodes handed to the jobs that burst, and the standby stock kept warm for them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Snapshot
from burster.plan import Hold, Terminate
from policies.burst import BurstParams, burst
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import GuardParams
from policies.reclaim import ReclaimParams, idle_ttl
from policies.standby import Standby, StandbyParams, standby, stock_launches

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0, launch_latency_s=180, wait_value_usd_per_gpu_hour=2.5))
PARAMS = StandbyParams(window_s=900.0, min_starts=3)
BURST = BurstParams(max_wait_s=600, wait_fraction=0.25, prewarm=False, cost_trigger=False)
HOG = Demand("hog", 8, NOW - timedelta(hours=1), 30 * 3600.0, gpu_model="V100")
FULL = (Placement(HOG, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED),)


def started(i: int, *, ago_s: float, request: str = "") -> tuple[Node, Placement]:
    """A job that started ``ago_s`` ago on a single cloud node."""
    job = Demand(f"j{i}", 1, NOW - timedelta(seconds=ago_s + 200), 1_800.0, gpu_model="V100")
    node = Node(f"n{i}", SPOT, NodeState.READY, NOW - timedelta(seconds=ago_s + 180), request or f"r{i}",
                job_id=job.job_id, for_job=job.job_id, exclusive=True)
    return node, Placement(job, (node.node_id,), NOW - timedelta(seconds=ago_s), True, Market.SPOT, 0.9)


def idle(i: int, *, idle_s: float = 30.0, price: float = 0.9, market: Market = Market.SPOT,
         state: NodeState = NodeState.READY, exclusive: bool = True) -> Node:
    offering = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, market, price)
    return Node(f"idle{i}", offering, state, NOW - timedelta(seconds=idle_s + 400), f"q{i}", for_job=f"done{i}",
                idle_since=NOW - timedelta(seconds=idle_s), exclusive=exclusive)


def snap(nodes: list[Node], running: list[Placement] | tuple[Placement, ...] = FULL,
         pending: tuple[Demand, ...] = ()) -> Snapshot:
    pool = (PoolNode("onprem-0", "V100", 8, 0),)
    return Snapshot(NOW, pending, (*FULL, *running), pool, tuple(nodes), (SPOT, OD))


def batch(count: int, *, spread_s: float = 20.0) -> tuple[list[Node], list[Placement]]:
    pairs = [started(i, ago_s=60.0 + spread_s * i) for i in range(count)]
    return [n for n, _ in pairs], [p for _, p in pairs]


# --- handing idle exclusive nodes to the jobs that burst ---------------------------------------

def test_a_job_that_bursts_takes_an_idle_exclusive_node_instead_of_a_launch() -> None:
    short = Demand("short", 1, NOW, 1_800.0, gpu_model="V100")  # budget 600 s; the hog runs 29 h more
    sb = Standby(free=[idle(1)])
    assert burst(snap([idle(1)], pending=(short,)), COST, BURST, standby=sb) == []
    (hold,) = sb.holds
    assert isinstance(hold, Hold) and (hold.node_id, hold.job_id) == ("idle1", "short")
    assert "no boot" in hold.reason and "job short" in hold.reason


def test_a_job_that_waits_for_reserved_gpus_leaves_an_idle_exclusive_node_alone() -> None:
    """A long job deferring to its 1-hour budget: the pool would have given it any idle node."""
    long_job = Demand("long", 1, NOW - timedelta(minutes=10), 4 * 3600.0, gpu_model="V100")
    deferring = replace(BURST, defer_to_budget=True)
    sb = Standby(free=[idle(1)])
    assert burst(snap([idle(1)], pending=(long_job,)), COST, deferring, standby=sb) == [] and sb.holds == []
    sb = Standby(free=[idle(1)])  # not deferring, it bursts: on the idle node
    assert burst(snap([idle(1)], pending=(long_job,)), COST, BURST, standby=sb) == [] and len(sb.holds) == 1


def test_an_exclusive_node_in_another_market_or_too_dear_or_booting_is_not_taken() -> None:
    strict = Demand("strict", 1, NOW, 1_800.0, gpu_model="V100", job_class=JobClass.STRICT,
                    deadline=NOW + timedelta(seconds=1_800 + 1_300))  # too little slack for spot: on-demand
    for node in (idle(1),  # spot, where its deadline rule says on-demand
                 idle(2, market=Market.ON_DEMAND, price=9.0),  # on-demand, but dearer by more than a boot's wait
                 idle(3, market=Market.ON_DEMAND, price=3.06, state=NodeState.LAUNCHING)):  # not up yet
        sb = Standby(free=[node])
        (launch,) = burst(snap([node], pending=(strict,)), COST, BURST, standby=sb)
        assert launch.offering == OD and sb.holds == []
    sb = Standby(free=[idle(4, market=Market.ON_DEMAND, price=3.06)])
    assert burst(snap(sb.free, pending=(strict,)), COST, BURST, standby=sb) == [] and len(sb.holds) == 1


SAFE = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
RISKY = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.5)
RISKY_COST = CostModel(CostParams(launch_latency_s=180, spot_interruptions_per_hour=0.01,
                                  interruption_rates={RISKY.key: 0.5}))


def risky_world(slack_s: float, ratios: tuple[float, ...] = ()) -> tuple[Demand, Node, Snapshot]:
    """An hour's deadline job (hourly checkpoints) with ``slack_s``, and an idle node in the risky pool."""
    job = Demand("dl", 1, NOW, 3_600.0, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=3_600 + slack_s + 180), checkpoint_interval_s=3_600.0)
    node = replace(idle(1), offering=RISKY)
    return job, node, Snapshot(NOW, (job,), FULL, (PoolNode("onprem-0", "V100", 8, 0),), (node,), (SAFE, RISKY),
                               runtime_ratios=ratios)


def test_a_deadline_job_leaves_an_idle_node_in_a_riskier_spot_pool_alone() -> None:
    """Cheaper by the hour, but interrupted often enough that its deadline risk outweighs the boot."""
    # 3000 s of slack: both pools pass the rework limit, but an interruption on the risky one may
    # cost more than the slack (hourly checkpoints): about a 14 % chance of missing, $70 of risk
    job, node, s = risky_world(3_000.0)
    sb = Standby(free=[node])
    (launch,) = burst(s, RISKY_COST, BURST, standby=sb)
    assert launch.offering == SAFE and sb.holds == []
    assert RISKY_COST.job_cost_usd(job, RISKY) < RISKY_COST.job_cost_usd(job, SAFE)  # it would win on price alone


def test_a_deadline_job_taken_to_run_long_judges_an_idle_node_as_its_launch_was_chosen() -> None:
    """With recent jobs running 4x their estimates, the launch is chosen as if this one did
    (``BurstParams.market_quantile``); an idle node in a pool that is safe only for the estimate's
    run must be judged the same way, not on the estimate."""
    # 13,000 s of slack on the estimate: five interruptions (each an hour of unsaved work, a restart and a
    # boot) fit it; 4x the run leaves 2,200 s, under the risky pool's expected rework of 4,560 s
    _, node, s = risky_world(13_000.0, ratios=(4.0,) * 30)
    for quantile, taken in ((0.0, True), (0.9, False)):
        sb = Standby(free=[node])
        launches = burst(s, RISKY_COST, replace(BURST, market_quantile=quantile), standby=sb)
        assert (launches == [] and [h.job_id for h in sb.holds] == ["dl"]) == taken
        if not taken:
            assert [a.offering for a in launches] == [SAFE] and sb.holds == []


def test_a_job_a_launch_would_make_late_takes_any_idle_node() -> None:
    """Starting now gives it a boot's worth of slack that no launch can."""
    urgent = Demand("urgent", 1, NOW, 1_800.0, gpu_model="V100", job_class=JobClass.STRICT,
                    deadline=NOW + timedelta(seconds=1_800 + 100))  # a 180 s boot would make it 80 s late
    sb = Standby(free=[idle(1)])
    assert burst(snap([idle(1)], pending=(urgent,)), COST, BURST, standby=sb) == []
    assert [h.job_id for h in sb.holds] == ["urgent"]


def test_a_late_job_takes_no_spot_node_the_deadline_switch_would_move_it_off_at_once() -> None:
    """Recent jobs ran 1.77x their estimates: taken so, a 905 s job due in 1,620 s misses on a launch
    (slack -162 s), so an idle node may take it; but by its estimate it would have 715 s of slack there,
    under the switch's 360 s changeover and 900 s margin: on spot it would be moved to on-demand at
    once and lose the changeover. It launches on-demand instead; an idle on-demand node takes it."""
    job = Demand("dl", 1, NOW, 905.0, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=1_620))
    by_ratio = replace(BURST, market_quantile=0.9)
    s = replace(snap([idle(1)], pending=(job,)), runtime_ratios=(1.77,) * 30)
    sb = Standby(free=[idle(1)])
    (launch,) = burst(s, COST, by_ratio, standby=sb)
    assert launch.offering == OD and sb.holds == []
    od = idle(2, market=Market.ON_DEMAND, price=3.06)
    sb = Standby(free=[od])
    assert burst(replace(s, cloud_nodes=(od,)), COST, by_ratio, standby=sb) == []
    assert [h.node_id for h in sb.holds] == ["idle2"]


def test_burster_launches_exclusive_nodes_and_hands_idle_ones_out() -> None:
    policy = BursterPolicy(COST, BursterParams(burst=BurstParams(prewarm=False, cost_trigger=False),
                                               exclusive_nodes=True))
    first = Demand("a", 1, NOW, 1_800.0, gpu_model="V100")
    (launch,) = policy.decide(snap([], pending=(first,))).actions
    assert launch.exclusive  # type: ignore[union-attr]
    (hold,) = policy.decide(snap([idle(1)], pending=(first,))).actions
    assert isinstance(hold, Hold) and hold.node_id == "idle1"


# --- the standby stock ---------------------------------------------------------------------------

def test_the_stock_covers_the_most_starts_within_one_boot_that_pay_for_their_idle_time() -> None:
    nodes, running = batch(10)  # 10 starts in 3 minutes: a batch
    sb = standby(snap(nodes, running), COST, PARAMS)
    # a boot's wait is worth 1 GPU x 180 s x $2.5/h = $0.125; a stock of k idles k x 900 / 10 s at $0.9/h:
    # k = 5 idles 450 s ($0.1125), k = 6 idles 540 s ($0.135)
    assert {s: k for s, (k, _) in sb.stock.items()} == {("V100", 1): 5}
    assert sb.next_change == NOW - timedelta(seconds=60 + 20 * 9) + timedelta(seconds=900)  # the oldest ages out
    (launch,) = stock_launches(sb, 180.0)
    assert launch.count == 5 and launch.exclusive and launch.offering == SPOT and launch.job_id is None


def test_no_stock_from_few_or_old_starts_or_gangs_or_when_disabled() -> None:
    nodes, running = batch(2)
    assert standby(snap(nodes, running), COST, PARAMS).stock == {}
    old_nodes, old_running = batch(10)
    later = Snapshot(NOW + timedelta(hours=1), (), tuple(old_running), (), tuple(old_nodes), (SPOT,))
    assert standby(later, COST, PARAMS).stock == {}
    assert standby(snap(*batch(10)), COST, StandbyParams(enabled=False)).stock == {}
    gang_nodes = [started(i, ago_s=60.0)[0] for i in range(10)]
    gang = Placement(Demand("g", 10, NOW, 1_800.0, nodes=10, gpu_model="V100"),
                     tuple(n.node_id for n in gang_nodes), NOW - timedelta(seconds=60), True, Market.SPOT)
    assert standby(snap(gang_nodes, [gang]), COST, PARAMS).stock == {}


def test_idle_nodes_within_the_stock_outlive_their_ttl_the_rest_go() -> None:
    nodes, running = batch(10)
    spare = [idle(i, idle_s=900, price=0.9 - 0.01 * i) for i in range(7)]
    s = snap([*nodes, *spare], running)
    sb = standby(s, COST, PARAMS)
    keep = sb.keep()
    assert keep == {f"idle{i}" for i in (2, 3, 4, 5, 6)}  # the cheapest five
    gone = {a.node_ids[0] for a in idle_ttl(s, ReclaimParams(idle_ttl_s=300), keep) if isinstance(a, Terminate)}
    assert gone == {"idle0", "idle1"}
    assert stock_launches(sb, 180.0) == []  # the stock is there already


def test_an_empty_plan_wakes_when_the_stock_falls() -> None:
    """Kept nodes outlive their TTL only while the starts hold the stock up: the simulator may skip
    quiet passes, so the plan names the instant the oldest start ages out."""
    nodes, running = batch(10)
    spare = [idle(i, idle_s=900) for i in range(5)]
    policy = BursterPolicy(COST, BursterParams(burst=BurstParams(prewarm=False), standby=PARAMS))
    plan = policy.decide(snap([*nodes, *spare], running))
    assert plan.actions == ()
    assert plan.quiet_until == NOW - timedelta(seconds=60 + 20 * 9) + timedelta(seconds=900)


def test_a_budget_guard_refuses_an_idle_node_whose_job_would_break_the_budget() -> None:
    """Running a job on an idle node spends like a launch: the hard budget counts it."""
    job = Demand("long", 1, NOW, 10 * 3600.0, gpu_model="V100", team="vision")
    node = idle(1, market=Market.SPOT, price=0.9)
    s = snap([node], pending=(job,))
    def policy(budget_usd: float) -> BursterPolicy:
        return BursterPolicy(COST, BursterParams(burst=BurstParams(prewarm=False, cost_trigger=False),
                                                 exclusive_nodes=True,
                                                 guards=GuardParams(team_budget_usd={"vision": budget_usd})))
    plan = policy(5.0).decide(s)  # 10 h at $0.90/h is $9
    assert not any(isinstance(a, Hold) for a in plan.actions)
    (hold, why), = [(a, w) for a, w in plan.refused if isinstance(a, Hold)]
    assert hold.node_id == "idle1" and "team vision budget $5.00 would be exceeded" in why
    assert any(isinstance(a, Hold) for a in policy(50.0).decide(s).actions)


def test_a_stock_launch_keeps_its_request_id_until_a_node_of_it_is_seen() -> None:
    """A stock launch whose reply was lost, its node listed late, is sent again under the same id
    (which the cloud answers with that node), not launched anew; once seen, a refill gets a new id."""
    nodes, running = batch(3)  # a stock of one
    def launches(extra: list[Node], after_s: float) -> list[str]:
        s = replace(snap([*nodes, *extra], running), now=NOW + timedelta(seconds=after_s))
        return [a.request_id for a in stock_launches(standby(s, COST, PARAMS), 180.0)]
    (first,) = launches([], 0.0)
    assert launches([], 10.0) == [first]  # nothing seen of it yet
    mine = replace(idle(9, state=NodeState.LAUNCHING), for_job=None, request_id=first)
    assert launches([mine], 20.0) == []
    (refill,) = launches([replace(mine, state=NodeState.READY, job_id="taker")], 30.0)  # handed out
    assert refill != first


def test_a_stock_launchs_id_names_only_the_unowned_exclusive_nodes_of_its_shape() -> None:
    """Nodes of a job (booting for a waiting one) or shared ones come and go without changing the id
    (a lost launch is replayed, not made again); every unowned exclusive node is named, in id order."""
    nodes, running = batch(3)  # a stock of one
    waiting = Demand("w", 1, NOW, 1_800.0, gpu_model="V100")
    booting = replace(idle(7, state=NodeState.LAUNCHING), for_job="w", job_id=None)
    shared = replace(idle(8, exclusive=False), for_job=None)
    def ids(extra: list[Node], pending: tuple[Demand, ...] = ()) -> list[str]:
        return [a.request_id for a in stock_launches(standby(snap([*nodes, *extra], running, pending),
                                                             COST, PARAMS), 180.0)]
    assert ids([booting], (waiting,)) == ids([shared]) == ids([])
    taken = [replace(idle(i), for_job=None, job_id=f"t{i}") for i in (1, 2)]
    assert standby(snap([*nodes, *taken], running), COST, PARAMS).unowned == {("V100", 1): ("idle1", "idle2")}


def test_a_stock_launchs_id_changes_with_its_count() -> None:
    """The same id must mean the same request: a stock that grows asks under a new one."""
    (one,), (two,) = (stock_launches(Standby(stock={("V100", 1): (k, SPOT)}), 180.0) for k in (1, 2))
    assert (one.count, two.count) == (1, 2) and one.request_id != two.request_id
