"""Rules of NodeBook and blocks that a mutation audit found unpinned.

- sync: a node adopted without an intent keeps its tagged team; one an intent made that is listed
  ending is adopted as terminating (not terminated again), one listed ended is billed to its listed
  end, as is a known node listed ended; records follow their cloud forward; a live node listed
  stopping outside us is to be terminated; an ended record listed shutting down is neither charged
  nor a stray; a degraded provider's listing ends nothing; a young node left out is ``missing``
  until its grace; a node taken for gone is watched for one grace only; a stray's recorded end never
  moves back, and a listing at the same instant charges no empty entry.
- ended: a node that ends still requested failed; its checkpoint ticket goes with it.
- expire_intents: an intent made again after it was cleared or forgotten gets a full grace; one
  answered in full is cleared at once, one answered in part forgotten a grace on, saying how much.
- spend: the period's ledger only, a live node's share since the period start, a team's nodes
  summed, reading it twice changes nothing; a launch exactly a minute ago no longer counts.
- take-backs: an on-demand node is never left to its cloud; only a drained node is overdue.
- snapshot_nodes: idle from READY on, not idle while busy, a job change or state change shows,
  ``for_job`` only for its own job, nodes by id. mark drains a booting node via READY.
- ledger entries carry region, project, sprint and market as recorded.
- blocks: the factor doubles up to 8x and stays there; a shorter block never shortens a longer
  one; unknown node ids block nothing.

And a bug it found: a node taken for gone that a later listing showed ended after its recorded end
was billed only to the recorded end; it is billed to the listed end now.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from burster.blocks import OfferingBlocks
from burster.lifecycle import NodeState
from burster.model import CheckpointTicket, Demand, Interruption, Market, Node, Offering, Placement
from burster.plan import Launch
from burster.reconcile_nodes import LISTING_GRACE_S, TAKE_BACK_GRACE_S, NodeBook
from burster.state import MemoryState

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
GRACE = timedelta(seconds=LISTING_GRACE_S)
OD = Offering("fake", "r1", "r1a", "gpu.8x", "V100", 8, Market.ON_DEMAND, 36.0)  # $0.01 a second
S = NodeState


def sec(s: float) -> timedelta:
    return timedelta(seconds=s)


def node(node_id: str = "n-1", state: NodeState = S.READY, *, launched: datetime = T0, request_id: str = "req-1",
         team: str = "", ended_at: datetime | None = None, offering: Offering = OD) -> Node:
    return Node(node_id, offering, state, launched, request_id, team=team, ended_at=ended_at)


class Desk:
    """A NodeBook on a MemoryState, charging the state's ledger as the reconciler does."""

    def __init__(self) -> None:
        self.state = MemoryState()
        self.book = NodeBook(self.state)

    def charge(self, node_id: str, end: datetime) -> None:
        for e in self.book.ledger_entries(node_id, end):
            self.state.charge(e)

    def sync(self, now: datetime, *listed: Node, degraded: bool = False) -> None:
        self.book.sync(now, {"fake": list(listed)}, {"fake"} if degraded else set(), self.charge)
        self.book.bill_ended(())  # the ends it found charged, as the pass does (none of the pool's jobs here)

    def intent(self, team: str = "", project: str = "", sprint: str = "") -> Launch:
        launch = Launch(OD, 1, "burst for j", "req-1", job_id="j", team=team, project=project, sprint=sprint)
        self.state.put_intent(launch)
        return launch

    def state_of(self, node_id: str = "n-1") -> NodeState:
        return self.state.nodes[node_id].state

    def billed(self) -> list[tuple[datetime, datetime, float]]:
        return [(e.start, e.end, e.billed_s) for e in self.state.ledger]


# --- sync ------------------------------------------------------------------------------------------
def test_a_node_adopted_without_an_intent_keeps_its_tagged_team() -> None:
    d = Desk()
    d.sync(T0 + sec(10), node(team="vision"))
    rec = d.state.nodes["n-1"]
    assert (rec.team, rec.for_job, rec.reason) == ("vision", None, "adopted: tagged by this controller")


def test_a_node_an_intent_made_listed_ending_is_adopted_as_terminating_and_not_terminated_again() -> None:
    d = Desk()
    d.intent()
    d.sync(T0 + sec(10), node(state=S.TERMINATING))
    assert d.state_of() is S.TERMINATING and d.book.unterminated == set()
    d.sync(T0 + sec(20), node(state=S.TERMINATING))  # its cloud ends it already: no second terminate
    assert d.book.unterminated == set()


def test_an_ended_node_an_intent_made_is_adopted_and_billed_to_its_listed_end() -> None:
    d = Desk()
    d.intent()
    d.sync(T0 + sec(900), node(state=S.TERMINATED, ended_at=T0 + sec(600)),
           node("n-2", S.TERMINATED, request_id="not-ours", ended_at=T0))
    assert not d.state.is_live("n-1") and "n-2" not in d.state.nodes
    assert d.billed() == [(T0, T0 + sec(600), 600.0)]


def test_a_known_node_listed_ended_is_billed_to_its_listed_end() -> None:
    d = Desk()
    d.sync(T0 + sec(10), node())
    d.sync(T0 + sec(900), node(state=S.TERMINATED, ended_at=T0 + sec(600)))
    assert d.billed() == [(T0, T0 + sec(600), 600.0)]


def test_a_record_follows_its_cloud_forward() -> None:
    d = Desk()
    d.intent()
    d.sync(T0 + sec(10), node(state=S.LAUNCHING))
    assert d.state_of() is S.LAUNCHING
    d.sync(T0 + sec(20), node())
    assert d.state_of() is S.READY


def test_a_live_node_listed_stopping_outside_the_controller_is_to_be_terminated() -> None:
    d = Desk()
    d.sync(T0 + sec(10), node())
    d.sync(T0 + sec(20), node(state=S.TERMINATING))
    assert d.book.unterminated == {"n-1"} and d.state.is_live("n-1")


def test_an_ended_record_listed_shutting_down_is_neither_charged_nor_a_stray() -> None:
    d = Desk()
    d.sync(T0 + sec(10), node())
    d.book.ended("n-1", T0 + sec(100), d.charge)
    d.sync(T0 + sec(100) + GRACE + sec(10), node(state=S.TERMINATING))  # EC2's shutting-down
    assert len(d.state.ledger) == 1 and d.book.strays == {} and d.book.unterminated == set()


def test_a_degraded_providers_listing_ends_nothing() -> None:
    """Its listing came back but another of its reads failed: nothing there is taken for gone."""
    d = Desk()
    d.sync(T0 + sec(10), node())
    d.sync(T0 + 2 * GRACE, degraded=True)
    assert d.state.is_live("n-1") and d.state.ledger == []


def test_a_young_node_a_listing_leaves_out_is_missing_until_its_grace() -> None:
    d = Desk()
    d.sync(T0 + sec(10), node())
    d.sync(T0 + sec(20))
    assert d.book.missing == {"n-1": T0 + GRACE} and d.state.is_live("n-1")


def test_a_node_taken_for_gone_is_watched_for_one_grace_only() -> None:
    d = Desk()
    d.sync(T0 + sec(10), node())
    d.sync(T0 + GRACE)
    assert not d.state.is_live("n-1") and "n-1" in d.state.watched
    d.sync(T0 + 2 * GRACE)
    assert d.state.watched == {}


def test_a_strays_recorded_end_never_moves_back_so_no_second_is_charged_twice() -> None:
    """A listing shows its end before the last listing that showed it running (listings lag);
    a lagging listing then shows it running again."""
    d = Desk()
    d.sync(T0 + sec(10), node())
    d.book.ended("n-1", T0 + sec(100), d.charge)
    t1 = T0 + sec(100) + GRACE + sec(50)
    d.sync(t1, node())  # charged up to t1
    d.sync(t1 + sec(10), node(state=S.TERMINATED, ended_at=t1 - sec(20)))
    assert d.state.nodes["n-1"].ended_at == t1
    d.sync(t1 + sec(20), node())
    assert sum(b for _, _, b in d.billed()) == (t1 + sec(20) - T0).total_seconds()


def test_a_stray_listed_twice_at_one_instant_gets_no_empty_entry() -> None:
    d = Desk()
    d.sync(T0 + sec(10), node())
    d.book.ended("n-1", T0 + sec(100), d.charge)
    t1 = T0 + sec(200)
    d.sync(t1, node())
    d.sync(t1, node())
    assert [b for _, _, b in d.billed()] == [100.0, 100.0]


def test_a_node_taken_for_gone_then_listed_ended_is_billed_to_its_listed_end() -> None:
    d = Desk()
    d.sync(T0 + sec(10), node())
    d.sync(T0 + GRACE)  # left out past the grace: taken for gone, billed to now
    d.sync(T0 + GRACE + sec(60), node(state=S.TERMINATED, ended_at=T0 + GRACE + sec(50)))  # it ran 50 s on
    assert sum(b for _, _, b in d.billed()) == LISTING_GRACE_S + 50


def test_strays_gone_in_one_listing_are_charged_by_id_whatever_order_a_store_loaded_them_in() -> None:
    d = Desk()
    d.sync(T0 + sec(10), node("n-1"), node("n-2"))
    for i in ("n-1", "n-2"):
        d.book.ended(i, T0 + sec(100), d.charge)
    d.sync(T0 + sec(100) + GRACE + sec(50), node("n-1"), node("n-2"))  # both running on: strays
    d.state.watched = dict(reversed(d.state.watched.items()))  # as a restarted store may load them
    d.sync(T0 + sec(100) + GRACE + sec(60))  # both gone
    assert [e.node_id for e in d.state.ledger[-2:]] == ["n-1", "n-2"]


# --- ended, intents ------------------------------------------------------------------------------
def test_a_node_that_ends_still_requested_failed() -> None:
    d = Desk()
    d.intent()
    d.sync(T0 + sec(10), node(state=S.REQUESTED))
    d.sync(T0 + GRACE)
    assert d.state_of() is S.FAILED


def test_a_nodes_checkpoint_ticket_goes_with_it() -> None:
    d = Desk()
    d.sync(T0 + sec(10), node())
    d.state.tickets["n-1"] = CheckpointTicket("n-1", "j", T0 + sec(300))
    d.book.ended("n-1", T0 + sec(20), d.charge)
    assert d.state.tickets == {}


def test_intents_listed_in_part_are_made_again_by_request_id() -> None:
    """Whatever order the intents were put in (a restarted store loads them in no set order)."""
    d = Desk()
    for rid in ("req-b", "req-a"):
        d.state.put_intent(Launch(OD, 2, "burst for j", rid, job_id="j"))
    d.sync(T0, node("n-1", request_id="req-b"), node("n-2", request_id="req-a"))
    assert [a.request_id for a in d.book.partly_listed()] == ["req-a", "req-b"]


def test_an_intent_made_again_after_it_was_cleared_or_forgotten_gets_a_full_grace() -> None:
    d = Desk()
    d.intent()
    d.book.expire_intents(T0)
    d.state.clear_intent("req-1")  # answered
    d.book.expire_intents(T0 + sec(10))
    d.intent()  # the same plan's launch, made again
    d.book.expire_intents(T0 + GRACE)
    assert "req-1" in d.state.intents
    d.book.expire_intents(T0 + 2 * GRACE)  # no node answered it: forgotten
    assert d.state.intents == {}
    d.intent()
    d.book.expire_intents(T0 + 2 * GRACE + sec(10))
    assert "req-1" in d.state.intents


def test_an_intent_listings_answer_in_full_is_cleared_and_one_answered_in_part_is_forgotten_saying_so(
        caplog: pytest.LogCaptureFixture) -> None:
    d = Desk()
    d.state.put_intent(Launch(OD, 2, "burst for j", "req-1", job_id="j"))
    d.sync(T0, node("n-1"))
    d.book.expire_intents(T0)
    assert "req-1" in d.state.intents and d.book.partly_listed() == [d.state.intents["req-1"]]
    with caplog.at_level("WARNING", logger="burster.reconcile"):
        d.book.expire_intents(T0 + GRACE)
    assert d.state.intents == {}
    assert [r.getMessage() for r in caplog.records] == [
        f"launch req-1: listings showed 1 of its 2 nodes in {LISTING_GRACE_S:.0f}s; forgetting its intent"]
    d.state.put_intent(Launch(OD, 2, "burst for j", "req-2", job_id="j"))
    d.sync(T0 + GRACE, node("n-1"), node("n-2", request_id="req-2"), node("n-3", request_id="req-2"))
    assert d.book.partly_listed() == []
    d.book.expire_intents(T0 + GRACE)
    assert d.state.intents == {} and len(caplog.records) == 1


# --- spend ---------------------------------------------------------------------------------------
def test_spend_counts_the_periods_share_of_a_teams_ledger_and_live_nodes_and_reading_it_changes_nothing() -> None:
    now = datetime(2026, 3, 1, 1, tzinfo=UTC)
    d = Desk()
    d.sync(now - sec(4 * 86400), node("old", team="vision", launched=now - sec(4 * 86400)))
    d.book.ended("old", now - sec(4 * 86400 - 3600), d.charge)  # $36, in February
    d.sync(now, node("across", team="vision", launched=now - sec(7200)),  # $72, half in March
           node("march", team="vision", launched=now - sec(1800)))  # $18
    for _ in range(2):
        spend = d.book.spend(now, "month")
        assert spend.total_usd == pytest.approx(54.0) and spend.team_usd("vision") == pytest.approx(54.0)


def test_a_launch_exactly_a_minute_ago_no_longer_counts() -> None:
    d = Desk()
    d.state.launch_times = [T0 - sec(60), T0 - sec(59)]
    assert d.book.spend(T0, "month").launches_last_minute == 1


# --- take-backs ----------------------------------------------------------------------------------
def _noticed(d: Desk, offering: Offering, kind: str = "spot-interruption") -> None:
    d.book.sync(T0 + sec(10), {"aws": [node(offering=offering)]}, set(), d.charge)
    d.state.notices["n-1"] = Interruption("n-1", "aws", kind, T0 + sec(600), T0 + sec(720))


def test_an_on_demand_node_is_never_left_to_its_cloud() -> None:
    for market, left in ((Market.SPOT, True), (Market.ON_DEMAND, False)):
        d = Desk()
        _noticed(d, Offering("aws", "r1", "r1a", "p3.16xlarge", "V100", 8, market, 24.0))
        assert d.book.left_to_cloud("n-1", T0 + sec(610)) is left


def test_only_a_drained_node_is_overdue_for_its_cloud_to_take_back() -> None:
    """A busy node with a rebalance notice EC2 never acted on is not terminated for it."""
    d = Desk()
    _noticed(d, Offering("aws", "r1", "r1a", "p3.16xlarge", "V100", 8, Market.SPOT, 24.0), kind="rebalance")
    late = T0 + sec(720 + TAKE_BACK_GRACE_S)
    assert d.book.overdue_take_backs(late) == set()
    d.book.mark("n-1", S.DRAINING)
    assert d.book.overdue_take_backs(late) == {"n-1"}


# --- the snapshot's nodes ------------------------------------------------------------------------
def _running(job_id: str, node_id: str = "n-1") -> tuple[Placement, ...]:
    job = Demand(job_id, 8, T0, 3600.0, gpu_model="V100")
    return (Placement(job, (node_id,), T0, on_cloud=True, market=Market.ON_DEMAND),)


def _view(d: Desk, now: datetime, running: Sequence[Placement] = ()) -> Node:
    (n,) = d.book.snapshot_nodes(now, tuple(running))
    return n


def test_a_node_is_idle_from_ready_on_and_not_while_busy() -> None:
    d = Desk()
    d.intent()
    d.sync(T0 + sec(10), node(state=S.LAUNCHING))
    assert _view(d, T0 + sec(10)).idle_since is None  # booting, not idle
    d.sync(T0 + sec(20), node())
    assert _view(d, T0 + sec(20)).idle_since == T0 + sec(20)
    assert _view(d, T0 + sec(30), _running("j")).idle_since is None
    assert _view(d, T0 + sec(40)).idle_since == T0 + sec(40)  # idle again: from now, not from before


def test_a_nodes_view_shows_a_job_change_and_for_job_only_for_its_own_job() -> None:
    d = Desk()
    d.intent()
    d.sync(T0 + sec(10), node())
    view = _view(d, T0, _running("j"))
    assert (view.job_id, view.for_job) == ("j", "j")
    view = _view(d, T0, _running("k"))
    assert (view.job_id, view.for_job) == ("k", None)


def test_a_nodes_view_shows_its_new_state_and_nodes_come_by_id() -> None:
    d = Desk()
    d.intent()
    d.sync(T0 + sec(10), node("n-2", S.JOINING), node("n-1", S.JOINING))
    assert [n.node_id for n in d.book.snapshot_nodes(T0, ())] == ["n-1", "n-2"]
    d.sync(T0 + sec(20), node("n-2"), node("n-1", S.JOINING))
    assert [n.state for n in d.book.snapshot_nodes(T0, ())] == [S.JOINING, S.READY]


def test_draining_a_booting_node_takes_it_through_ready() -> None:
    d = Desk()
    d.intent()
    d.sync(T0 + sec(10), node(state=S.JOINING))
    d.book.mark("n-1", S.DRAINING)
    assert d.state_of() is S.DRAINING


def test_a_ledger_entry_carries_the_launchs_attribution_and_the_offerings_region_and_market() -> None:
    d = Desk()
    launch = d.intent(team="vision", project="detector", sprint="s12")
    d.book.adopt_launched([node()], launch, T0, d.charge)
    d.book.ended("n-1", T0 + sec(100), d.charge)
    (e,) = d.state.ledger
    assert (e.provider, e.market, e.instance_type, e.region) == ("fake", "on_demand", "gpu.8x", "r1")
    assert (e.team, e.project, e.sprint, e.reason, e.billed_s, float(e.usd)) == (
        "vision", "detector", "s12", "burst for j", 100.0, 1.0)


# --- blocks --------------------------------------------------------------------------------------
def test_the_block_doubles_with_each_strike_up_to_eight_times_and_stays_there() -> None:
    state = MemoryState()
    blocks = OfferingBlocks(state, 600.0)
    factors = []
    for _ in range(5):
        blocks.block(OD.key, T0)
        factors.append((state.blocked[OD.key] - T0).total_seconds() / 600.0)
        del state.blocked[OD.key]
    assert factors == [1, 2, 4, 8, 8]


def test_a_shorter_block_never_shortens_a_longer_one_and_unknown_nodes_block_nothing() -> None:
    d = Desk()
    d.sync(T0, node())
    blocks = OfferingBlocks(d.state, 600.0)
    for _ in range(3):
        blocks.block(OD.key, T0)  # a dry offering: 4 x 600 s
    blocks.never_joined(["n-1", "gone"], T0 + sec(60))  # a first join strike: 600 s
    assert d.state.blocked == {OD.key: T0 + sec(2400)}
    blocks.never_joined(["gone"], T0 + sec(60))
    assert d.state.block_strikes == {OD.key: 3, "join-timeout:" + OD.key: 1}
