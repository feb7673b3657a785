"""Translate azure-core / ARM errors into Burster's error tree.

ARM error bodies are ``{"error": {"code": ..., "message": ..., "details": [...]}}``; an async
operation that failed carries the same ``error`` object in its status resource. Mapping is by the
ARM error code first and the HTTP status second, because Compute reuses codes across statuses
(``OperationNotAllowed`` is a quota error at 409 and a throttling error at 429).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from burster.errors import (
    AuthError,
    CapacityError,
    NotFoundError,
    ProviderError,
    QuotaError,
    ThrottledError,
    TransientError,
)

PROVIDER = "azure"
CAPACITY_CODES = frozenset({
    "AllocationFailed", "ZonalAllocationFailed", "OverconstrainedAllocationRequest",
    "OverconstrainedZonalAllocationRequest", "SkuNotAvailable", "SpotVMEvictedDuringCreation",
})
QUOTA_CODES = frozenset({"QuotaExceeded", "OperationNotAllowed"})
QUOTA_WORDS = ("quota", "LowPriorityCores")
AUTH_CODES = frozenset({"AuthenticationFailed", "InvalidAuthenticationToken", "AuthorizationFailed",
                        "InvalidAuthenticationTokenTenant", "ExpiredAuthenticationToken",
                        "LinkedAuthorizationFailed"})
NOT_FOUND_CODES = frozenset({"ResourceNotFound", "ResourceGroupNotFound", "SubscriptionNotFound", "NotFound"})
TRANSIENT_CODES = frozenset({"InternalServerError", "InternalExecutionError", "RetryableError",
                             "ServiceUnavailable", "GatewayTimeout", "Conflict"})
CREDENTIAL_HELP = (
    "Azure credentials not found. DefaultAzureCredential looked for: the environment variables "
    "AZURE_TENANT_ID + AZURE_CLIENT_ID + AZURE_CLIENT_SECRET (or AZURE_CLIENT_CERTIFICATE_PATH); "
    "workload identity (AZURE_FEDERATED_TOKEN_FILE); a managed identity (on an Azure VM or AKS: the "
    "user-assigned one clouds.azure.identity_id names, or AZURE_CLIENT_ID's); and an Azure CLI "
    "(`az login`), Azure PowerShell or azd login. Set one of them for subscription {subscription}, "
    "e.g. run `az login`, then retry."
)
_BEARER = re.compile(r"(?i)\beyJ[\w-]+\.[\w-]+\.[\w-]*|(bearer\s+|(?:secret|password|token|sig)=)[^\s&'\"]+")
_ENV_VARS = ("AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
             "AZURE_FEDERATED_TOKEN_FILE")


class BadAnswer(ValueError):
    """An answer that is not shaped like an ARM resource (a proxy's page, a wrong ``base_url``)."""


def sdk_errors() -> tuple[type[BaseException], ...]:
    """What an SDK call raises for the cloud's answer (``translate`` maps each): azure-core's errors and
    an answer it cannot decode. Any other ValueError is a bug of ours, left to surface."""
    from azure.core.exceptions import AzureError, DeserializationError

    return AzureError, DeserializationError, json.JSONDecodeError, UnicodeDecodeError, BadAnswer


def _short(text: str, limit: int = 400) -> str:
    text = " ".join(_BEARER.sub(lambda m: (m.group(1) or "") + "<redacted>", text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def credential_error(subscription: str, said: str = "") -> AuthError:
    """One clear message naming what the credential chain looked for (names only, never values) and,
    from ``said`` (the chain's error), the last credential it tried: the one that failed, if any did."""
    present = [v for v in _ENV_VARS if os.environ.get(v)]
    seen = f" Set now: {', '.join(present)}." if present else " None of those variables is set."
    last = _last_attempt(said)
    last = f" Last tried: {_short(last, 300)}" if last else ""
    return AuthError(CREDENTIAL_HELP.format(subscription=subscription or "<unset>") + seen + last,
                     provider=PROVIDER)


def _last_attempt(said: str) -> str:
    """The last credential a chain's error lists ("\tName: why"), or a lone credential's first line."""
    chain = said.partition("Attempted credentials:")[2]
    lines = [line for line in chain.splitlines() if line.startswith("\t")] if chain else said.splitlines()[:1]
    return next((line.strip() for line in reversed(lines) if line.strip()), "")


def code_and_message(err: Any) -> tuple[str, str]:
    """The ARM error code and message of an azure-core HttpResponseError ("" when absent)."""
    odata = getattr(err, "error", None)
    code = str(getattr(odata, "code", "") or "")
    message = str(getattr(odata, "message", "") or "")
    if not message:
        message = str(getattr(err, "reason", "") or "")
    return code, message


def translate(err: BaseException, *, doing: str, offering_key: str = "", subscription: str = "",
              retry_after_s: float | None = None) -> ProviderError:
    """Map one azure-core exception raised while ``doing`` something to a ProviderError."""
    from azure.core.exceptions import (
        ClientAuthenticationError,
        DecodeError,
        DeserializationError,
        HttpResponseError,
        ServiceRequestError,
        ServiceResponseError,
    )

    kw: dict[str, Any] = {"provider": PROVIDER, "offering_key": offering_key}
    if isinstance(err, ClientAuthenticationError) and getattr(err, "response", None) is None:
        out: ProviderError = credential_error(subscription, str(getattr(err, "message", "") or ""))
        out.offering_key = offering_key
        return out
    if isinstance(err, ServiceRequestError | ServiceResponseError):
        return TransientError(f"azure: network error while {doing}: {_short(str(err), 200)}; "
                              "retrying with backoff", **kw)
    if isinstance(err, DecodeError | DeserializationError | json.JSONDecodeError | UnicodeDecodeError | BadAnswer):
        return TransientError(f"azure: the answer to {doing} is not Azure Resource Manager JSON "
                              f"({type(err).__name__}); retrying with backoff. If this persists check "
                              "clouds.azure.base_url (empty: the public endpoint) and any HTTPS proxy", **kw)
    if not isinstance(err, HttpResponseError):
        return ProviderError(f"azure: unexpected error while {doing}: {type(err).__name__}", **kw)
    status = err.status_code or 0
    code, message = code_and_message(err)
    said = f"{code or status}: {_short(message)}"
    if status == 429:
        wait = f" (Azure asked to wait {retry_after_s:g}s)" if retry_after_s else ""
        throttled = ThrottledError(f"azure throttled {doing}{wait}: {said}; retrying with backoff", **kw)
        throttled.retry_after_s = retry_after_s or None
        return throttled
    if code in AUTH_CODES or status in (401, 403):
        return AuthError(f"azure refused {doing}: {said}. Check that the identity has the Burster role "
                         "(docs/providers/azure.md) on the resource group and that its credentials "
                         "are current.", **kw)
    if isinstance(err, ClientAuthenticationError):  # the token service refused it (AAD often answers 400)
        return AuthError(f"azure: the credentials were refused while {doing}: {said}. Check the controller's "
                         "identity (docs/providers/azure.md) and that its secret or certificate is current.", **kw)
    if code in CAPACITY_CODES:
        return CapacityError(f"azure has no capacity for {doing}: {said}. Burster blocks this offering "
                             "for a while and tries another size, market or region.", **kw)
    if code in QUOTA_CODES and any(w.lower() in message.lower() for w in QUOTA_WORDS):
        return QuotaError(f"azure quota stops {doing}: {said}. Request a quota increase for this VM "
                          "family (or spot LowPriorityCores) or lower guards.max_nodes.", **kw)
    if code in NOT_FOUND_CODES or status == 404:
        return NotFoundError(f"azure: not found while {doing}: {said}. Check clouds.azure "
                             "subscription_id, resource_group and location.", **kw)
    if code in TRANSIENT_CODES or status >= 500:
        return TransientError(f"azure failed {doing} ({status}) {said}; retrying with backoff", **kw)
    return ProviderError(f"azure rejected {doing}: {said}. Check the clouds.azure settings "
                         "(subnet_id, image_reference).", **kw)


def retry_after_of(err: BaseException) -> float | None:
    """The Retry-After header of a throttled response, in seconds."""
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        return float(headers.get("Retry-After", ""))
    except (TypeError, ValueError):
        return None
