"""Live prices: the documented GetProducts shape, spot history from moto, caching and fallback."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("moto", reason="the AWS tests need moto[server] and boto3 (dev extras)")

from burster.clock import FakeClock
from burster.model import Market
from providers.aws.pricing import iter_price_dimensions, parse_on_demand, parse_spot_history
from tests.fakes.aws_proxy import price_list_item
from tests.providers import harness_aws as h

EVENTS = Path(__file__).resolve().parents[1] / "fakes" / "aws_events"


def test_documented_get_products_sample_parses() -> None:
    doc = json.loads((EVENTS / "pricing_get_products_cli_example.json").read_text())
    dims = list(iter_price_dimensions(doc["PriceList"]))
    assert [(a["volumeType"], unit, usd) for a, unit, usd in dims] == [("Provisioned IOPS", "GB-Mo", 0.138)]
    assert parse_on_demand(doc["PriceList"]) == {}  # storage, not an instance: no hourly instance price


def test_instance_products_give_hourly_prices_and_bad_items_are_skipped() -> None:
    items = [price_list_item("p4d.24xlarge", "us-east-1", 21.96), "{not json", json.dumps({"terms": {}})]
    assert parse_on_demand(items) == {("us-east-1", "p4d.24xlarge"): 21.96}


def test_spot_history_keeps_the_latest_linux_price_per_pool() -> None:
    rows = [
        {"AvailabilityZone": "us-east-1a", "InstanceType": "p3.2xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "0.9", "Timestamp": datetime(2026, 1, 1, tzinfo=UTC)},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "p3.2xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "0.8", "Timestamp": datetime(2026, 1, 2, tzinfo=UTC)},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "p3.2xlarge", "ProductDescription": "Windows",
         "SpotPrice": "3.0", "Timestamp": datetime(2026, 1, 3, tzinfo=UTC)},
    ]
    assert parse_spot_history(rows) == {("us-east-1a", "p3.2xlarge"): 0.8}


def test_offerings_merge_live_prices_and_cache_them() -> None:
    b = h.backend()
    b.proxy.reset()
    b.proxy.set_on_demand_price("g4dn.xlarge", h.REGION, 0.5555)
    clock = FakeClock()
    p = h.make_provider(b, now=clock.now, spot_ttl_s=300, on_demand_ttl_s=3600)
    offers = {o.key: o for o in p.offerings()}
    spot = offers[h.offering().key]
    assert spot.price_per_hour_usd == pytest.approx(0.00001)  # moto's spot price history
    assert offers[replace(spot, market=Market.ON_DEMAND).key].price_per_hour_usd == pytest.approx(0.5555)
    assert {(o.provider, o.region) for o in offers.values()} == {("aws", h.REGION)}
    sent = b.proxy.last("GetProducts")
    assert sent["ServiceCode"] == "AmazonEC2" and sent["FormatVersion"] == "aws_v1"
    assert {f["Field"]: f["Value"] for f in sent["Filters"]}["regionCode"] == h.REGION
    calls, products = len(b.proxy.calls), b.proxy.actions("pricing").count("GetProducts")
    p.offerings()
    assert len(b.proxy.calls) == calls  # both caches still fresh
    clock.advance(301)
    p.offerings()
    assert b.proxy.actions().count("DescribeSpotPriceHistory") == 2  # spot is due again
    assert b.proxy.actions("pricing").count("GetProducts") == products  # on-demand is not


def test_unreachable_price_list_falls_back_to_the_catalog_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    b = h.backend()
    b.proxy.reset()
    b.proxy.fail_pricing(100)
    p = h.make_provider(b)
    with caplog.at_level(logging.WARNING, logger="providers.aws"):
        offers = {o.key: o for o in p.offerings()}
    od = replace(h.offering(), market=Market.ON_DEMAND)
    catalog = next(o for o in h.catalog() if o.key == od.key)
    assert offers[od.key].price_per_hour_usd == catalog.price_per_hour_usd
    assert any("offline catalog" in r.getMessage() for r in caplog.records)


def test_subnets_limit_offerings_to_their_zones() -> None:
    b = h.backend()
    b.proxy.reset()
    b.proxy.fail_pricing(100)
    ec2 = b.client("ec2")
    subnet = next(s for s in ec2.describe_subnets()["Subnets"] if s["AvailabilityZoneId"] == h.ZONE_ID)
    p = h.make_provider(b, cfg=h.make_config(b, subnet_ids=(subnet["SubnetId"],)))
    assert {o.zone for o in p.offerings()} == {h.ZONE_ID}
