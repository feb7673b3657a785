"""A pending job that resumes saved work is taken to run its restart's reload longer
(``policies.estimates.with_reloads``, ``cost.restart_overhead_s``): the deadline slack the burst rule
weighs counts it, as the simulated pool charges it (``Placement.reload_s`` says so of a running one)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from burster.model import Demand, JobClass, Market
from burster.plan import Launch
from policies.burster import BursterParams, BursterPolicy
from policies.estimates import with_reloads
from tests.policies.test_burst import COST, NOW, PARAMS, snapshot


def strict(est_s: float, done_s: float, slack_s: float) -> Demand:
    """A strict 1-GPU job with 1 h of work left and ``slack_s`` of slack after that and a boot."""
    return Demand("dl", 1, NOW, est_s, gpu_model="V100", job_class=JobClass.STRICT, done_s=done_s,
                  deadline=NOW + timedelta(seconds=est_s - done_s + 180 + slack_s))


def test_only_a_pending_job_with_work_saved_and_left_is_taken_to_reload() -> None:
    fresh, resumed, done = strict(3600, 0, 1500), strict(4200, 600, 1500), strict(3600, 3600, 1500)
    snap = snapshot(fresh, busy_for_s=100_000)
    assert with_reloads(snap, 300.0) is snap  # nothing resumes: the snapshot as it was
    snap = replace(snap, pending=(fresh, resumed, done))
    taken = with_reloads(snap, 300.0)
    assert taken.pending[0] is fresh and taken.pending[2] is done
    assert (taken.pending[1].est_runtime_s, taken.pending[1].remaining_s, taken.pending[1].done_s) == (4500, 3900, 600)
    assert taken.running is snap.running
    assert with_reloads(snap, 300.0).pending[1] is taken.pending[1]  # the same copy at the next pass
    assert with_reloads(snap, 0.0) is snap


def test_a_resumed_strict_job_whose_reload_eats_its_spot_room_bursts_on_demand() -> None:
    """Spot needs the slack to keep a changeover (restart 300 s + boot 180 s) and the 900 s margin:
    1500 s of slack leaves 120 s for a fresh start, and -180 s once a resumed job's reload is counted."""
    policy = BursterPolicy(COST, BursterParams(burst=PARAMS, preempt_onprem=False))

    def market(job: Demand) -> Market:
        (launch,) = [a for a in policy.decide(snapshot(job, busy_for_s=100_000)).actions if isinstance(a, Launch)]
        return launch.offering.market

    assert market(strict(3600, 0, 1500)) is Market.SPOT
    assert market(strict(4200, 600, 1500)) is Market.ON_DEMAND
    assert market(strict(4200, 600, 1800)) is Market.SPOT  # 120 s of room again
