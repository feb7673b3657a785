"""The reconcile pass over a SQL store: what it records is in the database when the pass ends, a
launch whose intent the store cannot keep is not made, a standing notice outlives a restart, and so
does a refused terminate."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from burster.errors import StoreError, TransientError
from burster.lifecycle import NodeState
from burster.reconciler import Reconciler
from burster.sqlstate import SqlState
from tests.test_budget_period import FEB_1, JAN_31_22H, ledger_entry
from tests.test_budget_period import World as BudgetWorld
from tests.test_reconcile_failures import _running_on_a_burst_node
from tests.test_reconciler import CHEAP, World


def _on_store(w: World, url: str) -> SqlState:
    state = SqlState.open(url)
    w.rec = Reconciler(providers={"fake": w.cloud}, pool=w.pool, policy=w.rec.policy, clock=w.clock, state=state)
    return state


def test_a_pass_ends_with_its_launch_and_its_bill_in_the_store(store_url: str) -> None:
    w = World()
    _on_store(w, store_url)
    w.job("a")  # takes the only reserved node
    w.job("b")  # bursts
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    assert SqlState.read(store_url).nodes[node.node_id].for_job == "b"
    w.clock.advance(600)
    w.cloud.terminate([node.node_id], request_id="outside")  # removed outside the controller
    w.rec.run_once()  # which finds it gone, bills it, and launches b again under a new request id
    kept = SqlState.read(store_url)
    assert [e.node_id for e in kept.ledger] == [node.node_id] and kept.ledger[0].usd > 0
    assert kept.spent_usd == w.rec.state.spent_usd
    assert [r.request_id for r in kept.live()] == [f"{node.request_id}-r1"]


def test_a_launch_whose_intent_cannot_be_kept_is_not_made(sqlite_url: str) -> None:
    w = World()
    _on_store(w, sqlite_url)
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE burster_intents")
    engine.dispose()
    w.job("a")
    w.job("b")
    with pytest.raises(StoreError, match="so it was not launched"):
        w.rec.run_once()
    assert w.cloud.list_nodes() == [] and w.rec.state.intents == {}
    assert CHEAP.key not in w.rec.state.blocked  # not taken for a cloud error


def test_a_controller_restarted_in_a_new_month_counts_only_its_spend(store_url: str) -> None:
    """The store keeps every ledger entry; the monthly budget counts February's alone."""
    first = SqlState.open(store_url)
    first.charge(ledger_entry("", "95", JAN_31_22H - timedelta(days=3), 9.5))
    first.commit()
    first.close()
    for start, bursts in ((JAN_31_22H, False), (FEB_1 + timedelta(seconds=10), True)):
        state = SqlState.open(store_url)
        w = BudgetWorld(start, "month", state)
        w.job("a")
        w.job("b")
        report = w.rec.run_once()
        assert bool(report.plan.launches) is bursts and bool(report.plan.refused) is not bursts
        assert state.spent_usd == 95.0
        state.close()


def test_an_interruption_notice_outlives_a_restart(store_url: str) -> None:
    """Clouds send a notice once (AWS's queue message is deleted once read): one whose checkpoint
    the pool refused must still be handled by the controller that takes over."""
    w = World()
    state = _on_store(w, store_url)
    node_id = _running_on_a_burst_node(w)
    w.cloud.interrupt(node_id, notice_s=120)
    w.pool.fail_checkpoint = TransientError("pool: slurmctld not responding")
    w.clock.advance(10)
    assert w.rec.run_once().errors
    assert list(SqlState.read(store_url).notices) == [node_id]
    state.close()  # the controller goes away before the notice was handled
    _on_store(w, store_url)
    w.clock.advance(10)
    report = w.rec.run_once()
    assert [a.node_id for a in report.plan.checkpoints] == [node_id] and not report.errors
    w.clock.advance(w.pool.checkpoint_s)
    w.pool.events.run_until(w.clock.now())
    w.rec.run_once()  # checkpoint written: drained and terminated, and the notice goes with its node
    assert not w.rec.state.is_live(node_id) and SqlState.read(store_url).notices == {}


def test_a_node_taken_for_gone_before_the_loaded_history_is_a_stray_when_listed_again(store_url: str) -> None:
    """A node listings left out (its region dropped from the config, say) is taken for gone and
    billed to then. Listed running again more than the store's loaded history later, after a
    restart, it is known for what it was, as in memory: a stray, charged its time since and
    terminated, not adopted as a new node and its whole run billed a second time."""
    from burster.reconcile_nodes import LISTING_GRACE_S
    from burster.sqlstate import HISTORY
    from tests.test_reconciler import DEAR

    def run(url: str | None) -> tuple[float, bool]:
        w = World()
        state = _on_store(w, url) if url else w.rec.state
        (old,) = w.cloud.launch(CHEAP, 1, request_id="prewarm-1")
        w.rec.run_once()  # adopted
        w.cloud.list_late([old.node_id])
        w.clock.advance(LISTING_GRACE_S)
        w.rec.run_once()  # taken for gone
        w.clock.advance(2 * LISTING_GRACE_S)
        w.rec.run_once()  # and no longer watched for
        w.clock.advance((HISTORY + timedelta(days=1)).total_seconds())
        w.cloud.launch(DEAR, 1, request_id="prewarm-2")
        w.rec.run_once()  # a record this recent puts the old one before the history a restart loads
        if url:
            state.close()
            peek = SqlState.open(url)
            assert old.node_id not in peek.nodes  # (left in the database)
            peek.close()
            state = _on_store(w, url)
        w.cloud.list_again()
        w.clock.advance(10)
        w.rec.run_once()
        billed = sum(e.billed_s for e in state.ledger if e.node_id == old.node_id)
        return billed, old.node_id in {n.node_id for n in w.cloud.list_nodes()}

    in_memory = run(None)
    assert in_memory[1] is False  # terminated as a stray
    assert run(store_url) == in_memory


def _launch_in_flight(w: World, store_url: str) -> None:
    """On a controller over ``store_url``: job b bursts, its launch made, the reply lost and its node
    listed late; then that controller stops."""
    first = _on_store(w, store_url)
    w.job("a")  # takes the only reserved node
    w.job("b")
    w.cloud.lose_next_replies(10)
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    w.cloud.list_late([node.node_id])
    first.close()


def test_a_launch_in_flight_dates_from_its_send_across_a_restart(store_url: str) -> None:
    """Its time since it was sent is committed spend (``policies.guards.committed_usd``): a controller
    rebuilt on the store dates it from the call, not from the first pass that finds it (nor from
    the pass that asks it again)."""
    w = World()
    _launch_in_flight(w, store_url)
    sent_at = w.clock.now()
    w.clock.advance(90)
    _on_store(w, store_url)  # a new controller on the same store
    (flight,) = w.rec.observe().in_flight
    assert (flight.job_id, flight.asked_at) == ("b", sent_at)
    w.rec.run_once()  # asks it again (its reply lost again)
    w.clock.advance(10)
    (flight,) = w.rec.observe().in_flight
    assert flight.asked_at == sent_at
    assert SqlState.read(store_url).sent == {flight.request_id: sent_at}


def test_a_launch_intent_is_forgotten_a_grace_after_its_send_across_a_restart(store_url: str) -> None:
    """An intent no listing answers is forgotten ``listing_grace_s`` after its call was sent (the send
    time kept in the store), as ``in_flight`` dates it: a controller rebuilt on the store does not start
    the grace again at its first pass (before, each restart held the intent, counted by the guards,
    another grace)."""
    from burster.reconcile_nodes import LISTING_GRACE_S
    w = World()
    _launch_in_flight(w, store_url)
    (rid,) = w.rec.state.intents
    w.clock.advance(90)
    _on_store(w, store_url)  # a new controller on the same store finds it standing
    w.rec.observe()
    assert rid in w.rec.state.intents
    w.clock.advance(LISTING_GRACE_S - 100)  # 10 s short of a grace after the send
    w.rec.observe()
    assert rid in w.rec.state.intents
    w.clock.advance(10)
    w.rec.observe()  # a grace after the send (the restart's first pass + grace is 90 s on)
    assert w.rec.state.intents == {} and w.rec.observe().in_flight == ()


def test_a_refused_terminate_is_made_again_after_a_restart_though_the_listing_fails(store_url: str) -> None:
    """The node a refused terminate left terminating is in the store as such: a controller restarted
    before its next pass makes the terminate again even while its provider's listing fails."""
    w = World()
    _on_store(w, store_url)
    w.cloud.launch(CHEAP, 1, request_id="prewarm-1")
    w.rec.run_once()  # adopts the idle node
    (node,) = w.cloud.list_nodes()
    w.clock.advance(3600)
    w.cloud.fail_next_terminate(TransientError("fake: 503 on terminate"))
    w.rec.run_once()  # the idle node's terminate is refused
    w.rec.state.close()
    _on_store(w, store_url)  # the process restarts
    assert w.rec.state.nodes[node.node_id].state is NodeState.TERMINATING
    w.clock.advance(10)
    w.cloud.fail_next_list(TransientError("fake: listing timed out"))
    w.rec.run_once()
    assert w.cloud.list_nodes() == []  # made again without a listing to show it up
    w.clock.advance(10)
    w.rec.run_once()
    assert SqlState.read(store_url).nodes[node.node_id].state is NodeState.TERMINATED
