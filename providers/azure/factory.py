"""Build the Azure adapter from ``clouds.azure``: validate the settings, then wire the SDK clients."""

from __future__ import annotations

import difflib
import os
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from burster.catalog import load_catalog
from burster.config import AzureConfig
from burster.errors import AuthError, ConfigError
from burster.model import Offering
from providers.azure import vms
from providers.azure.adapter import AzureProvider
from providers.azure.pricing import PRICES_URL, PriceBook

OVERRIDES = frozenset({
    "credential", "connection_verify", "prices_url", "catalog", "now", "polling_interval_s",
    "launch_wait_s", "ssh_public_key", "price_ttl_s", "attempts", "spot_max_price_usd",
})
_SUBNET = re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/"
                     r"virtualNetworks/[^/]+/subnets/[^/]+$", re.IGNORECASE)


def _require(value: str, key: str, how: str) -> None:
    if not value.strip():
        raise ConfigError(f"clouds.azure.{key} is empty; {how}")


def _validate(cfg: AzureConfig, catalog: list[Offering]) -> None:
    _require(cfg.subscription_id, "subscription_id", "set it to the subscription GUID "
             "(`az account show --query id -o tsv`)")
    _require(cfg.resource_group, "resource_group", "set it to the resource group the VMs go in")
    _require(cfg.location, "location", "set it to an Azure region name such as 'eastus'")
    _require(cfg.subnet_id, "subnet_id", "set it to the ARM id of the subnet the VMs' NICs join")
    locations = sorted({o.region for o in catalog})
    if cfg.location not in locations:
        close = difflib.get_close_matches(cfg.location.lower().replace(" ", ""), locations, n=5)
        hint = f"close matches: {', '.join(close)}" if close else f"GPU regions: {', '.join(locations)}"
        raise ConfigError(f"clouds.azure.location {cfg.location!r} has no GPU VM sizes in the price "
                          f"catalog; {hint}")
    if not _SUBNET.match(cfg.subnet_id):
        raise ConfigError("clouds.azure.subnet_id must look like /subscriptions/<id>/resourceGroups/<rg>/"
                          "providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>")
    unknown = sorted(set(cfg.image_reference) - vms.IMAGE_KEYS)
    if unknown:
        raise ConfigError(f"clouds.azure.image_reference has unknown key(s) {', '.join(unknown)}; "
                          f"use {', '.join(sorted(vms.IMAGE_KEYS))}")
    if cfg.base_url and not _https_url(cfg.base_url):
        raise ConfigError("clouds.azure.base_url must be an https:// URL with a host (Azure sends bearer "
                          "tokens only over TLS); leave it empty for the public endpoint")


def _https_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme == "https" and bool(parts.hostname) and parts.port != 0 and " " not in url
    except ValueError:  # a port out of range, a broken IPv6 literal
        return False


def default_credential(factory: Callable[..., Any], identity_id: str) -> Any:
    """DefaultAzureCredential; its managed-identity step signs in as ``identity_id`` (the controller's
    user-assigned identity) unless AZURE_CLIENT_ID already names an identity. An AuthError when it
    cannot be built (AZURE_CLIENT_CERTIFICATE_PATH names a missing or unreadable certificate)."""
    try:
        if identity_id and not os.environ.get("AZURE_CLIENT_ID"):
            return factory(identity_config={"resource_id": identity_id})
        return factory()
    except (OSError, ValueError) as err:  # the message of either may quote the file: name the type only
        where = f" {err.filename}" if isinstance(err, OSError) and err.filename else ""
        raise AuthError(f"azure: cannot set up DefaultAzureCredential ({type(err).__name__}{where}); check the "
                        f"AZURE_* variables set ({', '.join(_set_vars()) or 'none'}), e.g. that "
                        "AZURE_CLIENT_CERTIFICATE_PATH names a readable PEM or PKCS12 file",
                        provider="azure") from None


def _set_vars() -> list[str]:
    return sorted(k for k in os.environ if k.startswith("AZURE_") and os.environ[k])


def throwaway_ssh_key() -> str:
    """An RSA public key whose private half is discarded: Linux VMs need a key, nobody logs in."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=3072)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH)
    return public.decode() + " burster-no-login"


def from_config(cfg: AzureConfig, *, cluster: str, user_data: Callable[[Offering], str],
                sleep: Callable[[float], None] = time.sleep, **test_overrides: Any) -> AzureProvider:
    """The Azure adapter for ``clouds.azure``. ``test_overrides`` wire tests to local fakes:
    credential, connection_verify (CA bundle path), prices_url, catalog, now, polling_interval_s,
    launch_wait_s, ssh_public_key, price_ttl_s, attempts, spot_max_price_usd."""
    unknown = sorted(set(test_overrides) - OVERRIDES)
    if unknown:
        raise TypeError(f"unknown Azure adapter override(s): {', '.join(unknown)}")
    o = test_overrides
    catalog = list(o.get("catalog") or load_catalog(providers=["azure"]))
    _validate(cfg, catalog)
    try:
        from azure.identity import DefaultAzureCredential
        from azure.mgmt.compute import ComputeManagementClient
    except ImportError:
        raise ConfigError("clouds.azure is enabled but the Azure SDK is missing: "
                          "pip install 'burster[azure]'") from None
    verify = o.get("connection_verify", True)
    poll_s = float(o.get("polling_interval_s", 5.0))
    credential = o.get("credential") or default_credential(DefaultAzureCredential, cfg.identity_id)
    compute = ComputeManagementClient(
        credential, cfg.subscription_id, base_url=cfg.base_url or None, connection_verify=verify,
        retry_total=0,  # Burster's own backoff (with the injected sleep) handles 429 and 5xx
        polling_interval=poll_s, connection_timeout=10, read_timeout=60,
    )
    local = [x for x in catalog if x.region == cfg.location]
    extra = {k: o[k] for k in ("now",) if k in o}
    prices = PriceBook(local, location=cfg.location, url=o.get("prices_url", PRICES_URL),
                       cafile=verify if isinstance(verify, str) else None,
                       ttl_s=float(o.get("price_ttl_s", 3600.0)), **extra)
    return AzureProvider(
        compute, subscription_id=cfg.subscription_id, resource_group=cfg.resource_group,
        location=cfg.location, cluster=cluster, subnet_id=cfg.subnet_id, user_data=user_data,
        prices=prices, catalog=local, ssh_public_key=o.get("ssh_public_key") or throwaway_ssh_key(),
        image_reference=cfg.image_reference, sleep=sleep,
        polling_interval_s=poll_s, launch_wait_s=float(o.get("launch_wait_s", 900.0)),
        spot_max_price_usd=float(o.get("spot_max_price_usd", -1.0)), attempts=int(o.get("attempts", 5)),
        **extra,
    )
