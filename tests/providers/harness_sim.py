"""Contract harness for the simulated cloud (the one `burster simulate` uses)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from burster.clock import FakeClock
from burster.model import Market, Offering
from providers.sim.cloud import SimCloudProvider
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from providers.sim.spot import SpotSeries
from tests.providers.harness import Harness

OFFERING = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.SPOT, 7.3)


@contextmanager
def make_harness(tmp_path: Path) -> Iterator[Harness]:
    clock = FakeClock(datetime(2026, 1, 5, tzinfo=UTC))
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    always = SpotSeries("always", "aws", "V100", 600.0, (1, 1, 1))
    cloud = SimCloudProvider("aws", [OFFERING], events=pool.events, pool=pool, now=clock.now,
                             start=clock.now(), series=[always])
    yield Harness(
        provider=cloud,
        offering=OFFERING,
        fail_capacity=lambda: cloud.set_capacity(OFFERING.key, 0),
        throttle=cloud.throttle_next,
        partial=lambda k: cloud.set_capacity(OFFERING.key, k),
    )
