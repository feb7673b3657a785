"""Spot offerings are ranked by rate (price x (1 + rework)), but a job's cost adds the boot's billing
and each cloud's rounding, so a pool ranked later can cost less in all. ``best_for_deadline`` used to
stop at the first spot pool dearer than on-demand; it now stops only where the rate itself (less the
most a bill rounds down) passes the best so far. Found by a mutation audit (helper-45)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from burster.model import Demand, JobClass, Market, Offering
from policies.burst import burst
from policies.cost import CostModel, CostParams
from policies.offers import ANY, OfferBook
from policies.slack import slack_s, spot_rework_limit
from tests.policies.test_burst_edges import COST, NOW, PARAMS, busy_pool

X = Offering("aws", "us-west-2", "usw2-az1", "x1", "V100", 1, Market.SPOT, 1.0)
Y = Offering("gcp", "us-central1", "us-central1-a", "y1", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "od1", "V100", 1, Market.ON_DEMAND, 0.995)
# Y: GCP's 30 s notice is shorter than the 60 s write, so an interruption loses half a 1,200 s interval
# and the 300 s restart: 0.8 interruptions/h give rework 0.2
FLAKY_Y = CostModel(replace(COST.p, interruption_rates={Y.key: 0.8}))


def test_a_spot_pool_ranked_after_one_dearer_than_on_demand_can_still_win() -> None:
    """A 180 s strict job, a day to its deadline. X ranks first (rate $1.00/h against Y's $1.08/h)
    but costs $0.1001 with its 180 s boot, above on-demand's $0.0996; Y costs $0.0991 and wins."""
    job = Demand("dl", 1, NOW, 180, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(days=1), checkpoint_interval_s=1200)
    book = OfferBook(busy_pool(offerings=(X, Y, OD)), FLAKY_Y)
    assert book.rate(job, X) < book.rate(job, Y)
    assert FLAKY_Y.job_cost_usd(job, OD) < FLAKY_Y.job_cost_usd(job, X)
    assert FLAKY_Y.job_cost_usd(job, Y) < FLAKY_Y.job_cost_usd(job, OD)
    limit = spot_rework_limit(job, NOW, FLAKY_Y, PARAMS)
    assert book.best_for_deadline(job, ANY, limit, slack_s(job, NOW, FLAKY_Y)) == Y
    (launch,) = burst(busy_pool(job, offerings=(X, Y, OD)), FLAKY_Y, PARAMS)
    assert launch.offering == Y


@settings(max_examples=300, deadline=None)
@given(provider=st.sampled_from(["aws", "gcp", "azure", "other"]), price=st.floats(0.01, 100.0),
       gpus_per_node=st.sampled_from([1, 4, 8]), gpus=st.integers(1, 16), work_s=st.floats(0.0, 200_000.0),
       rate=st.floats(0.0, 5.0), launch_s=st.floats(0.0, 900.0), interval_s=st.floats(0.0, 7200.0))
def test_the_floor_never_exceeds_the_job_cost(provider: str, price: float, gpus_per_node: int, gpus: int,
                                              work_s: float, rate: float, launch_s: float,
                                              interval_s: float) -> None:
    o = Offering(provider, "r", "z", "t", "V100", gpus_per_node, Market.SPOT, price)
    cost = CostModel(CostParams(spot_interruptions_per_hour=rate, launch_latency_s=launch_s))
    job = Demand("j", gpus, NOW, work_s, gpu_model="V100", checkpoint_interval_s=interval_s)
    assert cost.job_cost_floor_usd(job, o) <= cost.job_cost_usd(job, o) + 1e-9
