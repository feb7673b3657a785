"""Live prices: spot from DescribeSpotPriceHistory, on-demand from the Price List API (GetProducts).

Both are cached (spot for minutes, on-demand for a day). A failed refresh logs a warning and keeps
the last live prices, or the offline catalog's, so ``offerings()`` always answers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from burster.errors import ProviderError
from burster.model import Market, Offering

log = logging.getLogger(__name__)

PRICING_REGION = "us-east-1"  # the Price List API endpoint region
LINUX_PRODUCT = "Linux/UNIX"


def on_demand_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    """GetProducts filters for the shared-tenancy Linux on-demand price of one instance type."""
    terms = {"instanceType": instance_type, "regionCode": region, "operatingSystem": "Linux",
             "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in terms.items()]


def iter_price_dimensions(price_list: Iterable[str | Mapping[str, Any]]
                          ) -> Iterator[tuple[dict[str, str], str, float]]:
    """(product attributes, unit, USD) for every on-demand price dimension of a GetProducts PriceList.

    PriceList items are JSON documents (strings, as the API returns them). Malformed items are
    skipped with a debug log: one bad product must not hide the others.
    """
    for item in price_list:
        try:
            doc = json.loads(item) if isinstance(item, str) else dict(item)
            attrs = dict(doc["product"].get("attributes", {}))
            for term in doc.get("terms", {}).get("OnDemand", {}).values():
                for dim in term.get("priceDimensions", {}).values():
                    yield attrs, str(dim.get("unit", "")), float(dim["pricePerUnit"]["USD"])
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            log.debug("aws: skipping a malformed PriceList item (%s)", type(err).__name__)


def parse_on_demand(price_list: Iterable[str | Mapping[str, Any]]) -> dict[tuple[str, str], float]:
    """{(region code, instance type): USD per hour} from GetProducts PriceList items."""
    out: dict[tuple[str, str], float] = {}
    for attrs, unit, usd in iter_price_dimensions(price_list):
        itype, region = attrs.get("instanceType"), attrs.get("regionCode")
        if not itype or not region or unit not in ("Hrs", "Hours", "Hour") or usd <= 0:
            continue
        key = (region, itype)
        out[key] = min(usd, out.get(key, usd))
    return out


def parse_spot_history(history: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], float]:
    """{(zone name, instance type): USD per hour}, the most recent Linux price of each pool."""
    latest: dict[tuple[str, str], tuple[datetime | str, float]] = {}
    for row in history:
        if not str(row.get("ProductDescription", LINUX_PRODUCT)).startswith(LINUX_PRODUCT):
            continue
        try:
            key = (str(row["AvailabilityZone"]), str(row["InstanceType"]))
            price = float(row["SpotPrice"])
        except (KeyError, ValueError, TypeError):
            continue
        stamp = row.get("Timestamp", "")
        if key not in latest or _later(stamp, latest[key][0]):
            latest[key] = (stamp, price)
    return {k: v[1] for k, v in latest.items()}


def _later(a: datetime | str, b: datetime | str) -> bool:
    if isinstance(a, datetime) and isinstance(b, datetime):
        return a > b
    return str(a) > str(b)


class PriceBook:
    """Live prices with per-region refresh deadlines; falls back to the catalog with a warning."""

    def __init__(self, *, now: Callable[[], datetime], spot_ttl_s: float = 300.0,
                 on_demand_ttl_s: float = 86_400.0, retry_after_s: float = 60.0) -> None:
        self._now = now
        self._ttl = {Market.SPOT: spot_ttl_s, Market.ON_DEMAND: on_demand_ttl_s}
        self._retry_after_s = retry_after_s
        self.spot: dict[tuple[str, str], float] = {}  # (zone id, type)
        self.on_demand: dict[tuple[str, str], float] = {}  # (region, type)
        self._due: dict[tuple[Market, str], datetime] = {}

    def refresh(self, region: str, market: Market, fetch: Callable[[], dict[tuple[str, str], float]]) -> None:
        """Run ``fetch`` when the region's prices are due; a ProviderError keeps the old prices."""
        now = self._now()
        due = self._due.get((market, region))
        if due is not None and now < due:
            return
        table = self.spot if market is Market.SPOT else self.on_demand
        try:
            table.update(fetch())
        except ProviderError as err:
            self._due[(market, region)] = now + timedelta(seconds=self._retry_after_s)
            log.warning("aws: live %s prices for %s unavailable, using %s prices instead: %s",
                        market.value, region, "the last live" if table else "the offline catalog", err)
            return
        self._due[(market, region)] = now + timedelta(seconds=self._ttl[market])

    def price(self, offering: Offering) -> float | None:
        """The live price of ``offering``, or None when none was fetched."""
        if offering.market is Market.SPOT:
            return self.spot.get((offering.zone, offering.instance_type))
        return self.on_demand.get((offering.region, offering.instance_type))
