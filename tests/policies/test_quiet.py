"""When an empty plan may next change on its own (the simulator skips the passes before it)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, Interruption, Market, Node, Offering, Signal, Snapshot
from policies.cost import CostModel
from policies.guards import GuardParams
from policies.quiet import FOREVER, quiet_until

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("gcp", "us-central1", "us-central1-a", "n1-v100", "V100", 1, Market.SPOT, 0.8)


def until(*nodes: Node, notices: tuple[Interruption, ...] = (), guards: GuardParams | None = None) -> datetime | None:
    snapshot = Snapshot(NOW, (), (), (), nodes, (SPOT,), interruptions=notices)
    return quiet_until(snapshot, idle_ttl_s=300.0, guards=guards or GuardParams(), prewarm=CostModel())


def node(state: NodeState, *, job: str | None = None, idle_for_s: float | None = None) -> Node:
    idle_since = None if idle_for_s is None else NOW - timedelta(seconds=idle_for_s)
    return Node(f"n-{state.value}", SPOT, state, NOW - timedelta(hours=1), "rq", job_id=job, idle_since=idle_since)


@pytest.mark.parametrize("state", [NodeState.REQUESTED, NodeState.LAUNCHING, NodeState.JOINING,
                                   NodeState.CHECKPOINTING])
def test_a_booting_or_checkpointing_node_waits_for_an_event(state: NodeState) -> None:
    assert until(node(state)) == FOREVER
    # beside an idle node, the idle node's TTL is still the wake
    assert until(node(state), node(NodeState.READY, idle_for_s=100.0)) == NOW + timedelta(seconds=200)


@pytest.mark.parametrize("state", [NodeState.DRAINING, NodeState.TERMINATING])
def test_a_node_the_controller_is_stopping_is_not_waited_out(state: NodeState) -> None:
    assert until(node(state)) is None


def test_a_handled_interruption_notice_waits_for_the_node_to_go() -> None:
    checkpointing = node(NodeState.CHECKPOINTING, job="j")
    notice = Interruption(checkpointing.node_id, "gcp", "spot-interruption", NOW, NOW + timedelta(seconds=30))
    assert until(checkpointing, notices=(notice,)) == FOREVER


def test_budgets_and_an_idle_node_without_a_start_turn_skipping_off() -> None:
    assert until(node(NodeState.READY, job="j"), guards=GuardParams(total_budget_usd=100.0)) is None
    assert until(node(NodeState.READY)) is None  # idle, its idle time not yet recorded


@pytest.mark.parametrize("state", [NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY])
def test_a_node_up_or_booting_for_a_job_not_started_on_it_wakes_at_its_join_timeout(state: NodeState) -> None:
    waiting = Demand("j", 1, NOW - timedelta(hours=2), 3600.0)
    n = replace(node(state, idle_for_s=None if state is not NodeState.READY else 30.0), for_job="j",
                launched_at=NOW - timedelta(seconds=100))
    snapshot = Snapshot(NOW, (waiting,), (), (), (n,), (SPOT,))
    timed = quiet_until(snapshot, idle_ttl_s=3600.0, guards=GuardParams(), prewarm=CostModel(), join_timeout_s=1200.0)
    assert timed == NOW + timedelta(seconds=1100)
    assert quiet_until(replace(snapshot, pending=()), idle_ttl_s=3600.0, guards=GuardParams(), prewarm=CostModel(),
                       join_timeout_s=1200.0) == (FOREVER if state is not NodeState.READY else NOW + timedelta(
                           seconds=3570))  # its job started elsewhere: an idle node's TTL, or an event


@pytest.mark.parametrize(("opens_in_s", "expected"), [
    (3600.0, NOW + timedelta(seconds=3600 - 360)),  # pre-warm first weighs it two boots (360 s) ahead
    (300.0, None),  # within those two boots: the idle cost of being early falls as the window nears
    (-60.0, FOREVER),  # its window open: its jobs are here, and pre-warm is done with it
])
def test_a_signal_wakes_an_empty_plan_where_pre_warm_first_weighs_it(opens_in_s: float,
                                                                      expected: datetime | None) -> None:
    opens = NOW + timedelta(seconds=opens_in_s)
    sprint = Signal("SPRINT-7", 48.0, opens, opens + timedelta(hours=2), gpu_model="V100")
    snapshot = Snapshot(NOW, (), (), (), (), (SPOT,), signals=(sprint,))
    assert quiet_until(snapshot, idle_ttl_s=300.0, guards=GuardParams(), prewarm=CostModel()) == expected
    assert quiet_until(snapshot, idle_ttl_s=300.0, guards=GuardParams(), prewarm=None) == FOREVER  # no pre-warm
