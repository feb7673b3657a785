"""A local HTTP fake of the Cloud Billing Catalog API v1: ``GET /v1/services/{service}/skus``.

SKU resources follow the public reference (cloud.google.com/billing/docs/reference/rest/v1/
services.skus): ``name``, ``skuId``, ``description``, ``category`` (serviceDisplayName, resourceFamily,
resourceGroup, usageType), ``serviceRegions``, ``pricingInfo[].pricingExpression.tieredRates[].unitPrice``
as google.type.Money (``units`` an int64 string, ``nanos``), paged with ``pageSize``/``nextPageToken``.
The default SKUs are a small, plausible subset of Compute Engine (service 6F81-5844-456A) for
us-central1 / us-east1: A2 and A3 cores and RAM, A100 and H100 GPUs, on-demand and Spot.
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.fakes.gcp_compute import ApiError, rate_limited
from tests.fakes.gcp_http import serve_json

COMPUTE_SERVICE = "6F81-5844-456A"
REGIONS = ["us-central1", "us-east1", "us-east4", "us-west1"]


def money(usd: float) -> dict[str, Any]:
    units = int(usd)
    return {"currencyCode": "USD", "units": str(units), "nanos": round((usd - units) * 1e9)}


def sku(sku_id: str, description: str, group: str, usage: str, usd: float, unit: str = "h",
        regions: list[str] | None = None) -> dict[str, Any]:
    """One SKU resource with a single tier (startUsageAmount 0), as Compute Engine SKUs have."""
    return {
        "name": f"services/{COMPUTE_SERVICE}/skus/{sku_id}", "skuId": sku_id, "description": description,
        "category": {"serviceDisplayName": "Compute Engine", "resourceFamily": "Compute",
                     "resourceGroup": group, "usageType": usage},
        "serviceRegions": regions or REGIONS,
        "pricingInfo": [{
            "summary": "", "effectiveTime": "2026-01-01T08:00:00.000Z", "currencyConversionRate": 1,
            "pricingExpression": {
                "usageUnit": unit, "displayQuantity": 1,
                "usageUnitDescription": "hour" if unit == "h" else "gibibyte hour",
                "baseUnit": "s" if unit == "h" else "By.s",
                "baseUnitDescription": "second" if unit == "h" else "byte second",
                "baseUnitConversionFactor": 3600 if unit == "h" else 3865470566400,
                "tieredRates": [{"startUsageAmount": 0, "unitPrice": money(usd)}]},
            "aggregationInfo": {"aggregationLevel": "ACCOUNT", "aggregationInterval": "DAILY",
                                "aggregationCount": 1}}],
        "serviceProviderName": "Google",
        "geoTaxonomy": {"type": "MULTI_REGIONAL", "regions": regions or REGIONS},
    }


def default_skus() -> list[dict[str, Any]]:
    return [
        sku("A2C0-0001-0001", "A2 Instance Core running in Americas", "CPU", "OnDemand", 0.031611),
        sku("A2R0-0001-0002", "A2 Instance Ram running in Americas", "RAM", "OnDemand", 0.004237,
            "GiBy.h"),
        sku("A2C0-0001-0003", "Spot Preemptible A2 Instance Core running in Americas", "CPU",
            "Preemptible", 0.0124),
        sku("A2R0-0001-0004", "Spot Preemptible A2 Instance Ram running in Americas", "RAM",
            "Preemptible", 0.00166, "GiBy.h"),
        sku("A2C0-0001-0005", "Commitment v1: A2 Cpu in Americas for 1 Year", "CPU", "Commit1Yr", 0.0199),
        sku("A100-0001-0006", "Nvidia Tesla A100 GPU running in Americas", "GPU", "OnDemand", 2.75),
        sku("A100-0001-0007", "Nvidia Tesla A100 GPU attached to Spot Preemptible VMs running in "
            "Americas", "GPU", "Preemptible", 1.1),
        sku("A180-0001-0008", "Nvidia Tesla A100 80GB GPU running in Americas", "GPU", "OnDemand", 3.93),
        sku("A3C0-0001-0009", "A3 Instance Core running in Americas", "CPU", "OnDemand", 0.02),
        sku("A3R0-0001-0010", "A3 Instance Ram running in Americas", "RAM", "OnDemand", 0.0025, "GiBy.h"),
        sku("H100-0001-0011", "Nvidia H100 80GB GPU running in Americas", "GPU", "OnDemand", 9.8),
        sku("N1C0-0001-0012", "N1 Predefined Instance Core running in Americas", "CPU", "OnDemand",
            0.031611),
    ]


class FakeBilling:
    """Serves ``skus``; ``fail_next``/``throttle_next`` answer Google JSON error bodies."""

    def __init__(self, skus: list[dict[str, Any]] | None = None) -> None:
        self.skus = default_skus() if skus is None else skus
        self.requests: list[dict[str, str]] = []
        self._errors: list[ApiError] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.max_page = 5000  # the API's own cap on pageSize

    def fail_next(self, code: int, reason: str, message: str, calls: int = 1) -> None:
        self._errors += [ApiError(code, message, reason)] * calls

    def throttle_next(self, calls: int) -> None:
        self._errors += [rate_limited(429)] * calls

    def handle(self, path: str) -> tuple[int, dict[str, Any]]:
        url = urlparse(path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with self._lock:
            self.requests.append({"path": url.path, **q})
            if self._errors:
                err = self._errors.pop(0)
                return err.code, err.body
        if url.path != f"/v1/services/{COMPUTE_SERVICE}/skus":
            err = ApiError(404, f"Service with name {url.path} not found.", "notFound")
            return 404, err.body
        size = min(int(q.get("pageSize") or 5000), self.max_page)
        start = int(q.get("pageToken") or 0)
        out: dict[str, Any] = {"skus": self.skus[start:start + size]}
        out["nextPageToken"] = str(start + size) if start + size < len(self.skus) else ""
        return 200, out

    def _answer(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
        if method != "GET":  # the Cloud Billing catalog is read-only
            return 405, ApiError(405, f"Method {method} is not allowed.", "methodNotAllowed").body
        return self.handle(path)

    def start(self) -> str:
        self._server = serve_json(self._answer)
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
