"""Credentials and SDK clients (google-cloud-compute, google-cloud-billing), imported lazily.

All clients use the REST transport so ``api_endpoint`` may point at a local fake over plain http.
Operations are polled with our own ZoneOperationsClient: ``ExtendedOperation.result()`` would poll
the public endpoint whatever ``api_endpoint`` says.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from burster.errors import AuthError, ConfigError
from burster.redact import redact_url

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


def adc_file() -> Path:
    """Where ``gcloud auth application-default login`` writes its credentials."""
    if os.environ.get("CLOUDSDK_CONFIG"):
        return Path(os.environ["CLOUDSDK_CONFIG"]) / "application_default_credentials.json"
    if os.name == "nt":  # pragma: no cover
        return Path(os.environ.get("APPDATA", "")) / "gcloud" / "application_default_credentials.json"
    return Path.home() / ".config" / "gcloud" / "application_default_credentials.json"


def default_credentials() -> Any:
    """Application Default Credentials, or one AuthError naming every place that was looked at."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError, GoogleAuthError

    try:
        creds, _ = google.auth.default(scopes=list(SCOPES))
        return creds
    except (DefaultCredentialsError, GoogleAuthError, ValueError, OSError):  # OSError: a folder, no read access
        env = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
        env_text = (f"GOOGLE_APPLICATION_CREDENTIALS={env} (unreadable or not a credentials file)"
                    if env else "GOOGLE_APPLICATION_CREDENTIALS (not set)")
        adc = adc_file()
        raise AuthError(
            "gcp: no usable Google credentials. Looked for: "
            f"{env_text}; the gcloud ADC file {adc} ({'present but invalid' if adc.exists() else 'missing'})"
            "; the GCE/GKE metadata server (not reachable). Fix: run `gcloud auth application-default "
            "login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or run the "
            "controller on GCP with a service account attached.",
            provider="gcp",
        ) from None


@dataclass
class Clients:
    instances: Any
    zone_operations: Any
    global_operations: Any
    catalog: Any


def check_endpoint(url: str, key: str) -> None:
    """A ConfigError naming ``key`` unless ``url`` is empty, ``host[:port]`` or an http(s) URL."""
    if not url:
        return
    try:
        parts = urlsplit(url if "://" in url else f"https://{url}")
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port out of range, a broken IPv6 literal
        ok = False
    if not ok or any(c.isspace() for c in url):
        raise ConfigError(f"{key} {redact_url(url)!r} is not a usable endpoint; give an https:// URL or "
                          "host[:port] (empty: the public Google API endpoint)")


def make_clients(credentials: Any, api_endpoint: str = "", billing_endpoint: str = "") -> Clients:
    """The REST clients; a ConfigError when the SDK refuses its settings (mTLS environment variables)."""
    from google.auth.exceptions import GoogleAuthError

    try:
        return _clients(credentials, api_endpoint, billing_endpoint)
    except (GoogleAuthError, ValueError) as err:  # MutualTLSChannelError names the variable at fault
        raise ConfigError(f"gcp: cannot set up the Google API clients: {err}. Check clouds.gcp.api_endpoint "
                          "and the GOOGLE_API_USE_MTLS_ENDPOINT / GOOGLE_API_USE_CLIENT_CERTIFICATE "
                          "environment variables") from None


def _clients(credentials: Any, api_endpoint: str, billing_endpoint: str) -> Clients:
    from google.cloud import billing_v1, compute_v1

    opts = {"api_endpoint": api_endpoint} if api_endpoint else None
    bopts = {"api_endpoint": billing_endpoint} if billing_endpoint else None
    kw: dict[str, Any] = {"credentials": credentials, "transport": "rest", "client_options": opts}
    return Clients(
        instances=compute_v1.InstancesClient(**kw),
        zone_operations=compute_v1.ZoneOperationsClient(**kw),
        global_operations=compute_v1.GlobalOperationsClient(**kw),
        catalog=billing_v1.CloudCatalogClient(credentials=credentials, transport="rest",
                                              client_options=bopts),
    )
