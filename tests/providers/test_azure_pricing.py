"""Live prices from the (fake) Azure Retail Prices API: merged, cached, and the offline fallback."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from burster.model import Market
from providers.azure.pricing import PriceBook, fetch_items, parse_prices, price_filter
from tests.fakes.azure_prices import FakeRetailPrices, items_from_offerings, parse_filter, vm_item
from tests.providers.harness_azure import LOCATION, fakes, provider

NOW = datetime(2026, 3, 1, tzinfo=UTC)
# A reservation row as the API returns it (quoted from public Retail Prices output); never a VM price.
DOC_RESERVATION = {
    "currencyCode": "USD", "tierMinimumUnits": 0.0, "reservationTerm": "1 Year", "retailPrice": 2377.0,
    "unitPrice": 2377.0, "armRegionName": "westeurope", "location": "EU West",
    "effectiveStartDate": "2020-08-01T00:00:00Z", "meterId": "4e763e64-5ae4-5ed3-8892-902bb82ca7d3",
    "meterName": "D8 v4", "productId": "DZH318Z0D1L4", "skuId": "DZH318Z0D1L4/01DC",
    "productName": "Virtual Machines Dv4 Series", "skuName": "D8 v4", "serviceName": "Virtual Machines",
    "serviceId": "DZH313Z7MMC8", "serviceFamily": "Compute", "unitOfMeasure": "1 Hour",
    "type": "Reservation", "isPrimaryMeterRegion": True, "armSkuName": "Standard_D8_v4",
}


@pytest.fixture(scope="module")
def scaled_prices() -> Iterator[FakeRetailPrices]:
    f = fakes()
    scaled = {o.instance_type: 1.1 for o in f.catalog}
    fake = FakeRetailPrices(f.tls, [*items_from_offerings(f.catalog, LOCATION, scaled), DOC_RESERVATION],
                            page_size=5)
    yield fake
    fake.stop()


@pytest.fixture
def prices_fake(scaled_prices: FakeRetailPrices) -> FakeRetailPrices:
    scaled_prices.requests, scaled_prices.failures = 0, []
    return scaled_prices


def clock(start: datetime) -> tuple[list[datetime], object]:
    now = [start]
    return now, lambda: now[0]


def test_offerings_carry_live_linux_prices_fetched_across_pages(prices_fake: FakeRetailPrices) -> None:
    catalog = fakes().catalog
    book = PriceBook(catalog, location=LOCATION, url=prices_fake.url, cafile=fakes().tls.ca_path,
                     now=lambda: NOW)
    got = {(o.instance_type, o.market): o.price_per_hour_usd for o in book.offerings()}
    for o in catalog:
        assert got[(o.instance_type, o.market)] == pytest.approx(o.price_per_hour_usd * 1.1, rel=1e-5)
    assert book.live and prices_fake.requests > 2  # one query, NextPageLink followed


def test_prices_are_cached_for_the_ttl(prices_fake: FakeRetailPrices) -> None:
    now, now_fn = clock(NOW)
    book = PriceBook(fakes().catalog, location=LOCATION, url=prices_fake.url, cafile=fakes().tls.ca_path,
                     ttl_s=3600, now=now_fn)  # type: ignore[arg-type]
    book.offerings()
    calls = prices_fake.requests
    now[0] += timedelta(minutes=59)
    book.offerings()
    assert prices_fake.requests == calls
    now[0] += timedelta(minutes=2)
    book.offerings()
    assert prices_fake.requests > calls


def test_unreachable_api_falls_back_to_the_catalog_with_a_warning(
        prices_fake: FakeRetailPrices, caplog: pytest.LogCaptureFixture) -> None:
    now, now_fn = clock(NOW)
    catalog = fakes().catalog
    prices_fake.fail_next(503)
    book = PriceBook(catalog, location=LOCATION, url=prices_fake.url, cafile=fakes().tls.ca_path,
                     failure_backoff_s=300, now=now_fn)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        assert book.offerings() == catalog
    assert "Retail Prices API unreachable" in caplog.text and "offline catalog" in caplog.text
    assert not book.live
    book.offerings()
    assert prices_fake.requests == 1  # no retry inside the backoff
    now[0] += timedelta(minutes=6)
    assert book.offerings() != catalog and book.live


def test_adapter_offerings_are_the_configured_location_with_live_prices() -> None:
    p = provider(f"rg-{uuid.uuid4().hex[:8]}")
    offers = p.offerings()
    assert offers and {o.region for o in offers} == {LOCATION} and {o.provider for o in offers} == {"azure"}


def test_parse_keeps_linux_consumption_and_the_latest_effective_price() -> None:
    sku = "Standard_NC6s_v3"
    items = [
        vm_item(sku, "eastus", 3.06, start="2023-01-01T00:00:00Z"),
        vm_item(sku, "eastus", 3.20, start="2025-06-01T00:00:00Z"),
        vm_item(sku, "eastus", 9.99, start="2027-01-01T00:00:00Z"),  # not effective yet
        vm_item(sku, "eastus", 4.10, windows=True),
        vm_item(sku, "eastus", 0.61, low_priority=True),
        vm_item(sku, "eastus", 1.50, kind="DevTestConsumption"),
        vm_item(sku, "eastus", 0.40, spot=True),
        DOC_RESERVATION,
    ]
    assert parse_prices(items, NOW) == {("eastus", sku, Market.ON_DEMAND): 3.20,
                                        ("eastus", sku, Market.SPOT): 0.40}


def test_query_filter_is_understood_by_the_documented_grammar(prices_fake: FakeRetailPrices) -> None:
    text = price_filter("eastus", ["Standard_NC6s_v3", "Standard_NC4as_T4_v3"])
    keep = parse_filter(text, case_sensitive=True)
    assert keep(vm_item("Standard_NC6s_v3", "eastus", 1.0))
    assert not keep(vm_item("Standard_NC6s_v3", "westus", 1.0))
    assert not keep(vm_item("Standard_NC6s_v3", "eastus", 1.0, kind="Reservation"))
    assert not parse_filter("armRegionName eq 'EastUS'", case_sensitive=True)(vm_item("x", "eastus", 1.0))
    assert parse_filter("armRegionName eq 'EastUS'", case_sensitive=False)(vm_item("x", "eastus", 1.0))
    items = fetch_items(f"{prices_fake.url}?$filter=armSkuName%20eq%20'Standard_D8_v4'",
                        cafile=fakes().tls.ca_path)
    assert items == [DOC_RESERVATION]
