"""The reconcile pass over a fake cloud and the simulated pool: intents, errors, blocking, ledger."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from burster.clock import FakeClock
from burster.errors import CapacityError, ProviderError, TransientError
from burster.lifecycle import NodeState
from burster.model import CheckpointTicket, Demand, Market, Node, Offering, Placement
from burster.plan import Launch, request_id
from burster.reconcile_nodes import LISTING_GRACE_S
from burster.reconciler import Reconciler
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import GuardParams
from policies.reclaim import ReclaimParams
from providers.fake import FakeCloudProvider
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
CHEAP = Offering("fake", "r1", "r1a", "gpu.8x", "V100", 8, Market.ON_DEMAND, 10.0)
DEAR = Offering("fake", "r1", "r1b", "gpu.8x", "V100", 8, Market.ON_DEMAND, 12.0)


class FlakyPool(SimPool):
    """The simulated pool, whose next checkpoint, drain, pending or running call fails when told to."""

    fail_checkpoint: ProviderError | None = None
    fail_drain: ProviderError | None = None
    fail_pending: ProviderError | None = None
    fail_running: ProviderError | None = None

    def _fail_if_told(self, knob: str) -> None:
        err = getattr(self, knob)
        if err is not None:
            setattr(self, knob, None)
            raise err

    def pending(self) -> Sequence[Demand]:
        self._fail_if_told("fail_pending")
        return super().pending()

    def running(self) -> Sequence[Placement]:
        self._fail_if_told("fail_running")
        return super().running()

    def checkpoint(self, node_id: str, deadline: datetime, *, cordon: bool = False) -> CheckpointTicket:
        self._fail_if_told("fail_checkpoint")
        return super().checkpoint(node_id, deadline, cordon=cordon)

    def drain(self, node_id: str) -> None:
        self._fail_if_told("fail_drain")
        super().drain(node_id)


def join_and_start(pool: SimPool, node: Node, job_id: str, now: datetime) -> list[str]:
    """The burst node launched for ``job_id`` joins the pool, which starts the job there; the jobs
    it then runs."""
    pool.expect(node.node_id, node.offering, job_id)
    pool.join(node.node_id)
    pool.schedule(now)
    return [p.job.job_id for p in pool.running() if node.node_id in p.node_ids]


class World:
    def __init__(self, offerings: list[Offering] = [CHEAP, DEAR]) -> None:  # noqa: B006
        self.clock = FakeClock(T0)
        self.pool = FlakyPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
        self.cloud = FakeCloudProvider("fake", offerings, now=self.clock.now)
        policy = BursterPolicy(CostModel(CostParams(launch_latency_s=60)),
                               BursterParams(reclaim=ReclaimParams(idle_ttl_s=120, move_back=False)))
        self.rec = Reconciler(providers={"fake": self.cloud}, pool=self.pool, policy=policy, clock=self.clock)

    def job(self, job_id: str, gpus: int = 8, nodes: int = 1, hours: float = 2.0) -> Demand:
        job = Demand(job_id, gpus, T0 - timedelta(hours=1), hours * 3600, nodes=nodes, gpu_model="V100")
        self.pool.submit(job, self.clock.now())
        self.pool.schedule(self.clock.now())
        return job


def test_burst_launches_cheapest_and_blocks_it_after_a_capacity_error() -> None:
    w = World()
    w.job("a")  # takes the only reserved node
    w.job("b")  # must burst
    w.cloud.fail_next_launch(CapacityError("fake: InsufficientInstanceCapacity"))
    report = w.rec.run_once()
    assert report.errors and "capacity" in report.errors[0].lower()
    assert CHEAP.key in w.rec.state.blocked
    w.clock.advance(10)
    report = w.rec.run_once()
    (launch,) = report.plan.launches
    assert launch.offering == DEAR and launch.job_id == "b"
    assert [n.offering.key for n in w.cloud.list_nodes()] == [DEAR.key]


def test_partial_gang_is_given_back_whole() -> None:
    w = World()
    w.job("a")
    w.job("gang", gpus=16, nodes=2)
    w.cloud.partial_next(1)
    report = w.rec.run_once()
    assert "launched 1 of 2" in report.errors[0]
    assert w.cloud.list_nodes() == []  # the one node that came up was terminated
    assert len(w.rec.state.ledger) == 1  # and charged for its run: 0 s here (a VM given back before it runs
    # is not billed: AWS and GCE bill from running, the 60 s minimum once it has run)
    assert CHEAP.key in w.rec.state.blocked


def test_intent_survives_a_crash_between_call_and_record() -> None:
    w = World()
    w.job("a")
    job = w.job("b")
    # the controller wrote its intent and called the cloud, then died before recording the result
    rid = request_id(job.job_id, job.attempt, CHEAP.key, 1)
    w.rec.state.put_intent(Launch(CHEAP, 1, "burst b", rid, job_id="b"))
    w.cloud.launch(CHEAP, 1, request_id=rid, labels={"job": "b"})
    report = w.rec.run_once()  # a new pass adopts the node instead of launching again
    assert report.plan.launches == ()
    (rec,) = w.rec.state.live()
    assert rec.for_job == "b" and rec.request_id == rid
    assert len(w.cloud.list_nodes()) == 1


def test_a_restarted_controller_adopts_an_exclusive_node_as_exclusive() -> None:
    """No intent survived: the node's tag says the pool gives it no job on its own."""
    w = World()
    w.cloud.launch(CHEAP, 1, request_id="earlier-run", labels={"exclusive": "true"})
    w.cloud.launch(DEAR, 1, request_id="earlier-run-2")
    w.rec.run_once()
    assert {r.offering.key: r.exclusive for r in w.rec.state.live()} == {CHEAP.key: True, DEAR.key: False}


def test_degraded_provider_is_not_reclaimed() -> None:
    w = World()
    w.cloud.launch(CHEAP, 1, request_id="prewarm-1")
    w.rec.run_once()  # adopts the node; idle from now
    w.clock.advance(3600)
    w.cloud.fail_next_list(TransientError("fake: 503"))
    report = w.rec.run_once()
    assert report.plan.terminates == ()
    assert len(w.cloud.list_nodes()) == 1
    w.clock.advance(10)
    report = w.rec.run_once()  # healthy again: the idle node goes, and is billed
    assert len(report.plan.terminates) == 1
    assert w.cloud.list_nodes() == []
    (entry,) = w.rec.state.ledger
    assert float(entry.usd) == pytest.approx(10.0 * 3610 / 3600)
    assert w.rec.state.nodes[entry.node_id].state is NodeState.TERMINATED


def test_a_failing_action_does_not_stop_the_pass() -> None:
    w = World([CHEAP])
    w.cloud.launch(CHEAP, 1, request_id="idle-1")
    w.rec.run_once()  # adopt the idle node
    w.clock.advance(600)
    w.job("a")
    w.job("gang", gpus=16, nodes=2)  # cannot use the idle node: a gang gets its own launch
    w.cloud.fail_next_launch(CapacityError("fake: no capacity"))
    report = w.rec.run_once()  # the failed launch is reported; the idle node is still reclaimed
    assert report.errors and report.plan.terminates
    assert w.cloud.list_nodes() == []


def test_a_retry_after_a_capacity_error_uses_a_new_request_id() -> None:
    w = World([CHEAP])  # one offering: after the block expires the same launch is planned again
    w.job("a")
    w.job("b")
    w.cloud.fail_next_launch(CapacityError("fake: no capacity"))
    first = w.rec.run_once().plan.launches[0].request_id
    w.clock.advance(w.rec.block_s + 10)
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    assert node.request_id == f"{first}-r1"


def test_a_job_whose_burst_node_ended_before_it_started_gets_a_new_launch() -> None:
    """The cloud answers a reused request id with the ended node (EC2 ClientToken): the relaunch of
    the same job on the same offering must use a fresh id, or the job never gets a node."""
    w = World()
    w.job("a")
    w.job("b")
    (first,) = w.rec.run_once().plan.launches
    (node,) = w.cloud.list_nodes()
    w.cloud.terminate([node.node_id], request_id="gone")  # taken away before b started on it
    w.clock.advance(LISTING_GRACE_S)  # a node listed late is not taken for gone before this
    report = w.rec.run_once()  # sees the node gone, and b still waiting
    (again,) = report.plan.launches
    assert again.request_id == first.request_id  # the plan is the same ...
    (new,) = w.cloud.list_nodes()  # ... but a new node came up under a fresh id
    assert new.node_id != node.node_id and new.request_id == f"{first.request_id}-r1"
    assert not report.errors


def test_an_offering_that_stays_dry_is_blocked_longer_each_time_until_a_launch_succeeds() -> None:
    w = World([CHEAP])
    w.job("a")
    w.job("b")
    blocks = []
    for _ in range(2):
        w.cloud.fail_next_launch(CapacityError("fake: InsufficientInstanceCapacity"))
        now = w.clock.now()
        assert w.rec.run_once().errors
        blocks.append((w.rec.state.blocked[CHEAP.key] - now).total_seconds())
        w.clock.set(w.rec.state.blocked[CHEAP.key] + timedelta(seconds=1))
    assert blocks == [600.0, 1200.0]  # doubled for the second error in a row
    (launch,) = w.rec.run_once().plan.launches  # the pool has capacity again
    assert launch.job_id == "b" and len(w.cloud.list_nodes()) == 1
    w.job("c")
    w.cloud.fail_next_launch(CapacityError("fake: InsufficientInstanceCapacity"))
    now = w.clock.now()
    assert w.rec.run_once().errors
    assert (w.rec.state.blocked[CHEAP.key] - now).total_seconds() == 600.0  # the success reset the count


def test_decision_events_name_a_held_back_launch_once_while_it_waits() -> None:
    """At the node cap the plan holds a burst back at every pass until a node ends; the decision
    events say so once (``burster.plan.DecisionLog``), not at every pass."""
    events: list[str] = []
    w = World()
    policy = BursterPolicy(CostModel(CostParams(launch_latency_s=60)),
                           BursterParams(reclaim=ReclaimParams(move_back=False), guards=GuardParams(max_nodes=1)))
    w.rec = Reconciler(providers={"fake": w.cloud}, pool=w.pool, policy=policy, clock=w.clock, on_event=events.append)
    for job_id in ("a", "b", "c"):  # a takes the reserved node; b and c must burst, one node's room
        w.job(job_id)
    for _ in range(3):
        report = w.rec.run_once()
        assert [a.job_id for a, _ in report.plan.held_back] == ["c"]
        w.clock.advance(10)
    held = [e for e in events if " held back launch: " in e]
    assert len(held) == 1 and "job c" in held[0] and "max nodes 1 reached" in held[0]
    assert sum(" launch: " in e and "job b" in e for e in events) == 1


def test_the_launch_rate_counts_nodes_in_a_one_minute_window() -> None:
    w = World()
    w.job("a")
    w.job("g", gpus=16, nodes=2)  # a gang of two 8-GPU nodes bursts
    assert w.rec.run_once().launched_nodes == 2
    w.clock.advance(30)
    assert w.rec.observe().spend.launches_last_minute == 2
    w.clock.advance(31)
    assert w.rec.observe().spend.launches_last_minute == 0


def test_live_spend_counts_the_billing_minimum() -> None:
    """What the budget guards see: a node up 20 s is already 60 s of money."""
    w = World()
    w.job("a")
    w.job("b")
    w.rec.run_once()
    w.clock.advance(20)
    snap = w.rec.observe()
    (node,) = snap.cloud_nodes
    assert snap.spend.total_usd == pytest.approx(node.offering.price_per_hour_usd * 60 / 3600)
