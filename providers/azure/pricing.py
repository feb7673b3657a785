"""Live prices from the public Azure Retail Prices API, cached, merged into the offline catalog.

``GET https://prices.azure.com/api/retail/prices?$filter=...`` answers
``{"BillingCurrency", "Items": [...], "NextPageLink": <url or null>, "Count"}`` without
authentication. A Linux pay-as-you-go VM price is an item with ``type == "Consumption"``, a
``productName`` without "Windows", and a ``skuName`` without "Low Priority"; the spot price is the
item whose ``skuName`` ends in " Spot". When the API cannot be reached the offline catalog is used
and a warning is logged.
"""

from __future__ import annotations

import http.client
import json
import logging
import ssl
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from burster.clock import utc_now
from burster.model import Market, Offering

log = logging.getLogger("burster.providers.azure.pricing")

PRICES_URL = "https://prices.azure.com/api/retail/prices"
API_VERSION = "2023-01-01-preview"
MAX_PAGES = 50
PriceKey = tuple[str, str, Market]  # (armRegionName, armSkuName, market)


def price_filter(location: str, vm_sizes: Iterable[str]) -> str:
    """OData filter for the Linux/Windows VM meters of ``vm_sizes`` in ``location``."""
    sizes = " or ".join(f"armSkuName eq '{s}'" for s in sorted(set(vm_sizes)))
    base = (f"serviceName eq 'Virtual Machines' and armRegionName eq '{location}' "
            "and priceType eq 'Consumption'")
    return f"{base} and ({sizes})" if sizes else base


def fetch_items(url: str, *, timeout_s: float = 10.0, cafile: str | None = None,
                max_pages: int = MAX_PAGES) -> list[dict[str, Any]]:
    """All ``Items`` of a Retail Prices query, following ``NextPageLink``; raises OSError, ValueError or
    http.client.HTTPException (a cut-off answer, a bad status line)."""
    context = ssl.create_default_context(cafile=cafile) if cafile else None
    items: list[dict[str, Any]] = []
    next_url: str | None = url
    for _ in range(max_pages):
        if not next_url:
            return items
        request = urllib.request.Request(next_url, headers={"Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
            page = json.loads(response.read().decode())
        if not isinstance(page, dict) or not isinstance(page.get("Items"), list):
            raise ValueError("Retail Prices API answered without an Items list")
        items += [i for i in page["Items"] if isinstance(i, dict)]
        next_url = page.get("NextPageLink") or None
    log.warning("azure prices: stopped after %d pages; prices may be incomplete", max_pages)
    return items


def parse_prices(items: Iterable[Mapping[str, Any]], now: datetime) -> dict[PriceKey, float]:
    """Linux consumption prices per (region, size, market); the latest effective price wins."""
    best: dict[PriceKey, tuple[str, float]] = {}
    today = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for item in items:
        sku, product = str(item.get("skuName", "")), str(item.get("productName", ""))
        if (item.get("type") != "Consumption" or "Windows" in product or "Low Priority" in sku
                or item.get("unitOfMeasure") != "1 Hour" or item.get("currencyCode", "USD") != "USD"):
            continue
        try:
            price = float(item.get("retailPrice", item.get("unitPrice")))
        except (TypeError, ValueError):
            continue
        start = str(item.get("effectiveStartDate") or "")
        if price <= 0 or start > today:
            continue
        market = Market.SPOT if sku.endswith(" Spot") else Market.ON_DEMAND
        key = (str(item.get("armRegionName", "")), str(item.get("armSkuName", "")), market)
        if key not in best or start >= best[key][0]:
            best[key] = (start, price)
    return {k: v[1] for k, v in best.items()}


def merge(catalog: Sequence[Offering], prices: Mapping[PriceKey, float]) -> list[Offering]:
    """Catalog offerings with live prices; a live price for a market the catalog lacks adds it."""
    out = [replace(o, price_per_hour_usd=prices.get((o.region, o.instance_type, o.market),
                                                     o.price_per_hour_usd)) for o in catalog]
    have = {(o.region, o.instance_type, o.market) for o in out}
    for o in catalog:
        for market in (Market.SPOT, Market.ON_DEMAND):
            key = (o.region, o.instance_type, market)
            if key in prices and key not in have:
                out.append(replace(o, market=market, price_per_hour_usd=prices[key]))
                have.add(key)
    return out


class PriceBook:
    """Offerings for one location: the offline catalog, refreshed from the API at most every ``ttl_s``."""

    def __init__(self, catalog: Sequence[Offering], *, location: str, url: str = PRICES_URL,
                 cafile: str | None = None, ttl_s: float = 3600.0, failure_backoff_s: float = 300.0,
                 now: Callable[[], datetime] = utc_now,
                 fetch: Callable[..., list[dict[str, Any]]] = fetch_items) -> None:
        self._catalog = list(catalog)
        self._location = location
        self._url, self._cafile = url, cafile
        self._ttl_s, self._failure_backoff_s = ttl_s, failure_backoff_s
        self._now, self._fetch = now, fetch
        self._lock = threading.Lock()
        self._offerings: list[Offering] = list(self._catalog)
        self._next_refresh: datetime | None = None
        self.live = False  # whether the current offerings carry live prices

    def known(self, key: PriceKey) -> Offering | None:
        """The current offering for (region, size, market), without refreshing."""
        with self._lock:
            return next((o for o in self._offerings
                         if (o.region, o.instance_type, o.market) == key), None)

    def query_url(self) -> str:
        sizes = {o.instance_type for o in self._catalog}
        query = urllib.parse.urlencode({"api-version": API_VERSION,
                                        "$filter": price_filter(self._location, sizes)})
        return f"{self._url}?{query}"

    def offerings(self) -> list[Offering]:
        with self._lock:
            now = self._now()
            if self._next_refresh is None or now >= self._next_refresh:
                self._refresh(now)
            return list(self._offerings)

    def _refresh(self, now: datetime) -> None:
        from datetime import timedelta

        try:
            prices = parse_prices(self._fetch(self.query_url(), cafile=self._cafile), now)
        except (OSError, ValueError, http.client.HTTPException) as err:
            log.warning("azure prices: Retail Prices API unreachable (%s: %s); using %s prices",
                        type(err).__name__, err, "cached live" if self.live else "the offline catalog")
            self._next_refresh = now + timedelta(seconds=self._failure_backoff_s)
            return
        if not prices:
            log.warning("azure prices: no Linux consumption prices for %s; keeping catalog prices",
                        self._location)
        self._offerings = merge(self._catalog, prices)
        self.live = bool(prices)
        self._next_refresh = now + timedelta(seconds=self._ttl_s)
