"""Contract harness for the GCP adapter: real google-cloud-compute / -billing REST clients talking over
plain http to local fakes of the Compute Engine and Cloud Billing Catalog APIs (tests/fakes/gcp_*.py).

Each harness starts its own pair of fake servers (milliseconds); the fault knobs make the *server*
answer with GCE's real error shapes (capacity in the zone Operation, 429 rateLimitExceeded).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from burster.catalog import load_catalog
from burster.config import GcpConfig
from burster.model import Market, Offering
from providers.gcp import GcpProvider, from_config
from tests.fakes.gcp_billing import FakeBilling
from tests.fakes.gcp_compute import FakeCompute
from tests.providers.harness import Harness

PROJECT = "burster-test"
ZONE = "us-central1-a"
ZONES = ("us-central1-a", "us-central1-b", "us-east1-b")
MACHINE = "a2-highgpu-1g"


def catalog_offering(zone: str = ZONE, machine: str = MACHINE, market: Market = Market.SPOT) -> Offering:
    return next(o for o in load_catalog(providers=["gcp"])
                if (o.zone, o.instance_type, o.market) == (zone, machine, market))


@dataclass
class GcpBackend:
    compute: FakeCompute
    billing: FakeBilling
    compute_url: str
    billing_url: str
    sleeps: list[float] = field(default_factory=list)

    def provider(self, cluster: str = "c1", **overrides: Any) -> GcpProvider:
        from google.auth.credentials import AnonymousCredentials

        cfg = GcpConfig(enabled=True, project=PROJECT, zones=overrides.pop("zones", ZONES),
                        api_endpoint=self.compute_url,
                        instance_templates=overrides.pop("instance_templates", {}))
        kw: dict[str, Any] = {"credentials": AnonymousCredentials(), "billing_endpoint": self.billing_url}
        kw.update(overrides)
        return from_config(cfg, cluster=cluster, user_data=lambda o: f"#cloud-config\n# {o.key}\n",
                           sleep=self.sleeps.append, **kw)


@contextmanager
def gcp_backend() -> Iterator[GcpBackend]:
    compute, billing = FakeCompute(PROJECT, set(ZONES)), FakeBilling()
    try:
        yield GcpBackend(compute, billing, compute.start(), billing.start())
    finally:
        compute.stop()
        billing.stop()


@contextmanager
def make_harness(tmp_path: Path) -> Iterator[Harness]:
    with gcp_backend() as b:
        offering = catalog_offering()
        yield Harness(
            provider=b.provider(),
            offering=offering,
            fail_capacity=lambda: b.compute.set_capacity(ZONE, MACHINE, 0),
            throttle=b.compute.throttle_next,
            partial=lambda k: b.compute.set_capacity(ZONE, MACHINE, k),
        )
