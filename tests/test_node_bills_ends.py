"""A node that ends in the pass that first sees its new job (burster/node_bills.py): the pool gave a
standby or idle node to another team's job, and the node ended (preempted, removed) before the next
pass, which finds both. Listings are read first, so the node was billed whole to the team it served
before (none of it to the job's team, whose hard budget never counted it); it is handed over at the
job's start first now, as the pool's placements show the job started there before the node's end
(a pool notices a node gone late: Slurm after ``SlurmdTimeout``, Kubernetes after its eviction
timeout; the fake cloud here never tells the pool)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from burster.errors import TransientError
from burster.model import Demand, Market, Offering
from burster.reconciler import Reconciler
from providers.fake import FakeCloudProvider
from tests.test_reconciler import CHEAP, World, join_and_start


def _given_to_vision(w: World, team: str = "", offering: Offering = CHEAP) -> str:
    """A node launched for ``team`` (none: standby) is adopted, then runs vision's job from 60 s."""
    (node,) = w.cloud.launch(offering, 1, request_id="standby-1", labels={"team": team} if team else {})
    w.rec.run_once()
    w.clock.advance(60)
    w.pool.submit(Demand("v", 8, w.clock.now(), 3600.0, gpu_model="V100", team="vision"), w.clock.now())
    assert join_and_start(w.pool, node, "v", w.clock.now()) == ["v"]
    return node.node_id


def _parts(w: World) -> list[tuple[str, float]]:
    return [(e.team, e.billed_s) for e in w.rec.state.ledger]


@pytest.mark.parametrize("team", ["", "nlp"])
def test_a_node_listed_ended_with_a_new_job_is_charged_to_the_job_from_its_start(team: str) -> None:
    """Listed TERMINATED at 540 s (EC2 lists ended instances for an hour), seen at 600 s with the job."""
    w = World()
    node_id = _given_to_vision(w, team)
    w.cloud.list_ended(True)
    w.clock.advance(480)
    w.cloud.end(node_id)
    w.clock.advance(60)
    w.rec.run_once()
    assert _parts(w) == [(team, 60.0), ("vision", 480.0)]
    rec = w.rec.state.nodes[node_id]
    assert (rec.team, rec.charged_from, rec.ended_at) == ("vision", rec.launched_at + timedelta(seconds=60),
                                                          rec.launched_at + timedelta(seconds=540))


def test_a_node_gone_from_listings_with_a_new_job_is_charged_to_the_job_from_its_start() -> None:
    """Left out of a listing (older than the grace): ended at the pass, the job's from 60 s."""
    w = World()
    node_id = _given_to_vision(w)
    w.clock.advance(540)
    w.cloud.end(node_id)
    w.rec.run_once()
    assert _parts(w) == [("", 60.0), ("vision", 540.0)]


def test_a_job_the_pool_shows_started_only_after_the_nodes_end_takes_none_of_it() -> None:
    """Listed ended at 540 s, the pool (not knowing) starts a job there at 570 s: the node ended
    before the job's start, so it is billed whole to whom it served, to its end, not past it."""
    w = World()
    (node,) = w.cloud.launch(CHEAP, 1, request_id="standby-1")
    w.rec.run_once()
    w.cloud.list_ended(True)
    w.clock.advance(540)
    w.cloud.end(node.node_id)
    w.clock.advance(30)
    w.pool.submit(Demand("v", 8, w.clock.now(), 3600.0, gpu_model="V100", team="vision"), w.clock.now())
    assert join_and_start(w.pool, node, "v", w.clock.now()) == ["v"]
    w.clock.advance(30)
    w.rec.run_once()
    assert _parts(w) == [("", 540.0)] and w.rec.state.nodes[node.node_id].team == ""


def test_taken_back_free_with_a_new_job_each_part_is_credited_to_its_team() -> None:
    """An AWS spot node its cloud takes back in its first hour is not billed: the standby pool's part
    up to the job's start is charged at the hand-over and credited back to it; the job's part is free."""
    spot = Offering("aws", "r1", "r1a", "gpu.8x", "V100", 8, Market.SPOT, 10.0)
    w = World([spot])
    w.cloud = FakeCloudProvider("aws", [spot], now=w.clock.now)  # billing rules go by the provider's name
    w.rec = Reconciler(providers={"aws": w.cloud}, pool=w.pool, policy=w.rec.policy, clock=w.clock)
    w.cloud.list_ended(True)
    node_id = _given_to_vision(w, offering=spot)
    w.clock.advance(340)
    w.cloud.interrupt(node_id, notice_s=120)
    w.clock.advance(120)
    w.cloud.end(node_id)  # taken back at the notice's time, 520 s into its run
    w.clock.advance(80)
    w.rec.run_once()  # notice, job and end all first seen here
    assert _parts(w) == [("", 60.0), ("", -60.0), ("vision", 0.0)]
    assert "credited" in w.rec.state.ledger[1].reason and "not billed" in w.rec.state.ledger[2].reason


@pytest.mark.parametrize(("knob", "parts"), [
    ("fail_running", [("", 600.0)]),
    ("fail_pending", [("", 60.0), ("vision", 540.0)]),
])
def test_with_the_pool_unreadable_the_end_is_charged_by_the_placements_read(
        knob: str, parts: list[tuple[str, float]]) -> None:
    """Its running jobs unread, the node is charged whole to whom it served, in the pass that ended it
    (kept with it: a restart would not end it again), as before; read, and its queue not, they still
    hand it over at the job's start (they were dropped, the node charged whole to whom it served)."""
    w = World()
    node_id = _given_to_vision(w)
    w.clock.advance(540)
    w.cloud.end(node_id)
    setattr(w.pool, knob, TransientError("pool: timed out"))
    report = w.rec.run_once()
    assert "pool unreadable" in report.errors[-1]
    assert _parts(w) == parts


def test_the_books_closed_at_a_stop_hand_a_node_to_a_job_started_since_the_last_pass() -> None:
    """A simulation's stop: vision's job started on the standby node after the last pass; the bill read
    at the stop charges it from the job's start (it went whole to the team served before)."""
    w = World()
    node_id = _given_to_vision(w)
    w.clock.advance(240)
    w.rec.close_books(w.clock.now())
    assert _parts(w) == [("", 60.0), ("vision", 240.0)]
    assert w.rec.state.nodes[node_id].team == "vision" and not w.rec.state.is_live(node_id)


def test_the_books_close_as_they_stand_when_the_pool_cannot_be_read() -> None:
    w = World()
    _given_to_vision(w)
    w.clock.advance(240)
    w.pool.fail_running = TransientError("slurmctld down")
    w.rec.close_books(w.clock.now())
    assert _parts(w) == [("", 300.0)]
