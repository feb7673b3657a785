"""AWS adapter rules a third mutation audit found unpinned (errors, session, fleets, offers,
interruptions), and the bugs it found:

- an ``AWS_PROFILE`` naming no profile made boto3 raise a raw ``ProfileNotFound`` while the adapter
  was built (no caller expects it): it is an AuthError naming the profile and the fix;
- TerminateInstances takes up to 1000 instance ids a call (EC2 API reference); the adapter sent all
  of a region's in one: it sends them in batches of at most ``FILTER_VALUES_MAX`` (200);
- error texts read ``...capacity.. an AWS-side failure`` when AWS's message ended in a period;
- a FIPS (``sqs-fips.<region>.amazonaws.com``), dual-stack (``sqs.<region>.api.aws``) or VPC
  endpoint queue URL was read in ``clouds.aws.regions[0]``, not in the queue's region;
- a lost credential met mid-run named the profile ``'default'``, not the session's.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("moto", reason="the AWS tests need moto[server] and boto3 (dev extras)")

from burster.errors import AuthError, ConfigError, NotFoundError, ProviderError
from burster.model import Market
from burster.plan import request_id
from providers.aws import from_config
from providers.aws.errors import Caller, class_for_code, error_for_code, scrub, translate
from providers.aws.interruptions import queue_region
from providers.aws.offers import Inventory
from tests.providers import harness_aws as h
from tests.providers.test_aws_interruptions import variant


@pytest.fixture
def b() -> h.Backend:
    return h.fresh()


# --- error texts ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("message", "shown"),
    [
        ("We currently do not have sufficient capacity.", "sufficient capacity. EC2 has no capacity"),
        ("no capacity", "no capacity. EC2 has no capacity"),
        ("", "InsufficientInstanceCapacity. EC2 has no capacity"),
    ],
)
def test_an_error_text_has_one_period_between_the_aws_message_and_the_advice(message: str, shown: str) -> None:
    err = error_for_code("InsufficientInstanceCapacity", message, op="ec2:CreateFleet")
    assert shown in str(err) and ".." not in str(err) and ": ." not in str(err)
    long = error_for_code("InternalError", "x" * 400, op="ec2:DescribeInstances")
    assert "x... an AWS-side" in str(long)


def test_an_error_names_its_offering_and_the_request_id_mismatch_keeps_it() -> None:
    key = h.offering().key
    err = error_for_code("VcpuLimitExceeded", "limit", op="ec2:CreateFleet", offering_key=key)
    assert str(err).startswith(f"aws ec2:CreateFleet of {key}: VcpuLimitExceeded: limit.")
    reused = error_for_code("IdempotentParameterMismatch", "reused", op="ec2:CreateFleet", offering_key=key)
    assert reused.offering_key == key


def test_any_not_found_exception_code_is_not_found() -> None:
    assert class_for_code("ResourceNotFoundException", 400) is NotFoundError
    assert class_for_code("NotFoundish", 400) is ProviderError


def test_scrub_removes_role_key_ids_session_tokens_and_whole_signed_urls() -> None:
    token = "IQoJb3JpZ2luX2VjEXAMPLE" + "A/b+c" * 60
    out = scrub(
        f"key ASIAIOSFODNN7EXAMPLE SessionToken={token} at "
        f"https://b.s3.amazonaws.com/k?x-amz-date=1&X-Amz-Expires=60&X-Amz-Signature=abc done"
    )
    assert "ASIAIOSFODNN7EXAMPLE" not in out and "IQoJb3JpZ2lu" not in out
    assert "[signed URL redacted] done" in out and "b.s3.amazonaws.com" not in out


# --- credentials and session ---------------------------------------------------------------------
def test_lost_credentials_mid_run_name_the_sessions_profile() -> None:
    from botocore import exceptions as bx

    err = translate(bx.NoCredentialsError(), op="ec2:DescribeInstances", profile="gpu-burst")
    assert isinstance(err, AuthError) and "profile 'gpu-burst'" in str(err)

    def refused() -> None:
        raise bx.CredentialRetrievalError(provider="sso", error_msg="expired")

    with pytest.raises(AuthError, match="profile 'gpu-burst'"):
        Caller(lambda s: None, profile="gpu-burst")("ec2:DescribeInstances", refused)


def _profile_without_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, profile: str) -> None:
    """AWS_PROFILE names a profile of ~/.aws/config that holds no credentials; no other source has any."""
    for var in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(var, raising=False)
    config = tmp_path / "config"
    config.write_text("[profile other]\nregion = us-east-1\n[profile gpu-burst]\nregion = us-east-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_PROFILE", profile)


def test_credentials_lost_after_start_name_the_sessions_profile(
    b: h.Backend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import boto3

    _profile_without_credentials(monkeypatch, tmp_path, "gpu-burst")

    class Lost(boto3.session.Session):  # type: ignore[misc]
        """Credentials seen when the adapter starts, gone by its first call (an expired role)."""

        def get_credentials(self) -> Any:
            return object()

    p = h.make_provider(b, session=Lost(), attempts=1)
    with pytest.raises(AuthError, match="profile 'gpu-burst'"):
        p.list_nodes()


def test_a_non_aws_failure_inside_a_call_is_not_disguised() -> None:
    def broken() -> None:
        raise KeyError("AvailabilityZones")

    with pytest.raises(KeyError):
        Caller(lambda s: None)("ec2:DescribeAvailabilityZones", broken)


def test_an_aws_profile_that_does_not_exist_is_an_auth_error_naming_it(
    b: h.Backend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _profile_without_credentials(monkeypatch, tmp_path, "gpu-bursts")
    with pytest.raises(AuthError, match=r"profile 'gpu-bursts' \(AWS_PROFILE\) is not in ~/\.aws/config"):
        from_config(h.make_config(b), cluster="noprofile", user_data=lambda o: "")


def test_regions_of_every_partition_are_known(b: h.Backend) -> None:
    for region in ("cn-north-1", "us-gov-west-1"):
        h.make_provider(b, cfg=h.make_config(b, regions=(region,), subnet_ids=()))


# --- fleets --------------------------------------------------------------------------------------
def test_an_interrupted_spot_node_is_terminated_not_stopped(b: h.Backend) -> None:
    h.make_provider(b).launch(h.offering(), 1, request_id=request_id("behaviour", 1))
    assert b.proxy.last("CreateFleet")["SpotOptions.InstanceInterruptionBehavior"] == "terminate"


def test_terminate_sends_at_most_200_ids_a_call(b: h.Backend) -> None:
    p = h.make_provider(b, cluster=h.unique_name("audit2-many"))
    ids = [n.node_id for n in p.launch(h.offering(), 201, request_id=request_id("many", 1))]
    b.proxy.reset()
    p.terminate(ids, request_id=request_id("many", 2))
    calls = [params for _, action, params in b.proxy.calls if action == "TerminateInstances"]
    assert sorted(len(c) - 2 for c in calls) == [1, 200]  # Action, Version and the ids
    states = {n.node_id: n.state.value for n in p.list_nodes()}
    assert {states[i] for i in ids} <= {"terminating", "terminated"}


def test_config_security_groups_stay_off_a_template_with_network_interfaces(b: h.Backend) -> None:
    """EC2 refuses instance-level security groups beside network interfaces: the template's own stand."""
    made = b.client("ec2").create_launch_template(
        LaunchTemplateName=h.unique_name("audit2-eni"),
        LaunchTemplateData={
            "ImageId": h.AMI,
            "NetworkInterfaces": [{"DeviceIndex": 0, "Groups": ["sg-0eeeeeeeeeeeeeeee"]}],
        },
    )
    template = made["LaunchTemplate"]["LaunchTemplateId"]
    cfg = h.make_config(b, launch_template_ids={"default": template}, security_group_ids=("sg-0ffffffffffffffff",))
    h.make_provider(b, cfg=cfg).launch(h.offering(), 1, request_id=request_id("eni", template))
    number = b.proxy.last("CreateFleet")["LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version"]
    sent = b.client("ec2").describe_launch_template_versions(LaunchTemplateId=template, Versions=[number])
    data = sent["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert "SecurityGroupIds" not in data and data["NetworkInterfaces"][0]["Groups"] == ["sg-0eeeeeeeeeeeeeeee"]


# --- offers --------------------------------------------------------------------------------------
def test_a_listed_node_carries_the_live_price_offerings_showed(b: h.Backend) -> None:
    p = h.make_provider(b, cluster=h.unique_name("audit2-live"))
    live = {o.key: o for o in p.offerings()}[h.offering().key]
    assert live.price_per_hour_usd != h.offering().price_per_hour_usd  # moto's spot history
    (node,) = p.launch(h.offering(), 1, request_id=request_id("live-price", 1))
    assert {n.node_id: n for n in p.list_nodes()}[node.node_id].offering == live


def test_a_node_in_a_zone_the_catalog_lacks_is_priced_as_its_type_in_that_region(b: h.Backend) -> None:
    """An adopted node is billed by its listed offering: a zone the catalog lacks must not make it free."""
    spot = h.offering()
    catalog = tuple(o for o in h.catalog() if o.key != spot.key)
    p = h.make_provider(b, cluster=h.unique_name("audit2-zone"), catalog=catalog)
    (node,) = p.launch(spot, 1, request_id=request_id("zone-price", 1))
    listed = {n.node_id: n for n in p.list_nodes()}[node.node_id].offering
    same = next(
        o for o in catalog if (o.region, o.instance_type, o.market) == (spot.region, spot.instance_type, Market.SPOT)
    )
    assert listed.key == spot.key and listed.price_per_hour_usd == same.price_per_hour_usd > 0
    assert (listed.gpu_model, listed.gpus_per_node) == (spot.gpu_model, spot.gpus_per_node)


def test_a_zone_is_named_by_its_id_or_its_name_and_an_unknown_one_is_not_found(b: h.Backend) -> None:
    p = h.make_provider(b, cfg=h.make_config(b, subnet_ids=()))
    name = next(
        z["ZoneName"]
        for z in b.client("ec2").describe_availability_zones()["AvailabilityZones"]
        if z["ZoneId"] == h.ZONE_ID
    )
    p.launch(replace(h.offering(), zone=name), 1, request_id=request_id("zone-name", 1))
    assert b.proxy.last("CreateFleet")["LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone"] == name
    with pytest.raises(NotFoundError, match=r"zone 'use1-az9' does not exist in us-east-1.*use1-az1"):
        p.launch(replace(h.offering(), zone="use1-az9"), 1, request_id=request_id("zone-name", 2))


def test_only_aws_spot_or_on_demand_offerings_launch() -> None:
    inventory = Inventory(h.catalog(), [h.REGION])
    with pytest.raises(ConfigError, match="an offering of 'gcp'"):
        inventory.check_offering(replace(h.offering(), provider="gcp"))
    with pytest.raises(ConfigError, match="spot or on_demand offerings, not reserved"):
        inventory.check_offering(replace(h.offering(), market=Market.RESERVED))


# --- interruption queue --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "region"),
    [
        ("https://sqs.eu-west-1.amazonaws.com/123456789012/q", "eu-west-1"),
        ("https://sqs-fips.us-east-2.amazonaws.com/123456789012/q", "us-east-2"),
        ("https://sqs.ap-south-1.api.aws/123456789012/q", "ap-south-1"),
        ("https://sqs-fips.us-west-1.api.aws/123456789012/q", "us-west-1"),
        ("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q", "cn-north-1"),
        ("https://vpce-0a1b2c3d4e5f-abcd1234.sqs.eu-central-1.vpce.amazonaws.com/123456789012/q", "eu-central-1"),
        ("https://us-west-2.queue.amazonaws.com/123456789012/q", "us-west-2"),
        ("https://queue.amazonaws.com/123456789012/q", "us-east-1"),
        ("HTTPS://SQS.EU-NORTH-1.AMAZONAWS.COM/123456789012/q", "eu-north-1"),
        ("https://sqs.eu-west-1.amazonaws.com.example.org/123456789012/q", None),
        ("http://localhost:4566/000000000000/q", None),
    ],
)
def test_the_queue_url_names_the_queues_region(url: str, region: str | None) -> None:
    assert queue_region(url) == region


def test_a_fips_queue_url_is_read_in_its_region(b: h.Backend) -> None:
    import boto3

    west = boto3.client("sqs", region_name="us-west-2", endpoint_url=b.moto_url, **h.CREDENTIALS)
    name = h.unique_name("audit2-fips")
    real = west.create_queue(QueueName=name)["QueueUrl"]
    url = f"https://sqs-fips.us-west-2.amazonaws.com/123456789012/{name}"
    p = h.make_provider(b, cluster=h.unique_name("audit2-fips"), cfg=h.make_config(b, interruption_queue_url=url))
    node = p.launch(h.offering(), 1, request_id=request_id("fips", 1))[0].node_id
    west.send_message(
        QueueUrl=real, MessageBody=variant("spot_interruption_warning", instance_id=node, region=h.REGION)
    )
    assert [i.node_id for i in p.interruptions()] == [node]


def test_a_failed_delete_loses_no_notice_and_reports_none_twice(b: h.Backend, caplog: pytest.LogCaptureFixture) -> None:
    url = b.queue(h.unique_name("audit2-delete"))
    sqs = b.client("sqs")
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "0"})  # back at once
    p = h.make_provider(b, cluster=h.unique_name("audit2-delete"), cfg=h.make_config(b, interruption_queue_url=url))
    node = p.launch(h.offering(), 1, request_id=request_id("delete", 1))[0].node_id
    sqs.send_message(QueueUrl=url, MessageBody=variant("spot_interruption_warning", instance_id=node, region=h.REGION))
    b.proxy.fail_next("DeleteMessageBatch", "AccessDenied", "not allowed to delete", 403)
    with caplog.at_level(logging.WARNING, logger="providers.aws"):
        assert [i.node_id for i in p.interruptions()] == [node]
    assert any("could not delete 1 interruption-queue messages" in r.getMessage() for r in caplog.records)
    assert p.interruptions() == []  # the message came back: known, so only deleted
    assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []
