"""Edges of the preempt rule (policies/preempt.py) a mutation audit found unpinned.

Each test calls ``preempt_for_urgent`` (or the index) directly on one-GPU reserved nodes, with hand-built
launches, so that one boundary, term or tie-break decides the outcome.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.model import Demand, JobClass, Market, Offering, Placement, PoolNode, Snapshot
from burster.plan import Action, Hold, Launch, Preempt
from policies.burst import BurstParams
from policies.cost import CostModel, CostParams
from policies.offers import offer_book
from policies.preempt import _Away, _Reserved, preempt_for_urgent

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
OD = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.92)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.5))
PARAMS = BurstParams(prewarm=False)


def urgent(job_id: str = "u", run_s: float = 3600.0, slack_s: float = 300.0, gpus: int = 1) -> Demand:
    """A strict job whose deadline leaves ``slack_s`` once a 180 s boot and its run are counted."""
    return Demand(job_id, gpus, NOW - timedelta(minutes=1), run_s, gpu_model="V100",
                  deadline=NOW + timedelta(seconds=run_s + slack_s + 180), job_class=JobClass.STRICT)


def reserved(job_id: str, left_s: float, node: str = "n0", gpus: int = 1, **kw: object) -> Placement:
    """A job on reserved node ``node``, started an hour ago, with ``left_s`` to run."""
    job = Demand(job_id, gpus, NOW - timedelta(hours=5), 3600 + left_s, gpu_model="V100", **kw)  # type: ignore[arg-type]
    return Placement(job, (node,), NOW - timedelta(hours=1), False, Market.RESERVED)


def ending(job_id: str, left_s: float) -> Placement:
    """A short job on reserved node n0 with ``left_s`` to run of a ``left_s + 40`` s estimate: it ends
    within a boot even if it runs twice its estimate."""
    job = Demand(job_id, 1, NOW - timedelta(minutes=5), left_s + 40.0, gpu_model="V100")
    return Placement(job, ("n0",), NOW - timedelta(seconds=40), False, Market.RESERVED)


def snap(running: tuple[Placement, ...], pending: tuple[Demand, ...], free: dict[str, int] | None = None,
         offerings: tuple[Offering, ...] = (OD, SPOT), **kw: object) -> Snapshot:
    """Each running job on its own node, as big as the job, full unless ``free`` says otherwise."""
    free = free or {}
    pool = tuple(PoolNode(p.node_ids[0], "V100", p.job.gpus + free.get(p.node_ids[0], 0),
                          free.get(p.node_ids[0], 0)) for p in running)
    return Snapshot(NOW, pending, running, pool, (), offerings, **kw)  # type: ignore[arg-type]


def launch(job: Demand, offering: Offering = OD) -> Launch:
    return Launch(offering, 1, "burst", f"req-{job.job_id}", job_id=job.job_id)


def swap(s: Snapshot, *jobs: Demand, offering: Offering = OD, cost: CostModel = COST, params: BurstParams = PARAMS,
         waits: dict[str, float] | None = None, protected: frozenset[str] = frozenset()
         ) -> tuple[list[Launch], list[Action]]:
    return preempt_for_urgent(s, cost, params, [launch(j, offering) for j in jobs], protected,
                              None if waits is None else (lambda: waits))


def summary(actions: list[Action]) -> list[tuple[str, str, str]]:
    """(kind, job, node) of each action."""
    return [("hold", a.job_id, a.node_id) if isinstance(a, Hold) else ("preempt", a.job_id, a.node_ids[0])
            for a in actions if isinstance(a, Hold | Preempt)]


def test_a_held_back_deadline_launch_is_weighed_only_where_estimates_run_past_trusted() -> None:
    """A spot launch the node cap holds back for a deadline job is urgent only where estimates are
    seen to run long: runs_long strictly above TRUSTED_WITHIN (1.25). At exactly 1.25 the wait is not
    weighed (the spot launch stays); at 2x, the reserved job ending in 60 s (in time at 2x too) is waited for."""
    params = BurstParams(prewarm=False, market_quantile=0.9)
    job = urgent(slack_s=600.0)
    for ratio, want in ((1.25, []), (2.0, [("hold", "u", "n0")])):
        s = snap((ending("k", 60.0),), (job,), runtime_ratios=(ratio,) * 20)
        kept, actions = swap(s, job, offering=SPOT, params=params, waits={"req-u": 3600.0})
        assert summary(actions) == want, ratio
        assert len(kept) == 1 - len(want)


def test_the_dearest_launch_is_replaced_first() -> None:
    """Two urgent on-demand launches and one reserved job ending in 60 s: the 3 h launch (dearer than
    the 30 min one) gets the node, even though its job id sorts after the other's."""
    a, b = urgent("a", run_s=1800.0), urgent("b", run_s=3 * 3600.0)
    kept, actions = swap(snap((reserved("k", 60.0),), (a, b)), a, b)
    assert summary(actions) == [("hold", "b", "n0")]
    assert [k.job_id for k in kept] == ["a"]


def test_a_job_that_can_just_wait_for_the_checkpoint_is_still_weighed() -> None:
    """Skipped only when slack + a boot is under the checkpoint write: at exactly the write (60 s
    before it must start, slack -120 s) it is weighed, and waits for a job ending in 30 s."""
    job = Demand("u", 1, NOW, 3600.0, gpu_model="V100", deadline=NOW + timedelta(seconds=3660),
                 job_class=JobClass.STRICT)
    _, actions = swap(snap((reserved("k", 30.0),), (job,)), job)
    assert summary(actions) == [("hold", "u", "n0")]


def test_holds_last_a_boot_past_the_end_or_the_checkpoint_deadline() -> None:
    """A wait hold runs from the reserved job's end to a boot past it; a preempt's hold from now to a
    boot past the checkpoint deadline (write 60 s + 60 s of margin)."""
    job = urgent()
    _, actions = swap(snap((reserved("k", 100.0),), (job,)), job)
    (hold,) = actions
    assert isinstance(hold, Hold)
    assert (hold.start_at, hold.until) == (NOW + timedelta(seconds=100), NOW + timedelta(seconds=280))
    _, actions = swap(snap((reserved("k", 7200.0),), (job,)), job)
    preempt, hold = actions
    assert isinstance(preempt, Preempt) and isinstance(hold, Hold)
    assert preempt.deadline == NOW + timedelta(seconds=120)
    assert (hold.start_at, hold.until) == (NOW, NOW + timedelta(seconds=300))


def test_a_held_back_launch_is_priced_at_a_day_of_wait_at_most_plus_a_boot() -> None:
    """Held back 10 days at the node cap, a launch is priced as its run plus a wait of one day and a
    boot (86,580 s), with the miss that wait causes: the price the wait hold's reason quotes."""
    params = BurstParams(prewarm=False, market_quantile=0.9)
    job = urgent()
    s = snap((ending("k", 60.0),), (job,), runtime_ratios=(2.0,) * 20)
    _, actions = swap(s, job, params=params, waits={"req-u": 10 * 86400.0})
    (hold,) = actions
    usd = COST.job_cost_usd(job, OD) + COST.wait_cost_usd(job, 86400.0 + 180.0, NOW)
    assert isinstance(hold, Hold) and f"(${usd:.2f})" in hold.reason
    assert round(usd - COST.job_cost_usd(job, OD), 3) == 560.125  # 24.05 h x $2.5, and the $500 miss


def test_a_gang_is_never_urgent() -> None:
    """A two-node job's on-demand launch is kept, even with a reserved job of its size ending in 60 s."""
    gang = Demand("g", 2, NOW, 3600.0, nodes=2, gpu_model="V100", deadline=NOW + timedelta(hours=2),
                  job_class=JobClass.STRICT)
    kept, actions = swap(snap((reserved("k", 60.0, gpus=2),), (gang,)), gang)
    assert actions == [] and [k.job_id for k in kept] == ["g"]


def test_a_swap_is_priced_as_the_reserved_jobs_cloud_run_for_as_long_as_the_urgent_one_runs() -> None:
    """Sent to spot for the urgent job's hour: its cloud run of 1 h + a 300 s restart (its work as it
    stands now), the pause's wait value (60 s write + 180 s boot + 300 s restart: 540 s x $2.5/h =
    $0.375) and, with 2 h left, a move back (write + restart: 360 s = $0.25). With exactly the urgent
    job's hour left, nothing is left to move back."""
    job = urgent()
    launch_usd = COST.job_cost_usd(job, OD) + COST.boot_miss_usd(job, NOW)
    for left_s, back_usd in ((7200.0, 0.25), (3600.0, 0.0)):
        k = reserved("k", left_s)
        away = COST.job_cost_usd(k.job_now(NOW), SPOT, 3600.0 + 300.0) + 0.375 + back_usd
        _, actions = swap(snap((k,), (job,)), job)
        preempt = actions[0]
        assert isinstance(preempt, Preempt) and preempt.reason.endswith(f"saves ${launch_usd - away:.2f}"), left_s


def test_the_wait_limit_shrinks_with_a_negative_slack_and_includes_its_end() -> None:
    """A job ending exactly a boot (180 s) from now is waited for; one that must start in 80 s (slack -100 s) waits
    only for a job ending by then: one ending in 120 s is preempted instead."""
    job = urgent(slack_s=300.0)
    _, actions = swap(snap((reserved("k", 180.0),), (job,)), job)
    assert summary(actions) == [("hold", "u", "n0")]
    late = Demand("u", 1, NOW, 3600.0, gpu_model="V100", deadline=NOW + timedelta(seconds=3680),
                  job_class=JobClass.STRICT)
    _, actions = swap(snap((reserved("k", 120.0),), (late,)), late)
    assert summary(actions) == [("preempt", "k", "n0"), ("hold", "u", "n0")]


def test_a_job_at_its_end_or_already_stopping_is_no_candidate() -> None:
    """Called on jobs as given: one with 0 s left frees its node anyway, and one stopping (asked to
    checkpoint for another reason, its node not held) is not taken either: the launch stays."""
    job = urgent()
    done = reserved("k", 0.0)
    stopping = Placement(done.job.with_estimate(3600 + 7200.0), ("n0",), done.started_at, False, Market.RESERVED,
                         stopping_at=NOW + timedelta(seconds=60))
    for p in (done, stopping):
        kept, actions = swap(snap((p,), (job,)), job)
        assert actions == [] and len(kept) == 1


def test_a_group_is_searched_past_a_job_that_ends_late_for_one_that_ends_soon() -> None:
    """Same fit group, the first in the snapshot runs 2 h more, the second ends in 60 s: waited for."""
    job = urgent()
    s = snap((reserved("k0", 7200.0), reserved("k1", 60.0, node="n1")), (job,))
    _, actions = swap(s, job)
    assert summary(actions) == [("hold", "u", "n1")]


AZ_SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.80)


def test_equal_savings_go_to_the_sooner_end_then_the_earlier_in_the_snapshot() -> None:
    """A best-effort job and a strict one with 10 h of slack, both outlasting the urgent hour, cost the
    same to send to Azure spot (no risk; its round-down billing makes the bound exact): two price
    groups, one saving. The one ending sooner wins, whichever comes first; with equal ends, the first."""
    job = urgent()

    def placed(job_id: str, left_s: float, node: str, strict: bool) -> Placement:
        kw: dict[str, object] = {"deadline": NOW + timedelta(seconds=left_s, hours=10),
                                 "job_class": JobClass.STRICT} if strict else {}
        return reserved(job_id, left_s, node=node, **kw)

    for be_left, strict_left, want in ((10800.0, 7200.0, "k2"), (10800.0, 10800.0, "k1")):
        s = snap((placed("k1", be_left, "n1", False), placed("k2", strict_left, "n2", True)), (job,),
                 offerings=(OD, SPOT, AZ_SPOT))
        _, actions = swap(s, job)
        assert summary(actions)[0] == ("preempt", want, "n1" if want == "k1" else "n2"), (be_left, strict_left)


def test_jobs_with_deadlines_that_outlast_the_urgent_one_are_each_priced_for_their_risk() -> None:
    """Two strict jobs of one price group (Azure spot, taken first by ``market_order``, hourly
    checkpoints), both outlasting the urgent hour: they are not alike. The sooner end has 3,500 s of
    slack there: an interruption's unsaved work (up to 3,600 s) can take more, exposed 580 s of its
    hour (about $39 of risk); the later one has 10 h. The later one is sent away, not the sooner."""
    job = urgent()
    params = BurstParams(prewarm=False, market_order=(frozenset({Market.SPOT}), frozenset({Market.ON_DEMAND})))

    def placed(job_id: str, left_s: float, node: str, slack_s: float) -> Placement:
        # its slack once paused 540 s and rebooted 180 s
        deadline = NOW + timedelta(seconds=left_s + 540 + 180 + slack_s)
        p = reserved(job_id, left_s, node=node, deadline=deadline, job_class=JobClass.STRICT)
        return Placement(replace(p.job, checkpoint_interval_s=3600.0), p.node_ids, p.started_at, False, p.market)

    running = (placed("soon", 7200.0, "n1", 3500.0), placed("late", 10800.0, "n2", 36000.0))
    _, actions = swap(snap(running, (job,), offerings=(OD, AZ_SPOT)), job, params=params)
    assert summary(actions)[0] == ("preempt", "late", "n2")


def test_a_deadline_job_is_sent_away_only_with_the_margin_and_a_restart_of_slack_left_after_its_pause() -> None:
    """Its slack once paused (60 s write + 180 s boot + 300 s restart) and rebooted must be at least
    the 900 s margin + a 300 s restart: at 1,200 s it goes to a $1.50 on-demand node (no spot
    qualifies), at 1,199 s it stays and the urgent launch goes ahead."""
    job = urgent()
    cheap = Offering("gcp", "us-central1", "us-central1-a", "n1-v100", "V100", 1, Market.ON_DEMAND, 1.50)
    for slack_s, want in ((1200.0, [("preempt", "k", "n0"), ("hold", "u", "n0")]), (1199.0, [])):
        k = reserved("k", 7200.0, deadline=NOW + timedelta(seconds=7200 + 540 + 180 + slack_s),
                     job_class=JobClass.STRICT)
        _, actions = swap(snap((k,), (job,), offerings=(OD, SPOT, cheap)), job)
        assert summary(actions) == want, slack_s


def test_a_swap_that_saves_nothing_is_not_made() -> None:
    """The index asked with the urgent launch priced at exactly what sending the reserved job away
    costs: no swap; a cent more, and it saves that cent."""
    job = urgent()
    k = reserved("k", 7200.0)
    s = snap((k,), (job,))
    away = _Away(COST, PARAMS, offer_book(s, COST), NOW)
    usd = away.usd(k, job)
    index = _Reserved(s, frozenset(), away)
    assert index.choose(job, usd, OD.price_per_hour_usd) is None
    choice = index.choose(job, usd + 0.01, OD.price_per_hour_usd)
    assert choice is not None and choice[1:] == (False, k, "n0") and abs(choice[0] - 0.01) < 1e-9


def test_a_job_bound_for_the_urgent_jobs_own_rate_is_not_swapped_even_where_its_run_is_shorter() -> None:
    """A strict reserved job with 10 min left and 1,300 s of slack after its pause: too tight for spot
    (a 480 s changeover and the 900 s margin need 1,380 s), it would go to the same $3.06 on-demand
    node per GPU as the urgent job. Sending it away would bill only its 10 minutes, not
    the urgent hour, but a swap moves work to a cheaper market: none, the launch goes ahead."""
    job = urgent()
    k = reserved("k", 600.0, deadline=NOW + timedelta(seconds=600 + 540 + 180 + 1300), job_class=JobClass.STRICT)
    kept, actions = swap(snap((k,), (job,)), job)
    assert actions == [] and len(kept) == 1


def test_a_job_too_tight_for_a_checkpoint_still_waits_for_a_reserved_job_about_to_end() -> None:
    """It must start within 30 s (slack -150 s): no reserved job can be checkpointed for it in time,
    but one ending in 10 s frees its node first (the skip used to come before the wait was looked
    for, and the job burst with a boot it could not afford). One ending in 100 s is neither waited
    for nor sent away. Found by helper-44's mutation audit."""
    job = Demand("u", 1, NOW, 3600.0, gpu_model="V100", deadline=NOW + timedelta(seconds=3630),
                 job_class=JobClass.STRICT)
    kept, actions = swap(snap((reserved("k", 10.0),), (job,)), job)
    assert summary(actions) == [("hold", "u", "n0")] and kept == []
    kept, actions = swap(snap((reserved("k", 100.0),), (job,)), job)
    assert actions == [] and [a.job_id for a in kept] == ["u"]


def test_a_doubtful_end_is_waited_for_only_by_a_job_whose_margin_takes_a_failed_wait() -> None:
    """Where estimates run 2x long, a reserved job 60 s from its estimated end may run an hour more.
    A strict job with 1,080 s of slack (the 900 s margin plus the 180 s a failed wait may cost) still
    waits for it; one with 1,079 s does not (nor is the doubtful job sent away): its launch stays.
    Best-effort and exact estimates: the wait stands."""
    params = BurstParams(prewarm=False, market_quantile=0.9)
    for slack, ratios, want in ((1080.0, (2.0,) * 20, [("hold", "u", "n0")]), (1079.0, (2.0,) * 20, []),
                                (1079.0, (1.0,) * 20, [("hold", "u", "n0")])):
        job = urgent(slack_s=slack)
        s = snap((reserved("k", 60.0),), (job,), runtime_ratios=ratios)
        kept, actions = swap(s, job, params=params)
        assert summary(actions) == want, (slack, ratios[0])
        assert len(kept) == 1 - len(want)
    best_effort = replace(urgent(), deadline=None, job_class=JobClass.BEST_EFFORT)
    s = snap((reserved("k", 60.0),), (best_effort,), runtime_ratios=(2.0,) * 20)
    assert summary(swap(s, best_effort, params=params)[1]) == [("hold", "u", "n0")]
