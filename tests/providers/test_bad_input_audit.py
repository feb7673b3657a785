"""Issue #4 audit: live price refresh falls back to the offline catalog, with a visible warning, when
the price API cannot be reached at all (connection refused), for each cloud.

The per-cloud pricing tests inject HTTP error answers (500, 503, 403) from local fakes; these drive
the real adapters' real SDK/HTTP clients at a closed local port instead, so no answer ever comes.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import replace

import pytest

from burster.catalog import load_catalog
from burster.config import AwsConfig, GcpConfig


def closed_url(scheme: str = "http") -> str:
    """A URL of a local port that nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"{scheme}://127.0.0.1:{port}"


def test_aws_unreachable_price_apis_fall_back_to_the_catalog(caplog: pytest.LogCaptureFixture) -> None:
    import boto3

    from providers.aws import AwsProvider

    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
    cfg = AwsConfig(enabled=True, regions=("us-east-1",), launch_template_ids={"default": "lt-0123456789abcdef0"},
                    endpoint_url=closed_url())
    provider = AwsProvider(cfg, cluster="audit", user_data=lambda o: "", sleep=lambda s: None, session=session,
                           attempts=2)
    offline = [o for o in load_catalog(providers=["aws"]) if o.region == "us-east-1"]
    with caplog.at_level(logging.WARNING, logger="providers.aws"):
        offers = list(provider.offerings())
    assert sorted(offers, key=lambda o: o.key) == sorted(offline, key=lambda o: o.key)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for market in ("spot", "on_demand"):
        assert any(f"live {market} prices for us-east-1 unavailable, using the offline catalog" in w
                   and "cannot reach the AWS endpoint" in w for w in warnings), warnings
    assert all("testing" not in w for w in warnings)


def test_aws_unreachable_endpoint_is_a_retried_transient_error() -> None:
    import boto3

    from burster.errors import TransientError
    from providers.aws import AwsProvider

    sleeps: list[float] = []
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
    cfg = AwsConfig(enabled=True, regions=("us-east-1",), launch_template_ids={"default": "lt-0123456789abcdef0"},
                    endpoint_url=closed_url())
    provider = AwsProvider(cfg, cluster="audit", user_data=lambda o: "", sleep=sleeps.append, session=session,
                           attempts=3)
    with pytest.raises(TransientError, match=r"aws ec2:DescribeInstances: cannot reach the AWS endpoint"):
        provider.list_nodes()
    assert len(sleeps) == 2  # three attempts, backing off between them


def test_gcp_unreachable_billing_api_falls_back_to_the_catalog(caplog: pytest.LogCaptureFixture) -> None:
    from google.auth.credentials import AnonymousCredentials

    from providers.gcp import from_config

    down = closed_url()
    cfg = GcpConfig(enabled=True, project="audit-project", zones=("us-central1-a",), api_endpoint=down)
    provider = from_config(cfg, cluster="audit", user_data=lambda o: "", sleep=lambda s: None,
                           credentials=AnonymousCredentials(), billing_endpoint=down)
    offline = [o for o in load_catalog(providers=["gcp"]) if o.zone == "us-central1-a"]
    with caplog.at_level(logging.WARNING, logger="providers.gcp"):
        offers = list(provider.offerings())
    assert offers == offline and offline
    assert "price refresh from the Cloud Billing Catalog failed, using offline catalog prices" in caplog.text


def test_azure_unreachable_retail_prices_api_falls_back_to_the_catalog(caplog: pytest.LogCaptureFixture) -> None:
    from providers.azure.pricing import PriceBook

    catalog = [o for o in load_catalog(providers=["azure"]) if o.region == "eastus"]
    book = PriceBook(catalog, location="eastus", url=closed_url("https") + "/api/retail/prices")
    with caplog.at_level(logging.WARNING, logger="providers.azure"):
        offers = book.offerings()
    assert offers == catalog and catalog and not book.live
    assert "Retail Prices API unreachable" in caplog.text and "using the offline catalog prices" in caplog.text
    assert [replace(o) for o in book.offerings()] == catalog  # within the backoff: no new attempt, same answer
