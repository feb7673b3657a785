"""Learning from finished jobs how far off runtime estimates are: the correction, the deferral scale, the
runtime a deadline job's market is chosen for, and the belief about jobs past their estimates."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burster.interfaces import Policy
from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Snapshot
from burster.plan import Launch
from policies import estimates
from policies.baselines import ComputeWaitPolicy, GreedySpotPolicy
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.deadline import switch_behind_schedule
from policies.estimates import (
    MIN_RATIOS,
    OVERRUN_SEEN,
    OVERRUN_STEP,
    TEAM_RATIOS,
    believe_overruns,
    corrected,
    estimate_scale,
    overrun_factor,
    runs_long,
    runtime_correction,
    runtime_corrections,
    taken_long,
)

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)


def test_the_estimate_scale_is_a_low_quantile_of_recent_runtime_ratios_at_most_one() -> None:
    assert estimate_scale((), 0.05) == 1.0
    assert estimate_scale((0.5,) * (MIN_RATIOS - 1), 0.05) == 1.0  # too few finished jobs to trust
    ratios = tuple(0.2 + 0.01 * i for i in range(100))  # 0.20 .. 1.19
    assert estimate_scale(ratios, 0.05) == ratios[5]
    assert estimate_scale(ratios, 0.0) == 0.2 and estimate_scale(ratios, 1.0) == 1.0  # never more than 1
    assert estimate_scale((1.0,) * 256, 0.05) == 1.0  # exact estimates leave the budget whole


def test_a_deadline_job_is_taken_to_run_a_high_quantile_of_recent_runtime_ratios_at_least_its_estimate() -> None:
    ratios = tuple(0.2 + 0.01 * i for i in range(200))  # 0.20 .. 2.19
    assert runs_long(ratios, 0.9) == ratios[180] and runs_long(ratios, 0.0) == 1.0  # 0: off
    assert runs_long(ratios[:MIN_RATIOS - 1], 0.9) == 1.0  # too few finished jobs to trust
    assert runs_long((0.5,) * 256, 0.9) == 1.0  # estimates that run long never shorten it
    job = Demand("d", 1, NOW, 3600, deadline=NOW + timedelta(hours=3), job_class=JobClass.STRICT, done_s=600)
    long = taken_long(job, 2.0)
    assert (long.done_s, long.remaining_s) == (600, 6600)  # twice the estimate, the work done kept
    later = replace(job, done_s=1800)  # 20 minutes on: the overrun is the same 3600 s
    assert taken_long(later, 2.0).remaining_s == later.remaining_s + 3600 == long.remaining_s - 1200
    assert taken_long(replace(job, job_class=JobClass.BEST_EFFORT), 2.0).remaining_s == 3000
    assert taken_long(replace(job, deadline=None), 2.0).remaining_s == 3000


def test_estimates_are_lengthened_by_the_median_and_shortened_only_as_far_as_three_jobs_in_four_ran() -> None:
    assert runtime_correction(()) == 1.0
    assert runtime_correction((0.5,) * (MIN_RATIOS - 1)) == 1.0  # too few finished jobs
    assert runtime_correction((1.0,) * 256) == 1.0  # exact estimates
    assert runtime_correction((0.81,) * 100) == runtime_correction((1.24,) * 100) == 1.0  # within 1.25x: noise
    assert runtime_correction((0.5,) * 100) == 0.5  # time limits twice the runtimes
    assert runtime_correction(tuple(0.1 + 0.005 * i for i in range(100))) == 0.47  # 75 % ran within 0.475
    # most users' limits are five times their runtimes, 40 % set them right: those must not be
    # shortened, or their deadline jobs would look safe when they are not
    assert runtime_correction((0.2,) * 60 + (1.0,) * 40) == 1.0
    # limits about three times the runtimes, a fifth of the jobs running close to them: shortened to
    # what three in four ran within, not left three times long (careful users under a quarter of the
    # jobs are not told from such a spread)
    assert runtime_correction((0.3,) * 80 + (0.9,) * 20) == 0.3
    assert runtime_correction((3.0,) * 30) == 3.0  # estimates that run short: lengthened by the median
    assert runtime_correction((0.5,) * 40 + (1.5,) * 60) == 1.5


def _world() -> Snapshot:
    job = Demand("q", 1, NOW, 7_200.0, gpu_model="V100")
    run = Demand("r", 8, NOW - timedelta(hours=1), 4 * 3600.0, gpu_model="V100", done_s=600.0)
    placed = Placement(run, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED)
    return Snapshot(NOW, (job,), (placed,), (PoolNode("onprem-0", "V100", 8, 0),), (), (),
                    runtime_ratios=(0.5,) * 30)


def test_a_corrected_snapshot_scales_every_estimate_and_the_expected_ends() -> None:
    snap = _world()
    assert corrected(snap, (1.0, {})) is snap
    half = corrected(snap, (0.5, {}))
    assert half.pending[0].est_runtime_s == 3_600.0 and half.pending[0].remaining_s == 3_600.0
    (p,) = half.running
    assert p.job.est_runtime_s == 7_200.0 and p.job.done_s == 600.0
    assert p.ends_at_ts == (NOW - timedelta(hours=1) + timedelta(seconds=6_600)).timestamp()
    assert half.runtime_ratios == (1.0,) * 30  # relative to the corrected estimates
    tiny = corrected(replace(snap, pending=(Demand("t", 1, NOW, 100.0),)), (0.1, {}))
    assert tiny.pending[0].est_runtime_s == 60.0


def test_a_team_with_enough_finished_jobs_has_its_estimates_corrected_by_its_own() -> None:
    """Team a sets limits 4x its runtimes, team b exact ones, team c has too few jobs to tell: a's are
    quartered, b's stand, c's take the factor of all; the spread left is none but c's."""
    ratios = (0.25,) * 30 + (1.0,) * 30 + (0.25,) * 5  # the last jobs to finish, and their teams
    teams = ("a",) * 30 + ("b",) * 30 + ("c",) * 5
    own = (("a", (0.25,) * TEAM_RATIOS), ("b", (1.0,) * TEAM_RATIOS), ("c", (0.25,) * (TEAM_RATIOS - 1)))
    factor, by_team = runtime_corrections(ratios, own)
    assert factor == 1.0 and by_team == {"a": 0.25, "b": 1.0}  # three in four of all ran within 1x
    assert runtime_corrections(ratios) == (1.0, {})  # teams not told: one factor for all
    jobs = (*(Demand(f"{t}1", 1, NOW, 8_000.0, team=t) for t in "abc"), Demand("n", 1, NOW, 8_000.0))
    snap = Snapshot(NOW, jobs, (), (), (), (), runtime_ratios=ratios, runtime_ratio_teams=teams,
                    team_runtime_ratios=own)
    fixed = corrected(snap, (factor, by_team))
    assert [j.est_runtime_s for j in fixed.pending] == [2_000.0, 8_000.0, 8_000.0, 8_000.0]
    assert fixed.runtime_ratios == (1.0,) * 60 + (0.25,) * 5  # c's error is left in the spread
    loose = (0.25,) * 90 + (1.0,) * 30 + (0.25,) * 5
    assert runtime_corrections(loose, own) == (0.25, {"a": 0.25, "b": 1.0})  # c takes the factor of all
    # a team's own sample, not its share of the last jobs, says whether it is told apart
    assert runtime_corrections((0.25,) * 40, (("a", (1.0,) * TEAM_RATIOS),)) == (0.25, {"a": 1.0})
    # ratios not labelled with teams are corrected by the factor of all
    plain = corrected(replace(snap, runtime_ratio_teams=()), (0.5, {"a": 0.25}))
    assert plain.runtime_ratios == (0.5,) * 30 + (2.0,) * 30 + (0.5,) * 5


SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0, restart_overhead_s=300, launch_latency_s=180))


# the job is late by its uncorrected estimate: with ``price_late`` its market would be priced by the
# spread of the ratios (tests/policies/test_late.py); here the estimate and its correction decide
ON_ESTIMATES = BurstParams(defer_to_budget=True, market_quantile=0.9, price_late=False)


def _deadline_world(ratios: tuple[float, ...]) -> Snapshot:
    """A 4 h estimate (really 2 h) due in 3 h, the pool busy for 5 h: on its estimate it cannot make
    the deadline anywhere; on the runtime it can, on spot."""
    job = Demand("dl", 1, NOW, 4 * 3600.0, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(hours=3))
    hog = Demand("hog", 8, NOW - timedelta(hours=1), 6 * 3600.0, gpu_model="V100")
    placed = Placement(hog, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED)
    return Snapshot(NOW, (job,), (placed,), (PoolNode("onprem-0", "V100", 8, 0),), (), (SPOT, OD),
                    runtime_ratios=ratios)


@pytest.mark.parametrize(("ratios", "correct", "market"), [
    ((0.5,) * 30, True, Market.SPOT),        # estimates run twice the runtime: it has slack for spot
    ((0.5,) * 30, False, Market.ON_DEMAND),  # trusting the estimate, only on-demand could make it
    ((), True, Market.ON_DEMAND),            # no finished jobs yet: the estimate stands
    ((0.2,) * 60 + (1.0,) * 40, True, Market.ON_DEMAND),  # 40 % of users set exact limits: not shortened
])
def test_the_policy_reads_corrected_estimates(ratios: tuple[float, ...], correct: bool, market: Market) -> None:
    policy = BursterPolicy(COST, BursterParams(burst=ON_ESTIMATES, correct_estimates=correct))
    launches = [a for a in policy.decide(_deadline_world(ratios)).actions if isinstance(a, Launch)]
    assert [a.offering.market for a in launches] == [market]


@pytest.mark.parametrize(("team", "market"), [("vc_loose", Market.SPOT), ("vc_careful", Market.ON_DEMAND)])
def test_the_policy_corrects_a_team_s_estimates_by_that_team_s_jobs(team: str, market: Market) -> None:
    """60 % of jobs, all of one team, ran a fifth of their estimates, the rest exactly theirs: the
    loose team's deadline job has slack for spot, the careful team's has not (one factor for all
    would leave both on-demand, test above)."""
    world = _deadline_world((0.2,) * 60 + (1.0,) * 40)
    world = replace(world, pending=(replace(world.pending[0], team=team),),
                    runtime_ratio_teams=("vc_loose",) * 60 + ("vc_careful",) * 40,
                    team_runtime_ratios=(("vc_careful", (1.0,) * 128), ("vc_loose", (0.2,) * 128)))
    launches = [a for a in BursterPolicy(COST, BursterParams(burst=ON_ESTIMATES)).decide(world).actions
                if isinstance(a, Launch)]
    assert [a.offering.market for a in launches] == [market]


def _overrun_world() -> Snapshot:
    """A reserved 1 h job (10 min done before this start) started 100 min ago: 50 min past its
    estimate; another just started, and a 10 min cloud job started 1 h ago. A 2 h job waits for 8 GPUs."""
    late = Demand("late", 8, NOW - timedelta(hours=3), 3_600.0, gpu_model="V100", done_s=600.0)
    fresh = Demand("fresh", 8, NOW - timedelta(hours=1), 3_600.0, gpu_model="V100")
    cloud = Demand("cloud", 1, NOW - timedelta(hours=3), 600.0, gpu_model="V100")
    running = (Placement(late, ("onprem-0",), NOW - timedelta(minutes=100), False, Market.RESERVED),
               Placement(fresh, ("onprem-1",), NOW - timedelta(minutes=1), False, Market.RESERVED),
               Placement(cloud, ("aws-1",), NOW - timedelta(hours=1), True, Market.ON_DEMAND, 3.06))
    waiting = Demand("w", 8, NOW - timedelta(minutes=5), 7_200.0, gpu_model="V100")
    nodes = (PoolNode("onprem-0", "V100", 8, 0), PoolNode("onprem-1", "V100", 8, 0))
    return Snapshot(NOW, (waiting,), running, nodes, (), (OD,))


def test_a_job_past_its_estimate_is_believed_to_need_the_next_step_of_it() -> None:
    snap = _overrun_world()
    believed, wake = believe_overruns(snap)
    late, fresh, cloud = believed.running
    # 10 min done + 100 min run = 110 min had; 60 x 1.5 = 90 min is past too, 60 x 2.25 = 135 is not
    assert OVERRUN_STEP == 1.5 and late.job.est_runtime_s == 3_600.0 * 2.25
    assert late.ends_at_ts == (NOW - timedelta(minutes=100) + timedelta(minutes=125)).timestamp()
    assert fresh is snap.running[1]  # within its estimate
    # on the cloud alike: 60 min had of a 10 min estimate, 10 x 1.5^4 = 50.6 min is past, 10 x 1.5^5 = 75.9 is not
    assert cloud.job.est_runtime_s == 600.0 * OVERRUN_STEP ** 5
    assert wake == NOW + timedelta(seconds=600.0 * OVERRUN_STEP ** 5 - 3_600.0)  # the first end
    assert believe_overruns(replace(snap, running=snap.running[:2]))[1] == NOW + timedelta(minutes=25)
    # a job within its estimate is left as it is; past its end it would start to overrun: a wake at the end
    within = replace(snap, running=snap.running[1:2])
    assert believe_overruns(within) == (within, NOW + timedelta(minutes=59))
    assert believe_overruns(replace(snap, running=())) == (replace(snap, running=()), None)
    snap = replace(snap, running=snap.running[:1])  # the overrunning reserved job's steps, alone
    # at the step's end it is not past it yet; just after, it needs the next step
    at_end, _ = believe_overruns(replace(snap, now=NOW + timedelta(minutes=25)))
    assert at_end.running[0].job.est_runtime_s == 3_600.0 * 2.25
    assert believe_overruns(replace(snap, now=NOW + timedelta(minutes=20)))[0].running[0] is at_end.running[0]  # reused
    after, wake = believe_overruns(replace(snap, now=NOW + timedelta(minutes=25, seconds=10)))
    assert after.running[0].job.est_runtime_s == 3_600.0 * OVERRUN_STEP ** 3
    assert wake == NOW - timedelta(minutes=100) + timedelta(seconds=3_600.0 * OVERRUN_STEP ** 3 - 600.0)


@pytest.mark.parametrize("policy", [BursterPolicy(COST, BursterParams(correct_estimates=False)),
                                    GreedySpotPolicy(COST), ComputeWaitPolicy(COST)], ids=lambda p: p.name)
def test_a_policy_facing_an_overrunning_job_says_when_it_could_next_decide(policy: Policy) -> None:
    """Taken as ending now, the overrunning job kept the policy deciding every tick (no quiet_until);
    believed to run on, the waiting job's expected wait falls in step again until the belief's end."""
    snap = _overrun_world()
    snap = replace(snap, running=snap.running[:2], offerings=())  # nothing to launch: an empty plan
    plan = policy.decide(snap)
    assert not plan.actions
    assert plan.quiet_until == NOW + timedelta(minutes=25)


def _late_spot_job(ratios: tuple[float, ...] = ()) -> Snapshot:
    """A strict 1 h job on spot, 100 min in, due in 50 min: believed 2.25 h by the fixed steps, so
    35 min left and 15 min of slack."""
    spot = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)
    job = Demand("dl", 1, NOW - timedelta(hours=2), 3_600.0, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(minutes=35 + 15))
    started = NOW - timedelta(minutes=100)
    p = Placement(job, ("spot-1",), started, True, Market.SPOT, spot.price_per_hour_usd)
    node = Node("spot-1", spot, NodeState.READY, started, "rq", job_id="dl", for_job="dl")
    return Snapshot(NOW, (), (p,), (), (node,), (spot, OD), runtime_ratios=ratios)


def test_a_deadline_job_on_spot_past_its_estimate_is_switched_to_on_demand_in_time() -> None:
    """Taken as ending now, a spot job that outran its estimate looked done, so the deadline switch
    never moved it; believed to need the next step, its slack shows it falling behind."""
    snap = _late_spot_job()
    policy = BursterPolicy(COST, BursterParams(correct_estimates=False))
    (launch,) = [a for a in policy.decide(snap).actions if isinstance(a, Launch)]
    assert (launch.offering, launch.job_id) == (OD, "dl") and "slack <" in launch.reason
    assert [a for a in switch_behind_schedule(snap, COST, 900.0) if isinstance(a, Launch)] == []  # unbelieved


def test_a_requeued_job_that_ran_past_its_estimate_is_believed_to_need_the_next_step_of_it() -> None:
    """Saved past its estimate (it would look done) or lost after running past it (it would look as
    short as its estimate): either way it needs more than it reached, as it was believed while it ran."""
    est = 600.0
    saved = Demand("saved", 1, NOW - timedelta(hours=1), est, done_s=700.0, attempt=1)
    lost = Demand("lost", 1, NOW - timedelta(hours=1), est, reached_s=1_500.0, attempt=1)
    within = Demand("within", 1, NOW - timedelta(hours=1), est, reached_s=500.0, attempt=1)
    snap = Snapshot(NOW, (saved, lost, within), (), (), (), ())
    believed, wake = believe_overruns(snap)
    assert [j.est_runtime_s for j in believed.pending] == [est * OVERRUN_STEP, est * OVERRUN_STEP ** 3, est]
    assert believed.pending[0].remaining_s == est * OVERRUN_STEP - 700.0  # no longer done
    assert believed.pending[2] is within and wake is None  # nothing runs: nothing to wake for
    assert believe_overruns(replace(snap, pending=(within,)))[0].pending == (within,)


@pytest.mark.parametrize(("reached_s", "market"), [(0.0, Market.SPOT), (2_000.0, Market.ON_DEMAND)])
def test_a_deadline_job_requeued_after_running_past_its_estimate_is_relaunched_for_its_believed_run(
        reached_s: float, market: Market) -> None:
    """A 30 min estimate due in an hour, requeued after an interruption (nothing saved): on its
    estimate it has slack for spot; having run 33 min before, it needs 45 (the next step), which
    leaves less than the margin: on-demand."""
    job = Demand("dl", 1, NOW - timedelta(hours=1), 1_800.0, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(hours=1), attempt=1, reached_s=reached_s,
                 queued_at=NOW - timedelta(minutes=5))
    hog = Demand("hog", 8, NOW - timedelta(hours=1), 6 * 3600.0, gpu_model="V100")
    placed = Placement(hog, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED)
    snap = Snapshot(NOW, (job,), (placed,), (PoolNode("onprem-0", "V100", 8, 0),), (), (SPOT, OD))
    launches = [a for a in BursterPolicy(COST).decide(snap).actions if isinstance(a, Launch)]
    assert [(a.job_id, a.offering.market) for a in launches] == [("dl", market)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 6 * 3600.0), min_size=1, max_size=25),
       st.lists(st.floats(0.5, 40.0), max_size=3 * OVERRUN_SEEN))
def test_the_overrun_belief_reused_between_passes_is_the_belief_worked_out_afresh(offsets: list[float],
                                                                                ratios: list[float]) -> None:
    """The same placements seen at later instants (passes, in any order), with or without finished
    jobs to learn from: a belief reused from the pass before must equal the one worked out with
    nothing remembered, step edges and learned ends included."""
    snap = replace(_overrun_world(), runtime_ratios=tuple(ratios))
    edges = [600.0 * OVERRUN_STEP ** k - 3_600.0 for k in range(4, 8)]  # the cloud job's step ends, from NOW
    edges += [600.0 * r - 3_600.0 for r in ratios] + [3_600.0 * r - 6_600.0 for r in ratios]  # learned ends
    for offset in [*offsets, *edges]:
        at = replace(snap, now=NOW + timedelta(seconds=offset))
        reused = believe_overruns(at)
        estimates._BELIEVED.clear()
        assert believe_overruns(at) == reused


RATIOS = tuple(k / 10 for k in range(10, 40))  # finished jobs ran 1.0x to 3.9x their estimates


def test_the_belief_chain_steps_through_what_the_jobs_that_outlived_each_step_needed() -> None:
    """From the estimate: the median of the 29 jobs that ran past it (2.5x), then of the 14 that ran
    past 2.5x (3.3x); 6 ran past that, too few: then 1.5x steps. A job is believed to need the first
    step at or past what it has run (``beyond``: past it)."""
    ordered = sorted(RATIOS)
    first, second = RATIOS[1 + 14], RATIOS[16 + 7]
    assert (first, second) == (2.5, 3.3)
    assert [overrun_factor(ordered, r) for r in (1.01, 1.85, 2.5, 2.51, 3.3)] == [first] * 3 + [second] * 2
    assert overrun_factor(ordered, 2.5, beyond=True) == second
    assert overrun_factor(ordered, 3.31) == second * OVERRUN_STEP
    assert overrun_factor(ordered, 5.0) == second * OVERRUN_STEP * OVERRUN_STEP
    assert len([r for r in RATIOS if r > second]) == 6 < OVERRUN_SEEN
    # with no finished jobs to learn from: 1.5x steps of the estimate, as before
    assert [overrun_factor([], r) for r in (1.2, 1.5, 2.0)] == [1.5, 1.5, 2.25]
    assert overrun_factor([], 1.5, beyond=True) == 2.25


def test_a_running_and_a_requeued_job_past_their_estimates_are_believed_to_need_what_jobs_like_them_did() -> None:
    snap = replace(_overrun_world(), runtime_ratios=RATIOS)
    late, _, cloud = believe_overruns(snap)[0].running
    assert late.job.est_runtime_s == 3_600.0 * 2.5  # 110 min had of a 60 min estimate (1.83x): 2.5x
    assert cloud.job.est_runtime_s == pytest.approx(600.0 * 3.3 * OVERRUN_STEP ** 2)  # 6x had: past the learned steps
    lost = Demand("lost", 1, NOW - timedelta(hours=1), 600.0, reached_s=1_500.0, attempt=1)  # 2.5x reached
    (believed,) = believe_overruns(replace(snap, pending=(lost,), running=()))[0].pending
    assert believed.est_runtime_s == 600.0 * 3.3  # the step past 2.5x


@pytest.mark.parametrize(("ratios", "switched"), [((), True), ((1.0,) * 20 + (1.7,) * OVERRUN_SEEN, False)])
def test_a_deadline_job_past_its_estimate_is_switched_by_what_jobs_that_ran_as_far_needed(
        ratios: tuple[float, ...], switched: bool) -> None:
    """A 1 h spot job 100 min in, 50 min before its deadline: by the step it needs 35 min more, too
    close to switch later; where the jobs that ran that far ended at 1.7x it needs 2: it stays."""
    snap = _late_spot_job(ratios)
    policy = BursterPolicy(COST, BursterParams(correct_estimates=False))
    launches = [a for a in policy.decide(snap).actions if isinstance(a, Launch)]
    assert [(a.offering, a.job_id) for a in launches] == ([(OD, "dl")] if switched else [])


def test_estimates_that_ran_almost_nothing_never_correct_to_zero() -> None:
    """Three jobs in four ran under 0.5 % of a 7-day limit (or a batch failed at once): the factor
    stops at MIN_FACTOR, so no estimate becomes zero and decide() goes on (it divided by the
    factor rounded to 0.00 and raised in every pass)."""
    from policies.estimates import MIN_FACTOR, runtime_correction

    assert runtime_correction((0.003,) * 100 + (0.5,) * 20) == MIN_FACTOR
    assert runtime_correction((0.0,) * 30) == MIN_FACTOR
    own = (("ml", (0.003,) * 100 + (0.5,) * 20),)
    job = Demand("j", 1, NOW, 604_800.0, team="ml", gpu_model="V100")
    for ratios, teams, by_team in (((1.0,) * 30, ("ml",) * 30, own), ((0.004,) * 20 + (0.2,) * 6, (), ())):
        snap = Snapshot(NOW, (job,), (), (PoolNode("p0", "V100", 8, 0),), (), (), runtime_ratios=ratios,
                        runtime_ratio_teams=teams, team_runtime_ratios=by_team)
        assert corrected(snap, runtime_corrections(ratios, by_team)).pending[0].est_runtime_s == \
            pytest.approx(604_800.0 * MIN_FACTOR)
        assert BursterPolicy().decide(snap).actions == ()
