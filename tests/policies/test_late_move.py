"""A move back on-prem of a deadline job on the cloud, late by its estimate or not: its pause (checkpoint
write and restart) must save more cloud $ than the misses it adds, priced by the spread of the finished
jobs' runtime ratios (``policies.late.move_miss_usd``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from burster.model import JobClass, Snapshot
from policies.late import move_miss_usd
from tests.policies.test_reclaim import NOW, POLICY, moved, snapshot

PAUSE_S = 360.0  # 60 s checkpoint write + 300 s restart (POLICY's cost)


def late_by(slack_s: float, ratios: tuple[float, ...]) -> Snapshot:
    """``snapshot``'s cloud job (6 h estimated, 1 h done, on $3.06/h on-demand: $15.30 left to save),
    strict, due ``slack_s`` after its estimated end; the pool's finished jobs ran ``ratios`` x their
    estimates."""
    snap = snapshot(())
    p = snap.running[1]
    job = replace(p.job, job_class=JobClass.STRICT, deadline=NOW + timedelta(seconds=p.remaining_s(NOW) + slack_s))
    return replace(snap, running=(snap.running[0], replace(p, job=job)), runtime_ratios=ratios)


def test_a_late_jobs_move_back_waits_where_the_pause_would_likely_cost_its_deadline() -> None:
    """Due 60 s before its estimated end, its deadline allows 21,540 / 21,600 of its estimate; the
    pause takes 360 / 21,600 off that. Three of 30 ratios in (0.9806, 0.9972]: a 10 % chance the
    pause makes it miss, $50 of a $500 miss against $15.30 saved: it stays on the cloud."""
    near = (0.99,) * 3 + (1.0,) * 27
    snap = late_by(-60.0, near)
    assert move_miss_usd(snap.running[1], PAUSE_S, near, POLICY.cost) == 50.0
    assert moved(POLICY.decide(snap).actions) == []
    # ratios that leave it late whatever (or on time whatever) the pause: it moves
    for far in ((1.0,) * 30, (0.5,) * 30, ()):
        assert moved(POLICY.decide(late_by(-60.0, far)).actions) == ["cj"]
    # one in 30 in the band: $16.67 > $15.30 saved, it stays; none in it by the pause's width: it moves
    assert moved(POLICY.decide(late_by(-60.0, (0.99,) + (1.0,) * 29)).actions) == []
    assert moved(POLICY.decide(late_by(-60.0, (0.98,) * 3 + (1.0,) * 27)).actions) == ["cj"]


def test_a_job_on_time_by_its_estimate_prices_the_pause_too() -> None:
    """Due 3 h after its estimated end, its deadline allows 1.5 x its 6 h estimate; a third of the
    recent jobs ran 1.49 x theirs, within the pause (360 / 21,600) below it: $167 of a $500 miss
    against $15.30 saved, it stays. Ratios clear of the band (or exact ones): it moves."""
    band = (1.49,) * 10 + (1.0,) * 20
    on_time = late_by(3 * 3600.0, band)
    assert move_miss_usd(on_time.running[1], PAUSE_S, band, POLICY.cost) == 500.0 / 3
    assert moved(POLICY.decide(on_time).actions) == []
    for clear in ((1.0,) * 30, (1.3,) * 10 + (1.0,) * 20, ()):
        assert moved(POLICY.decide(late_by(3 * 3600.0, clear)).actions) == ["cj"]


def test_only_a_deadline_job_prices_the_pause_a_soft_one_a_quarter() -> None:
    near = (0.99,) * 3 + (1.0,) * 27
    late = late_by(-60.0, near).running[1]
    best = replace(late, job=replace(late.job, job_class=JobClass.BEST_EFFORT))
    assert move_miss_usd(best, PAUSE_S, near, POLICY.cost) == 0.0
    soft = replace(late, job=replace(late.job, job_class=JobClass.SOFT))
    assert move_miss_usd(soft, PAUSE_S, near, POLICY.cost) == 12.5  # a quarter of the miss $
