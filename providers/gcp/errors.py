"""Translate Compute Engine failures into burster.errors, at the adapter boundary.

Two shapes reach us: an HTTP error (google.api_core ``GoogleAPICallError`` carrying the JSON body's
``errors[].reason``), and a zone Operation that ends DONE with ``error.errors[].code`` (how GCE
usually reports ZONE_RESOURCE_POOL_EXHAUSTED and QUOTA_EXCEEDED on insert). Messages keep GCE's text
(with URLs and anything token-like removed) and add what to do next.
"""

from __future__ import annotations

import re
from typing import Any

from burster.errors import (
    AuthError,
    CapacityError,
    ConfigError,
    InvalidRequestError,
    NotFoundError,
    ProviderError,
    QuotaError,
    ThrottledError,
    TransientError,
)

NAME = "gcp"
CAPACITY_CODES = frozenset({"ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
                            "RESOURCE_POOL_EXHAUSTED", "REGION_RESOURCE_POOL_EXHAUSTED"})
QUOTA_CODES = frozenset({"QUOTA_EXCEEDED", "QUOTA_LIMIT"})
THROTTLE_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED"})
QUOTA_REASONS = frozenset({"quotaExceeded", "QUOTA_EXCEEDED"})
AUTH_REASONS = frozenset({"forbidden", "insufficientPermissions", "accessNotConfigured", "required",
                          "authError", "IAM_PERMISSION_DENIED", "SERVICE_DISABLED"})
_SECRETS = re.compile(r"(?i)((?:key|access_token|token|signature|sig|password)=|bearer\s+)[^&\s'\"]+")
_TOKENS = re.compile(r"\bya29\.[\w.-]+|\b1//[\w.-]{20,}|-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*")
_URL_PREFIX = re.compile(r"^(GET|POST|PUT|PATCH|DELETE) \S+: ")
MAX_DETAIL = 400  # characters of the API's text kept (a proxy's error page can be kilobytes)

NEXT: dict[type[Exception], str] = {
    CapacityError: "GCE has no capacity for it now; Burster blocks this offering for a while and tries "
                   "another zone or market.",
    QuotaError: "raise the quota in the Cloud console (IAM & Admin > Quotas) or lower guards.max_nodes.",
    ThrottledError: "Compute Engine rate quota hit; Burster backs off and retries.",
    AuthError: "check the controller's credentials and that its role grants the permissions listed in "
               "docs/providers/gcp.md.",
    NotFoundError: "check clouds.gcp (project, zones, instance_templates, network, subnetwork).",
    ConfigError: "fix the request or clouds.gcp settings it came from.",
    InvalidRequestError: "GCE refused the request as invalid; Burster blocks this offering for a while: check "
                         "that the machine type exists in the zone and the clouds.gcp settings it came from.",
    TransientError: "a server-side or network failure; Burster retries with backoff.",
    ProviderError: "see the message above; Burster will retry on a later tick.",
}


def clean(text: str) -> str:
    """Drop the ``METHOD url:`` prefix api_core adds and anything that looks like a credential."""
    text = _SECRETS.sub(r"\1<redacted>", _URL_PREFIX.sub("", str(text)))
    text = " ".join(_TOKENS.sub("<redacted>", text).split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


def _make(cls: type[ProviderError], what: str, detail: str, offering_key: str) -> ProviderError:
    return cls(f"gcp: {what}: {clean(detail)} -- {NEXT[cls]}", provider=NAME, offering_key=offering_key)


def from_api_error(err: Exception, what: str, offering_key: str = "") -> ProviderError | ConfigError:
    """An SDK exception (HTTP error body, transport failure) as a burster error."""
    from google.api_core import exceptions as gexc
    from google.auth import exceptions as aexc
    from google.protobuf import json_format

    if isinstance(err, ProviderError | ConfigError):
        return err
    if isinstance(err, aexc.TransportError):
        return _make(TransientError, what, f"{type(err).__name__} while fetching credentials", offering_key)
    if isinstance(err, aexc.GoogleAuthError):
        said = clean(str(err.args[0]))[:200] if err.args else ""  # e.g. "invalid_grant: Token has been expired"
        return _make(AuthError, what, f"the credentials were refused or cannot be refreshed "
                     f"({type(err).__name__}{': ' + said if said else ''})", offering_key)
    if isinstance(err, json_format.ParseError | UnicodeDecodeError):  # a proxy's page, a cut-off answer
        return _make(TransientError, what, f"the answer is not the API's JSON ({type(err).__name__}); if this "
                     "persists check clouds.gcp.api_endpoint and any HTTP(S) proxy in between", offering_key)
    if not isinstance(err, gexc.GoogleAPICallError):
        if isinstance(err, gexc.RetryError | TimeoutError | ConnectionError | OSError):
            return _make(TransientError, what, type(err).__name__, offering_key)
        try:
            import requests

            if isinstance(err, requests.RequestException):
                return _make(TransientError, what, f"{type(err).__name__} talking to the API",
                             offering_key)
        except ImportError:  # pragma: no cover - requests ships with google-auth
            pass
        return _make(ProviderError, what, f"{type(err).__name__}: {err}", offering_key)
    code = int(err.code or 0)
    reasons = {str(e.get("reason", "")) for e in (err.errors or []) if isinstance(e, dict)}
    if err.reason:
        reasons.add(str(err.reason))
    message = str(err.message or "")
    if reasons & CAPACITY_CODES or any(c in message for c in CAPACITY_CODES):
        cls: type[ProviderError] = CapacityError
    elif code == 429 or reasons & THROTTLE_REASONS:
        cls = ThrottledError
    elif reasons & QUOTA_REASONS or "QUOTA_EXCEEDED" in message:
        cls = QuotaError
    elif code in (401, 403):
        cls = AuthError
    elif code == 404:
        cls = NotFoundError
    elif code == 400:  # a request GCE calls invalid (a machine type not in the zone, a bad template):
        cls = InvalidRequestError  # the cloud's answer, reported in the pass; the offering is blocked
    elif code >= 500 or code == 0:
        cls = TransientError
    else:
        cls = ProviderError
    return _make(cls, what, f"HTTP {code} {clean(message)}", offering_key)


def operation_errors(op: Any) -> list[tuple[str, str]]:
    """``[(code, message)]`` of a DONE Operation's ``error.errors``; empty when it succeeded."""
    if "error" not in op:
        return []
    return [(str(e.code), str(e.message)) for e in op.error.errors]


def from_operation(op: Any, what: str, offering_key: str = "") -> ProviderError | None:
    """The error a DONE zone Operation ended with, or None when it succeeded. Never a retryable one:
    GCE answers a repeated requestId with this same Operation, so only a new request id can help."""
    errors = operation_errors(op)
    if not errors:
        return None
    codes = {c for c, _ in errors}
    detail = "; ".join(f"{c}: {m}" for c, m in errors)
    http = int(getattr(op, "http_error_status_code", 0) or 0)
    if codes & CAPACITY_CODES:
        cls: type[ProviderError] = CapacityError
    elif codes & QUOTA_CODES:
        cls = QuotaError
    elif "RATE_LIMIT_EXCEEDED" in codes:
        cls = ProviderError  # not ThrottledError: a retry under the same requestId gets this Operation again
    elif codes & {"PERMISSIONS_ERROR", "PERMISSION_DENIED"} or http in (401, 403):
        cls = AuthError
    elif codes & {"RESOURCE_NOT_FOUND", "NOT_FOUND"} or http == 404:
        cls = NotFoundError
    else:  # a 5xx too: not TransientError, for the same reason
        cls = ProviderError
    return _make(cls, what, detail, offering_key)
