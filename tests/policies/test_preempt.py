"""Preempting a reserved job for an urgent one that would go to on-demand (policies/preempt.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from burster.model import Demand, JobClass, Market, Offering, Placement, PoolNode, Snapshot
from burster.plan import Hold, Launch, Preempt
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.estimates import believe_overruns
from policies.guards import GuardParams
from policies.slack import slack_s

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
OD = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.92)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.5))
POLICY = BursterPolicy(COST, BursterParams(burst=BurstParams(prewarm=False)))


def urgent(slack_min: float = 5.0, run_min: float = 60.0) -> Demand:
    """A strict 1-GPU job with too little slack for spot: it bursts to on-demand."""
    deadline = NOW + timedelta(minutes=run_min + slack_min + 3)  # 3 min: a cloud node's boot
    return Demand("urgent", 1, NOW - timedelta(minutes=1), run_min * 60, gpu_model="V100", deadline=deadline,
                  job_class=JobClass.STRICT)


def on_prem(job_id: str, gpus: int, left_min: float, **kw: object) -> Placement:
    job = Demand(job_id, gpus, NOW - timedelta(hours=5), 3600 + left_min * 60, gpu_model="V100", **kw)  # type: ignore[arg-type]
    return Placement(job, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED)


def snapshot(*running: Placement, pending: tuple[Demand, ...] | None = None) -> Snapshot:
    """One full 8-GPU reserved node running ``running``."""
    pool = (PoolNode("onprem-0", "V100", 8, 8 - sum(p.job.gpus for p in running)),)
    return Snapshot(NOW, (urgent(),) if pending is None else pending, running, pool, (), (OD, SPOT))


def kinds(policy: BursterPolicy, snap: Snapshot) -> list[tuple[str, str]]:
    out = []
    for a in policy.decide(snap).actions:
        if isinstance(a, Launch):
            out.append(("launch", f"{a.job_id}@{a.offering.market.value}"))
        elif isinstance(a, Preempt | Hold):
            out.append((type(a).__name__.lower(), a.job_id))
    return out


def test_without_reserved_work_to_move_the_urgent_job_goes_to_on_demand() -> None:
    bulk = on_prem("bulk", 8, 600, deadline=NOW + timedelta(hours=11), job_class=JobClass.STRICT)
    assert kinds(POLICY, snapshot(bulk)) == [("launch", "urgent@on_demand")]


def test_a_reserved_job_that_can_run_on_spot_is_requeued_and_its_node_held_for_the_urgent_one() -> None:
    bulk = on_prem("bulk", 7, 600, deadline=NOW + timedelta(hours=11), job_class=JobClass.STRICT)
    plan = POLICY.decide(snapshot(bulk, on_prem("k", 1, 120)))
    preempt, hold = plan.actions
    assert isinstance(preempt, Preempt) and isinstance(hold, Hold)
    assert (preempt.job_id, preempt.node_ids, preempt.deadline) == ("k", ("onprem-0",), NOW + timedelta(minutes=2))
    assert (hold.node_id, hold.job_id, hold.start_at) == ("onprem-0", "urgent", NOW)
    assert "so that job urgent runs on onprem-0 instead of aws/use1-az1/p3.2xlarge/on_demand" in preempt.reason
    assert preempt.reason.startswith("requeue reserved job k (1 GPU, 2.0 h left) so that ")


def test_the_cheapest_job_to_send_away_is_chosen() -> None:
    # both are best-effort; sending 7 GPUs to the cloud costs more than sending 1
    got = kinds(POLICY, snapshot(on_prem("bulk", 7, 600), on_prem("k", 1, 600)))
    assert got == [("preempt", "k"), ("hold", "urgent")]


def test_a_reserved_job_ending_before_a_boot_is_waited_for_not_preempted() -> None:
    bulk = on_prem("bulk", 7, 600, deadline=NOW + timedelta(hours=11), job_class=JobClass.STRICT)
    plan = POLICY.decide(snapshot(bulk, on_prem("k", 1, 2)))
    (hold,) = plan.actions
    assert isinstance(hold, Hold) and hold.start_at == NOW + timedelta(minutes=2)
    assert "ends there in 120s, before a cloud node could boot" in hold.reason
    # the next pass: the urgent job waits for its held node rather than bursting again
    held = snapshot(bulk, on_prem("k", 1, 2))
    held = replace(held, pool_nodes=(replace(held.pool_nodes[0], held_for=("urgent",)),))
    assert POLICY.decide(held).actions == ()


def test_a_tight_reserved_job_or_a_protected_node_is_left_alone() -> None:
    bulk = on_prem("bulk", 7, 600, deadline=NOW + timedelta(hours=11), job_class=JobClass.STRICT)
    tight = on_prem("k", 1, 120, deadline=NOW + timedelta(minutes=140), job_class=JobClass.STRICT)
    assert kinds(POLICY, snapshot(bulk, tight)) == [("launch", "urgent@on_demand")]
    guards = GuardParams(protected_node_ids=frozenset({"onprem-0"}))
    guarded = BursterPolicy(COST, replace(POLICY.params, guards=guards))
    assert kinds(guarded, snapshot(bulk, on_prem("k", 1, 120))) == [("launch", "urgent@on_demand")]


def test_a_job_already_stopping_frees_its_node_for_the_holder_and_is_not_preempted_twice() -> None:
    bulk = on_prem("bulk", 7, 600, deadline=NOW + timedelta(hours=11), job_class=JobClass.STRICT)
    k = replace(on_prem("k", 1, 120), stopping_at=NOW + timedelta(minutes=1))
    assert k.remaining_s(NOW) == 60.0  # its GPUs free at the stop
    snap = snapshot(bulk, k)
    snap = replace(snap, pool_nodes=(replace(snap.pool_nodes[0], held_for=("urgent",)),))
    assert POLICY.decide(snap).actions == ()


def test_the_rule_can_be_turned_off_and_spot_launches_are_not_replaced() -> None:
    off = BursterPolicy(COST, replace(POLICY.params, preempt_onprem=False))
    bulk = on_prem("bulk", 7, 600)
    assert kinds(off, snapshot(bulk, on_prem("k", 1, 120))) == [("launch", "urgent@on_demand")]
    relaxed = replace(urgent(slack_min=300), deadline=None, job_class=JobClass.BEST_EFFORT,
                      submitted_at=NOW - timedelta(hours=1))
    assert kinds(POLICY, snapshot(bulk, on_prem("k", 1, 120), pending=(relaxed,))) == [("launch", "urgent@spot")]


def test_a_held_node_whose_job_is_overdue_is_not_waited_for() -> None:
    bulk = on_prem("bulk", 7, 600, deadline=NOW + timedelta(hours=11), job_class=JobClass.STRICT)
    overdue = on_prem("k", 1, -5)  # its estimate ran out 5 min ago: believed to run on to 1.5x it
    snap = snapshot(bulk, overdue)
    snap = replace(snap, pool_nodes=(replace(snap.pool_nodes[0], held_for=("urgent",)),))
    assert kinds(POLICY, snap) == [("launch", "urgent@on_demand")]  # and it is not preempted either


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.floats(-30, 900), st.booleans()), min_size=1, max_size=4),
       st.integers(1, 4), st.floats(0, 20), st.floats(10, 240))
def test_preempts_and_waits_keep_their_invariants(reserved: list[tuple[int, float, bool]], gpus: int,
                                                  slack_min: float, run_min: float) -> None:
    """Random reserved jobs (GPUs, minutes left, with a deadline?) on one node and a random urgent job:
    whatever the rule does, it preempts only a running single-node job that runs on past the wait the
    urgent job can afford (a boot, or its slack and a boot if less; one past its estimate by the step
    of it the policy believes it needs), the node then has room for the urgent job, and that job gets
    the node held instead of a launch. (Datetimes keep microseconds: a deadline built from a float
    number of minutes can leave the urgent job a slack of -0.4 us, and a job ending exactly a boot
    away is then preempted, not waited for: found by a random example.)"""
    running = []
    for i, (g, left, tight) in enumerate(reserved):
        kw = {"deadline": NOW + timedelta(minutes=left + 20), "job_class": JobClass.STRICT} if tight else {}
        running.append(on_prem(f"r{i}", g, left, **kw))
    used = sum(p.job.gpus for p in running)
    if used > 8:
        return
    if used < 8:  # the rest of the node: a job that cannot move (its deadline is too close)
        running.append(on_prem("fill", 8 - used, 600, deadline=NOW + timedelta(minutes=610),
                               job_class=JobClass.STRICT))
    job = replace(urgent(slack_min, run_min), gpus=gpus)
    snap = snapshot(*running, pending=(job,))
    plan = POLICY.decide(snap)
    by_id = {p.job.job_id: p for p in believe_overruns(snap)[0].running}
    holds = {a.node_id: a for a in plan.actions if isinstance(a, Hold)}
    preempts = [a for a in plan.actions if isinstance(a, Preempt)]
    assert len(preempts) <= 1 and len(holds) <= 1
    for a in preempts:
        p = by_id[a.job_id]
        can_wait_s = min(COST.p.launch_latency_s, slack_s(job, NOW, COST) + COST.p.launch_latency_s)
        assert p.remaining_s(NOW) > can_wait_s and a.node_ids == ("onprem-0",)
        assert snap.pool_nodes[0].free_gpus + p.job.gpus >= job.gpus
        assert holds["onprem-0"].job_id == "urgent" and holds["onprem-0"].start_at == NOW
    if holds:
        assert not any(isinstance(a, Launch) and a.job_id == "urgent" for a in plan.actions)
        hold = holds["onprem-0"]
        if not preempts:  # waiting for a job that ends before a boot would (within the microsecond
            # datetimes keep, a job ending in under 1 us is held for from now)
            assert NOW <= hold.start_at <= NOW + timedelta(seconds=COST.p.launch_latency_s)


def test_a_boot_that_may_outlast_a_short_slack_makes_preempting_pay() -> None:
    """The urgent job must start within 4 min; a boot takes 3 min at the median. With boots exactly
    3 min long, its 20-min on-demand run is cheaper than sending a 2-GPU reserved job away; with their
    spread (12.5 % of boots take over 4 min at sigma 0.25), the $500 miss it risks tips the swap."""
    bulk = on_prem("bulk", 6, 600, deadline=NOW + timedelta(hours=11), job_class=JobClass.STRICT)
    snap = snapshot(bulk, on_prem("k", 2, 600), pending=(urgent(slack_min=1.0, run_min=20.0),))
    exact = CostModel(replace(COST.p, launch_latency_sigma=0.0))
    assert kinds(BursterPolicy(exact, POLICY.params), snap) == [("launch", "urgent@on_demand")]
    assert kinds(POLICY, snap) == [("preempt", "k"), ("hold", "urgent")]


def test_a_deadline_job_is_sent_away_only_where_its_market_allows_for_estimates_that_run_short() -> None:
    """Requeued, a reserved job bursts by the burst rule, which takes a deadline job to run as long
    as the 90th percentile of true / estimated runtime says (``market_quantile``): priced at spot
    when it would be sent to on-demand, the swap would save nothing. Most jobs ran as estimated
    (no correction), one in seven twice as long."""
    ratios = (1.0,) * 17 + (2.0,) * 3
    k = on_prem("k", 1, 120, deadline=NOW + timedelta(minutes=120 + 90), job_class=JobClass.STRICT)
    bulk = on_prem("bulk", 7, 600, deadline=NOW + timedelta(hours=11), job_class=JobClass.STRICT)
    snap = replace(snapshot(bulk, k), runtime_ratios=ratios)
    as_estimated = BursterPolicy(COST, BursterParams(burst=BurstParams(prewarm=False)))
    assert kinds(as_estimated, snap) == [("preempt", "k"), ("hold", "urgent")]
    spread = BursterPolicy(COST, BursterParams(burst=BurstParams(prewarm=False, market_quantile=0.9)))
    assert kinds(spread, snap) == [("launch", "urgent@on_demand")]
    roomy = on_prem("k", 1, 120, deadline=NOW + timedelta(minutes=120 + 300), job_class=JobClass.STRICT)
    assert kinds(spread, replace(snap, running=(bulk, roomy))) == [("preempt", "k"), ("hold", "urgent")]


def _capped(cloud_left_min: float, ratios: tuple[float, ...]) -> tuple[BursterPolicy, Snapshot]:
    """A full cap of one cloud node, running a job with ``cloud_left_min`` to go; boots exactly 3 min;
    finished jobs' true / estimated runtimes ``ratios``."""
    from burster.lifecycle import NodeState
    from burster.model import Node
    exact = CostModel(replace(COST.p, launch_latency_sigma=0.0))
    burst = replace(POLICY.params.burst, market_quantile=0.9)  # as configured by default
    policy = BursterPolicy(exact, replace(POLICY.params, burst=burst, guards=GuardParams(max_nodes=1)))
    bulk = on_prem("bulk", 6, 600, deadline=NOW + timedelta(hours=11), job_class=JobClass.STRICT)
    cloud_job = Demand("cj", 1, NOW - timedelta(hours=2), 3600 + cloud_left_min * 60, gpu_model="V100")
    cloud = Placement(cloud_job, ("i-1",), NOW - timedelta(hours=1), True, Market.SPOT, SPOT.price_per_hour_usd)
    node = Node("i-1", SPOT, NodeState.READY, NOW - timedelta(hours=1), "r-1", job_id="cj")
    snap = snapshot(bulk, on_prem("k", 2, 600), pending=(urgent(slack_min=15.0, run_min=20.0),))
    return policy, replace(snap, running=(*snap.running, cloud), cloud_nodes=(node,), runtime_ratios=ratios)


SPREAD = (0.6,) * 20 + (1.0,) * 20 + (2.0,) * 20  # median 1 (estimates stand); 90th percentile 2x


def test_a_launch_the_cap_holds_back_past_its_deadline_makes_preempting_pay_as_early_as_estimates_run_long() -> None:
    """Unheld, the urgent job's 20-min on-demand run costs less than sending a 2-GPU reserved job
    away, and its 15 min of slack cover a boot. At a full cap it waits for the one cloud node to end:
    in 5 min it still starts in time (held back, nothing preempted); in 2 h it would miss. With
    estimates that run 2x long one time in ten, that miss is 18 min away and a 20-min run may take
    40: the swap pays now. With exact estimates it waits until the miss is a boot away, as an
    on-demand launch would."""
    policy, soon = _capped(5, SPREAD)
    assert kinds(policy, soon) == [] and [a.job_id for a, _ in policy.decide(soon).held_back] == ["urgent"]
    policy, late = _capped(120, SPREAD)
    assert kinds(policy, late) == [("preempt", "k"), ("hold", "urgent")]
    uncapped = BursterPolicy(policy.cost, replace(policy.params, guards=GuardParams()))
    assert kinds(uncapped, late) == [("launch", "urgent@on_demand")]
    policy, exact = _capped(120, (1.0,) * 60)
    assert kinds(policy, exact) == []
    assert kinds(policy, replace(exact, now=NOW + timedelta(minutes=16))) == [("preempt", "k"), ("hold", "urgent")]


def test_a_deadline_job_waits_for_a_reserved_end_only_if_it_comes_in_time_when_estimates_run_long() -> None:
    """A reserved job 2 min from its estimated end: with exact estimates the urgent job waits for it
    (a boot takes 3). Where one job in three ran 2x its estimate, it may run another hour: the urgent
    job goes to on-demand (waiting on such ends chained holds into strict misses under sigma 0.5
    estimate error), and the reserved job is not sent away either (a swap is priced on its
    estimate, 2 min of cloud; one an hour from its end still is). A job
    with no deadline, past its wait budget with only on-demand to go to, still waits on the estimate."""
    policy = BursterPolicy(COST, BursterParams(burst=BurstParams(prewarm=False, market_quantile=0.9)))
    bulk = on_prem("bulk", 7, 600, deadline=NOW + timedelta(hours=11), job_class=JobClass.STRICT)
    loose, tight = on_prem("k", 1, 2), on_prem("k", 1, 2, deadline=NOW + timedelta(minutes=30),
                                                job_class=JobClass.STRICT)
    for k in (loose, tight):
        assert kinds(policy, replace(snapshot(bulk, k), runtime_ratios=(1.0,) * 60)) == [("hold", "urgent")]
    for k in (loose, tight):
        assert kinds(policy, replace(snapshot(bulk, k), runtime_ratios=SPREAD)) == [("launch", "urgent@on_demand")]
    an_hour_left = on_prem("k", 1, 60)  # far from its end by any estimate: priced to send away as before
    sent_away = [("preempt", "k"), ("hold", "urgent")]
    assert kinds(policy, replace(snapshot(bulk, an_hour_left), runtime_ratios=SPREAD)) == sent_away
    overdue = replace(urgent(), submitted_at=NOW - timedelta(hours=2), deadline=None, job_class=JobClass.BEST_EFFORT)
    waits = replace(snapshot(bulk, tight, pending=(overdue,)), runtime_ratios=SPREAD, offerings=(OD,))
    assert kinds(policy, waits) == [("hold", "urgent")]  # no deadline to miss: a wait by the estimate stands
