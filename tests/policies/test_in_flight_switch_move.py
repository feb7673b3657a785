"""A deadline switch or a move to cheaper capacity in flight (``Snapshot.in_flight``: sent, its reply
lost, its nodes not listed yet) is planned again on its offering, so under its request id (asked
again, a replay to the guards), as a burst is (tests/policies/test_in_flight_burst.py): before, each
pass chose afresh, and a price that moved gave the job a second launch beside the first. Once the
offering is not launchable (blocked, withdrawn, its cloud degraded) the job chooses anew."""

from __future__ import annotations

from dataclasses import replace

from burster.model import InFlight, Offering, Snapshot
from burster.plan import Action, Launch
from policies.burster import BursterParams, BursterPolicy
from policies.consolidate import consolidate
from policies.deadline import switch_behind_schedule
from policies.guards import GuardParams
from tests.policies import test_consolidate as tc
from tests.policies import test_deadline as td

OD_CHEAPER = Offering("gcp", "us-central1", "us-central1-a", "n1-v100", "V100", 1, td.OD.market, 2.48)
SPOT_CHEAPER = Offering("gcp", "us-central1", "us-central1-a", "n1-v100", "V100", 1, tc.CHEAP.market, 0.30)


def _launch(actions: list[Action]) -> Launch:
    (launch,) = actions
    assert isinstance(launch, Launch)
    return launch


def _flying(s: Snapshot, launch: Launch) -> InFlight:
    return InFlight(launch.request_id, launch.offering, launch.count, s.now, launch.job_id)


def _gone(s: Snapshot, o: Offering) -> list[Snapshot]:
    """``s`` with ``o`` blocked, withdrawn, and its cloud degraded."""
    return [replace(s, blocked_offerings=frozenset({o.key})),
            replace(s, offerings=tuple(replace(x, available=False) if x == o else x for x in s.offerings)),
            replace(s, degraded_providers=frozenset({o.provider}))]


def _switch(s: Snapshot, **kw: bool) -> Launch:
    return _launch(switch_behind_schedule(s, td.COST if not kw else td.RISKY, td.MARGIN, **kw))


def test_a_switch_in_flight_stays_on_its_offering_when_a_cheaper_one_appears() -> None:
    s = td.snapshot(1000)
    sent = _switch(s)
    assert sent.offering == td.OD
    later = replace(s, offerings=(*s.offerings, OD_CHEAPER))
    assert _switch(later).offering == OD_CHEAPER  # what it would choose with nothing in flight
    again = _switch(replace(later, in_flight=(_flying(s, sent),)))
    assert (again.offering, again.request_id, again.job_id) == (td.OD, sent.request_id, "dl")
    dearer = replace(td.OD, price_per_hour_usd=3.5)  # at the offering's price now
    moved = replace(later, offerings=(td.SPOT, dearer, OD_CHEAPER), in_flight=(_flying(s, sent),))
    assert (_switch(moved).offering, _switch(moved).request_id) == (dearer, sent.request_id)


def test_a_risk_switch_in_flight_stays_on_its_offering() -> None:
    s = td.started_on_spot()
    sent = _switch(s, price_risk=True)
    later = replace(s, offerings=(*s.offerings, OD_CHEAPER))
    assert _switch(later, price_risk=True).offering == OD_CHEAPER
    again = _switch(replace(later, in_flight=(_flying(s, sent),)), price_risk=True)
    assert (again.offering, again.request_id) == (td.OD, sent.request_id)


def test_a_switch_chooses_anew_once_its_offering_in_flight_is_not_launchable() -> None:
    s = td.snapshot(1000)
    sent = _switch(s)
    later = replace(s, offerings=(*s.offerings, OD_CHEAPER), in_flight=(_flying(s, sent),))
    for gone in _gone(later, td.OD):
        launch = _switch(gone)
        assert launch.offering == OD_CHEAPER and launch.request_id != sent.request_id
    for other in (replace(later.in_flight[0], job_id="other"), replace(later.in_flight[0], request_id="rq-move")):
        assert _switch(replace(later, in_flight=(other,))).offering == OD_CHEAPER  # not its switch


def test_a_move_in_flight_stays_on_its_offering_when_a_cheaper_one_appears() -> None:
    s = tc.snapshot()
    sent = _launch(consolidate(s, tc.COST, tc.PARAMS))
    assert sent.offering == tc.CHEAP
    later = replace(s, offerings=(*s.offerings, SPOT_CHEAPER))
    assert _launch(consolidate(later, tc.COST, tc.PARAMS)).offering == SPOT_CHEAPER
    flying = replace(later, in_flight=(_flying(s, sent),))
    again = _launch(consolidate(flying, tc.COST, tc.PARAMS))
    assert (again.offering, again.request_id, again.job_id) == (tc.CHEAP, sent.request_id, "cj")
    dearer = replace(tc.CHEAP, price_per_hour_usd=0.5)  # still pays, at its price now
    moved = replace(flying, offerings=(tc.PRICEY, dearer, SPOT_CHEAPER))
    again = _launch(consolidate(moved, tc.COST, tc.PARAMS))
    assert (again.offering, again.request_id) == (dearer, sent.request_id)
    # one that no longer pays is not made again, nor another beside it
    dear = replace(moved, offerings=(tc.PRICEY, replace(tc.CHEAP, price_per_hour_usd=1.2), SPOT_CHEAPER))
    assert consolidate(dear, tc.COST, tc.PARAMS) == []


def test_a_move_chooses_anew_once_its_offering_in_flight_is_not_launchable() -> None:
    s = tc.snapshot()
    sent = _launch(consolidate(s, tc.COST, tc.PARAMS))
    later = replace(s, offerings=(*s.offerings, SPOT_CHEAPER), in_flight=(_flying(s, sent),))
    for gone in _gone(later, tc.CHEAP):
        launch = _launch(consolidate(gone, tc.COST, tc.PARAMS))
        assert launch.offering == SPOT_CHEAPER and launch.request_id != sent.request_id
    other = replace(later.in_flight[0], request_id="rq-switch")
    assert _launch(consolidate(replace(later, in_flight=(other,)), tc.COST, tc.PARAMS)).offering == SPOT_CHEAPER


def test_the_move_kept_is_asked_again_at_the_cap_its_own_nodes_fill() -> None:
    """At a cap of two (its node and the move's) only the same launch may go: a fresh choice would not
    be worked out at all, and the move waited unasked until listed or forgotten."""
    s = tc.snapshot()
    sent = _launch(consolidate(s, tc.COST, tc.PARAMS))
    flying = replace(s, offerings=(*s.offerings, SPOT_CHEAPER), in_flight=(_flying(s, sent),))
    capped = BursterPolicy(tc.COST, BursterParams(burst=tc.PARAMS, guards=GuardParams(max_nodes=2)))
    plan = capped.decide(flying)
    # the same launch, exclusive as every Burster launch by default (``policy.exclusive_nodes``)
    assert plan.launches == (replace(sent, exclusive=True),) and plan.refused == () and plan.held_back == ()
