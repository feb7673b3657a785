"""ARM error bodies for the Azure fakes: ``{"error": {"code", "message", "details"?}}``, as Compute
answers them ("Troubleshooting API throttling errors", the quota and SkuNotAvailable messages, a
failed allocation's operation error)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

ALLOCATION_FAILED = ("Allocation failed. We do not have sufficient capacity for the requested VM size in "
                     "this region. Read more about improving likelihood of allocation success at "
                     "http://aka.ms/allocation-guidance")
ZONAL_ALLOCATION_FAILED = ("Allocation failed. We do not have sufficient capacity for the requested VM "
                           "size in this zone. Read more about improving likelihood of allocation success "
                           "at http://aka.ms/allocation-guidance")


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def error(code: str, message: str, details: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """An ARM error body: ``{"error": {"code", "message", "details"?}}``."""
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = details
    return {"error": body}


def sku_not_available(resource_id: str, location: str, subscription: str) -> dict[str, Any]:
    return error("SkuNotAvailable", f"The requested size for resource '{resource_id}' is currently not "
                 f"available in location '{location}' zones '' for subscription '{subscription}'. Please "
                 "try another size or deploy to a different location or zones. See "
                 "https://aka.ms/azureskunotavailable for details.")


def quota_exceeded(family: str, location: str, limit: int, usage: int, required: int) -> dict[str, Any]:
    return error("OperationNotAllowed", "Operation could not be completed as it results in exceeding "
                 f"approved {family} Cores quota. Additional details - Deployment Model: Resource "
                 f"Manager, Location: {location}, Current Limit: {limit}, Current Usage: {usage}, "
                 f"Additional Required: {required}, (Minimum) New Limit Required: {usage + required}. "
                 "Submit a request for Quota increase at https://aka.ms/ProdportalCRP by specifying "
                 "parameters listed in the 'Details' section for deployment to succeed.")


def throttled(method: str, retry_after_s: int) -> tuple[dict[str, str], dict[str, Any]]:
    """The headers and body of Compute's 429 for a request of ``method``."""
    group = "PutVM3Min" if method == "PUT" else "GetVM3Min" if method == "GET" else "DeleteVM3Min"
    detail = json.dumps({"operationGroup": group, "startTime": now_iso(), "endTime": now_iso(),
                         "allowedRequestCount": 240, "measuredRequestCount": 241})
    body = error("OperationNotAllowed", "The server rejected the request because too many requests "
                 "have been received for this subscription.",
                 [{"code": "TooManyRequests", "target": group, "message": detail}])
    return {"Retry-After": str(retry_after_s),
            "x-ms-ratelimit-remaining-resource": f"Microsoft.Compute/{group};0"}, body
