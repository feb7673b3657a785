"""The standby stock through the reconcile pass: a stock launch whose answer was lost (a timeout,
or a crash after the call) and whose node the cloud lists late is not launched again."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from burster.clock import FakeClock
from burster.model import CheckpointTicket, Demand, Market, Offering, Placement, PoolNode, RuntimeHistory
from burster.reconciler import Reconciler
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.standby import StandbyParams
from providers.fake import FakeCloudProvider

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
V100 = Offering("fake", "r1", "r1a", "gpu.1x", "V100", 1, Market.ON_DEMAND, 0.9)
# three starts within a boot: a stock of one pays for itself (300 s idle at $0.9/h < a 180 s wait at $2.5/GPU-h)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0, launch_latency_s=180, wait_value_usd_per_gpu_hour=2.5))


class BusyPool:
    """A pool whose only jobs run on the given cloud nodes; no on-prem GPUs, nothing pending."""

    def __init__(self, placements: Sequence[Placement]) -> None:
        self.placements = tuple(placements)

    def pending(self) -> Sequence[Demand]:
        return ()

    def running(self) -> Sequence[Placement]:
        return self.placements

    def nodes(self) -> Sequence[PoolNode]:
        return ()

    def runtime_history(self) -> RuntimeHistory:
        return RuntimeHistory()

    def bootstrap(self, offering: Offering) -> str:
        return ""

    def checkpoint(self, node_id: str, deadline: datetime, *, cordon: bool = False) -> CheckpointTicket:
        raise AssertionError("no checkpoint expected")

    def drain(self, node_id: str) -> None:
        pass

    def hold(self, node_id: str, job_id: str, start_at: datetime, until: datetime) -> None:
        raise AssertionError("no hold expected")

    def preempt(self, job_id: str, deadline: datetime) -> None:
        raise AssertionError("no preempt expected")


def world() -> tuple[FakeClock, FakeCloudProvider, Reconciler]:
    """Three single-node jobs started on exclusive cloud nodes within the last two minutes."""
    clock = FakeClock(T0)
    cloud = FakeCloudProvider("fake", [V100], now=clock.now)
    placements = []
    for i in range(3):
        job = Demand(f"j{i}", 1, T0 - timedelta(minutes=5), 3_600.0, gpu_model="V100")
        (node,) = cloud.launch(V100, 1, request_id=f"job-{i}", labels={"job": job.job_id, "exclusive": "true"})
        placements.append(Placement(job, (node.node_id,), T0 - timedelta(seconds=30 * i), True, Market.ON_DEMAND,
                                    V100.price_per_hour_usd))
    policy = BursterPolicy(COST, BursterParams(burst=BurstParams(prewarm=False, cost_trigger=False),
                                               standby=StandbyParams()))
    return clock, cloud, Reconciler(providers={"fake": cloud}, pool=BusyPool(placements), policy=policy,
                                    clock=clock)


def test_a_stock_launch_whose_reply_was_lost_is_not_launched_again_while_its_node_is_listed_late() -> None:
    clock, cloud, rec = world()
    cloud.lose_next_replies(5)  # the call launches, the controller sees a timeout (after its retries)
    cloud.list_late(["fake-000004"])  # and the next listings leave the new node out (EC2 lists late)
    report = rec.run_once()
    (launch,) = report.plan.launches
    assert launch.count == 1 and launch.exclusive and launch.job_id is None
    assert any("timed out waiting for the reply" in e for e in report.errors)
    clock.advance(10)
    report = rec.run_once()  # the stock still looks empty: the launch is sent again, under its id
    assert [a.request_id for a in report.plan.launches] == [launch.request_id] and not report.errors
    cloud.list_again()
    clock.advance(10)
    assert rec.run_once().plan.launches == ()
    standby = [r for r in rec.state.live() if r.request_id == launch.request_id]
    assert [r.node_id for r in rec.state.live()] == ["fake-000001", "fake-000002", "fake-000003", "fake-000004"]
    assert len(standby) == 1 and standby[0].exclusive  # one node for a stock of one, not two


def test_a_stock_that_grows_while_its_launch_is_in_flight_is_not_launched_whole_again() -> None:
    """A fourth start grows the stock to two while the stock launch's reply is lost: that launch is
    asked again under its id (the intent keeps ``Launch.exclusive``, so it is stock on the way) and one
    node is added. Before, the stock launched two under a new id, and the lost one's node idled too."""
    clock, cloud, rec = world()
    cloud.lose_next_replies(5)
    cloud.list_late(["fake-000004"])
    (launch,) = rec.run_once().plan.launches
    assert rec.nodes.in_flight(clock.now())[0].exclusive
    clock.advance(10)
    job = Demand("j3", 1, T0 - timedelta(minutes=5), 3_600.0, gpu_model="V100")
    (node,) = cloud.launch(V100, 1, request_id="job-3", labels={"job": "j3", "exclusive": "true"})
    pool = rec.pool
    assert isinstance(pool, BusyPool)
    pool.placements += (Placement(job, (node.node_id,), clock.now(), True, Market.ON_DEMAND, 0.9),)
    report = rec.run_once()
    again, added = report.plan.launches
    assert (again.request_id, again.count, added.count) == (launch.request_id, 1, 1)
    cloud.list_again()
    clock.advance(10)
    assert rec.run_once().plan.launches == ()
    jobs = {node_id for p in pool.placements for node_id in p.node_ids}
    stock = sorted(r.node_id for r in rec.state.live() if r.node_id not in jobs)
    assert stock == ["fake-000004", "fake-000006"]  # two nodes for a stock of two, not three
