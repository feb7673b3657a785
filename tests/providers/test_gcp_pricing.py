"""Live prices from the Cloud Billing Catalog fake: merge rule, cache, paging, fallback."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from burster.catalog import load_catalog
from burster.model import Market
from tests.providers.harness_gcp import GcpBackend, gcp_backend

A2_1G = (12.0, 85.0)  # vCPUs, GiB of a2-highgpu-1g (offline catalog)


@pytest.fixture
def b() -> Iterator[GcpBackend]:
    with gcp_backend() as backend:
        yield backend


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def price(offerings: list, zone: str, itype: str, market: Market) -> float:
    return next(o.price_per_hour_usd for o in offerings
                if (o.zone, o.instance_type, o.market) == (zone, itype, market))


def test_live_prices_are_host_cores_ram_plus_gpus_from_the_skus(b: GcpBackend) -> None:
    offers = list(b.provider(zones=("us-central1-a",)).offerings())
    assert {o.zone for o in offers} == {"us-central1-a"}
    cpus, gib = A2_1G
    assert price(offers, "us-central1-a", "a2-highgpu-1g", Market.ON_DEMAND) == pytest.approx(
        cpus * 0.031611 + gib * 0.004237 + 2.75, abs=1e-5)
    assert price(offers, "us-central1-a", "a2-highgpu-1g", Market.SPOT) == pytest.approx(
        cpus * 0.0124 + gib * 0.00166 + 1.1, abs=1e-5)
    assert price(offers, "us-central1-a", "a2-highgpu-8g", Market.ON_DEMAND) == pytest.approx(
        96 * 0.031611 + 680 * 0.004237 + 8 * 2.75, abs=1e-5)
    offline = load_catalog(providers=["gcp"])
    assert price(offers, "us-central1-a", "a2-highgpu-1g", Market.ON_DEMAND) != price(
        offline, "us-central1-a", "a2-highgpu-1g", Market.ON_DEMAND)  # the live SKU price won
    # No Spot A3 SKUs in the fake: the offline price stays.
    assert price(offers, "us-central1-a", "a3-highgpu-8g", Market.SPOT) == price(
        offline, "us-central1-a", "a3-highgpu-8g", Market.SPOT)
    assert b.billing.requests[0]["path"] == "/v1/services/6F81-5844-456A/skus"
    assert b.billing.requests[0]["currencyCode"] == "USD"


def test_prices_are_cached_for_the_ttl(b: GcpBackend) -> None:
    clock = Clock()
    p = b.provider(price_clock=clock, price_ttl_s=3600)
    p.offerings()
    clock.t = 3599
    p.offerings()
    assert len(b.billing.requests) == 1
    clock.t = 3600
    p.offerings()
    assert len(b.billing.requests) == 2


def test_all_pages_of_skus_are_read(b: GcpBackend) -> None:
    b.billing.max_page = 3
    offers = list(b.provider().offerings())
    assert len(b.billing.requests) == 4  # 12 SKUs, 3 a page
    assert b.billing.requests[1]["pageToken"] == "3"
    cpus, gib = A2_1G
    assert price(offers, "us-central1-a", "a2-highgpu-1g", Market.SPOT) == pytest.approx(
        cpus * 0.0124 + gib * 0.00166 + 1.1, abs=1e-5)


def test_unreachable_billing_api_falls_back_to_the_catalog_with_a_warning(
        b: GcpBackend, caplog: pytest.LogCaptureFixture) -> None:
    b.billing.fail_next(403, "accessNotConfigured", "Cloud Billing API has not been used in project 123 "
                        "before or it is disabled.")
    clock = Clock()
    p = b.provider(zones=("us-central1-a",), price_clock=clock)
    with caplog.at_level(logging.WARNING, logger="providers.gcp.pricing"):
        offers = list(p.offerings())
    offline = [o for o in load_catalog(providers=["gcp"]) if o.zone == "us-central1-a"]
    assert offers == offline
    assert "offline catalog" in caplog.text and "Cloud Billing API has not been used" in caplog.text
    p.offerings()
    assert len(b.billing.requests) == 1  # not retried every tick...
    clock.t = 301
    assert list(p.offerings()) != offline  # ...but well before the hour is up
    assert len(b.billing.requests) == 2


def test_a_throttled_price_refresh_is_retried(b: GcpBackend) -> None:
    b.billing.throttle_next(2)
    offers = list(b.provider().offerings())
    assert len(b.billing.requests) == 3 and len(b.sleeps) == 2
    assert price(offers, "us-central1-a", "a2-highgpu-1g", Market.ON_DEMAND) == pytest.approx(
        A2_1G[0] * 0.031611 + A2_1G[1] * 0.004237 + 2.75, abs=1e-5)
