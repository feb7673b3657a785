"""Edges of what the policy learns from finished jobs' runtime ratios (policies/estimates.py), found
unpinned by a mutation audit: the thresholds taken at their exact values (not through the module's
constants, so a changed constant shows), boundaries of each comparison, and the caches kept between
passes telling apart what they must."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.model import Demand, Market, Placement, PoolNode, Snapshot
from policies.estimates import (
    believe_overruns,
    corrected,
    estimate_scale,
    overrun_factor,
    runs_long,
    runtime_correction,
    runtime_corrections,
)

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)


def test_twenty_finished_jobs_are_the_first_to_be_learned_from() -> None:
    """19 ratios are too few for every learned figure; the 20th makes them count (MIN_RATIOS = 20)."""
    assert runtime_correction((0.5,) * 19) == 1.0 and runtime_correction((0.5,) * 20) == 0.5
    assert estimate_scale((0.5,) * 19, 0.05) == 1.0 and estimate_scale((0.5,) * 20, 0.05) == 0.5
    assert runs_long((2.0,) * 19, 0.9) == 1.0 and runs_long((2.0,) * 20, 0.9) == 2.0


def test_the_correction_s_boundaries_and_rounding() -> None:
    """The median of an even count is the upper middle one (index n // 2); a median of exactly 1.25
    and a 75 % quantile of exactly 1 / 1.25 = 0.8 are within the noise (strict comparisons); both
    factors are rounded to two decimals; the floor is 0.05 of the estimate."""
    assert runtime_correction((0.5,) * 50 + (1.5,) * 50) == 1.5  # index 50: 1.5 (index 49 would trust them)
    assert runtime_correction((1.25,) * 30) == 1.0
    assert runtime_correction((0.8,) * 30) == 1.0 and runtime_correction((0.79,) * 30) == 0.79
    assert runtime_correction((1.333,) * 30) == 1.33
    assert runtime_correction((0.003,) * 100 + (0.5,) * 20) == 0.05


def test_runs_long_off_at_quantile_zero_even_when_every_job_ran_long() -> None:
    """Quantile 0 turns the lengthening off, not into the lowest ratio (2x here)."""
    assert runs_long((2.0,) * 30, 0.0) == 1.0 and runs_long((2.0,) * 30, 0.01) == 2.0


def test_a_team_is_told_apart_from_exactly_one_hundred_jobs_and_never_the_nameless_one() -> None:
    """TEAM_RATIOS = 100 of a team's own jobs: 99 are too few. Jobs of no team ("") are not a team:
    their ratios never give a factor of their own (every job without a team would take it)."""
    ratios = (1.0,) * 30
    assert runtime_corrections(ratios, (("a", (0.25,) * 99),)) == (1.0, {})
    assert runtime_corrections(ratios, (("a", (0.25,) * 100),)) == (1.0, {"a": 0.25})
    assert runtime_corrections(ratios, (("", (0.25,) * 100),)) == (1.0, {})


def _snap(*jobs: Demand, ratios: tuple[float, ...] = (0.5,) * 30, teams: tuple[str, ...] = ()) -> Snapshot:
    run = Demand("r", 8, NOW - timedelta(hours=1), 4 * 3600.0, gpu_model="V100")
    placed = Placement(run, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED)
    return Snapshot(NOW, jobs, (placed,), (PoolNode("onprem-0", "V100", 8, 0),), (), (),
                    runtime_ratios=ratios, runtime_ratio_teams=teams)


def test_a_job_whose_team_s_factor_is_one_is_left_as_it_is_even_under_a_minute() -> None:
    """Only a corrected estimate is floored at 60 s: a 30 s job of a team whose own factor is 1 keeps
    its estimate (the same object); a 30 s job of no team, corrected by 0.5, is taken as 60 s."""
    careful, anyone = Demand("c", 1, NOW, 30.0, team="b"), Demand("n", 1, NOW, 30.0)
    fixed = corrected(_snap(careful, anyone), (0.5, {"b": 1.0}))
    assert fixed.pending[0] is careful and fixed.pending[1].est_runtime_s == 60.0


def test_ratios_whose_teams_do_not_match_them_are_corrected_by_the_factor_of_all() -> None:
    """Teams given, but not one per ratio: none can be matched, so each ratio is over the factor of all
    (not paired with the wrong team, nor an error)."""
    fixed = corrected(_snap(ratios=(0.5,) * 4, teams=("a",)), (0.5, {"a": 0.25}))
    assert fixed.runtime_ratios == (1.0,) * 4


def test_the_same_snapshot_corrected_by_another_factor_is_corrected_afresh() -> None:
    """The pool hands the same tuples; the factor changes when a job finishes. The kept queue, jobs and
    spread of the last factor must not be reused: 7200 s by 0.25 is 1800 s, the ratios of 0.5 are 2x."""
    job = Demand("q", 1, NOW, 7_200.0)
    snap = _snap(job)
    assert corrected(snap, (0.5, {})).pending[0].est_runtime_s == 3_600.0
    again = corrected(snap, (0.25, {}))
    assert again.pending[0].est_runtime_s == 1_800.0 and again.running[0].job.est_runtime_s == 3_600.0
    assert again.runtime_ratios == (2.0,) * 30
    # the same job in a new queue: the job kept from the last call was fixed by the other factor
    assert corrected(replace(snap, pending=(job, Demand("x", 1, NOW, 600.0))), (0.5, {})).pending[0] \
        .est_runtime_s == 3_600.0


def _running(est: float, started: datetime, *, stopping_at: datetime | None = None) -> Placement:
    job = Demand(f"j{est}", 1, started, est)
    return Placement(job, ("onprem-0",), started, False, Market.RESERVED, stopping_at=stopping_at)


def test_a_job_ending_exactly_now_is_not_overrunning_and_wakes_now() -> None:
    """At its end it is not past it yet (``>=``): left as it is, and the wake is now, when it may be;
    beside an overrunning job alike (758.4 s started 758.4 s ago: the work it had, taken from the
    clock, is a hair over its estimate in floats, yet its end is now: the end decides)."""
    snap = Snapshot(NOW, (), (_running(3_600.0, NOW - timedelta(hours=1)),), (), (), ())
    assert believe_overruns(snap) == (snap, NOW)
    at_end = _running(758.4, NOW - timedelta(seconds=758.4))
    assert at_end.ends_at_ts == NOW.timestamp()
    both = Snapshot(NOW, (), (at_end, _running(3_000.0, NOW - timedelta(hours=1))), (), (), ())
    believed, wake = believe_overruns(both)
    assert believed.running[0] is at_end and wake == NOW


def test_a_job_being_stopped_is_neither_believed_nor_woken_for() -> None:
    """A placement asked to stop (``stopping_at``) frees its GPUs then, whatever its estimate: alone,
    nothing is to be woken for; beside an overrunning job its belief is left untouched, even past its
    estimate."""
    stopping = _running(3_600.0, NOW - timedelta(minutes=30), stopping_at=NOW + timedelta(minutes=5))
    alone = Snapshot(NOW, (), (stopping,), (), (), ())
    assert believe_overruns(alone) == (alone, None)
    late_stop = _running(600.0, NOW - timedelta(hours=1), stopping_at=NOW + timedelta(minutes=5))
    overrun = _running(3_000.0, NOW - timedelta(hours=1))  # 60 min of 50: believed to need 75
    believed, wake = believe_overruns(Snapshot(NOW, (), (late_stop, overrun), (), (), ()))
    assert believed.running[0] is late_stop and believed.running[1].job.est_runtime_s == 4_500.0
    assert wake == NOW + timedelta(minutes=15)


def test_the_wake_at_a_job_s_end_is_rounded_down_to_the_microsecond() -> None:
    """An end 0.7 microseconds past a whole one wakes at the whole one (never after the first tick past
    it); rounding to the nearest would wake a microsecond late."""
    snap = Snapshot(NOW, (), (_running(100.0000007, NOW),), (), (), ())
    assert believe_overruns(snap)[1] == NOW + timedelta(seconds=100)


def test_a_requeued_job_that_reached_exactly_its_estimate_is_not_believed_longer() -> None:
    """Saved or reached exactly its estimate is not past it (a running job at its end is not either)."""
    saved = Demand("s", 1, NOW, 600.0, done_s=600.0, attempt=1)
    reached = Demand("r", 1, NOW, 600.0, reached_s=600.0, attempt=1)
    over = Demand("o", 1, NOW, 600.0, reached_s=700.0, attempt=1)  # past it: 1.5x, and the others looked at
    pending = believe_overruns(Snapshot(NOW, (saved, reached, over), (), (), (), ()))[0].pending
    assert pending[0] is saved and pending[1] is reached and pending[2].est_runtime_s == 900.0


def test_a_requeued_job_that_reached_a_step_in_floats_is_believed_to_need_the_next() -> None:
    """3075.7 s x 1.5 reached: the ratio is 1.4999999999999998 in floats, so the first step past it is
    1.5x, whose estimate is exactly the work reached; it needs more than that: the next step, 2.25x."""
    lost = Demand("l", 1, NOW, 3_075.7, reached_s=3_075.7 * 1.5, attempt=1)
    assert lost.reached_s / lost.est_runtime_s < 1.5
    (believed,) = believe_overruns(Snapshot(NOW, (lost,), (), (), (), ()))[0].pending
    assert believed.est_runtime_s == 3_075.7 * 2.25


def test_exactly_ten_jobs_past_a_step_are_enough_to_learn_the_next() -> None:
    """OVERRUN_SEEN = 10: ten jobs that ran 2x give the step 2x; nine are too few (1.5x)."""
    assert overrun_factor(sorted((2.0,) * 10), 1.2) == 2.0
    assert overrun_factor(sorted((2.0,) * 9), 1.2) == 1.5


def test_a_requeued_job_just_short_of_a_step_is_believed_to_need_that_step() -> None:
    """825.6 s estimated, 1857.6 s reached: one float short of 825.6 x 2.25, but 1857.6 / 825.6 rounds
    to exactly 2.25, and the step strictly past it (3.375) used to be believed; 2.25 is the first step
    whose run passes the work reached. Likewise 1734.4875 s of 1156.325 s: 1.5, not 2.25."""
    for est, reached, step in ((825.6, 1857.6, 2.25), (1156.325, 1734.4875, 1.5)):
        assert est * step > reached
        job = Demand("x", 1, NOW, est, gpu_model="V100", reached_s=reached, attempt=1)
        snap = Snapshot(NOW, (job,), (), (), (), ())
        (believed,) = believe_overruns(snap)[0].pending
        assert believed.est_runtime_s == est * step
