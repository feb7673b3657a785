"""The simulated cloud's waived $: the list price of AWS spot nodes taken back in their first hour
(unbilled), per node, not per GPU; a node taken back later is billed, so nothing is waived."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from burster.clock import FakeClock
from burster.model import Market, Offering
from providers.sim.cloud import SimCloudProvider
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from providers.sim.spot import SpotSeries

NODE = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.SPOT, 7.3)  # $/h per node


def _taken_back(up_slots: int) -> float:
    """Waived $ of one node launched at 0 on a series up for ``up_slots`` x 10 min, then down."""
    clock = FakeClock(datetime(2026, 1, 5, tzinfo=UTC))
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    data = (1,) * up_slots + (0,) * 20
    cloud = SimCloudProvider("aws", [NODE], events=pool.events, pool=pool, now=clock.now, start=clock.now(),
                             series=[SpotSeries(f"waived/{up_slots}", "aws", "V100", 600.0, data)])
    cloud.launch(NODE, 1, request_id="r")
    end = clock.now() + timedelta(seconds=up_slots * 600 + 300)
    pool.events.run_until(end)
    assert [n.state.name for n in cloud.list_nodes()] == ["TERMINATED"]  # taken back 120 s after the drop
    return float(pool.metrics.waived_usd)


def test_a_node_taken_back_in_its_first_hour_waives_its_node_price_for_its_run() -> None:
    assert _taken_back(5) == pytest.approx(7.3 * (3000 + 120) / 3600)


def test_a_node_taken_back_after_its_first_hour_is_billed_and_waives_nothing() -> None:
    assert _taken_back(7) == 0.0
