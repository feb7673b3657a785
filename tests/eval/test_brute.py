"""The LP lower bound equals an exhaustive search of the same fluid model on tiny instances."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burster.eval.bound import lower_bound, lower_bound_usd
from burster.eval.brute import brute_force_runs_usd, brute_force_usd
from burster.eval.instance import with_budgets
from burster.model import Market
from tests.eval.helpers import instance, job, offering, series

SLOT_S = 600.0
UNIT = SLOT_S / 3600.0  # one GPU for one slot


def test_brute_force_by_hand() -> None:
    """Two 1-GPU 20-min jobs, 10-min budget, one reserved GPU: 3 slots hold 3 of the 4 units of work."""
    inst = instance([job("a", 0, 1, 1200), job("b", 0, 1, 1200)], [offering(Market.ON_DEMAND, 2.0)],
                    pool_gpus=1, slot_s=SLOT_S, budget_s=600)
    assert brute_force_usd(inst, UNIT) == pytest.approx(2.0 * UNIT)
    assert lower_bound(inst, reserved_runs=False).usd == pytest.approx(2.0 * UNIT)
    # reserved runs do not pause: one job runs 0-20 min on the GPU, the other starts there at 20 min
    # and must end by 30 min: 10 of its 20 min on the cloud, the same $ as the fluid model here
    assert brute_force_runs_usd(inst, 300.0) == pytest.approx(2.0 * UNIT)
    assert lower_bound_usd(inst)[0] == pytest.approx(2.0 * UNIT)


def test_brute_force_refuses_big_instances() -> None:
    inst = instance([job(str(i), 0, 1, 600) for i in range(5)], [offering(Market.ON_DEMAND, 2.0)], slot_s=SLOT_S,
                    budget_s=0)
    with pytest.raises(ValueError, match="at most 4 jobs"):
        brute_force_usd(inst, UNIT)


def test_brute_force_refuses_fractional_work() -> None:
    inst = instance([job("a", 0, 1, 700)], [offering(Market.ON_DEMAND, 2.0)], slot_s=SLOT_S, budget_s=0)
    with pytest.raises(ValueError, match="not a whole number"):
        brute_force_usd(inst, UNIT)


tiny_job = st.tuples(st.sampled_from([0, 300, 600, 1200]),  # arrival
                     st.integers(1, 2),  # GPUs
                     st.sampled_from([600, 1200]),  # runtime
                     st.sampled_from([0, 300, 600, 1200]))  # wait budget


@settings(max_examples=40, deadline=None)
@given(jobs=st.lists(tiny_job, min_size=1, max_size=4), pool=st.integers(0, 3),
       od=st.sampled_from([2.0, 3.0]), spot=st.none() | st.sampled_from([0.5, 1.0]),
       data=st.lists(st.integers(0, 1), min_size=6, max_size=6))
def test_lp_equals_brute_force(jobs: list[tuple[int, int, int, int]], pool: int, od: float, spot: float | None,
                               data: list[int]) -> None:
    budgets = {f"j{i}": float(b) for i, (_, _, _, b) in enumerate(jobs)}
    demands = [job(f"j{i}", a, g, r) for i, (a, g, r, _) in enumerate(jobs)]
    offers = [offering(Market.ON_DEMAND, od)]
    if spot is not None:
        offers.append(offering(Market.SPOT, spot))
    inst = with_budgets(instance(demands, offers, pool_gpus=pool, spot=[series(data, SLOT_S)], slot_s=SLOT_S),
                        budgets)
    assert inst.slots <= 6
    fluid = lower_bound(inst, reserved_runs=False)
    exact = brute_force_usd(inst, UNIT)
    assert fluid.status == "optimal"
    assert fluid.usd == pytest.approx(exact, rel=1e-6, abs=1e-9)
    # the LP's own optimum, not only the certified dual value
    assert fluid.lp_usd is not None and fluid.lp_usd == pytest.approx(exact, rel=1e-6, abs=1e-9)
    # the reported bound: the better of the fluid and reserved-run bounds; the latter below the
    # reserved-run model's optimum (starts on the data's 300 s grid)
    low = lower_bound(inst)
    assert low.usd >= fluid.usd - 1e-9
    if low.runs_usd is not None:
        assert low.runs_usd <= brute_force_runs_usd(inst, 300.0) + 1e-6 * max(1.0, low.usd)
