"""A deadline job the pool starts on a risky idle spot node moves to on-demand before an interruption
would cost it its deadline (``BursterParams.risk_switch``, policies/deadline.py).

Two short jobs burst onto Azure spot (30 s notice: too short for a checkpoint) and finish; their nodes
sit idle. A strict job (34 min of work, 25 min of slack: above changeover + margin, so not behind)
arrives and the pool starts it on an idle spot node at once. An interruption before its first
periodic checkpoint would lose more work than its slack, and the pool is interrupted at 0.5 per hour:
the expected miss costs more than on-demand, so it moves there, and the spot pool's drop at 40 min
finds it gone. Without the rule it is on spot when the drop comes, loses 26 minutes and misses.
The nodes are shared (``exclusive_nodes`` off): an exclusive idle node waits for the policy, which
hands a deadline job only a spot pool its rework limit allows (tests/sim/test_deadline_switch_e2e.py).
"""

from __future__ import annotations

from burster.model import Market, Offering
from burster.reconciler import Reconciler
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from providers.sim.spot import SpotSeries
from providers.sim.world import SimWorld
from tests.sim.harness import strict_job_after_idle_spot

SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
DROPS_AT_40_MIN = SpotSeries("azure-drop-40", "azure", "V100", 600.0, (1,) * 4 + (0,) * 2 + (1,) * 30)


def simulate(params: BursterParams) -> tuple[SimWorld, Reconciler, list[str]]:
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.5)), params)
    return strict_job_after_idle_spot(policy, [SPOT, OD], [DROPS_AT_40_MIN], runtime_s=2040.0, slack_s=1500.0)


def test_a_strict_job_on_a_risky_idle_spot_node_moves_to_on_demand_and_meets_its_deadline() -> None:
    world, rec, decisions = simulate(BursterParams(exclusive_nodes=False))
    m = world.pool.metrics
    assert m.finished_jobs == 3 and m.hard_deadline_misses == 0 and m.preemptions == 0
    risky = [d for d in decisions if "job dl on spot azure/eastus/Standard_NC6s_v3/spot risks its deadline" in d]
    assert any("launch 1 x aws/" in d for d in risky)
    assert any("its on-demand nodes are up" in d for d in risky)
    on_demand = [e for e in rec.state.ledger if e.market == "on_demand"]
    assert len(on_demand) == 1


def test_without_the_rule_the_interruption_costs_it_its_deadline() -> None:
    world, _, decisions = simulate(BursterParams(risk_switch=False, exclusive_nodes=False))
    m = world.pool.metrics
    assert m.finished_jobs == 3 and m.preemptions == 1 and m.hard_deadline_misses == 1
    assert not any("risks its deadline" in d for d in decisions)
