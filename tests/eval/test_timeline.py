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
