"""Hypothesis: any sequence of the changes a pass makes, committed at any points, comes back from the
SQL store exactly as it stood in memory at the last commit (SQLite; a fresh cluster per example)."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from burster.budget_period import share_since
from burster.lifecycle import TRANSITIONS, NodeState
from burster.model import CheckpointTicket, Interruption, Market, Offering
from burster.plan import Launch
from burster.sqlstate import SqlState
from burster.state import EndWatch, LedgerEntry, NodeRecord

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
OFFERS = [Offering("aws", "us-east-1", "us-east-1a", "g5.xlarge", "A10G", 1, Market.SPOT, 0.5),
          Offering("gcp", "us-central1", "us-central1-a", "a2-highgpu-1g", "A100", 1, Market.ON_DEMAND, 3.67)]
KEYS = ["k1", "k2", "k3"]
_CLUSTERS = itertools.count()
times = st.integers(0, 10_000).map(lambda s: T0 + timedelta(seconds=s))
PERIOD = T0 + timedelta(seconds=5_000)  # a budget period's start, within the times drawn


def _view(state: SqlState) -> dict[str, Any]:
    return copy.deepcopy({
        "nodes": dict(state.nodes), "live": [r.node_id for r in state.live()],
        "live_by": {p: [r.node_id for r in state.live_of(p)] for p in ("aws", "gcp")},
        "intents": dict(state.intents), "sent": dict(state.sent), "tickets": dict(state.tickets),
        "ledger": list(state.ledger),
        "blocked": dict(state.blocked), "strikes": dict(state.block_strikes),
        "failed": dict(state.failed_requests), "times": list(state.launch_times), "notices": dict(state.notices),
        "watched": dict(state.watched),
        "spent": state.spent_usd, "by_team": dict(state.spent_by_team), "this_period": state.spent_since(PERIOD),
        "spent_requests": sorted(r.request_id for r in state.nodes.values() if state.request_spent(r.request_id)),
    })


class StoreMachine(RuleBasedStateMachine):
    url = ""

    @initialize()
    def open(self) -> None:
        self.cluster = f"c{next(_CLUSTERS)}"
        self.state = SqlState.open(self.url, self.cluster)
        self.committed = _view(self.state)
        self.count = 0

    @rule(offer=st.sampled_from(OFFERS), team=st.sampled_from(["", "vision", "nlp"]))
    def launch_node(self, offer: Offering, team: str) -> None:
        self.count += 1
        node_id = f"n{self.count}"
        self.state.add_node(NodeRecord(node_id, offer.provider, offer, f"req-{self.count % 3}", T0, NodeState.REQUESTED,
                                       for_job=f"job-{self.count}", team=team))

    @precondition(lambda self: bool(self.state.nodes))
    @rule(data=st.data())
    def move_node(self, data: st.DataObject) -> None:
        node_id = data.draw(st.sampled_from(sorted(self.state.nodes)))
        allowed = sorted(TRANSITIONS[self.state.nodes[node_id].state], key=lambda s: s.value)
        if allowed:
            target = data.draw(st.sampled_from(allowed))
            ended = {"ended_at": data.draw(times)} if target is NodeState.TERMINATED else {}
            self.state.move(node_id, target, **ended)

    @precondition(lambda self: bool(self.state.nodes))
    @rule(data=st.data(), idle=st.one_of(st.none(), times))
    def idle_since(self, data: st.DataObject, idle: datetime | None) -> None:
        self.state.update(data.draw(st.sampled_from(sorted(self.state.nodes))), idle_since=idle)

    @rule(team=st.sampled_from(["vision", "nlp"]), cents=st.integers(0, 10**9), start=times,
          run_s=st.integers(0, 7200))
    def charge(self, team: str, cents: int, start: datetime, run_s: int) -> None:
        end = start + timedelta(seconds=run_s)  # some across PERIOD: counted pro rata by spent_since
        self.state.charge(LedgerEntry("n0", "aws", "spot", "g5.xlarge", "us-east-1", team, "", "", "r", start, end,
                                      60.0, Decimal(cents) / 100))

    @rule()
    def spent_this_period(self) -> None:
        """Ask as the reconciler does each pass: later charges then add to the period's sums."""
        total, by_team = self.state.spent_since(PERIOD)
        shares = [(e.team, share_since(float(e.usd), e.start, e.end, PERIOD)) for e in self.state.ledger]
        assert total == pytest.approx(sum(usd for _, usd in shares))
        for team in ("vision", "nlp"):
            assert by_team.get(team, 0.0) == pytest.approx(sum(usd for t, usd in shares if t == team))

    @rule(key=st.sampled_from(KEYS), count=st.integers(1, 3), sent=st.one_of(st.none(), times))
    def put_intent(self, key: str, count: int, sent: datetime | None) -> None:
        self.state.put_intent(Launch(OFFERS[0], count, f"burst {count}", key), sent)
        self.committed["intents"][key] = self.state.intents[key]  # written at once, with its first send
        if key in self.state.sent:
            self.committed["sent"][key] = self.state.sent[key]
        else:
            self.committed["sent"].pop(key, None)

    @rule(key=st.sampled_from(KEYS))
    def clear_intent(self, key: str) -> None:
        self.state.clear_intent(key)

    @rule(key=st.sampled_from(KEYS), deadline=times, done=st.booleans())
    def ticket(self, key: str, deadline: datetime, done: bool) -> None:
        self.state.tickets[key] = CheckpointTicket(key, "job", deadline, done, 1.5)

    @rule(key=st.sampled_from(KEYS))
    def drop_ticket(self, key: str) -> None:
        self.state.tickets.pop(key, None)

    @rule(key=st.sampled_from(KEYS), kind=st.sampled_from(["spot-interruption", "rebalance"]), at=times)
    def notice(self, key: str, kind: str, at: datetime) -> None:
        self.state.notices[key] = Interruption(key, "aws", kind, at, at + timedelta(seconds=120))

    @rule(key=st.sampled_from(KEYS))
    def drop_notice(self, key: str) -> None:
        self.state.notices.pop(key, None)

    @rule(key=st.sampled_from(KEYS), at=times, unseen=st.booleans(), running=st.booleans())
    def watch(self, key: str, at: datetime, unseen: bool, running: bool) -> None:
        self.state.watched[key] = EndWatch(at, unseen, running)

    @rule(key=st.sampled_from(KEYS))
    def unwatch(self, key: str) -> None:
        self.state.watched.pop(key, None)

    @rule(key=st.sampled_from(KEYS), until=st.one_of(st.none(), times), strikes=st.one_of(st.none(), st.integers(1, 4)))
    def block(self, key: str, until: datetime | None, strikes: int | None) -> None:
        for table, value in ((self.state.blocked, until), (self.state.block_strikes, strikes)):
            if value is None:
                table.pop(key, None)  # type: ignore[attr-defined]
            else:
                table[key] = value  # type: ignore[index]

    @rule(key=st.sampled_from(KEYS), tries=st.integers(1, 5))
    def fail_request(self, key: str, tries: int) -> None:
        self.state.failed_requests[key] = tries

    @rule(launches=st.lists(times, max_size=4))
    def launch_times(self, launches: list[datetime]) -> None:
        self.state.launch_times = sorted(launches)

    @rule()
    def commit(self) -> None:
        self.state.commit()
        self.committed = _view(self.state)

    @invariant()
    def the_store_holds_the_last_commit(self) -> None:
        assert _view(SqlState.read(self.url, self.cluster)) == self.committed

    def teardown(self) -> None:
        self.state.close()


@pytest.mark.slow
def test_any_sequence_of_changes_comes_back_as_committed(tmp_path: Path) -> None:
    StoreMachine.url = f"sqlite:///{tmp_path / 'store.db'}"
    test = StoreMachine.TestCase
    test.settings = settings(max_examples=40, stateful_step_count=25, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])
    test().runTest()
