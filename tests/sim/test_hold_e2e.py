"""Holding a reserved node for a cloud job, end to end: simulated cloud, pool and reconciler.

The pool's free GPUs are split 4 + 4 over two nodes when an 8-GPU job arrives, so it bursts. One
node empties in under an hour; long 1-GPU jobs arriving meanwhile would fill it (best fit), so
without a hold the 8-GPU job stays on the cloud until they end, five hours later. With the hold they go to the
other node, and the 8-GPU job moves back as soon as the held node is empty.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering
from burster.reconciler import Reconciler
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.reclaim import ReclaimParams
from providers.sim.world import SimWorld
from tests.sim.harness import run_recorded

T0 = datetime(2026, 1, 5, tzinfo=UTC)
OD8 = Offering("aws", "us-east-1", "use1-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)


def jobs(a_min: float = 60, big_min: float = 360, arrivals: int = 4) -> list[Demand]:
    def job(name: str, gpus: int, at_min: float, run_min: float) -> Demand:
        return Demand(name, gpus, T0 + timedelta(minutes=at_min), run_min * 60.0, gpu_model="V100")

    # best fit: a and f0 share onprem-0000, c and d onprem-0001; f0 and d end at 5 min
    return [job("a", 4, 0, a_min), job("f0", 4, 0, 5), job("c", 4, 0, 600), job("d", 4, 0, 5),
            job("big", 8, 6, big_min), *(job(f"x{i}", 1, 20 + 5 * i, 300) for i in range(arrivals))]


def simulate(*, hold: bool, work: list[Demand] | None = None,
             skip: bool = True) -> tuple[Reconciler, list[str], SimWorld]:
    work = jobs() if work is None else work
    clock = FakeClock(T0)
    world = SimWorld(clock=clock, jobs=work, offerings=[OD8], providers=["aws"], pool_nodes=2,
                     gpus_per_node=8, gpu_model="V100")
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)),
                           BursterParams(burst=BurstParams(max_wait_s=0.0, wait_fraction=0.0, prewarm=False),
                                         reclaim=ReclaimParams(hold_nodes=hold)))
    rec, decisions = run_recorded(world, policy, clock, T0 + timedelta(days=1), skip=skip)
    assert world.pool.metrics.finished_jobs == len(work)
    return rec, decisions, world


def test_a_held_node_brings_the_cloud_job_back_when_it_empties() -> None:
    rec, decisions, world = simulate(hold=True)
    (node,) = rec.state.ledger  # the 8-GPU job's one cloud node
    assert node.start <= T0 + timedelta(minutes=7)
    assert node.end <= T0 + timedelta(minutes=65)  # a ends at 60 min: the job moved back then
    assert any("hold: hold onprem-0000 for cloud job big" in d for d in decisions)
    assert any("held for job big have room" in d for d in decisions)
    m = world.pool.metrics
    assert (m.node_holds, m.node_holds_landed, m.node_holds_expired) == (1, 1, 0)


def test_without_the_hold_the_arrivals_fill_the_emptying_node_and_the_job_stays_on_the_cloud() -> None:
    held, _, _ = simulate(hold=True)
    rec, decisions, _ = simulate(hold=False)
    (node,) = rec.state.ledger
    assert node.end - node.start >= timedelta(hours=5)  # until the arrivals on its node end
    # no node held ahead for it; only, once it can move, the node it moves to, while it checkpoints
    assert not any("for cloud job" in d for d in decisions)
    assert all("while it checkpoints to move back" in d for d in decisions if "hold:" in d)
    assert held.state.spent_usd < 0.25 * rec.state.spent_usd


def test_a_hold_that_pays_only_later_is_made_at_the_same_tick_whether_passes_are_skipped_or_not() -> None:
    # a runs 220 min: holding its node for big costs more than it saves until about 00:19, when
    # no event happens (big's node is up at about 00:10, the first arrival comes at 00:20): the
    # declined hold's reported instant must wake the skipping loop at the tick a ticking one holds
    work = jobs(a_min=220, big_min=320, arrivals=2)
    skipped, ticked = simulate(hold=True, work=work), simulate(hold=True, work=work, skip=False)
    assert skipped[1] == ticked[1]
    assert skipped[0].state.spent_usd == ticked[0].state.spent_usd
    (when,) = [d[:8] for d in skipped[1] if "hold: hold onprem-0000 for cloud job big" in d]
    assert "00:12:00" < when < "00:20:00"
