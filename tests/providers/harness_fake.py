"""Contract harness for the in-memory fake."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from burster.errors import CapacityError
from burster.model import Market, Offering
from providers.fake import FakeCloudProvider
from tests.providers.harness import Harness

OFFERING = Offering("fake", "r1", "r1a", "gpu.8x", "V100", 8, Market.SPOT, 7.0)


@contextmanager
def make_harness(tmp_path: Path) -> Iterator[Harness]:
    fake = FakeCloudProvider("fake", [OFFERING])
    yield Harness(
        provider=fake,
        offering=OFFERING,
        fail_capacity=lambda: fake.fail_next_launch(CapacityError("fake: no capacity")),
        throttle=fake.throttle_next,
        partial=fake.partial_next,
    )
