"""AWS adapter specifics over the real wire: boto3 -> fault proxy -> moto server."""

from __future__ import annotations

import base64
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("moto", reason="the AWS tests need moto[server] and boto3 (dev extras)")

from burster.clock import FakeClock
from burster.errors import AuthError, CapacityError, ConfigError, NotFoundError, QuotaError, ThrottledError
from burster.lifecycle import NodeState
from burster.model import Market
from burster.plan import request_id
from providers.aws import from_config
from providers.aws.errors import scrub
from tests.providers import harness_aws as h

LABELS = {"team": "vision", "project": "detector", "sprint": "S42"}
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def b() -> h.Backend:
    return h.fresh()


def _tags(b: h.Backend, instance_id: str) -> dict[str, str]:
    inst = b.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    return {t["Key"]: t["Value"] for t in inst.get("Tags", [])}


def test_importing_the_adapter_does_not_import_boto3() -> None:
    code = "import sys, providers.aws; assert 'boto3' not in sys.modules and 'botocore' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_launch_sends_an_instant_fleet_with_client_token_tags_and_subnet(b: h.Backend) -> None:
    p = h.make_provider(b, cluster="fleet-shape")
    rid = request_id("shape", 1)
    nodes = p.launch(h.offering(), 2, request_id=rid, labels=LABELS)
    sent = b.proxy.last("CreateFleet")
    assert sent["Type"] == "instant" and sent["ClientToken"] == rid
    assert sent["SpotOptions.AllocationStrategy"] == "price-capacity-optimized"
    assert sent["TargetCapacitySpecification.DefaultTargetCapacityType"] == "spot"
    assert sent["TargetCapacitySpecification.TotalTargetCapacity"] == "2"
    assert sent["LaunchTemplateConfigs.1.Overrides.1.InstanceType"] == "g4dn.xlarge"
    subnet = sent["LaunchTemplateConfigs.1.Overrides.1.SubnetId"]
    zone = b.client("ec2").describe_subnets(SubnetIds=[subnet])["Subnets"][0]["AvailabilityZoneId"]
    assert zone == h.ZONE_ID
    assert {sent["TagSpecification.1.ResourceType"], sent["TagSpecification.2.ResourceType"]} == {
        "instance", "fleet"}
    for node in nodes:
        assert node.state is NodeState.LAUNCHING and node.team == "vision" and node.request_id == rid
        assert _tags(b, node.node_id) == {**LABELS, "managed-by": "burster", "burster-cluster": "fleet-shape",
                                          "burster-request-id": rid}


def test_pool_user_data_rides_on_a_reused_launch_template_version(b: h.Backend) -> None:
    p = h.make_provider(b, cluster="userdata")
    node = p.launch(h.offering(), 1, request_id=request_id("ud", 1))[0]
    raw = b.client("ec2").describe_instance_attribute(InstanceId=node.node_id, Attribute="userData")
    assert base64.b64decode(raw["UserData"]["Value"]).decode() == "#!/bin/bash\necho join T4\n"
    p.launch(h.offering(), 1, request_id=request_id("ud", 2))
    restarted = h.make_provider(b, cluster="userdata")  # a new process finds the version by description
    restarted.launch(h.offering(), 1, request_id=request_id("ud", 3))
    assert b.proxy.actions().count("CreateLaunchTemplateVersion") <= 1


def test_on_demand_launch_and_listing_maps_back_to_the_catalog_offering(b: h.Backend) -> None:
    p = h.make_provider(b, cluster="ondemand")
    od = replace(h.offering(), market=Market.ON_DEMAND, price_per_hour_usd=0.526)
    nodes = p.launch(od, 1, request_id=request_id("od", 1), labels=LABELS)
    sent = b.proxy.last("CreateFleet")
    assert sent["TargetCapacitySpecification.DefaultTargetCapacityType"] == "on-demand"
    assert "SpotOptions.AllocationStrategy" not in sent
    listed = {n.node_id: n for n in p.list_nodes()}
    got = listed[nodes[0].node_id]
    assert got.state is NodeState.READY and got.offering.key == od.key and got.team == "vision"
    assert got.launched_at.tzinfo is not None


def test_list_and_terminate_touch_only_this_clusters_instances(b: h.Backend) -> None:
    mine, other = h.make_provider(b, cluster="mine"), h.make_provider(b, cluster="other")
    a = mine.launch(h.offering(), 1, request_id=request_id("own", 1))[0]
    x = other.launch(h.offering(), 1, request_id=request_id("own", 2))[0]
    assert {n.node_id for n in mine.list_nodes()} == {a.node_id}
    mine.terminate([a.node_id, x.node_id, "i-0123456789abcdef0"], request_id=request_id("t", 1))
    states = {n.node_id: n.state for n in mine.list_nodes()}
    assert states[a.node_id] in (NodeState.TERMINATING, NodeState.TERMINATED)
    assert {n.node_id: n.state for n in other.list_nodes()}[x.node_id] is NodeState.READY
    mine.terminate([a.node_id], request_id=request_id("t", 2))  # idempotent


def test_capacity_error_blocks_the_offering_until_the_ttl_passes(b: h.Backend) -> None:
    clock = FakeClock()
    p = h.make_provider(b, cluster="blocked", now=clock.now, block_ttl_s=600)
    offer = h.offering()
    b.proxy.capacity_next()
    with pytest.raises(CapacityError) as info:
        p.launch(offer, 1, request_id=request_id("blk", 1))
    assert info.value.offering_key == offer.key and "InsufficientInstanceCapacity" in str(info.value)
    b.proxy.fail_pricing(10)
    by_key = {o.key: o for o in p.offerings()}
    assert by_key[offer.key].available is False
    assert by_key[replace(offer, market=Market.ON_DEMAND).key].available is True
    clock.advance(601)
    assert {o.key: o for o in p.offerings()}[offer.key].available is True


@pytest.mark.parametrize(("code", "status", "expected"), [
    ("InsufficientInstanceCapacity", 500, CapacityError),
    ("MaxSpotInstanceCountExceeded", 400, QuotaError),
    ("VcpuLimitExceeded", 400, QuotaError),
    ("UnauthorizedOperation", 403, AuthError),
    ("InvalidLaunchTemplateId.NotFound", 400, NotFoundError),
])
def test_ec2_error_bodies_map_to_the_error_tree(b: h.Backend, code: str, status: int,
                                                expected: type[Exception]) -> None:
    p = h.make_provider(b)
    b.proxy.fail_next("CreateFleet", code, "You are not authorized. Encoded authorization failure "
                      "message: AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", status)
    with pytest.raises(expected) as info:
        p.launch(h.offering(), 1, request_id=request_id("err", code))
    text = str(info.value)
    assert code in text and info.value.offering_key == h.offering().key  # type: ignore[attr-defined]
    assert "AKIAIOSFODNN7EXAMPLE" not in text and "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" not in text
    assert p.list_nodes() == []


def test_throttling_backs_off_then_gives_up_as_throttled_error(b: h.Backend) -> None:
    sleeps: list[float] = []
    p = h.make_provider(b, sleeps=sleeps, attempts=3)
    b.proxy.throttle(2)
    assert len(p.launch(h.offering(), 1, request_id=request_id("thr", 1))) == 1
    assert len(sleeps) == 2
    b.proxy.throttle(3)
    with pytest.raises(ThrottledError):
        p.list_nodes()
    assert len(sleeps) == 4


def test_partial_fleet_keeps_the_nodes_and_blocks_the_pool(b: h.Backend) -> None:
    from burster.errors import PartialLaunchError

    p = h.make_provider(b, cluster="partial")
    b.proxy.partial_next(2)
    with pytest.raises(PartialLaunchError) as info:
        p.launch(h.offering(), 3, request_id=request_id("part", 1))
    assert len(info.value.nodes) == 2 and isinstance(info.value.cause, CapacityError)
    b.proxy.fail_pricing(10)
    assert {o.key: o for o in p.offerings()}[h.offering().key].available is False
    again = p.launch(h.offering(), 3, request_id=request_id("part", 1))  # retry: nothing new
    assert {n.node_id for n in again} == {n.node_id for n in info.value.nodes}  # type: ignore[attr-defined]


def test_missing_credentials_name_every_place_looked(b: h.Backend, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(AuthError) as info:
        from_config(h.make_config(b), cluster="nocreds", user_data=lambda o: "")
    text = str(info.value)
    for looked in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "~/.aws/credentials", "instance role"):
        assert looked in text


def test_credentials_from_the_environment_are_enough(b: h.Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    p = from_config(h.make_config(b), cluster="envcreds", user_data=lambda o: "", sleep=lambda s: None)
    assert p.name == "aws" and p.list_nodes() == []


def test_unknown_region_and_instance_type_list_close_matches(b: h.Backend) -> None:
    with pytest.raises(ConfigError, match="us-east-1"):
        h.make_provider(b, cfg=h.make_config(b, regions=("us-eest-1",)))
    p = h.make_provider(b)
    with pytest.raises(NotFoundError, match=r"g4dn\.xlarge"):
        p.launch(replace(h.offering(), instance_type="g4dn.xlarg"), 1, request_id=request_id("typo", 1))
    with pytest.raises(ConfigError, match=r"clouds\.aws\.regions"):
        p.launch(replace(h.offering(), region="us-west-2"), 1, request_id=request_id("typo", 2))


def test_missing_launch_template_for_a_gpu_class_is_a_config_error(b: h.Backend) -> None:
    p = h.make_provider(b, cfg=h.make_config(b, launch_template_ids={"A100": b.template_id}))
    with pytest.raises(ConfigError, match=r"launch_template_ids"):
        p.launch(h.offering(), 1, request_id=request_id("lt", 1))
    with pytest.raises(ConfigError, match=r"launch_template_ids"):
        h.make_provider(b, cfg=h.make_config(b, launch_template_ids={}))


def test_without_subnets_the_zone_name_is_resolved_from_the_zone_id(b: h.Backend) -> None:
    p = h.make_provider(b, cfg=h.make_config(b, subnet_ids=()))
    p.launch(h.offering(), 1, request_id=request_id("az", 1))
    zones = b.client("ec2").describe_availability_zones()["AvailabilityZones"]
    name = next(z["ZoneName"] for z in zones if z["ZoneId"] == h.ZONE_ID)
    assert b.proxy.last("CreateFleet")["LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone"] == name


def test_scrub_removes_keys_signatures_and_signed_urls() -> None:
    text = ("key AKIAIOSFODNN7EXAMPLE secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY url "
            "https://b.s3.amazonaws.com/k?X-Amz-Signature=abc123&X-Amz-Credential=x token=1 "
            "X-Amz-Security-Token=FQoGZXIvYXdzEXAMPLE")
    out = scrub(text)
    for secret in ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI", "abc123", "FQoGZXIvYXdzEXAMPLE"):
        assert secret not in out
    assert len(scrub("x" * 1000)) <= 300


def test_session_override_is_used_not_the_environment(b: h.Backend) -> None:
    import boto3

    session = boto3.session.Session(**h.CREDENTIALS)
    p = from_config(h.make_config(b), cluster="sess", user_data=lambda o: "", session=session)
    assert p.list_nodes() == []


def test_a_denied_template_version_names_the_missing_permission(b: h.Backend) -> None:
    fresh = "#!/bin/bash\necho a bootstrap no earlier test made a version for\n"
    p = h.make_provider(b, cluster="denied", user_data=lambda o: fresh)
    b.proxy.fail_next("CreateLaunchTemplateVersion", "UnauthorizedOperation",
                      "You are not authorized to perform this operation.", 403)
    with pytest.raises(AuthError, match="ec2:CreateLaunchTemplateVersion"):
        p.launch(h.offering(), 1, request_id=request_id("denied", 1))
    with pytest.raises(ConfigError, match="regions is empty"):
        h.make_provider(b, cfg=h.make_config(b, regions=()))
