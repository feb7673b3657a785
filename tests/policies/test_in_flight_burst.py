"""A job whose launch is in flight (``Snapshot.in_flight``: sent, its reply lost, its nodes not listed
yet) is planned that launch again, on its offering and so under its request id (asked again, a
replay to the guards), not a fresh choice: before, a cheaper offering that appeared meanwhile (or a
price that moved) gave the job a second launch under a new id, and both could come. Once the
offering is blocked (a capacity error) the job chooses anew, and the guards weigh both launches."""

from __future__ import annotations

from dataclasses import replace

from burster.model import Demand, InFlight, Offering, Snapshot
from policies.burst import burst
from policies.burster import BursterParams, BursterPolicy
from policies.guards import GuardParams
from tests.policies.test_burst import COST, NOW, PARAMS, SPOT, snapshot

JOB = Demand("be", 1, NOW, 36_000, gpu_model="V100")  # its wait passes its budget: it bursts to SPOT
CHEAPER = Offering("aws", "us-west-2", "usw2-az2", "p3.2xlarge", "V100", 1, SPOT.market, 0.5)


def _sent() -> tuple[Snapshot, InFlight]:
    """The snapshot where JOB's launch was planned, and that launch in flight a pass later."""
    s = snapshot(JOB, busy_for_s=10_000)
    (launch,) = burst(s, COST, PARAMS)
    assert launch.offering == SPOT
    return s, InFlight(launch.request_id, SPOT, 1, NOW, "be")


def test_a_job_keeps_its_launch_in_flight_when_a_cheaper_offering_appears() -> None:
    s, flying = _sent()
    later = replace(s, offerings=(*s.offerings, CHEAPER))
    (fresh,) = burst(later, COST, PARAMS)
    assert fresh.offering == CHEAPER  # what it would choose with nothing in flight
    (again,) = burst(replace(later, in_flight=(flying,)), COST, PARAMS)
    assert (again.offering, again.request_id, again.job_id) == (SPOT, flying.request_id, "be")


def test_a_job_keeps_its_launch_in_flight_at_the_offering_s_price_now() -> None:
    s, flying = _sent()
    dearer = replace(SPOT, price_per_hour_usd=0.95)
    (again,) = burst(replace(s, offerings=(dearer, CHEAPER), in_flight=(flying,)), COST, PARAMS)
    assert (again.offering, again.request_id) == (dearer, flying.request_id)


def test_a_job_chooses_anew_once_its_launch_in_flight_is_blocked_or_withdrawn() -> None:
    s, flying = _sent()
    later = replace(s, offerings=(*s.offerings, CHEAPER), in_flight=(flying,))
    for gone in (replace(later, blocked_offerings=frozenset({SPOT.key})),
                 replace(later, offerings=(CHEAPER, replace(SPOT, available=False)))):
        (launch,) = burst(gone, COST, PARAMS)
        assert launch.offering == CHEAPER and launch.request_id != flying.request_id


def test_only_the_job_s_own_launch_in_flight_is_kept() -> None:
    s, flying = _sent()
    later = replace(s, offerings=(*s.offerings, CHEAPER))
    for other in (replace(flying, job_id="other"), replace(flying, request_id="rq-earlier-attempt")):
        (launch,) = burst(replace(later, in_flight=(other,)), COST, PARAMS)
        assert launch.offering == CHEAPER


def test_the_launch_kept_passes_the_guards_as_asked_again() -> None:
    """Its node is counted already: at a cap of one it is asked again; a fresh choice would be held back."""
    s, flying = _sent()
    later = replace(s, offerings=(*s.offerings, CHEAPER), in_flight=(flying,))
    policy = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=1)))
    plan = policy.decide(later)
    assert [(a.request_id, a.offering) for a in plan.launches] == [(flying.request_id, SPOT)]
    assert plan.held_back == () and plan.refused == ()
