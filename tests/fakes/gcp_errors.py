"""Compute Engine's error answers for the GCP fakes: the JSON error body ``{"error": {"code", "message",
"errors": [{"message", "domain", "reason"}], "status"}}``, its rate-quota answer, and the errorDetails of
an insert that found its zone out of capacity."""

from __future__ import annotations

from typing import Any

STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
          409: "ALREADY_EXISTS", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
EXHAUSTED_MSG = ("The zone 'projects/{p}/zones/{z}' does not have enough resources available to fulfill "
                 "the request.  Try a different zone, or try again later.")


class ApiError(Exception):
    """Answered as a Google JSON error body."""

    def __init__(self, code: int, message: str, reason: str, domain: str = "global",
                 details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.body: dict[str, Any] = {"error": {
            "code": code, "message": message,
            "errors": [{"message": message, "domain": domain, "reason": reason}],
            "status": STATUS.get(code, "UNKNOWN")}}
        if details:
            self.body["error"]["details"] = details
        self.code = code


def rate_limited(status: int = 429) -> ApiError:
    """Compute's rate-quota answer: 403 rateLimitExceeded (documented), or 429 from the front end."""
    msg = ("Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service "
           "'compute.googleapis.com' for consumer 'project_number:1234567890'.")
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED",
            "domain": "googleapis.com", "metadata": {"service": "compute.googleapis.com"}}
    return ApiError(status, msg, "rateLimitExceeded", "usageLimits", [info])


def zone_exhausted(project: str, zone: str, code: str) -> tuple[str, list[dict[str, Any]]]:
    """The message and errorDetails of an insert operation that ends in ``code`` for want of capacity."""
    msg = EXHAUSTED_MSG.format(p=project, z=zone)
    if code.endswith("_WITH_DETAILS"):
        msg = msg.split("  Try")[0] + "  '(resource type:compute)'."
    return msg, [
        {"help": {"links": [{"description": "Troubleshooting documentation",
                             "url": "https://cloud.google.com/compute/docs/resource-error"}]}},
        {"localizedMessage": {"locale": "en-US", "message": msg}}]
