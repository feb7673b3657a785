"""A node's bill charged to the team of the job it serves (burster/node_bills.py): a standby node (launched
for no team) handed to a team's job, or an idle node the pool gives another team's job, was charged whole
to the team it was launched for, so a team's hard budget never counted its work there (found by the
accounting oracle, tests/sim/test_oracle_actions.py). Hand-computed cases, then the reconcile pass."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from burster import node_bills as bills
from burster.lifecycle import NodeState
from burster.model import Demand, Market, Offering
from burster.state import LedgerEntry, NodeRecord
from tests.test_reconciler import CHEAP, T0, World, join_and_start

AWS_SPOT = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 3.6)  # $0.001/s
AZURE = Offering("azure", "eastus", "eastus-1", "NC6s_v3", "V100", 1, Market.ON_DEMAND, 3.6)


def rec(offering: Offering = AWS_SPOT, team: str = "") -> NodeRecord:
    return NodeRecord("n1", offering.provider, offering, "rq", T0, NodeState.READY, team=team, reason="standby")


def job(team: str, job_id: str = "j") -> Demand:
    return Demand(job_id, 1, T0, 3600.0, team=team, project="vision-p", sprint="S-9")


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def by_team(entries: list[LedgerEntry]) -> dict[str, float]:
    out: dict[str, float] = {}
    for e in entries:
        out[e.team] = out.get(e.team, 0.0) + e.billed_s
    return out


def test_a_hand_over_charges_the_run_so_far_and_the_rest_goes_to_the_jobs_team() -> None:
    """AWS: per second, 60 s minimum. Handed over at 30 s: 60 s (the minimum) to whom it served, then
    the run's 600 s less those 60 to the job's team; together the one run's 600 s."""
    part, kept = bills.handed_over(rec(), job("vision"), at(30))
    assert part is not None and (part.team, part.billed_s, part.start, part.end) == ("", 60.0, T0, at(30))
    assert part.reason == "standby; until job j started there" and part.usd == Decimal("0.060000")
    assert (kept.team, kept.project, kept.sprint, kept.charged_from) == ("vision", "vision-p", "S-9", at(30))
    (last,) = bills.final_entries(kept, at(600), False, list)
    assert (last.team, last.billed_s, last.start, last.end) == ("vision", 540.0, at(30), at(600))


def test_azure_parts_are_whole_minutes_run_and_add_up_to_the_runs_bill() -> None:
    """Azure bills whole minutes run: handed over at 90 s (1 minute), ended at 150 s (2): 60 + 60."""
    part, kept = bills.handed_over(rec(AZURE), job("vision"), at(90))
    assert part is not None and part.billed_s == 60.0
    assert [e.billed_s for e in bills.final_entries(kept, at(150), False, list)] == [60.0]


def test_a_second_hand_over_charges_from_the_first_and_none_at_the_instant_of_launch() -> None:
    _, kept = bills.handed_over(rec(), job("vision"), at(120))
    part, again = bills.handed_over(kept, job("nlp", "k"), at(100))  # seen after
    assert part is None and again.charged_from == at(120) and again.team == "nlp"  # nothing billed in between
    part, again = bills.handed_over(kept, job("nlp", "k"), at(300))
    assert part is not None and (part.team, part.billed_s, part.start) == ("vision", 180.0, at(120))
    assert bills.handed_over(rec(), job("vision"), T0)[0] is None  # its job started as it came up


def test_taken_back_free_in_its_first_hour_every_part_is_credited_to_its_own_team() -> None:
    """AWS does not bill a spot node it interrupts in its first hour: the part charged to the standby
    pool at the hand-over is credited back to it, not to the job's team."""
    part, kept = bills.handed_over(rec(), job("vision"), at(600))
    assert part is not None
    other = replace(part, node_id="n2", team="nlp")  # another node's: not this one's to credit
    out = bills.final_entries(kept, at(1800), True, lambda: [other, part])
    assert by_team([part, *out]) == {"": 0.0, "vision": 0.0}
    assert len(out) == 2 and out[0].usd == -part.usd and "credited" in out[0].reason and "not billed" in out[-1].reason
    late = bills.final_entries(kept, at(4000), True, lambda: [part])  # past the hour
    assert by_team([part, *late]) == {"": 600.0, "vision": 3400.0}


def test_what_a_live_node_accrued_is_its_part_not_charged_yet() -> None:
    _, kept = bills.handed_over(rec(), job("vision"), at(600))
    assert bills.accrued_usd(kept, at(1800), None) == pytest.approx(1.2)  # 1,200 s at $0.001/s
    assert bills.accrued_usd(kept, at(1800), at(1200)) == pytest.approx(0.6)  # the half since then
    assert bills.accrued_usd(rec(), at(1800), None) == pytest.approx(1.8)


def test_only_another_team_project_or_sprint_is_a_hand_over() -> None:
    mine = replace(rec(team="vision"), project="vision-p", sprint="S-9")
    assert not bills.serves_another(mine, job("vision"))
    assert bills.serves_another(mine, replace(job("vision"), sprint="S-10"))
    assert bills.serves_another(mine, replace(job("vision"), project="vision-q"))
    assert bills.serves_another(mine, job("nlp"))


def test_the_pass_charges_a_standby_nodes_hours_to_the_team_of_the_job_it_runs(
        caplog: pytest.LogCaptureFixture) -> None:
    """A node launched for no team runs a job of team vision from 60 s: its first minute is the
    standby pool's, the rest vision's, in the ledger and in the spend the budgets see meanwhile."""
    w = World()
    (node,) = w.cloud.launch(CHEAP, 1, request_id="standby-1")
    w.rec.run_once()  # adopted, for no team
    w.clock.advance(60)
    w.pool.submit(Demand("v", 8, w.clock.now(), 3600.0, gpu_model="V100", team="vision", project="vision-p",
                         sprint="S-9"), w.clock.now())
    assert join_and_start(w.pool, node, "v", w.clock.now()) == ["v"]
    w.clock.advance(540)
    with caplog.at_level("INFO", logger="burster.reconcile"):
        snapshot = w.rec.observe()
    assert [n.team for n in snapshot.cloud_nodes] == ["vision"]  # the policy sees it vision's in this pass already
    assert f"node {node.node_id} runs job v of team 'vision' from 2026-03-02 09:01:00+00:00: charged to it from " \
           "then, to team '' before" in caplog.text
    (part,) = w.rec.state.ledger
    assert (part.team, part.billed_s, part.reason) == ("", 60.0, "adopted: tagged by this controller; until job v "
                                                                  "started there")
    assert dict(snapshot.spend.by_team_usd)["vision"] == pytest.approx(10.0 * 540 / 3600)
    w.rec.run_once()  # handed over once: its project and sprint are the job's too
    assert len(w.rec.state.ledger) == 1
    w.rec.nodes.ended(node.node_id, w.clock.now(), w.rec._charge)
    assert [(e.team, e.project, e.sprint, e.billed_s) for e in w.rec.state.ledger] == [
        ("", "", "", 60.0), ("vision", "vision-p", "S-9", 540.0)]


def test_a_node_first_seen_running_another_teams_job_is_that_teams_in_the_same_pass() -> None:
    """Never seen idle (its job started before a pass saw it: a restart, a late listing), the policy
    still sees it as the job's team's in the pass that hands it over, as the budgets count it."""
    w = World()
    (node,) = w.cloud.launch(CHEAP, 1, request_id="standby-1")
    w.clock.advance(60)
    w.pool.submit(Demand("v", 8, w.clock.now(), 3600.0, gpu_model="V100", team="vision"), w.clock.now())
    assert join_and_start(w.pool, node, "v", w.clock.now()) == ["v"]
    w.clock.advance(30)
    snapshot = w.rec.observe()
    assert [(n.team, n.job_id) for n in snapshot.cloud_nodes] == [("vision", "v")]
    assert [(e.team, e.billed_s) for e in w.rec.state.ledger] == [("", 60.0)]
