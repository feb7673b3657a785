"""The clairvoyant's per-shape cloud timeline: its scalar cost agrees with the vectorized one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burster.eval.timeline import build_timeline
from burster.model import Market, Offering
from tests.eval.helpers import instance, job, offering, series

AZURE_SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)
SPOT = [series([1, 1, 0, 0, 1, 1, 1, 0] * 4), series([0, 1, 1, 1, 0, 0, 1, 1] * 4)]
OFFERS = [offering(Market.ON_DEMAND, 3.0), offering(Market.SPOT, 1.0), AZURE_SPOT]


def test_the_timeline_moves_between_clouds_as_spot_flips() -> None:
    inst = instance([job("a", 0, 1, 3600)], OFFERS, spot=SPOT)
    tl = build_timeline(inst, inst.jobs[0], 9600.0, 0.0)
    assert tl is not None and len(set(tl.which.tolist())) >= 2


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 9000), st.floats(0, 3000), st.sampled_from([0.0, 90.0]))
def test_cost_one_matches_cost(s: float, length: float, boot_s: float) -> None:
    inst = instance([job("a", 0, 1, 3600)], OFFERS, spot=SPOT)
    tl = build_timeline(inst, inst.jobs[0], 9600.0, boot_s)
    assert tl is not None
    vector = float(tl.cost(np.array([s]), np.array([s + length]))[0])
    assert tl.cost_one(s, s + length) == pytest.approx(vector, rel=1e-12, abs=1e-12)


def test_with_spot_only_offerings_no_run_is_priced_where_none_is_up() -> None:
    """A spot-only catalog (rows with SpotPrice and no Price): while every offering of the shape is
    down, a run costs inf, so the clairvoyant upper bound is a schedule the feasibility check
    accepts, never below the lower bound (it ran the job on a down offering at its price)."""
    from burster.eval.bound import bracket
    from burster.eval.clairvoyant import schedule
    from burster.eval.instance import Instance
    from burster.eval.verify import problems
    from providers.sim.spot import SpotSeries

    cheap, dear = offering(Market.SPOT, 1.0, zone="use1-az1"), offering(Market.SPOT, 3.0, zone="use1-az2")
    never = SpotSeries("t/cheap", "aws", "V100", 300.0, (0,) * 24)
    after_an_hour = SpotSeries("t/dear", "aws", "V100", 300.0, (0,) * 12 + (1,) * 12)
    base = instance([job("a", 0, 1, 3600)], [cheap, dear], budget_s=3600)
    inst = Instance(base.jobs, base.reserved_gpus, base.reserved_model, base.offerings,
                    {cheap.key: never, dear.key: after_an_hour}, base.horizon_s, base.slot_s, base.notice_s,
                    base.node_gpus)
    tl = build_timeline(inst, inst.jobs[0], inst.horizon_s, 0.0)
    assert tl is not None and tl.cost_one(0.0, 1800.0) == np.inf and tl.cost_one(3600.0, 5400.0) < np.inf
    assert np.isinf(tl.cost(np.array([0.0, 3000.0]), np.array([1800.0, 4000.0]))).tolist() == [True, True]
    plan = schedule(inst)
    assert problems(inst, plan) == []
    b = bracket(inst)
    assert b.lower_usd <= b.upper_usd + 1e-9
