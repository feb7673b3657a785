"""A spot node with a definite interruption notice whose cloud takes it back free (AWS, in the
node's first hour) is drained and left to the cloud rather than terminated, which would be
billed; terminated after all when the cloud does not act, and terminated at once elsewhere."""

from __future__ import annotations

from datetime import timedelta

import pytest

from burster.clock import FakeClock
from burster.errors import TransientError
from burster.lifecycle import NodeState
from burster.model import Demand, Market, Offering
from burster.reconcile_nodes import TAKE_BACK_GRACE_S
from burster.reconciler import Reconciler
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.reclaim import ReclaimParams
from providers.fake import FakeCloudProvider
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from tests.test_reconciler import T0, join_and_start


class Cloud:
    """One spot offering on a fake cloud named as ``provider`` (billing rules go by that name)."""

    def __init__(self, provider: str) -> None:
        self.clock = FakeClock(T0)
        spot = Offering(provider, "r1", "r1a", "gpu.8x", "V100", 8, Market.SPOT, 4.0)
        self.pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
        self.cloud = FakeCloudProvider(provider, [spot], now=self.clock.now)
        self.cloud.list_ended(True)  # as EC2 lists terminated instances
        policy = BursterPolicy(CostModel(CostParams(launch_latency_s=60)),
                               BursterParams(reclaim=ReclaimParams(idle_ttl_s=3600, move_back=False)))
        self.rec = Reconciler(providers={provider: self.cloud}, pool=self.pool, policy=policy, clock=self.clock)
        self.pool.submit(Demand("a", 8, T0 - timedelta(hours=1), 5 * 3600, gpu_model="V100"), T0)
        self.pool.submit(Demand("b", 8, T0 - timedelta(hours=1), 1800, gpu_model="V100"), T0)
        self.pool.schedule(T0)
        self.rec.run_once()  # b bursts
        (node,) = self.cloud.list_nodes()
        self.node_id = node.node_id
        self.terminates = 0
        real = self.cloud.terminate

        def counted(node_ids, *, request_id):  # type: ignore[no-untyped-def]
            self.terminates += 1
            real(node_ids, request_id=request_id)
        self.cloud.terminate = counted  # type: ignore[method-assign]

    def noticed_idle(self) -> None:
        """The node is up and idle (b never came), and its cloud gives a 120 s notice."""
        self.clock.advance(600)
        self.cloud.interrupt(self.node_id, notice_s=120)
        self.report = self.rec.run_once()

    def entry(self) -> tuple[float, str]:
        (e,) = [e for e in self.rec.state.ledger if e.node_id == self.node_id]
        return e.billed_s, e.reason


def test_an_aws_spot_node_in_its_first_hour_is_left_for_ec2_to_take_back_unbilled() -> None:
    c = Cloud("aws")
    c.noticed_idle()
    assert c.terminates == 0 and c.rec.state.nodes[c.node_id].state is NodeState.DRAINING
    assert c.report.notes == [f"{c.node_id} drained, not terminated: its cloud takes it back unbilled at its "
                              "notice's time"]
    c.clock.advance(120)
    c.cloud.end(c.node_id)  # EC2 takes it back at the notice's time
    c.clock.advance(10)
    c.rec.run_once()
    assert c.terminates == 0 and c.rec.state.nodes[c.node_id].state is NodeState.TERMINATED
    billed_s, reason = c.entry()
    assert billed_s == 0.0 and reason.endswith("taken back by its cloud in its first hour: not billed")


def test_one_its_cloud_does_not_take_back_is_terminated_after_the_grace() -> None:
    c = Cloud("aws")
    c.noticed_idle()
    c.clock.advance(120 + TAKE_BACK_GRACE_S - 10)
    c.rec.run_once()
    assert c.terminates == 0
    c.clock.advance(10)
    c.rec.run_once()
    assert c.terminates == 1 and c.rec.state.nodes[c.node_id].state is NodeState.TERMINATED
    assert c.entry()[0] > 0  # terminated by us: billed


@pytest.mark.parametrize("provider", ["gcp", "azure"])
def test_where_a_take_back_is_billed_the_node_is_terminated_at_once(provider: str) -> None:
    c = Cloud(provider)
    c.noticed_idle()
    assert c.terminates == 1 and c.rec.state.nodes[c.node_id].state is NodeState.TERMINATED


def test_a_rebalance_recommendation_is_no_take_back() -> None:
    """EC2 may never act on a rebalance recommendation: the node is terminated as before."""
    c = Cloud("aws")
    c.clock.advance(600)
    c.cloud.interrupt(c.node_id, kind="rebalance", notice_s=120)
    c.rec.run_once()
    assert c.terminates == 1


def test_a_busy_node_is_checkpointed_drained_and_left_to_its_cloud() -> None:
    c = Cloud("aws")
    (node,) = c.cloud.list_nodes()
    assert join_and_start(c.pool, node, "b", c.clock.now()) == ["b"]
    c.clock.advance(600)
    c.cloud.interrupt(c.node_id, notice_s=120)
    c.rec.run_once()
    assert c.rec.state.nodes[c.node_id].state is NodeState.CHECKPOINTING
    c.clock.advance(90)  # the checkpoint is done before the notice's time
    c.pool.events.run_until(c.clock.now())
    c.rec.run_once()
    assert c.terminates == 0 and c.rec.state.nodes[c.node_id].state is NodeState.DRAINING
    assert "b" in {d.job_id for d in c.pool.pending()}  # requeued, to run elsewhere
    c.clock.advance(30)
    c.cloud.end(c.node_id)
    c.rec.run_once()
    assert c.terminates == 0 and c.entry()[0] == 0.0


def test_a_node_whose_take_back_comes_after_its_first_hour_is_terminated_at_once() -> None:
    """A notice 10 s before the hour, taken back 110 s after it: billed either way, so not waited on."""
    c = Cloud("aws")
    c.clock.advance(3590)
    c.cloud.interrupt(c.node_id, notice_s=120)
    c.rec.run_once()
    assert c.terminates == 1


@pytest.mark.parametrize(("provider", "taken_back", "billed_s"), [("aws", True, 0.0), ("aws", False, 600.0),
                                                                ("gcp", True, 600.0)])
def test_an_end_its_listing_reports_is_billed_by_who_ended_it(provider: str, taken_back: bool,
                                                              billed_s: float) -> None:
    """No notice was read (no interruption queue, or it lagged), but the listing says EC2 took the node
    back (StateReason ``Server.SpotInstanceTermination``): not billed in its first hour. Ended for
    another reason (someone terminated it), it is billed; GCP waives nothing for a spot VM it preempts."""
    c = Cloud(provider)
    c.clock.advance(600)
    c.cloud.end(c.node_id, taken_back=taken_back)
    c.clock.advance(10)
    c.rec.run_once()
    got_s, reason = c.entry()
    assert got_s == billed_s
    assert reason.endswith("taken back by its cloud in its first hour: not billed") is (billed_s == 0.0)


def test_a_take_back_that_beat_our_refused_terminate_is_not_billed() -> None:
    """Our terminate was refused (the node stays terminating), then EC2 took the node back: the listing
    says so, and the terminate that never happened does not make it billed."""
    c = Cloud("aws")
    c.clock.advance(3400)  # idle past its TTL at the next pass (idle since its boot)
    c.cloud.fail_next_terminate(TransientError("aws: throttled", provider="aws"))
    c.rec.run_once()
    assert c.terminates == 1 and c.rec.state.nodes[c.node_id].state is NodeState.TERMINATING
    c.clock.advance(5)
    c.cloud.end(c.node_id, taken_back=True)
    c.clock.advance(5)
    c.rec.run_once()
    billed_s, reason = c.entry()
    assert billed_s == 0.0 and reason.endswith("taken back by its cloud in its first hour: not billed")
