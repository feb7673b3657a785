"""A strict job's market when its slack absorbs one interruption but not the several its run may
meet (``CostModel.deadline_risk_usd``'s Poisson term): on-demand on a volatile spot pool, spot on a
calm one."""

from __future__ import annotations

from dataclasses import replace

from burster.model import Market, Offering
from policies.burst import burst
from policies.cost import CostModel
from tests.policies.test_burst_edges import COST, OD, PARAMS, busy_pool, dl

# Azure: a 30 s notice, too short to write a checkpoint, so an interruption loses half an interval
AZURE_SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.40)


def test_a_strict_four_hour_run_with_slack_for_two_interruptions_leaves_a_volatile_spot_pool() -> None:
    """4 h of work, 4140 s of slack: the rework limit admits spot at 0.5/h ((4140 - 480 - 900) s of
    slack over 2400 s of expected rework), no single interruption exposes it (room 3660 s > the
    1800 s interval), but four (an average 1380 s each) outlast it: P(N >= 4), N ~ Poisson(2), is
    14 %, $71 of a $500 miss against $10 more on on-demand. At 0.05/h P(N >= 4) is 6e-5: spot."""
    job = dl(4_140, runtime_s=14_400)
    volatile = CostModel(replace(COST.p, interruption_rates={AZURE_SPOT.key: 0.5}, deadline_miss_usd=500.0))
    (launch,) = burst(busy_pool(job, offerings=(AZURE_SPOT, OD)), volatile, PARAMS)
    assert launch.offering == OD
    calm = CostModel(replace(COST.p, interruption_rates={AZURE_SPOT.key: 0.05}, deadline_miss_usd=500.0))
    (launch,) = burst(busy_pool(job, offerings=(AZURE_SPOT, OD)), calm, PARAMS)
    assert launch.offering == AZURE_SPOT
