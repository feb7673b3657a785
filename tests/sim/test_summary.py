"""The KPI helpers of a simulation's summary."""

from __future__ import annotations

import pytest

from burster.sim.summary import percentile


@pytest.mark.parametrize(("n", "q", "rank"), [
    (1, 50, 1), (2, 50, 1), (10, 50, 5), (10, 51, 6), (100, 95, 95), (100, 99, 99), (100, 100, 100),
    (101, 99, 100), (3, 0, 1), (7, 95, 7),
])
def test_a_percentile_is_the_nearest_rank(n: int, q: float, rank: int) -> None:
    """The smallest value with at least q% of the values at or below it (so p99 of 100 waits is
    the 99th, not the largest)."""
    values = [10.0 * i for i in range(n, 0, -1)]  # unsorted on purpose
    assert percentile(values, q) == 10.0 * rank


def test_no_values_give_zero() -> None:
    assert percentile([], 95) == 0.0
