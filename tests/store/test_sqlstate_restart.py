"""The SQL state store on SQLite and PostgreSQL across a restart: what a controller keeps comes back
whole, only at ``commit`` (but a launch intent at once), per cluster; a restart loads its recent
history, the spend of all of it, and older records when a pass needs them."""

from __future__ import annotations

from datetime import UTC, timedelta
from decimal import Decimal

import pytest

from burster.errors import IllegalTransitionError
from burster.lifecycle import NodeState
from burster.model import CheckpointTicket
from burster.plan import Launch
from burster.sqlstate import HISTORY, SqlState
from burster.state import EndWatch, LedgerEntry, MemoryState
from tests.store.sqlstate_records import ON_DEMAND, SPOT, T0, _ended, _entry, _record


def _fill(state: MemoryState) -> None:
    """Every kind of state a pass writes."""
    state.put_intent(Launch(SPOT, 2, "burst job-9", "req-9", job_id="job-9", team="nlp", est_hours=1.5),
                     T0 + timedelta(seconds=3))
    state.add_node(_record("n-b", SPOT))
    state.add_node(_record("n-a", ON_DEMAND, for_job=None, exclusive=True))
    state.add_node(_record("n-c", SPOT))
    state.add_node(_record("n-d", SPOT))
    for step in (NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY):
        state.move("n-b", step)
        state.move("n-c", step)
    state.update("n-b", idle_since=T0 + timedelta(minutes=5), charged_from=T0 + timedelta(minutes=2))  # handed over
    state.move("n-c", NodeState.TERMINATING)
    state.move("n-c", NodeState.TERMINATED, ended_at=T0 + timedelta(hours=1))
    state.move("n-d", NodeState.FAILED)  # n-a stays live, after n-b: launch order, not id order
    state.charge(_entry("n-c", "vision", "9.831200"))
    state.charge(_entry("n-x", "nlp", "123456789012.123456"))  # 18 digits: exact on both databases
    state.tickets["n-b"] = CheckpointTicket("n-b", "job-1", T0 + timedelta(minutes=10), saved_s=12.5)
    state.blocked[SPOT.key] = T0 + timedelta(minutes=10)
    state.block_strikes[SPOT.key] = 2
    state.block_strikes[ON_DEMAND.key] = 1  # counted, no longer blocked
    state.blocked["azure/eastus-1/NC24/spot"] = T0  # blocked, strikes reset by a launch there
    state.failed_requests["req-7"] = 3
    state.launch_times = [T0, T0 + timedelta(seconds=1)]


def _contents(state: MemoryState) -> dict[str, object]:
    return {"nodes": state.nodes, "live": [r.node_id for r in state.live()],
            "live_aws": [r.node_id for r in state.live_of("aws")], "intents": state.intents,
            "sent": state.sent,
            "tickets": state.tickets, "ledger": state.ledger, "blocked": state.blocked,
            "strikes": state.block_strikes, "failed": state.failed_requests, "times": state.launch_times,
            "spent": state.spent_usd, "by_team": state.spent_by_team,
            "spent_requests": [r for r in ("req-n-a", "req-n-b", "req-n-c", "req-n-d") if state.request_spent(r)]}


def test_a_restarted_controller_finds_everything_it_kept(store_url: str) -> None:
    mem, sql = MemoryState(), SqlState.open(store_url)
    assert sql.empty
    _fill(mem)
    _fill(sql)
    sql.commit()
    sql.close()
    again = SqlState.read(store_url)
    assert not again.empty
    assert _contents(again) == _contents(mem)
    assert [r.node_id for r in again.live()] == ["n-b", "n-a"]
    assert again.live()[0].launched_at.tzinfo is UTC
    assert again.ledger[1].usd == Decimal("123456789012.123456")


def test_a_node_that_failed_stays_out_of_the_live_index(store_url: str) -> None:
    """Found by tests/store/test_sqlstate_properties.py: failed -> terminating was a legal move, and
    memory kept such a node out of the live index while a store that derived liveness from the state
    brought it back live. Failed is now an end, as terminated is, and the store keeps the flag."""
    sql = SqlState.open(store_url)
    sql.add_node(_record("n-1", SPOT))
    sql.move("n-1", NodeState.FAILED)
    with pytest.raises(IllegalTransitionError, match="failed to terminating"):
        sql.move("n-1", NodeState.TERMINATING)
    sql.move("n-1", NodeState.TERMINATED)
    sql.commit()
    again = SqlState.read(store_url)
    assert again.nodes["n-1"].state is NodeState.TERMINATED
    assert again.live() == [] and not again.has_live() and again.request_spent("req-n-1")


def test_only_a_commit_keeps_a_pass_but_an_intent_is_kept_at_once(store_url: str) -> None:
    """A controller that dies mid-pass has its intent (to adopt the nodes it launched), not the rest."""
    sql = SqlState.open(store_url)
    sql.put_intent(Launch(SPOT, 1, "burst job-1", "req-1", job_id="job-1", team="vision"))
    sql.add_node(_record("n-1", SPOT))
    sql.charge(_entry("n-0", "vision", "1.5"))
    crashed = SqlState.read(store_url)
    assert list(crashed.intents) == ["req-1"] and crashed.intents["req-1"].team == "vision"
    assert crashed.nodes == {} and crashed.ledger == [] and crashed.spent_usd == 0.0


def test_what_a_pass_removes_is_removed(store_url: str) -> None:
    sql = SqlState.open(store_url)
    _fill(sql)
    sql.commit()
    sql.clear_intent("req-9")
    del sql.tickets["n-b"]
    sql.tickets["n-z"] = CheckpointTicket("n-z", "job-2", T0, done=True, saved_s=3.0)
    sql.blocked[SPOT.key] = T0 + timedelta(minutes=40)  # blocked again, longer
    sql.block_strikes.pop(ON_DEMAND.key)
    sql.failed_requests["req-7"] = 4
    sql.launch_times = [T0 + timedelta(seconds=1)]
    sql.move("n-b", NodeState.DRAINING)
    sql.commit()
    again = SqlState.read(store_url)
    assert again.intents == {}
    assert again.tickets == {"n-z": CheckpointTicket("n-z", "job-2", T0, done=True, saved_s=3.0)}
    assert again.blocked[SPOT.key] == T0 + timedelta(minutes=40)
    assert again.block_strikes == {SPOT.key: 2}
    assert again.failed_requests == {"req-7": 4}
    assert again.launch_times == [T0 + timedelta(seconds=1)]
    assert again.nodes["n-b"].state is NodeState.DRAINING and again.nodes["n-b"].idle_since is not None


def test_free_form_names_of_any_length_and_script_are_kept(store_url: str) -> None:
    """Teams, projects, sprints and job ids come from traces and Jira: PostgreSQL would refuse one
    past a VARCHAR's length and fail every pass after it."""
    team, sprint, job = "t" * 500, "Sprint ✓ 42 — GPU «week» 'β'", "job/" + "x" * 400
    sql = SqlState.open(store_url)
    sql.add_node(_record("n-1", SPOT, team=team, sprint=sprint, for_job=job, project='p"q'))
    sql.tickets["n-1"] = CheckpointTicket("n-1", job, T0)
    sql.charge(LedgerEntry("n-1", "aws", "spot", "p4d.24xlarge", "us-east-1", team, 'p"q', sprint, "r", T0, T0,
                           60.0, Decimal("0.1")))
    sql.commit()
    again = SqlState.read(store_url)
    assert again.nodes == sql.nodes and again.tickets == sql.tickets and again.ledger == sql.ledger


def test_clusters_sharing_a_database_keep_apart(sqlite_url: str) -> None:
    east, west = SqlState.open(sqlite_url, "east"), SqlState.open(sqlite_url, "west")
    _fill(east)
    east.commit()
    west.add_node(_record("n-b", ON_DEMAND))  # the same node id in another cluster
    west.commit()
    assert SqlState.read(sqlite_url, "west").nodes["n-b"].offering == ON_DEMAND
    assert SqlState.read(sqlite_url, "east").nodes["n-b"].offering == SPOT
    assert SqlState.read(sqlite_url, "north").empty


def test_a_controller_loads_its_recent_history_and_the_spend_of_all_of_it(store_url: str) -> None:
    """Nodes that ended and ledger entries older than HISTORY before the cluster's latest record
    stay in the database; the all-time spend and the period's spend come out as from a full read."""
    sql = SqlState.open(store_url)
    _ended(sql, "n-old-1", T0, "vision", "1.25")
    _ended(sql, "n-old-2", T0 + timedelta(days=1), "nlp", "2.50")
    _ended(sql, "n-still-up", T0 + timedelta(days=2), "vision", "0", live=True)  # launched long ago, live
    _ended(sql, "n-recent", T0 + timedelta(days=59), "vision", "4.00")
    _ended(sql, "n-new", T0 + timedelta(days=60), "nlp", "8.00")
    sql.commit()
    sql.close()
    assert T0 + timedelta(days=60, hours=1) - HISTORY > T0 + timedelta(days=1, hours=1)  # the two old ones go

    full, kept = SqlState.read(store_url), SqlState.open(store_url)
    assert sorted(kept.nodes) == ["n-new", "n-recent", "n-still-up"] and len(full.nodes) == 5
    assert [e.node_id for e in kept.ledger] == ["n-recent", "n-new"]
    assert (kept.spent_usd, kept.spent_by_team) == (full.spent_usd, full.spent_by_team) == (15.75, {"vision": 5.25,
                                                                                                 "nlp": 10.5})
    assert kept.request_spent("req-n-old-1") and not kept.request_spent("req-n-never")  # (asked of the database)
    assert not kept.request_spent("req-n-still-up")
    since = T0 + timedelta(days=59, minutes=30)
    assert kept.spent_since(since) == full.spent_since(since) == (10.0, {"vision": 2.0, "nlp": 8.0})

    _ended(kept, "n-next", T0 + timedelta(days=61), "vision", "16.00")  # written after what it did not load
    kept.commit()
    kept.close()
    again = SqlState.read(store_url)
    assert [e.node_id for e in again.ledger] == ["n-old-1", "n-old-2", "n-recent", "n-new", "n-next"]
    assert [r.node_id for r in again.live()] == ["n-still-up"] and list(again.nodes)[-1] == "n-next"
    assert again.spent_usd == 31.75


def test_records_left_out_of_the_load_come_back_when_a_pass_needs_them(store_url: str) -> None:
    """A watched end's record, however old, is loaded (the pass reads it); ``recall`` brings back
    others a listing shows again. Brought back as they were: nothing is written twice."""
    sql = SqlState.open(store_url)
    _ended(sql, "n-old-1", T0, "vision", "1.25")
    _ended(sql, "n-old-2", T0 + timedelta(days=1), "nlp", "2.50")
    _ended(sql, "n-new", T0 + timedelta(days=60), "nlp", "8.00")
    sql.watched["n-old-1"] = EndWatch(T0 + timedelta(hours=1), unseen=False, running=True)
    sql.commit()
    sql.close()
    kept = SqlState.open(store_url)
    assert sorted(kept.nodes) == ["n-new", "n-old-1"] and kept.nodes["n-old-1"].state is NodeState.TERMINATED
    kept.recall(["n-old-2", "n-never", "n-new"])
    assert sorted(kept.nodes) == ["n-new", "n-old-1", "n-old-2"] and not kept.is_live("n-old-2")
    assert kept.request_spent("req-n-old-2")
    kept.commit()
    kept.close()
    again = SqlState.read(store_url)
    assert sorted(again.nodes) == ["n-new", "n-old-1", "n-old-2"] and len(again.ledger) == 3
