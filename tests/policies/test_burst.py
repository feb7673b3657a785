"""Burst decisions on hand-built snapshots: when a queued job stays, and when it bursts and where."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Snapshot
from burster.plan import Launch, request_id
from policies.burst import BurstParams, _burst_request_id, burst
from policies.cost import CostModel, CostParams
from policies.rank import start_by
from policies.slack import spot_slack_s

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0, restart_overhead_s=300, launch_latency_s=180,
                            wait_value_usd_per_gpu_hour=0.0, deadline_miss_usd=0.0))
PARAMS = BurstParams(max_wait_s=600, wait_fraction=0.25, deadline_margin_s=900, prewarm=False, cost_trigger=False)


def snapshot(job: Demand, *, busy_for_s: float) -> Snapshot:
    """One full 8-GPU on-prem node whose job ends in ``busy_for_s``, and ``job`` waiting."""
    pool = (PoolNode("onprem-0", "V100", 8, 0),)
    hog = Demand("hog", 8, NOW - timedelta(hours=1), 3600 + busy_for_s, gpu_model="V100")
    running = (Placement(hog, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED),)
    return Snapshot(NOW, (job,), running, pool, (), (SPOT, OD))


def deadline_job(slack_s: float, runtime_s: float = 36_000) -> Demand:
    return Demand("dl", 1, NOW, runtime_s, gpu_model="V100", job_class=JobClass.STRICT,
                  deadline=NOW + timedelta(seconds=runtime_s + slack_s))


def test_a_job_that_reserved_capacity_starts_within_budget_stays_queued() -> None:
    job = Demand("be", 1, NOW, 36_000, gpu_model="V100")  # budget max(600, 0.25 x 10 h) = 9000 s
    assert burst(snapshot(job, busy_for_s=3_000), COST, PARAMS) == []


def test_a_job_whose_wait_passes_its_budget_bursts_to_the_cheapest_spot() -> None:
    job = Demand("be", 1, NOW, 36_000, gpu_model="V100")
    (launch,) = burst(snapshot(job, busy_for_s=10_000), COST, PARAMS)
    assert launch.offering == SPOT and launch.count == 1 and "wait budget" in launch.reason
    assert launch.reason.startswith("job be (1 GPU): ")


def test_spot_slack_is_deadline_slack_less_changeover_margin_and_rework() -> None:
    job = deadline_job(slack_s=5_000)
    # slack 5000 - launch 180 = 4820; minus changeover (300 + 180) and margin 900 -> 3440; no rework at rate 0
    assert spot_slack_s(job, NOW, COST, PARAMS, SPOT) == 3_440
    # a checkpoint write (180 s) longer than AWS's notice: an interruption loses half an interval
    risky = CostModel(CostParams(spot_interruptions_per_hour=0.5, restart_overhead_s=300, launch_latency_s=180,
                                 checkpoint_write_s=180))
    # rework: 36000 s x 0.5/h x (900 + 300) s / 3600 = 6000 s
    assert spot_slack_s(job, NOW, risky, PARAMS, SPOT) == 3_440 - 6_000
    assert spot_slack_s(job, NOW, COST, PARAMS, OD) == float("inf")


def test_a_deadline_job_bursts_on_spot_before_queueing_would_force_it_onto_on_demand() -> None:
    # wait 5000 s < its budget of 9000 s, but more than the 3440 s of slack a spot run can spare
    (launch,) = burst(snapshot(deadline_job(slack_s=5_000), busy_for_s=5_000), COST, PARAMS)
    assert launch.offering.market is Market.SPOT and "too little deadline slack" in launch.reason
    # with plenty of slack the same wait is fine
    assert burst(snapshot(deadline_job(slack_s=50_000), busy_for_s=5_000), COST, PARAMS) == []


def test_a_deadline_job_chooses_its_market_for_the_runtime_its_estimate_may_run_to() -> None:
    """Spot fits a strict job's slack as estimated (2820 s of it: room for the changeover and margin),
    not if it ran twice as long, as one in seven recent jobs did against its estimate: with
    ``market_quantile`` 0.9 it bursts to on-demand; the wait rules still read the estimate."""
    job = deadline_job(slack_s=3_000, runtime_s=3_600)
    snap = replace(snapshot(job, busy_for_s=20_000), runtime_ratios=(1.0,) * 17 + (2.0,) * 3)
    (as_estimated,) = burst(snap, COST, PARAMS)
    assert as_estimated.offering is SPOT
    (spread,) = burst(snap, COST, replace(PARAMS, market_quantile=0.9))
    assert spread.offering is OD and spread.reason.split(";")[0] == as_estimated.reason.split(";")[0]
    assert spread.est_hours == as_estimated.est_hours  # the launch is still priced and budgeted as estimated
    exact = replace(snap, runtime_ratios=(1.0,) * 20)
    assert burst(exact, COST, replace(PARAMS, market_quantile=0.9))[0].offering is SPOT


def fragmented(job: Demand) -> Snapshot:
    """Two 8-GPU nodes with one GPU free on each: 2 GPUs free in all, but no node fits a 2-GPU job."""
    pool = (PoolNode("onprem-0", "V100", 8, 1), PoolNode("onprem-1", "V100", 8, 1))
    return Snapshot(NOW, (job,), (), pool, (), (SPOT, OD))


def two_gpu_job(waited_s: float, queued_s: float | None = None) -> Demand:
    queued = None if queued_s is None else NOW - timedelta(seconds=queued_s)
    return Demand("frag", 2, NOW - timedelta(seconds=waited_s), 3600, gpu_model="V100", queued_at=queued)


def test_a_job_the_pool_leaves_waiting_on_fragmented_gpus_bursts_once_past_its_budget() -> None:
    wakes: list[datetime] = []
    assert burst(fragmented(two_gpu_job(waited_s=300)), COST, PARAMS, wakes=wakes) == []
    # budget max(600, 0.25 x 3600 s); the wake is at it (the rule fires strictly past it: a tick there
    # decides nothing and wakes again, a wake past it could skip the tick where it first held)
    assert wakes == [NOW + timedelta(seconds=900 - 300)]
    (launch,) = burst(fragmented(two_gpu_job(waited_s=1200)), COST, PARAMS)
    assert launch.offering == SPOT and launch.count == 2 and "look free" in launch.reason
    assert " (2 GPUs): " in launch.reason


def test_a_job_just_requeued_is_given_a_scheduler_cycle_before_it_counts_as_stuck() -> None:
    wakes: list[datetime] = []
    assert burst(fragmented(two_gpu_job(waited_s=1200, queued_s=10)), COST, PARAMS, wakes=wakes) == []
    assert wakes == [NOW + timedelta(seconds=50)]


DEFER = replace(PARAMS, defer_to_budget=True, cost_trigger=True)
PRICED = CostModel(replace(COST.p, wait_value_usd_per_gpu_hour=10.0))  # waiting dearer than spot


def test_a_long_job_defers_its_burst_until_a_boot_and_a_margin_are_left_of_its_budget() -> None:
    # 10 h job: budget 9000 s; the pool frees in 10000 s, past it, so the plain rule bursts at once
    (launch,) = burst(snapshot(Demand("be", 1, NOW, 36_000, gpu_model="V100"), busy_for_s=10_000), PRICED, PARAMS)
    assert "would pass its wait budget" in launch.reason
    wakes: list[datetime] = []
    assert burst(snapshot(Demand("be", 1, NOW, 36_000, gpu_model="V100"), busy_for_s=10_000), PRICED, DEFER,
                 wakes=wakes) == []
    assert wakes == [NOW + timedelta(seconds=9_000 - 180 - 120)]  # budget - boot - margin
    at_edge = Demand("be", 1, NOW - timedelta(seconds=8_700), 36_000, gpu_model="V100")
    assert burst(snapshot(at_edge, busy_for_s=10_000 - 8_700), PRICED, DEFER) == []  # the rule holds strictly past it
    late = Demand("be", 1, NOW - timedelta(seconds=8_701), 36_000, gpu_model="V100")
    (launch,) = burst(snapshot(late, busy_for_s=10_000 - 8_701), PRICED, DEFER)
    assert launch.offering == SPOT and "of its 9000s wait budget" in launch.reason


def test_a_stopped_job_does_not_defer_its_restart() -> None:
    # requeued after a run (a preemption): its pause is priced as waiting, its budget was its first wait
    job = Demand("be", 1, NOW, 36_000, gpu_model="V100", done_s=600, attempt=1, queued_at=NOW)
    (launch,) = burst(snapshot(job, busy_for_s=10_000), PRICED, DEFER)
    assert "would pass its wait budget" in launch.reason


def test_a_deferring_job_at_its_budgets_end_still_waits_if_the_pool_starts_it_before_a_boot() -> None:
    late = Demand("be", 1, NOW - timedelta(seconds=8_800), 36_000, gpu_model="V100")  # 100 s past its deferral
    assert burst(snapshot(late, busy_for_s=150), PRICED, DEFER) == []  # reserved GPUs in 150 s < a 180 s boot
    (launch,) = burst(snapshot(late, busy_for_s=200), PRICED, DEFER)
    assert "of its 9000s wait budget" in launch.reason


def test_deferring_ignores_the_wait_cost_within_the_budget() -> None:
    # waits 5000 s of a 9000 s budget: $13.89 of waiting against $9.05 on spot (10 h and a boot at $0.90)
    job = Demand("be", 1, NOW, 36_000, gpu_model="V100")
    (launch,) = burst(snapshot(job, busy_for_s=5_000), PRICED, replace(PARAMS, cost_trigger=True))
    assert "costs" in launch.reason
    assert burst(snapshot(job, busy_for_s=5_000), PRICED, DEFER) == []


def launch_and_stay(snap: Snapshot, cost: CostModel, params: BurstParams) -> tuple[Launch, datetime | None]:
    stays: dict[str, Callable[[], datetime | None]] = {}
    (launch,) = burst(snap, cost, params, stays=stays)
    return launch, stays[launch.request_id]()


def test_a_burst_for_a_job_with_no_deadline_says_until_when_it_stays_wanted() -> None:
    """A plan whose kept slots wait on such a launch is skipped up to that instant (policies/burster.py):
    the launch is still wanted there, and two seconds on, where its rule stops, it is not."""
    job = Demand("be", 1, NOW, 36_000, gpu_model="V100")
    late = Demand("be", 1, NOW - timedelta(seconds=8_701), 36_000, gpu_model="V100")  # past its deferral
    for snap, params, why in ((snapshot(job, busy_for_s=5_000), replace(PARAMS, cost_trigger=True), "costs"),
                              (snapshot(late, busy_for_s=1_299), DEFER, "of its 9000s wait budget")):
        launch, until = launch_and_stay(snap, PRICED, params)
        assert why in launch.reason and until is not None and NOW < until < NOW + timedelta(seconds=5_000)
        assert [a.request_id for a in burst(replace(snap, now=until), PRICED, params)] == [launch.request_id]
        assert burst(replace(snap, now=until + timedelta(seconds=2)), PRICED, params) == []
    # the deferring job's flip: the pool within a boot (180 s) of starting it, a second early
    assert launch_and_stay(snapshot(late, busy_for_s=1_299), PRICED, DEFER)[1] == NOW + timedelta(seconds=1_118)
    never = Demand("wide", 16, NOW, 3_600, gpu_model="V100")  # no on-prem node is that large: it never waits
    assert launch_and_stay(snapshot(never, busy_for_s=0), PRICED, PARAMS)[1] == datetime.max.replace(tzinfo=UTC)
    # a deadline job's slack moves its market and its rules: no such instant
    assert launch_and_stay(snapshot(deadline_job(slack_s=5_000), busy_for_s=3_400), PRICED, DEFER)[1] is None


def test_a_job_whose_budget_is_the_floor_bursts_at_once_when_deferring() -> None:
    job = Demand("short", 1, NOW, 1_800, gpu_model="V100")  # budget max(600, 450) = 600 s: the floor
    (launch,) = burst(snapshot(job, busy_for_s=1_000), PRICED, DEFER)
    assert "would pass its wait budget" in launch.reason


def test_a_deadline_job_defers_only_if_its_slack_would_outlast_the_wait() -> None:
    # 10 h job, budget 9000 s: deferring means waiting up to 8700 s; with 5000 s of deadline slack only
    # 3440 s are spare for a spot run, so it does not defer, and waiting 3400 s ($9.44) costs more than
    # spot ($9.05): it bursts
    (launch,) = burst(snapshot(deadline_job(slack_s=5_000), busy_for_s=3_400), PRICED, DEFER)
    assert "costs" in launch.reason
    assert burst(snapshot(deadline_job(slack_s=50_000), busy_for_s=3_400), PRICED, DEFER) == []  # slack to spare


def test_a_deferring_deadline_job_still_bursts_before_its_spot_slack_runs_out() -> None:
    (launch,) = burst(snapshot(deadline_job(slack_s=5_000), busy_for_s=5_000), COST, DEFER)
    assert launch.offering.market is Market.SPOT and "too little deadline slack" in launch.reason


def test_a_stuck_deferring_job_wakes_the_simulation_when_its_budget_nearly_runs_out() -> None:
    job = Demand("frag", 2, NOW - timedelta(seconds=300), 4 * 3600, gpu_model="V100")  # budget 3600 s
    wakes: list[datetime] = []
    assert burst(fragmented(job), COST, DEFER, wakes=wakes) == []
    assert wakes == [NOW + timedelta(seconds=3_600 - 300 - 180 - 120)]
    late = replace(job, submitted_at=NOW - timedelta(seconds=3_301))
    (launch,) = burst(fragmented(late), COST, DEFER)
    assert launch.count == 2 and "look free" in launch.reason


def test_a_deferring_job_uses_only_the_share_of_its_budget_its_estimate_is_likely_to_keep() -> None:
    # estimates run twice the runtime: a 10 h estimate's 9000 s budget is deferred to only 4500 s
    job = Demand("be", 1, NOW, 36_000, gpu_model="V100")
    long = replace(snapshot(job, busy_for_s=10_000), runtime_ratios=(0.5,) * 100)
    wakes: list[datetime] = []
    assert burst(long, PRICED, DEFER, wakes=wakes) == []
    assert wakes == [NOW + timedelta(seconds=4_500 - 180 - 120)]
    late = replace(job, submitted_at=NOW - timedelta(seconds=4_201))
    (launch,) = burst(replace(snapshot(late, busy_for_s=10_000 - 4_201), runtime_ratios=(0.5,) * 100), PRICED, DEFER)
    assert "(50% of it: estimates run long)" in launch.reason
    # a 4000 s estimate's 1000 s budget halves to below the 600 s floor: no deferral, the plain rules
    short = Demand("mid", 1, NOW, 4_000, gpu_model="V100")
    assert burst(snapshot(short, busy_for_s=5_000), PRICED, DEFER) == []  # with exact estimates it defers
    (launch,) = burst(replace(snapshot(short, busy_for_s=5_000), runtime_ratios=(0.5,) * 100), PRICED, DEFER)
    assert "would pass its wait budget" in launch.reason


RISKY = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.4)
SAFE = Offering("gcp", "us-central1", "us-central1-a", "n1-v100-1", "V100", 1, Market.SPOT, 0.8)
RATES = CostModel(CostParams(restart_overhead_s=300, launch_latency_s=180, wait_value_usd_per_gpu_hour=0.0,
                             deadline_miss_usd=500.0, interruption_rates={RISKY.key: 2.0, SAFE.key: 0.02}))


def market_choice(slack_s: float, runtime_s: float = 7_200) -> Offering:
    """Where a strict-deadline job with ``slack_s`` goes when it cannot wait (pool busy for long)."""
    job = deadline_job(slack_s=slack_s, runtime_s=runtime_s)
    snap = snapshot(job, busy_for_s=100_000)
    snap = Snapshot(NOW, snap.pending, snap.running, snap.pool_nodes, (), (RISKY, SAFE, OD))
    (launch,) = burst(snap, RATES, PARAMS)
    return launch.offering


def test_a_deadline_job_takes_the_cheapest_spot_its_slack_can_absorb() -> None:
    # a best-effort job takes the cheapest effective spot: 0.4 x (1 + 2/h x 1200 s) = 0.67/h < 0.8 x 1.007
    job = Demand("be", 1, NOW, 7_200, gpu_model="V100")
    snap = snapshot(job, busy_for_s=100_000)
    (launch,) = burst(Snapshot(NOW, snap.pending, snap.running, snap.pool_nodes, (), (RISKY, SAFE, OD)),
                      RATES, PARAMS)
    assert launch.offering == RISKY
    # with ample slack a deadline job does too; with 1 h of slack the risky pool's expected rework
    # (2 h x 2/h x 1200 s = 4800 s) does not fit, so it takes the steadier pool; with no room, on-demand
    assert market_choice(slack_s=50_000) == RISKY
    assert market_choice(slack_s=3_600) == SAFE
    assert market_choice(slack_s=1_000) == OD


def test_spot_competes_with_its_deadline_risk_against_on_demand() -> None:
    # room of slack 2200 s - launch 180 - changeover 480 = 1540 s: the 2-h run with 30-min checkpoints
    # is exposed 4 x 260 s; at 0.02/h the risk is $2.9, so SAFE ($1.65 + 2.9) beats on-demand ($6.27)
    assert market_choice(slack_s=2_200) == SAFE
    # a 10x more interruptible steady pool (0.2/h) is still within the rework limit, but its risk
    # ($28) makes on-demand cheaper
    flaky = CostModel(replace(RATES.p, interruption_rates={RISKY.key: 2.0, SAFE.key: 0.2}))
    job = deadline_job(slack_s=2_200, runtime_s=7_200)
    snap = snapshot(job, busy_for_s=100_000)
    (launch,) = burst(Snapshot(NOW, snap.pending, snap.running, snap.pool_nodes, (), (RISKY, SAFE, OD)),
                      flaky, PARAMS)
    assert launch.offering == OD


def test_a_deadline_job_bursts_when_waiting_would_leave_less_than_the_margin() -> None:
    # expected wait 3000 s is within its budget (9000 s) but leaves 4000 - 180 - 3000 = 820 s < 900 s
    def od_only(job: Demand) -> Snapshot:
        snap = snapshot(job, busy_for_s=3_000)
        return Snapshot(NOW, snap.pending, snap.running, snap.pool_nodes, (), (OD,))

    (launch,) = burst(od_only(deadline_job(slack_s=4_000)), COST, PARAMS)
    assert launch.offering == OD and "under the 900s margin" in launch.reason
    assert burst(od_only(deadline_job(slack_s=4_000)), COST, replace(PARAMS, deadline_trigger=False)) == []
    assert burst(od_only(deadline_job(slack_s=5_000)), COST, PARAMS) == []


def test_a_stuck_deadline_job_wakes_the_simulation_when_its_margin_runs_out() -> None:
    job = Demand("frag", 2, NOW - timedelta(seconds=300), 3_600, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=3_600 + 2_000))
    wakes: list[datetime] = []
    assert burst(fragmented(job), COST, PARAMS, wakes=wakes) == []
    # slack 2000 - 180 = 1820 s; it bursts once slack - a scheduler cycle (60 s) < margin 900 s
    assert NOW + timedelta(seconds=1_820 - 60 - 900) in wakes


def test_greedy_spot_takes_the_lowest_listed_price_and_burster_the_lowest_expected_cost() -> None:
    from policies.baselines import GreedySpotPolicy

    job = Demand("be", 1, NOW, 7_200, gpu_model="V100")
    snap = snapshot(job, busy_for_s=100_000)
    snap = Snapshot(NOW, snap.pending, snap.running, snap.pool_nodes, (), (RISKY, SAFE, OD))
    # RISKY lists $0.40/h vs SAFE $0.80/h, but loses 2/h x 1200 s: $0.67/h expected, still cheaper
    (launch,) = GreedySpotPolicy(RATES).decide(snap).actions
    assert isinstance(launch, Launch) and launch.offering == RISKY
    pricier = CostModel(replace(RATES.p, interruption_rates={RISKY.key: 4.0, SAFE.key: 0.02}))
    # at 4/h RISKY's expected $0.93/h passes SAFE's $0.81/h: greedy keeps the listed price
    (launch,) = GreedySpotPolicy(pricier).decide(snap).actions
    assert isinstance(launch, Launch) and launch.offering == RISKY
    (launch,) = burst(snap, pricier, PARAMS)
    assert launch.offering == SAFE


def test_an_idle_node_whose_job_finished_is_used_instead_of_a_new_launch() -> None:
    """A node keeps the id of the job it was launched for after that job ends: it is still idle
    capacity. A node launched for a job that is still queued is not."""
    job = Demand("be", 1, NOW, 36_000, gpu_model="V100")
    other = Demand("other", 1, NOW, 36_000, gpu_model="V100")
    finished = Node("n-done", SPOT, NodeState.READY, NOW - timedelta(hours=1), "rq-done", for_job="done",
                    idle_since=NOW - timedelta(minutes=1))
    base = snapshot(job, busy_for_s=10_000)
    assert burst(replace(base, cloud_nodes=(finished,)), COST, PARAMS) == []
    theirs = replace(base, pending=(other, job), cloud_nodes=(replace(finished, for_job="other"),))
    assert [launch.job_id for launch in burst(theirs, COST, PARAMS)] == ["be"]


def two_nodes_free_in_20_min_and_2_h(*pending: Demand) -> Snapshot:
    """Two full 8-GPU on-prem nodes, one free in 20 min and one in 2 h, and ``pending`` queued in that order."""
    hog = snapshot(pending[0], busy_for_s=1_200)
    hog2 = Demand("hog2", 8, NOW - timedelta(hours=1), 3 * 3600, gpu_model="V100")
    return replace(hog, pending=pending, pool_nodes=(*hog.pool_nodes, PoolNode("onprem-1", "V100", 8, 0)),
                   running=(*hog.running, Placement(hog2, ("onprem-1",), NOW - timedelta(hours=1), False,
                                                    Market.RESERVED)))


def test_the_projection_follows_a_ranked_pools_order() -> None:
    """Two full 8-GPU nodes free in 20 min and in 2 h. A 10 h job came first (budget 2.5 h), a 2 h job
    after it (budget 30 min). FIFO: the short job gets the 2 h node, past its budget, and bursts.
    Ranked by start-by (the pool's rule, policies/rank.py), it goes first, and the long one waits
    within its budget."""
    long = Demand("long", 8, NOW - timedelta(minutes=2), 36_000, gpu_model="V100")
    short = Demand("short", 8, NOW - timedelta(minutes=1), 7_200, gpu_model="V100")
    fifo = two_nodes_free_in_20_min_and_2_h(long, short)
    assert [a.job_id for a in burst(fifo, COST, PARAMS)] == ["short"]
    ranked = tuple(replace(j, start_by=start_by(j, COST, PARAMS)) for j in (long, short))
    assert ranked[1].start_by is not None and ranked[0].start_by is not None
    assert ranked[1].start_by < ranked[0].start_by
    assert burst(replace(fifo, pending=ranked), COST, PARAMS) == []


def test_the_projection_follows_a_fifo_pools_serving_order_not_submission() -> None:
    """The same two jobs in a FIFO pool that requeues at the back (``Requeue.BACK``): the long job,
    submitted first, was stopped and requeued behind the short one, which the pool now serves first, on
    the node free in 20 min. Projected by submission the long job took that node, and the short one
    burst for nothing."""
    long = Demand("long", 8, NOW - timedelta(minutes=2), 36_000, gpu_model="V100",
                  queued_at=NOW - timedelta(seconds=30))
    short = Demand("short", 8, NOW - timedelta(minutes=1), 7_200, gpu_model="V100")
    served = two_nodes_free_in_20_min_and_2_h(short, long)
    assert burst(served, COST, PARAMS) == []
    assert [a.job_id for a in burst(replace(served, pending=(long, short)), COST, PARAMS)] == ["short"]


def test_launch_request_ids_are_memoized_the_same_and_the_memo_stays_bounded() -> None:
    """A held-back launch keeps its id pass after pass; a controller running for months does not
    keep every id it ever made."""
    for i in range(16_400):
        assert _burst_request_id(f"job-{i}", i % 3, "aws/use1-az1/p3.2xlarge/spot", 1) == \
            request_id(f"job-{i}", i % 3, "aws/use1-az1/p3.2xlarge/spot", 1)
        assert _burst_request_id.cache_info().currsize <= 16_384
    assert _burst_request_id("job-16399", 0, "aws/use1-az1/p3.2xlarge/spot", 1) == \
        request_id("job-16399", 0, "aws/use1-az1/p3.2xlarge/spot", 1)
