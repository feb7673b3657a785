"""A Uniform Progress switch end to end: a deadline job that lands on an idle spot node moves to
on-demand once, and is not handed from one idle spot node to the next.

Two short jobs burst onto spot and finish; their nodes sit idle. A strict deadline job (2 h of work,
1000 s of slack: under changeover + margin) arrives and the pool starts it on an idle spot node at
once. The switch launches an on-demand node for it while it runs, moves it there once it is up, and
the job meets its deadline after one stop. That is with nodes the pool gives to any queued job
(``exclusive_nodes`` off, the default); exclusive nodes wait for the policy, which sends the job
to on-demand at once.
"""

from __future__ import annotations

from datetime import timedelta

from burster.model import Market, Offering
from burster.reconciler import Reconciler
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from providers.sim.spot import SpotSeries
from providers.sim.world import SimWorld
from tests.sim.harness import strict_job_after_idle_spot

SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
UP = SpotSeries("azure-up", "azure", "V100", 600.0, (1,) * 300)


def simulate(params: BursterParams) -> tuple[SimWorld, Reconciler, list[str]]:
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)), params)
    return strict_job_after_idle_spot(policy, [SPOT, OD], [UP], runtime_s=7200.0, slack_s=1000.0)


def test_a_deadline_job_on_an_idle_spot_node_moves_to_on_demand_once_and_meets_its_deadline() -> None:
    world, rec, decisions = simulate(BursterParams(exclusive_nodes=False))
    m = world.pool.metrics
    assert m.finished_jobs == 3 and m.hard_deadline_misses == 0
    assert m.reclaims == 1  # one move, not a tour of the idle spot nodes
    assert any("launch 1 x aws/" in d and "job dl on spot" in d for d in decisions)
    assert any("its on-demand nodes are up" in d for d in decisions)
    on_demand = [e for e in rec.state.ledger if e.market == "on_demand"]
    assert len(on_demand) == 1 and on_demand[0].end - on_demand[0].start > timedelta(hours=1.9)


def test_with_exclusive_nodes_it_goes_to_on_demand_at_once() -> None:
    world, _, decisions = simulate(BursterParams(exclusive_nodes=True))
    m = world.pool.metrics
    assert m.finished_jobs == 3 and m.hard_deadline_misses == 0 and m.reclaims == 0
    assert not any("no boot" in d and "job dl " in d for d in decisions)  # the idle spot nodes are not its market
    (launch,) = [d for d in decisions if "job dl " in d]
    assert "on_demand" in launch
