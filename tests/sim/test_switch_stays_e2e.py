"""A deadline job on spot whose slack is under a move's changeover stays there, end to end: the deadline
switch would make it late for certain, staying only if it is interrupted (policies/deadline.py).

Two short jobs leave idle Azure spot nodes; a strict 34-minute job with 100 s of slack arrives and takes
one (no boot). Its slack is under the 360 s changeover (checkpoint + restart) plus the margin, so the
switch used to launch on-demand for it at once and move it; now it runs on where it is and finishes in
time, and nothing is launched on on-demand.
"""

from __future__ import annotations

from burster.model import Market, Offering
from policies.burster import BursterPolicy
from policies.cost import CostModel, CostParams
from providers.sim.spot import SpotSeries
from tests.sim.harness import strict_job_after_idle_spot

SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
ALWAYS_UP = SpotSeries("azure-up", "azure", "V100", 600.0, (1,) * 40)


def test_a_job_with_less_slack_than_a_changeover_stays_on_its_spot_node() -> None:
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.05)))
    world, rec, decisions = strict_job_after_idle_spot(policy, [SPOT, OD], [ALWAYS_UP], runtime_s=2040.0,
                                                       slack_s=100.0)
    m = world.pool.metrics
    assert m.finished_jobs == 3 and m.hard_deadline_misses == 0
    assert any("taken, no boot, by job dl" in d for d in decisions)
    assert not any("job dl on spot has" in d for d in decisions)  # no switch
    assert {e.market for e in rec.state.ledger} == {"spot"}
