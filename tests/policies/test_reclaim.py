"""Move-back decisions on hand-built snapshots: free reserved GPUs, and who has first claim on them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, Market, Node, Offering, Placement, PoolNode, Snapshot
from burster.plan import Checkpoint
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
POLICY = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)),
                       BursterParams(burst=BurstParams(prewarm=False, cost_trigger=False)))


def snapshot(pending: tuple[Demand, ...]) -> Snapshot:
    """Two 8-GPU on-prem nodes with 1 GPU free, and one 1-GPU job with 5 h left on an on-demand node."""
    pool = (PoolNode("onprem-0", "V100", 8, 1), PoolNode("onprem-1", "V100", 8, 0))
    hog = Demand("hog", 15, NOW - timedelta(hours=1), 3600 + 1800, gpu_model="V100", nodes=2)
    cloud_job = Demand("cj", 1, NOW - timedelta(hours=1), 6 * 3600, gpu_model="V100")
    running = (
        Placement(hog, ("onprem-0", "onprem-1"), NOW - timedelta(hours=1), False, Market.RESERVED),
        Placement(cloud_job, ("n1",), NOW - timedelta(hours=1), True, Market.ON_DEMAND, OD.price_per_hour_usd),
    )
    node = Node("n1", OD, NodeState.READY, NOW - timedelta(hours=1), "rq", job_id="cj")
    return Snapshot(NOW, pending, running, pool, (node,), (OD,))


def moved(plan_actions: tuple[object, ...]) -> list[str]:
    return [a.job_id for a in plan_actions if isinstance(a, Checkpoint)]


def test_a_cloud_job_moves_back_onto_free_reserved_gpus_nobody_waits_for() -> None:
    plan = POLICY.decide(snapshot(()))
    assert moved(plan.actions) == ["cj"]
    assert "move job cj back on-prem" in plan.actions[0].reason  # type: ignore[attr-defined]


def test_free_gpus_owed_to_a_queued_job_are_not_spare() -> None:
    # an 8-GPU job waits 30 min for the hog to end: the free GPU is its, not the cloud job's
    head = Demand("head", 8, NOW - timedelta(minutes=1), 4 * 3600, gpu_model="V100")
    plan = POLICY.decide(snapshot((head,)))
    assert moved(plan.actions) == []


def test_a_job_is_not_moved_back_onto_gpus_scattered_over_nodes() -> None:
    # 2 GPUs free in all, one on each node: a 2-GPU single-node job cannot run there
    snap = snapshot(())
    pool = (PoolNode("onprem-0", "V100", 8, 1), PoolNode("onprem-1", "V100", 8, 1))
    two = Demand("cj", 2, NOW - timedelta(hours=1), 6 * 3600, gpu_model="V100")
    running = (snap.running[0], Placement(two, ("n1",), NOW - timedelta(hours=1), True, Market.ON_DEMAND, 6.12))
    scattered = Snapshot(NOW, (), running, pool, snap.cloud_nodes, snap.offerings)
    assert moved(POLICY.decide(scattered).actions) == []
