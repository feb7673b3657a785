"""Contract harness for the Azure adapter: the real azure-mgmt-compute client against the local ARM fake.

One HTTPS fake (and one Retail Prices fake) serves the whole test session; each harness gets its own
resource group, so tests do not see each other's VMs. Fault knobs act on the fake, which answers with
Azure's own error bodies: capacity is AllocationFailed in the async operation, throttling is 429.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from burster.catalog import load_catalog
from burster.config import AzureConfig
from burster.model import Market, Offering
from providers.azure import AzureProvider, from_config
from tests.fakes.azure_arm import SUBSCRIPTION, TOKEN, FakeArm
from tests.fakes.azure_prices import FakeRetailPrices, items_from_offerings
from tests.fakes.azure_tls import LocalTls, make_tls
from tests.providers.harness import Harness

LOCATION = "eastus"
SSH_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDburstertestkey burster-test"
SUBNET = (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/net/providers/Microsoft.Network/"
          "virtualNetworks/burst-vnet/subnets/gpu")


class StaticToken:
    """A TokenCredential that always answers the fake's token."""

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken(TOKEN, int(time.time()) + 3600)


@dataclass
class AzureFakes:
    tls: LocalTls
    arm: FakeArm
    prices: FakeRetailPrices
    catalog: list[Offering]


_FAKES: AzureFakes | None = None


def fakes() -> AzureFakes:
    """The session's fakes, started on first use."""
    global _FAKES
    if _FAKES is None:
        tls = make_tls(Path(tempfile.mkdtemp(prefix="burster-azure-")))
        catalog = [o for o in load_catalog(providers=["azure"]) if o.region == LOCATION]
        arm = FakeArm(tls, sizes={LOCATION: {o.instance_type for o in catalog}, "westus2": set()},
                      page_size=3)
        prices = FakeRetailPrices(tls, items_from_offerings(catalog, LOCATION), page_size=7)
        _FAKES = AzureFakes(tls, arm, prices, catalog)
    return _FAKES


def config(group: str, **changes: Any) -> AzureConfig:
    f = fakes()
    values = {"enabled": True, "subscription_id": SUBSCRIPTION, "resource_group": group,
              "location": LOCATION, "subnet_id": SUBNET, "base_url": f.arm.url}
    return AzureConfig(**{**values, **changes})


def provider(group: str, *, cluster: str = "test", user_data: Callable[[Offering], str] | None = None,
             **overrides: Any) -> AzureProvider:
    """An adapter wired to the fakes (new resource group ``group`` is created in the fake)."""
    f = fakes()
    f.arm.add_group(group)
    options: dict[str, Any] = {"credential": StaticToken(), "connection_verify": f.tls.ca_path,
                               "polling_interval_s": 0.0, "prices_url": f.prices.url,
                               "ssh_public_key": SSH_KEY, "launch_wait_s": 30.0, **overrides}
    user_data = user_data or (lambda o: f"#cloud-config\n# {o.key}\n")
    return from_config(config(group), cluster=cluster, user_data=user_data, sleep=lambda s: None, **options)


def spot_offering() -> Offering:
    return next(o for o in fakes().catalog if o.market is Market.SPOT
                and o.instance_type == "Standard_NC24ads_A100_v4")


@contextmanager
def make_harness(tmp_path: Path) -> Iterator[Harness]:
    f = fakes()
    offering = spot_offering()
    adapter = provider(f"burster-{uuid.uuid4().hex[:8]}")
    try:
        yield Harness(
            provider=adapter,
            offering=offering,
            fail_capacity=lambda: f.arm.set_capacity(offering.instance_type, 0),
            throttle=f.arm.throttle_next,
            partial=lambda k: f.arm.set_capacity(offering.instance_type, k),
        )
    finally:
        f.arm.set_capacity(offering.instance_type, None)
        f.arm.throttle_next(0)
