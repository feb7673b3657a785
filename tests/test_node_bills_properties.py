"""Properties of a node's bill in parts (burster/node_bills.py): for any hand-overs and an end, taken
back by its cloud or not, on each cloud, the parts add up to the one run's bill by its cloud's rule
(burster/billing.py), each part is charged to the team the node served over it, and what a live node
shows accrued plus the parts charged so far is its bill so far."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burster import node_bills as bills
from burster.billing import billing_rule, interrupted_spot_billed_s
from burster.lifecycle import NodeState
from burster.model import Demand, Market, Offering
from burster.state import LedgerEntry, NodeRecord
from tests.test_reconciler import T0

PRICE = 3.6  # $0.001/s
TEAMS = ("", "vision", "nlp")


def _spot(provider: str) -> Offering:
    return Offering(provider, "r", "r-1", "gpu.x", "V100", 1, Market.SPOT, PRICE)


def _job(team: str, k: int) -> Demand:
    return Demand(f"j{k}", 1, T0, 3600.0, team=team, project=f"{team}-p")


def _at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


# seconds to a quarter: Azure's whole minutes and the 60 s minimum both fall inside and across parts
_SECONDS = st.integers(0, 4 * 5400).map(lambda q: q / 4)


@settings(max_examples=400, deadline=None)
@given(provider=st.sampled_from(("aws", "gcp", "azure")), starts=st.lists(st.tuples(_SECONDS, st.sampled_from(TEAMS)),
                                                                          max_size=5),
       extra_s=_SECONDS, taken_back=st.booleans(), probe_s=_SECONDS)
def test_the_parts_add_up_to_the_runs_bill_each_to_the_team_it_served(
        provider: str, starts: list[tuple[float, str]], extra_s: float, taken_back: bool, probe_s: float) -> None:
    """``starts``: (when, team) of each job seen started on the node, pass by pass (one seen after an
    earlier hand-over counts from that hand-over)."""
    rec = NodeRecord("n1", provider, _spot(provider), "rq", T0, NodeState.READY, reason="standby")
    charged: list[LedgerEntry] = []
    served = [(0.0, "")]  # (from, team): the model of whom the node served
    for k, (s, team) in enumerate(starts):
        job = _job(team, k)
        if not bills.serves_another(rec, job):
            continue
        was = bills.billed_s(rec, bills.charged_from(rec))
        probe = _at(max(s, (bills.charged_from(rec) - T0).total_seconds()) + probe_s / 10)
        shown = bills.accrued_usd(rec, probe, None) + sum(float(e.usd) for e in charged)
        assert shown == pytest.approx(PRICE * bills.billed_s(rec, probe) / 3600.0, abs=1e-5 * (len(charged) + 1))
        part, rec = bills.handed_over(rec, job, _at(s))
        assert rec.team == team and rec.charged_from is not None
        served.append(((rec.charged_from - T0).total_seconds(), team))
        if part is not None:
            assert part.billed_s == bills.billed_s(rec, part.end) - was > 0
            charged.append(part)
    end_s = served[-1][0] + extra_s
    last = bills.final_entries(rec, _at(end_s), taken_back, lambda: list(charged))
    every = charged + last

    rule = billing_rule(provider)
    bill = interrupted_spot_billed_s(provider, end_s) if taken_back else rule.billed_s(end_s)
    assert sum(e.billed_s for e in every) == pytest.approx(bill, abs=1e-6)
    assert float(sum(e.usd for e in every)) == pytest.approx(PRICE * bill / 3600.0, abs=1e-6 * len(every))

    credits = [e for e in every if "credited" in e.reason]
    assert bool(credits) == (taken_back and bill == 0.0 and bool(charged))
    if credits:  # each part charged before, negated, to its own team
        assert sorted((c.team, c.start, c.end, -c.usd) for c in credits) == sorted(
            (e.team, e.start, e.end, e.usd) for e in charged)
    for e in every:
        if e in credits or e.start == e.end:
            continue
        mid = (e.start - T0).total_seconds() + (e.end - e.start).total_seconds() / 2
        assert e.team == next(t for since, t in reversed(served) if since <= mid), e  # whom it served then
        assert e.billed_s >= 0.0


def test_a_credit_is_the_part_it_credits_negated_to_that_part_s_team() -> None:
    """The hand-computed case the property generalises (AWS, taken back at 30 min)."""
    rec = NodeRecord("n1", "aws", _spot("aws"), "rq", T0, NodeState.READY, reason="standby")
    part, kept = bills.handed_over(rec, _job("vision", 1), _at(600))
    assert part is not None
    (credit, last) = bills.final_entries(kept, _at(1800), True, lambda: [part])
    assert replace(credit, reason=part.reason) == replace(part, billed_s=-part.billed_s, usd=-part.usd)
    assert (last.team, last.billed_s) == ("vision", 0.0)
