"""Crashes inside a pass, on a SQLite store: the process dies right after a cloud or pool call did
its work (a launch, a terminate, a checkpoint poll, a drain), before it used the answer, and a new
controller opens the store. The chaos test's teardown holds: nothing left running or live, every
second each node ran paid for once and no later than the first listing that showed it gone.

The clouds here list ended nodes, as EC2 does. Where a cloud lists none (an Azure Spot VM evicted
with evictionPolicy Delete), a node made by a launch call whose process died before it returned,
and that ended before any listing showed it, is known to no one and not billed (docs/state.md).

A crash between two launches of one pass is run on PostgreSQL too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import rule

from tests.store.test_reconcile_chaos_store import SQL_SETTINGS, SqlChaosMachine
from tests.store.test_reconciler_store import _on_store
from tests.test_reconciler import World

CRASH_POINTS = ("launch", "terminate", "checkpoint", "drain")


class Crash(BaseException):
    """The controller process dies: no error a pass handles."""


class CrashMachine(SqlChaosMachine):
    lists_ended = True  # the clouds list ended nodes (EC2 does; GCE a stopped VM, Azure none deleted)

    def __init__(self) -> None:
        super().__init__()
        self.armed = ""  # the call after which the process dies next
        for cloud in self.clouds:
            cloud.list_ended(self.lists_ended)
            self._die_after(cloud, "launch")
            self._die_after(cloud, "terminate")
        self._die_after(self.pool, "checkpoint")
        self._die_after(self.pool, "drain")

    def _die_after(self, target: Any, name: str) -> None:
        call: Callable[..., Any] = getattr(target, name)

        def then_die(*args: Any, **kwargs: Any) -> Any:
            answer = call(*args, **kwargs)  # the cloud or pool did the work ...
            if self.armed == name:
                self.armed = ""
                raise Crash(name)  # ... and the process died before it used the answer
            return answer

        setattr(target, name, then_die)

    @rule(point=st.sampled_from(CRASH_POINTS))
    def crash_in_next_pass(self, point: str) -> None:
        self.armed = point

    def _step(self, seconds: float) -> None:
        try:
            super()._step(seconds)
        except Crash:
            self.state = self._open_state()  # the process is gone, its memory with it
            self.rec = self._controller()
            for knob in ("fail_checkpoint", "fail_drain", "fail_pending"):
                setattr(self.pool, knob, None)
            self.pool_fault = ""
            self.pool.schedule(self.clock.now())

    def teardown(self) -> None:
        self.armed = ""
        super().teardown()


TestReconcileCrashesOnSqlite = CrashMachine.TestCase
TestReconcileCrashesOnSqlite.settings = SQL_SETTINGS


class Unlisting(CrashMachine):
    """Clouds that list no ended node: only the store remembers a node a crashed pass learnt of."""

    lists_ended = False


def _settled(machine: CrashMachine) -> None:
    """The machine's teardown checks, outside Hypothesis (which alone records its events)."""
    machine._report = lambda: None  # type: ignore[method-assign]
    machine.teardown()


def _paid(machine: CrashMachine) -> dict[str, float]:
    paid: dict[str, float] = {}
    for entry in machine.state.ledger:
        paid[entry.node_id] = paid.get(entry.node_id, 0.0) + entry.billed_s
    return paid


def test_a_node_found_gone_before_a_crash_is_not_paid_for_the_restart_too() -> None:
    """A pass ends a vanished node in memory, then dies at a launch: the restarted controller
    ended it again at its own first listing, paying the downtime (419 s for a 298 s run, past
    the 359 s of the first listing that showed it gone). Observe's findings are now kept first."""
    m = Unlisting()
    m.busy(hours=[2.914604728853273, 0.5], budget_usd=None)
    m.a_pass(1)
    m.crash_in_next_pass("launch")
    m.a_pass(298)
    m.clouds[0].gone("fake-000001", preempted=False)
    m.a_pass(1)  # sees it gone, launches for the job again, and dies
    for _ in range(3):
        m.a_pass(60)
    assert _paid(m)["fake-000001"] <= 359.0
    _settled(m)


def test_a_node_adopted_before_a_crash_stays_known_and_is_paid_for() -> None:
    """Launched by a pass that died, adopted by the next one, which died too: the adoption was
    lost with it, and the node, taken back by its cloud meanwhile, never paid for."""
    m = Unlisting()
    m.busy(hours=[1.0, 1.0, 1.0, 1.0], budget_usd=None)
    m.crash_in_next_pass("launch")
    m.a_pass(1)
    m.crash_in_next_pass("launch")
    m.clouds[0].interrupt("fake-000001", notice_s=30)
    m.a_pass(1)
    for _ in range(3):
        m.a_pass(60)
    assert _paid(m).get("fake-000001", 0.0) >= 60.0
    _settled(m)


def test_a_crash_between_two_launches_of_a_pass_keeps_the_first_launchs_node(store_url: str) -> None:
    """One pass launches for b, then dies calling the cloud for c: b's node is in the store (the
    intent alone would leave it to listings), not launched again, and billed from its launch."""
    w = World()
    state = _on_store(w, store_url)
    launch = w.cloud.launch

    def die_at_the_second(*args: Any, **kwargs: Any) -> Any:
        if w.cloud.api_calls:
            raise Crash("launch")  # the process dies before the second call reaches the cloud
        return launch(*args, **kwargs)

    w.cloud.launch = die_at_the_second  # type: ignore[method-assign]
    for job in "abc":
        w.job(job)  # a takes the reserved node, b and c burst
    with pytest.raises(Crash):
        w.rec.run_once()
    state.close()  # the process is gone, its memory with it
    (node,) = w.cloud.list_nodes()
    w.cloud.launch = launch  # type: ignore[method-assign]
    state = _on_store(w, store_url)
    kept = state.nodes.get(node.node_id)  # before any pass: known from the store alone
    assert kept is not None and (kept.for_job, kept.launched_at) == ("b", node.launched_at)
    w.clock.advance(10)
    assert [a.job_id for a in w.rec.run_once().plan.launches] == ["c"]
    w.clock.advance(590)
    w.cloud.end(node.node_id)
    w.rec.run_once()
    assert [(e.node_id, e.billed_s) for e in state.ledger] == [(node.node_id, 600.0)]
    state.close()
