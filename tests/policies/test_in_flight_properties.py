"""The guards with launches in flight, whatever the snapshot: new launches fit the budgets and the node
cap beside the nodes in flight, and the launch in flight planned again (a replay) is never refused."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from burster.model import InFlight, Snapshot
from burster.plan import Launch, Plan
from policies.burster import BursterPolicy
from policies.cost import CostModel
from policies.guards import GuardParams, apply_guards, committed_usd, launch_usd, live_nodes
from tests.policies.strategies import NOW, snapshots

UNGUARDED = BursterPolicy(CostModel())


@st.composite
def with_launches_in_flight(draw: st.DrawFn) -> tuple[Snapshot, tuple[Launch, ...]]:
    """A snapshot with launches in flight: some of the launches its plan makes (so planned again, they
    are replays, some listed in part), and others (other ids, for its jobs, another's, or none); and
    those launches."""
    snap = draw(snapshots())
    launches = UNGUARDED.decide(snap).launches
    jobs = [None, "gone", *(j.job_id for j in snap.pending), *(p.job.job_id for p in snap.running)]
    flying: list[InFlight] = []
    for a in launches:
        if draw(st.booleans()):
            flying.append(InFlight(a.request_id, a.offering, draw(st.integers(1, a.count)),
                                   NOW - timedelta(seconds=draw(st.floats(0, 900))), a.job_id, a.team))
    for i in range(draw(st.integers(0, 3)) if snap.offerings else 0):
        flying.append(InFlight(f"rq-flying-{i}", draw(st.sampled_from(snap.offerings)), draw(st.integers(1, 3)),
                               NOW - timedelta(seconds=draw(st.floats(0, 900))), draw(st.sampled_from(jobs)),
                               draw(st.sampled_from(("a", "")))))
    return replace(snap, in_flight=tuple(flying)), launches


def in_flight_usd(snap: Snapshot, guards: GuardParams) -> dict[str, float]:
    """What launches in flight commit, by team, as docs/policy.md (Guards) says: their nodes booting since
    sent, then running their job's remaining run (their idle TTL if none), the time since sent included."""
    remaining = {j.job_id: j.remaining_s for j in snap.pending}
    remaining |= {p.job.job_id: p.remaining_s(NOW) for p in snap.running}
    out: dict[str, float] = {}
    for f in snap.in_flight:
        run_s = remaining.get(f.job_id, guards.idle_ttl_s) if f.job_id else guards.idle_ttl_s
        run_s += max(guards.boot_s, (NOW - f.asked_at).total_seconds())
        out[f.team] = out.get(f.team, 0.0) + f.count * f.offering.price_per_hour_usd * run_s / 3600
    return out


@settings(max_examples=80, deadline=None)
@given(with_launches_in_flight(), st.booleans(), st.tuples(*[st.floats(0, 1.2)] * 4), st.integers(0, 6))
def test_new_launches_fit_beside_launches_in_flight_and_replays_are_never_refused(
        case: tuple[Snapshot, tuple[Launch, ...]], budgeted: bool, shares: tuple[float, float, float, float],
        room_nodes: int) -> None:
    """Budgets (or none) and cap a little over what the listed nodes take (by shares of the new launches'
    cost and of the launches in flight's), so that the launches in flight decide which new ones fit."""
    snap, launches = case
    again = {f.request_id for f in snap.in_flight}
    listed = replace(snap, in_flight=())
    total, by_team = committed_usd(listed, GuardParams())
    flying = in_flight_usd(snap, GuardParams())
    asked = sum(launch_usd(a) for a in launches if a.request_id not in again)
    budget = total + shares[0] * asked + shares[1] * sum(flying.values())
    team_budget = by_team.get("a", 0.0) + shares[2] * asked + shares[3] * flying.get("a", 0.0)
    max_nodes = live_nodes(listed) + (room_nodes if not budgeted else 1000)  # one guard at a time
    guards = GuardParams(total_budget_usd=budget if budgeted else None, soft_fraction=1.0,
                         team_budget_usd={"a": team_budget} if budgeted else {}, max_nodes=max_nodes)
    plan = apply_guards(Plan(launches), snap, guards)
    assert [a for a in launches if a.request_id in again] == [a for a in plan.launches if a.request_id in again]
    new = [a for a in plan.launches if a.request_id not in again]
    if not new:
        return
    assert live_nodes(listed) + sum(f.count for f in snap.in_flight) + sum(a.count for a in new) <= max_nodes
    if budgeted:
        assert total + sum(flying.values()) + sum(launch_usd(a) for a in new) <= budget + 1e-6
        ours = [launch_usd(a) for a in new if a.team == "a"]
        assert not ours or by_team.get("a", 0.0) + flying.get("a", 0.0) + sum(ours) <= team_budget + 1e-6
