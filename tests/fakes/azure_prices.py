"""A local HTTPS fake of the public Azure Retail Prices API (``GET /api/retail/prices``).

Shape per "Azure Retail Prices overview" (learn.microsoft.com/rest/api/cost-management/retail-prices/
azure-retail-prices): ``{"BillingCurrency": "USD", "CustomerEntityId": "Default",
"CustomerEntityType": "Retail", "Items": [...], "NextPageLink": <url or null>, "Count": n}``, pages of
1000 items followed through ``NextPageLink`` (``$skip``), an OData ``$filter`` of ``eq`` terms joined
by ``and`` / ``or`` with parentheses; values compare case-sensitively from api-version
2023-01-01-preview on and case-insensitively before. ``priceType`` filters the item field ``type``.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.fakes.azure_tls import HttpsServer, LocalTls

Item = dict[str, Any]
_TOKEN = re.compile(r"\s*(\(|\)|'(?:[^']|'')*'|[A-Za-z_][A-Za-z0-9_]*)")
_FIELDS = {"priceType": "type"}


def vm_item(sku: str, region: str, price: float, *, spot: bool = False, windows: bool = False,
            low_priority: bool = False, kind: str = "Consumption",
            start: str = "2024-01-01T00:00:00Z") -> Item:
    """One Virtual Machines meter row, field for field as the API returns it."""
    short = sku.removeprefix("Standard_").replace("_", " ")
    suffix = " Spot" if spot else " Low Priority" if low_priority else ""
    series = short.split(" ")[0].rstrip("0123456789")
    return {
        "currencyCode": "USD", "tierMinimumUnits": 0.0, "retailPrice": price, "unitPrice": price,
        "armRegionName": region, "location": region.upper(), "effectiveStartDate": start,
        "meterId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{sku}{region}{suffix}{windows}{kind}{start}")),
        "meterName": short + suffix, "productId": "DZH318Z0BQ4R", "skuId": "DZH318Z0BQ4R/00CX",
        "productName": f"Virtual Machines {series} Series" + (" Windows" if windows else ""),
        "skuName": short + suffix, "serviceName": "Virtual Machines", "serviceId": "DZH313Z7MMC8",
        "serviceFamily": "Compute", "unitOfMeasure": "1 Hour", "type": kind,
        "isPrimaryMeterRegion": True, "armSkuName": sku,
    }


def parse_filter(text: str, case_sensitive: bool) -> Callable[[Item], bool]:
    """A predicate for the OData subset the API documents: ``field eq 'v'``, and, or, parentheses."""
    tokens = [t for t in _TOKEN.findall(text)]
    if "".join(tokens).replace(" ", "") != re.sub(r"\s+", "", text):
        raise ValueError(f"cannot parse $filter {text!r}")
    pos = 0

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def peek() -> str:
        return tokens[pos] if pos < len(tokens) else ""

    def term() -> Callable[[Item], bool]:
        if peek() == "(":
            take()
            inner = expr()
            if take() != ")":
                raise ValueError("missing ')'")
            return inner
        name, op, literal = take(), take(), take()
        if op.lower() != "eq" or not literal.startswith("'"):
            raise ValueError(f"unsupported filter term {name} {op} {literal}")
        value = literal[1:-1].replace("''", "'")
        key = _FIELDS.get(name, name)
        if case_sensitive:
            return lambda item: str(item.get(key, "")) == value
        return lambda item: str(item.get(key, "")).lower() == value.lower()

    def conj() -> Callable[[Item], bool]:
        parts = [term()]
        while peek().lower() == "and":
            take()
            parts.append(term())
        return lambda item: all(p(item) for p in parts)

    def expr() -> Callable[[Item], bool]:
        parts = [conj()]
        while peek().lower() == "or":
            take()
            parts.append(conj())
        return lambda item: any(p(item) for p in parts)

    predicate = expr()
    if pos != len(tokens):
        raise ValueError(f"unexpected {peek()!r} in $filter")
    return predicate


class FakeRetailPrices:
    """Serves ``items``; ``fail_next(status)`` makes the next request fail; ``requests`` counts calls."""

    def __init__(self, tls: LocalTls, items: Iterable[Item], *, page_size: int = 1000) -> None:
        self.items = list(items)
        self.page_size = page_size
        self.failures: list[int] = []
        self.requests = 0
        self.lock = threading.Lock()
        self.server = HttpsServer(self, tls).start()
        self.url = self.server.url + "/api/retail/prices"

    def fail_next(self, status: int, times: int = 1) -> None:
        with self.lock:
            self.failures += [status] * times

    def stop(self) -> None:
        self.server.stop()

    def handle(self, method: str, target: str, headers: Mapping[str, str],
               raw: bytes) -> tuple[int, dict[str, str], Any]:
        status, body = self._answer(target) if method == "GET" else (405, None)
        return status, {}, body

    def _answer(self, target: str) -> tuple[int, Any]:
        split = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(split.query).items()}
        with self.lock:
            self.requests += 1
            if self.failures:
                status = self.failures.pop(0)
                return status, {"Error": {"Code": "ServiceUnavailable" if status >= 500 else "BadRequest",
                                          "Message": "The service is temporarily unavailable."}}
        if split.path != "/api/retail/prices":
            return 404, None
        version = query.get("api-version", "")
        try:
            keep = parse_filter(query.get("$filter", ""), version >= "2023-01-01-preview") \
                if query.get("$filter") else (lambda item: True)
        except ValueError as err:
            return 400, {"Error": {"Code": "BadRequest", "Message": str(err)}}
        matched = [i for i in self.items if keep(i)]
        skip = int(query.get("$skip", "0") or 0)
        page = matched[skip:skip + self.page_size]
        next_link = None
        if skip + self.page_size < len(matched):
            rest = {k: v for k, v in query.items() if k != "$skip"}
            next_link = f"{self.url}?{urlencode({**rest, '$skip': skip + self.page_size})}"
        return 200, {"BillingCurrency": "USD", "CustomerEntityId": "Default", "CustomerEntityType": "Retail",
                     "Items": page, "NextPageLink": next_link, "Count": len(page)}


def items_from_offerings(offerings: Iterable[Any], region: str,
                         scale: Mapping[str, float] | None = None) -> list[Item]:
    """Linux + Windows + Low Priority + DevTest rows for each catalog offering of ``region``."""
    scale = scale or {}
    out: list[Item] = []
    for o in offerings:
        if o.region != region:
            continue
        price = round(o.price_per_hour_usd * scale.get(o.instance_type, 1.0), 6)
        spot = o.market.value == "spot"
        out.append(vm_item(o.instance_type, region, price, spot=spot))
        out.append(vm_item(o.instance_type, region, round(price * 1.4, 6), spot=spot, windows=True))
        if not spot:
            out.append(vm_item(o.instance_type, region, round(price * 0.2, 6), low_priority=True))
            out.append(vm_item(o.instance_type, region, round(price * 0.5, 6), kind="DevTestConsumption"))
    return out
