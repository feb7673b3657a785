"""A job whose launched nodes are fewer than it needs does not start on them.

Nodes launched for a job are that job's, and the pool starts it once they have all joined; a gang
(or a job needing several smaller nodes, ``CostModel.nodes_for``) left short, a node of its launch
ended while booting, must not run on the rest. The controller reaches that state: a hard budget
stops the burn node by node, most expensive first, until it fits, so it may stop one node of a
booting gang and not the other; a cloud may also take one node back alone, or someone terminate
it. The policy gives the rest back as soon as it sees the set short (``reclaim.give_back_short``),
not at the join timeout, and the job runs on a whole launch or on-prem.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering
from burster.reconciler import Reconciler
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel
from policies.guards import GuardParams
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from providers.sim.world import SimWorld
from tests.sim.harness import IDLE_SPOT_T0 as T0
from tests.sim.harness import run_recorded

X8 = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
X4 = Offering("aws", "us-west-2", "usw2-az1", "p3.8xlarge", "V100", 4, Market.ON_DEMAND, 12.24)
GANG = Demand("gang", 16, T0, 1800.0, nodes=2, gpu_model="V100")


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[str, ...], int]]:
    """Every start in the simulated pool: (job id, burst nodes, reserved slots)."""
    seen: list[tuple[str, tuple[str, ...], int]] = []
    start = SimPool._start

    def spy(self: SimPool, job: Demand, now: object, burst_ids: tuple[str, ...], slots: tuple) -> None:
        seen.append((job.job_id, burst_ids, len(slots)))
        start(self, job, now, burst_ids, slots)  # type: ignore[arg-type]

    monkeypatch.setattr(SimPool, "_start", spy)
    return seen


@pytest.mark.parametrize(("job", "offerings", "ok"), [
    (GANG, [X8], False),
    (GANG, [X8, X8], True),
    (GANG, [X4, X4, X4], False),  # each 8-GPU member needs two 4-GPU nodes
    (GANG, [X4, X4, X4, X4], True),
    (GANG, [X8, X4, X4], True),
    (Demand("one", 8, T0, 60.0), [X4], False),
    (Demand("one", 8, T0, 60.0), [X4, X4], True),
])
def test_nodes_are_enough_when_they_hold_every_member(job: Demand, offerings: list[Offering], ok: bool) -> None:
    assert job.held_by(offerings) is ok


def test_a_gang_left_short_waits_for_a_whole_set() -> None:
    """One of a gang's two nodes leaves while booting: the other joins and the gang does not start on
    it; given a second node, it starts on both."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    pool.submit(GANG, T0)
    pool.expect("n1", X8, "gang")
    pool.expect("n2", X8, "gang")
    pool.leave("n2", preempted=True)
    pool.join("n1")
    pool.schedule(T0)
    assert not pool.running() and [j.job_id for j in pool.pending()] == ["gang"]
    pool.expect("n3", X8, "gang")
    pool.join("n3")
    pool.schedule(T0)
    assert [p.node_ids for p in pool.running()] == [("n1", "n3")]


def test_a_gang_a_budget_stop_cuts_short_does_not_run_on_half_its_nodes(starts: list) -> None:
    """Two reserved nodes busy for 2 h; a 2-node gang (estimated at 30 s, it runs 30 min) bursts
    under a hard budget that just covers its launch. While it boots the burn passes the budget, and
    the budget stop terminates the most expensive node until it fits: one of the gang's two. The
    gang must not start on the other when it joins (it once ran there alone, at half the price);
    the policy gives that one back in the same pass (the budget stop took it 130 s later, billed
    220 s), and the gang runs on-prem once the reserved jobs end."""
    clock = FakeClock(T0)
    jobs = [Demand(f"r{i}", 8, T0, 7200.0, gpu_model="V100") for i in range(2)]
    jobs.append(Demand("gang", 16, T0 + timedelta(minutes=1), 30.0, nodes=2, gpu_model="V100"))
    world = SimWorld(clock=clock, jobs=jobs, offerings=[X8], providers=["aws"], pool_nodes=2, gpus_per_node=8,
                     gpu_model="V100", runtimes={"gang": 1800.0})
    budget = 2 * X8.price_per_hour_usd * 215.0 / 3600.0  # the launch's 30 s + 180 s of boot, and a little
    guards = GuardParams(total_budget_usd=budget, soft_fraction=1.0, stop_grace_s=60.0)  # 60 s writes, no margin
    policy = BursterPolicy(CostModel(), BursterParams(guards=guards))
    rec, decisions = run_recorded(world, policy, clock, T0 + timedelta(hours=4))
    assert [(job, nodes) for job, nodes, _ in starts if job == "gang"] == [("gang", ())]  # on-prem only
    launches = [d for d in decisions if " launch: job gang " in d]
    stops = [d for d in decisions if "terminate: hard budget" in d]
    assert len(launches) == 1 and [d[:8] for d in stops] == ["00:02:30"]  # one node
    short = "gang lost a node before the job started there: 1 of 2 left"
    assert [d[:8] for d in decisions if short in d] == ["00:02:30"]
    assert sorted(e.billed_s for e in rec.state.ledger) == [90.0, 90.0]  # the lone node billed 220 s before
    assert world.pool.metrics.finished_jobs == 3
    assert not rec.state.has_live()


def test_a_gang_with_a_node_gone_while_booting_is_launched_again_whole(starts: list) -> None:
    """One node of a booting 2-node gang is terminated outside the controller (a console, or its
    cloud taking back that one alone). Once the controller takes it for gone (its listing grace,
    300 s after the launch: a wake for the simulator's skip too) the other is given back, not at the
    join timeout (20 minutes after the launch, which also blocked the offering for 10 minutes as if
    the node had never joined), and the gang bursts again on two fresh nodes the next pass."""

    def run(skip: bool) -> tuple[Reconciler, list[str], SimWorld]:
        clock = FakeClock(T0)
        world = SimWorld(clock=clock, jobs=[GANG], offerings=[X8], providers=["aws"], pool_nodes=0,
                         gpus_per_node=8, gpu_model="V100")
        cloud = world.clouds["aws"]
        world.events.at(T0 + timedelta(seconds=60), lambda t: cloud.terminate(["aws-000002"], request_id="console"))
        rec, decisions = run_recorded(world, BursterPolicy(), clock, T0 + timedelta(hours=3), skip=skip)
        return rec, decisions, world

    rec, decisions, world = run(skip=True)
    assert [(job, nodes) for job, nodes, _ in starts] == [("gang", ("aws-000003", "aws-000004"))]
    assert not any("join timeout" in d for d in decisions)
    (give_back,) = [d for d in decisions if "gang lost a node before the job started there: 1 of 2 left" in d]
    (relaunch,) = [d for d in decisions if " launch: job gang " in d and d[:8] != "00:00:00"]
    lone = next(e for e in rec.state.ledger if e.node_id == "aws-000001")
    # before: billed 1200 s, relaunched at 00:30:00
    assert lone.billed_s == 300.0 and give_back[:8] == "00:05:00" and relaunch[:8] == "00:05:10"
    assert world.pool.metrics.finished_jobs == 1
    assert not rec.state.has_live()
    assert run(skip=False)[1] == decisions  # ticking through every 10 s decides the same, at the same times
