"""Contract harness for the AWS adapter: real boto3 clients -> fault proxy -> moto server (HTTP).

One moto server (and proxy) serves the whole test session; each harness gets its own cluster name,
so the adapter's tag filters keep tests apart without resetting moto.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from burster.catalog import load_catalog
from burster.config import AwsConfig
from burster.model import Market, Offering
from tests.fakes.aws_proxy import AwsFaultProxy, moto_behind_proxy
from tests.providers.harness import Harness

REGION = "us-east-1"
ZONE_ID = "use1-az1"  # us-east-1b in moto's account
INSTANCE_TYPE = "g4dn.xlarge"  # in moto's instance-type offerings, so spot price history answers
AMI = "ami-12c6146b"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
_clusters = itertools.count(1)


@dataclass
class Backend:
    """The session-wide moto server, proxy and the resources every test shares."""

    proxy: AwsFaultProxy
    moto_url: str
    template_id: str
    subnet_ids: tuple[str, ...]
    queues: dict[str, str] = field(default_factory=dict)

    def client(self, service: str, *, via_proxy: bool = False) -> Any:
        import boto3

        url = self.proxy.url if via_proxy else self.moto_url
        return boto3.client(service, region_name=REGION, endpoint_url=url, **CREDENTIALS)

    def queue(self, name: str) -> str:
        if name not in self.queues:
            self.queues[name] = self.client("sqs").create_queue(QueueName=name)["QueueUrl"]
        return self.queues[name]


_backend: Backend | None = None
_stack = contextlib.ExitStack()
atexit.register(_stack.close)


def backend() -> Backend:
    """Start moto + proxy once per process and create the launch template."""
    global _backend
    if _backend is None:
        server, proxy = _stack.enter_context(moto_behind_proxy())
        host, port = server.get_host_and_port()
        import boto3

        ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=f"http://{host}:{port}", **CREDENTIALS)
        template = ec2.create_launch_template(
            LaunchTemplateName="burster-test-gpu",
            LaunchTemplateData={"ImageId": AMI, "InstanceType": "t3.micro"})["LaunchTemplate"]
        subnets = tuple(s["SubnetId"] for s in ec2.describe_subnets()["Subnets"])
        _backend = Backend(proxy, f"http://{host}:{port}", template["LaunchTemplateId"], subnets)
    return _backend


def fresh() -> Backend:
    """The shared backend with its fault proxy reset: each test's starting point."""
    shared = backend()
    shared.proxy.reset()
    return shared


def unique_name(prefix: str) -> str:
    """A name no earlier test on the shared moto server used (queues, templates)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@functools.cache
def catalog() -> tuple[Offering, ...]:
    return tuple(load_catalog(providers=["aws"]))


@functools.cache
def session() -> Any:
    """One boto3 session of fake credentials for every adapter (service models load once)."""
    import boto3

    return boto3.session.Session(**CREDENTIALS)


def offering() -> Offering:
    return next(o for o in catalog() if o.instance_type == INSTANCE_TYPE and o.zone == ZONE_ID
                and o.market is Market.SPOT)


def make_config(b: Backend, **changes: Any) -> AwsConfig:
    values: dict[str, Any] = {"enabled": True, "regions": (REGION,),
                              "launch_template_ids": {"default": b.template_id},
                              "subnet_ids": b.subnet_ids, "endpoint_url": b.proxy.url}
    values.update(changes)
    return AwsConfig(**values)


def make_provider(b: Backend, *, cluster: str | None = None, sleeps: list[float] | None = None,
                  cfg: AwsConfig | None = None, user_data: Callable[[Offering], str] | None = None,
                  **overrides: Any) -> Any:
    """The adapter under test, with an explicit session of fake credentials."""
    from providers.aws import from_config

    sink = sleeps if sleeps is not None else []
    overrides.setdefault("session", session())
    overrides.setdefault("catalog", catalog())
    return from_config(cfg or make_config(b), cluster=cluster or f"test-{next(_clusters)}",
                       user_data=user_data or (lambda o: f"#!/bin/bash\necho join {o.gpu_model}\n"),
                       sleep=sink.append, **overrides)


@contextmanager
def make_harness(tmp_path: Path) -> Iterator[Harness]:
    import pytest

    pytest.importorskip("moto", reason="the AWS harness needs moto[server] and boto3 (dev extras)")
    b = backend()
    b.proxy.reset()
    provider = make_provider(b)
    try:
        yield Harness(
            provider=provider,
            offering=offering(),
            fail_capacity=b.proxy.capacity_next,
            throttle=b.proxy.throttle,
            partial=b.proxy.partial_next,
        )
    finally:
        b.proxy.reset()
