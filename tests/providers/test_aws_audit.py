"""AWS adapter rules a second mutation audit found unpinned, and the bugs it found.

- prices: a price dimension that is not hourly, or is zero, is no instance's price; a malformed
  PriceList item is skipped; GetProducts asks for shared-tenancy Linux with no software; a failed
  refresh is tried again after a minute, not every pass; spot history asks for the price now; a
  live-only spot pool is blocked after a capacity error;
- listings keep EC2's LaunchTime (adoption bills from it); a fleet's errorSet names its most telling
  error (a known class before an unknown code);
- SDK failures: a TLS failure (an intercepting proxy, a wrong ``endpoint_url`` scheme) and an
  expired SSO session were raw botocore exceptions that no caller expects (the reconcile pass
  catches ProviderError): they are a TransientError and an AuthError, and any other botocore
  failure a ProviderError;
- subnets: an id of ``clouds.aws.subnet_ids`` that no configured region has (a typo) silently took
  its zone out of the offerings; it is named in a warning.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("moto", reason="the AWS tests need moto[server] and boto3 (dev extras)")

from burster.clock import FakeClock
from burster.errors import AuthError, CapacityError, ProviderError, TransientError
from burster.model import Market
from burster.plan import request_id
from providers.aws.adapter import _first_error
from providers.aws.errors import translate
from providers.aws.pricing import parse_on_demand
from tests.fakes.aws_proxy import price_list_item
from tests.providers import harness_aws as h


@pytest.fixture
def b() -> h.Backend:
    return h.fresh()


def _with_dimension(item: str, unit: str, usd: str) -> str:
    """``item`` with one more on-demand price dimension."""
    doc: dict[str, Any] = json.loads(item)
    term = next(iter(doc["terms"]["OnDemand"].values()))
    term["priceDimensions"]["extra"] = {"unit": unit, "pricePerUnit": {"USD": usd}}
    return json.dumps(doc)


# --- on-demand prices ----------------------------------------------------------------------------
@pytest.mark.parametrize(("unit", "usd"), [("GB-Mo", "0.1"), ("Quantity", "0.2"), ("Hrs", "0.0000000000")])
def test_a_non_hourly_or_zero_dimension_is_not_the_instance_price(unit: str, usd: str) -> None:
    item = _with_dimension(price_list_item("g5.xlarge", "us-east-1", 1.006), unit, usd)
    assert parse_on_demand([item]) == {("us-east-1", "g5.xlarge"): 1.006}


def test_malformed_price_list_items_are_skipped_not_raised() -> None:
    good = price_list_item("g5.xlarge", "us-east-1", 1.006)
    no_usd = json.loads(good)
    term = next(iter(no_usd["terms"]["OnDemand"].values()))
    next(iter(term["priceDimensions"].values()))["pricePerUnit"] = {"USD": None}
    items = [
        json.dumps({"product": [], "terms": {}}),
        json.dumps({"product": {}, "terms": {"OnDemand": []}}),
        json.dumps(no_usd),
        "[]",
        good,
    ]
    assert parse_on_demand(items) == {("us-east-1", "g5.xlarge"): 1.006}


def test_a_failed_price_refresh_is_tried_again_after_a_minute_not_every_pass(b: h.Backend) -> None:
    clock = FakeClock()
    p = h.make_provider(b, now=clock.now, attempts=1)
    b.proxy.fail_pricing(1000)
    p.offerings()
    clock.advance(59)
    p.offerings()
    assert b.proxy.actions("pricing").count("GetProducts") == 1
    b.proxy.fail_pricing(0)
    b.proxy.set_on_demand_price(h.INSTANCE_TYPE, h.REGION, 0.6123)
    clock.advance(1)
    od = {o.key: o for o in p.offerings()}[replace(h.offering(), market=Market.ON_DEMAND).key]
    assert od.price_per_hour_usd == pytest.approx(0.6123)
    sent = {f["Field"]: (f["Type"], f["Value"]) for f in b.proxy.last("GetProducts")["Filters"]}
    assert sent == {
        k: ("TERM_MATCH", v)
        for k, v in {
            "instanceType": sent["instanceType"][1],
            "regionCode": h.REGION,
            "operatingSystem": "Linux",
            "tenancy": "Shared",
            "preInstalledSw": "NA",
            "capacitystatus": "Used",
        }.items()
    }


def test_a_live_only_spot_pool_is_blocked_after_a_capacity_error(b: h.Backend) -> None:
    spot = h.offering()
    p = h.make_provider(b, catalog=tuple(o for o in h.catalog() if o.key != spot.key))  # on-demand only
    live = {o.key: o for o in p.offerings()}[spot.key]
    assert live.available and live.price_per_hour_usd == pytest.approx(0.00001)
    assert "StartTime" in b.proxy.last("DescribeSpotPriceHistory")  # the price now, not 90 days of history
    b.proxy.capacity_next()
    with pytest.raises(CapacityError):
        p.launch(live, 1, request_id=request_id("live-only", 1))
    assert not {o.key: o for o in p.offerings()}[spot.key].available


# --- listings and fleets -------------------------------------------------------------------------
def test_a_listed_node_keeps_its_ec2_launch_time(b: h.Backend) -> None:
    clock = FakeClock()  # far from the wall clock moto stamps LaunchTime with
    p = h.make_provider(b, now=clock.now)
    (node,) = p.launch(h.offering(), 1, request_id=request_id("launch-time", 1))
    inst = b.client("ec2").describe_instances(InstanceIds=[node.node_id])["Reservations"][0]["Instances"][0]
    listed = {n.node_id: n for n in p.list_nodes()}[node.node_id]
    assert listed.launched_at == inst["LaunchTime"] and listed.launched_at != clock.now()


def test_a_fleet_names_its_most_telling_error() -> None:
    key = h.offering().key
    mixed = _first_error([("SomethingAwsAddedLater", "new"), ("InsufficientInstanceCapacity", "none")], key)
    assert type(mixed) is CapacityError and "InsufficientInstanceCapacity" in str(mixed)
    unknown = _first_error([("SomethingAwsAddedLater", "new")], key)
    assert type(unknown) is ProviderError and "SomethingAwsAddedLater" in str(unknown)
    assert type(_first_error([], key)) is TransientError


# --- SDK failures --------------------------------------------------------------------------------
def test_a_tls_failure_is_a_transient_error_and_prices_fall_back(
    b: h.Backend, caplog: pytest.LogCaptureFixture
) -> None:
    https = b.proxy.url.replace("http://", "https://")  # a plain-HTTP server: the TLS handshake fails
    p = h.make_provider(b, cfg=h.make_config(b, endpoint_url=https, subnet_ids=()), attempts=1)
    with pytest.raises(TransientError, match=r"aws ec2:DescribeInstances: cannot reach the AWS endpoint"):
        p.list_nodes()
    with caplog.at_level(logging.WARNING, logger="providers.aws"):
        offers = p.offerings()
    assert offers and any("using the offline catalog" in r.getMessage() for r in caplog.records)


def test_an_expired_sso_session_is_an_auth_error_naming_the_fix() -> None:
    from botocore import exceptions as bx

    for exc in (bx.UnauthorizedSSOTokenError(), bx.TokenRetrievalError(provider="sso", error_msg="expired")):
        err = translate(exc, op="ec2:DescribeInstances")
        assert isinstance(err, AuthError) and "aws sso login" in str(err)


def test_any_other_botocore_failure_is_a_provider_error_without_secrets() -> None:
    from botocore import exceptions as bx

    exc = bx.PaginationError(message="The same next token was received twice: AKIAIOSFODNN7EXAMPLE")
    err = translate(exc, op="ec2:DescribeSpotPriceHistory")
    assert type(err) is ProviderError and "ec2:DescribeSpotPriceHistory" in str(err)
    assert "PaginationError" in str(err) and "AKIAIOSFODNN7EXAMPLE" not in str(err)
    assert translate(ValueError("not an SDK failure"), op="ec2:DescribeInstances") is None


# --- subnets -------------------------------------------------------------------------------------
def test_a_subnet_id_no_region_has_is_named_in_a_warning(b: h.Backend, caplog: pytest.LogCaptureFixture) -> None:
    typo = "subnet-0123456789abcdef0"
    p = h.make_provider(b, cfg=h.make_config(b, subnet_ids=(*b.subnet_ids, typo)))
    b.proxy.fail_pricing(10)
    with caplog.at_level(logging.WARNING, logger="providers.aws"):
        assert p.offerings()
        p.offerings()
    named = [r.getMessage() for r in caplog.records if typo in r.getMessage()]
    assert len(named) == 1 and "clouds.aws.subnet_ids" in named[0]
    assert not any(s in named[0] for s in b.subnet_ids)
