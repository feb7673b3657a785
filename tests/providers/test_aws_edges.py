"""Rules of the AWS adapter that a mutation audit found unpinned.

- launch: zero nodes make no EC2 call; a capacity *error response* blocks the offering too, and a
  block ends exactly at its TTL; a zone without a configured subnet is a NotFoundError;
- offerings: a live spot price of a catalog spot pool adds no second offering, unreadable subnets
  offer every zone, a region without catalog types asks for no spot history;
- terminate: past a NotFound batch answer every other id is still tried one by one, and the 200th
  id of a filter chunk is not lost;
- error codes: ``Server.``/``Client.`` prefixes, any ``*.NotFound``, bare HTTP 5xx and 429, more
  capacity and quota codes, IdempotentParameterMismatch's message, a message of exactly the limit;
- fleets: a GPU class's template wins over ``default``, reserved tags win over labels, label limits
  are exact (``aws:`` in any case, 128-char keys, 256-char values), so is the 16 KiB user data limit;
- template versions: keyed by the source version and the config extras; a template's own instance
  profile and security groups are kept;
- interruptions: over ten messages are all received and deleted in one pass, the SQS SentTimestamp
  stands in for a placeholder time, a notice without a region is looked up everywhere and one from
  another region costs no call, ``<region>.queue.amazonaws.com`` names the queue's region, a state
  change the controller did not cause is reported, a restarted controller drops those it caused;
- events: stopping/stopped go away and running does not, a non-EC2 source, an id without ``i-``
  and an unknown detail-type are poison, naive times are UTC, the event's termination time wins.

And a bug it found, fixed: us-east-1's legacy queue URL (``https://queue.amazonaws.com/...``) was
read in ``clouds.aws.regions[0]``; it is read in us-east-1.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

pytest.importorskip("moto", reason="the AWS tests need moto[server] and boto3 (dev extras)")

from burster.clock import FakeClock
from burster.errors import (
    CapacityError,
    ConfigError,
    NotFoundError,
    ProviderError,
    QuotaError,
    ThrottledError,
    TransientError,
)
from burster.model import Market
from burster.plan import request_id
from providers.aws.errors import scrub
from providers.aws.interruptions import PoisonMessage, parse_event
from tests.providers import harness_aws as h
from tests.providers.test_aws_interruptions import sample, variant

NOW = datetime(2026, 3, 1, 12, 0, 5, tzinfo=UTC)


@pytest.fixture
def b() -> h.Backend:
    return h.fresh()


def _instance(b: h.Backend, instance_id: str) -> dict[str, Any]:
    return b.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]


def _template(b: h.Backend, **data: Any) -> str:
    """A launch template of this test's own (the session's shared one must not change)."""
    made = b.client("ec2").create_launch_template(
        LaunchTemplateName=h.unique_name("edges"), LaunchTemplateData={"ImageId": h.AMI, **data})
    return str(made["LaunchTemplate"]["LaunchTemplateId"])


def _sent_version(b: h.Backend, template_id: str) -> dict[str, Any]:
    """The launch-template version the last CreateFleet used."""
    number = b.proxy.last("CreateFleet")["LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version"]
    return b.client("ec2").describe_launch_template_versions(
        LaunchTemplateId=template_id, Versions=[number])["LaunchTemplateVersions"][0]


def _blocked(b: h.Backend, p: Any, key: str) -> bool:
    b.proxy.fail_pricing(10)  # the catalog price is enough here
    return not {o.key: o for o in p.offerings()}[key].available


# --- launch ------------------------------------------------------------------------------------
def test_launching_zero_nodes_makes_no_ec2_call(b: h.Backend) -> None:
    p = h.make_provider(b)
    assert p.launch(h.offering(), 0, request_id=request_id("zero", 1)) == []
    assert b.proxy.actions() == []


def test_a_capacity_error_response_blocks_the_offering_until_exactly_the_ttl(b: h.Backend) -> None:
    clock = FakeClock()
    p = h.make_provider(b, now=clock.now, block_ttl_s=600)
    b.proxy.fail_next("CreateFleet", "InsufficientInstanceCapacity", "no capacity", 500)
    with pytest.raises(CapacityError):
        p.launch(h.offering(), 1, request_id=request_id("cap-response", 1))
    clock.advance(599)
    assert _blocked(b, p, h.offering().key)
    clock.advance(1)
    assert not _blocked(b, p, h.offering().key)


def test_a_live_spot_price_of_a_catalog_spot_pool_adds_no_second_offering(b: h.Backend) -> None:
    p = h.make_provider(b)
    b.proxy.fail_pricing(10)
    offers = p.offerings()
    live = [o for o in offers if o.market is Market.SPOT and o.instance_type == h.INSTANCE_TYPE]
    assert live and len({o.key for o in offers}) == len(offers)


def test_unreadable_subnets_offer_every_zone(b: h.Backend) -> None:
    p = h.make_provider(b)
    b.proxy.fail_next("DescribeSubnets", "UnauthorizedOperation", "not allowed", 403)
    b.proxy.fail_pricing(10)
    zones = {o.zone for o in p.offerings() if o.instance_type == h.INSTANCE_TYPE}
    assert {h.ZONE_ID, "use1-az2"} <= zones


def test_a_zone_without_a_configured_subnet_is_not_found(b: h.Backend) -> None:
    subnets = tuple(s["SubnetId"] for s in b.client("ec2").describe_subnets()["Subnets"]
                    if s["AvailabilityZoneId"] == h.ZONE_ID)
    p = h.make_provider(b, cfg=h.make_config(b, subnet_ids=subnets))
    elsewhere = next(o for o in h.catalog() if o.key == h.offering().key.replace(h.ZONE_ID, "use1-az2"))
    with pytest.raises(NotFoundError, match=r"no subnet of clouds\.aws\.subnet_ids is in zone use1-az2"):
        p.launch(elsewhere, 1, request_id=request_id("no-subnet", 1))


def test_a_region_without_catalog_types_asks_for_no_spot_history(b: h.Backend) -> None:
    east = tuple(o for o in h.catalog() if o.region == h.REGION)
    p = h.make_provider(b, catalog=east, cfg=h.make_config(b, regions=(h.REGION, "us-west-2"), subnet_ids=()))
    b.proxy.fail_pricing(10)
    p.offerings()
    asked = [params for service, action, params in b.proxy.calls if action == "DescribeSpotPriceHistory"]
    assert asked and all("InstanceType.1" in params for params in asked)


@pytest.mark.parametrize(("code", "status", "expected"), [
    ("Server.InsufficientInstanceCapacity", 500, CapacityError),
    ("Client.VcpuLimitExceeded", 400, QuotaError),
    ("SpotMaxPriceTooLow", 400, CapacityError),
    ("InsufficientFreeAddressesInSubnet", 400, QuotaError),
    ("InvalidKeyPair.NotFound", 400, NotFoundError),
    ("SomethingAwsAddedLater", 500, TransientError),
    ("SomethingAwsAddedLater", 429, ThrottledError),
    ("SomethingAwsAddedLater", 400, ProviderError),
])
def test_more_error_codes_map_to_the_error_tree(b: h.Backend, code: str, status: int,
                                                expected: type[Exception]) -> None:
    p = h.make_provider(b, attempts=1)
    b.proxy.fail_next("CreateFleet", code, "refused", status)
    with pytest.raises(ProviderError) as info:
        p.launch(h.offering(), 1, request_id=request_id("codes", code, status))
    assert type(info.value) is expected and code in str(info.value)


def test_a_reused_request_id_says_so(b: h.Backend) -> None:
    p = h.make_provider(b)
    b.proxy.fail_next("CreateFleet", "IdempotentParameterMismatch", "token reused", 400)
    with pytest.raises(ProviderError, match="request id was already used for a different launch"):
        p.launch(h.offering(), 1, request_id=request_id("mismatch", 1))


def test_a_message_of_exactly_the_limit_is_kept_whole() -> None:
    assert scrub("x " * 150) == ("x " * 150).strip()
    assert scrub("y" * 300) == "y" * 300


def test_a_gpu_class_template_wins_over_the_default(b: h.Backend) -> None:
    ids = {"T4": b.template_id, "default": "lt-00000000000000000"}
    p = h.make_provider(b, cfg=h.make_config(b, launch_template_ids=ids))
    p.launch(h.offering(), 1, request_id=request_id("class-template", 1))
    sent = b.proxy.last("CreateFleet")
    assert sent["LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId"] == b.template_id


def test_reserved_tags_win_over_labels_and_label_limits_are_exact(b: h.Backend) -> None:
    p = h.make_provider(b, cluster="edges-tags")
    rid = request_id("tags", 1)
    labels = {"managed-by": "someone", "burster-cluster": "other", "k" * 128: "v" * 256}
    node = p.launch(h.offering(), 1, request_id=rid, labels=labels)[0]
    tags = {t["Key"]: t["Value"] for t in _instance(b, node.node_id)["Tags"]}
    assert tags["managed-by"] == "burster" and tags["burster-cluster"] == "edges-tags"
    assert tags["k" * 128] == "v" * 256
    for bad in ({"AWS:owner": "x"}, {"k" * 129: "x"}, {"key": "v" * 257}):
        with pytest.raises(ConfigError):
            p.launch(h.offering(), 1, request_id=request_id("tags", str(bad)[:20]), labels=bad)


def test_user_data_of_exactly_16_kib_is_accepted(b: h.Backend) -> None:
    data = "#!/bin/bash\n" + "#" * (16 * 1024 - 13) + "\n"
    p = h.make_provider(b, user_data=lambda o: data)
    assert len(p.launch(h.offering(), 1, request_id=request_id("16k", 1))) == 1
    big = h.make_provider(b, user_data=lambda o: data + "x")
    with pytest.raises(ConfigError, match="16384"):
        big.launch(h.offering(), 1, request_id=request_id("16k", 2))


def test_a_new_default_template_version_gets_its_own_user_data_version(b: h.Backend) -> None:
    template = _template(b, InstanceType="t3.micro")
    p = h.make_provider(b, cfg=h.make_config(b, launch_template_ids={"default": template}))
    p.launch(h.offering(), 1, request_id=request_id("src", 1))
    assert _sent_version(b, template)["VersionDescription"].endswith(":src1")
    ec2 = b.client("ec2")
    ec2.create_launch_template_version(LaunchTemplateId=template, SourceVersion="1",
                                       LaunchTemplateData={"ImageId": h.AMI, "InstanceType": "t3.small"})
    ec2.modify_launch_template(LaunchTemplateId=template, DefaultVersion="2")
    p.launch(h.offering(), 1, request_id=request_id("src", 2))
    assert _sent_version(b, template)["VersionDescription"].endswith(":src2")


def test_a_user_data_version_past_the_first_page_of_versions_is_found_not_made_again(b: h.Backend) -> None:
    """EC2 pages DescribeLaunchTemplateVersions (moto does not: the proxy cuts its answer into pages)."""
    template = _template(b)
    cfg = h.make_config(b, launch_template_ids={"default": template})
    for k in range(5):  # five bootstraps: versions 2 to 6
        h.make_provider(b, cfg=cfg, user_data=lambda o, k=k: f"#!/bin/bash\necho {k}\n").launch(
            h.offering(), 1, request_id=request_id("pages", k))
    b.proxy.page_versions(2)
    made = b.proxy.actions().count("CreateLaunchTemplateVersion")
    h.make_provider(b, cfg=cfg, user_data=lambda o: "#!/bin/bash\necho 4\n").launch(
        h.offering(), 1, request_id=request_id("pages", "again"))
    assert b.proxy.actions().count("CreateLaunchTemplateVersion") == made  # found on the third page
    assert _sent_version(b, template)["VersionNumber"] == 6
    listed = [params for service, action, params in b.proxy.calls
              if action == "DescribeLaunchTemplateVersions" and "MaxResults" in params]
    assert [c.get("NextToken") for c in listed[-3:]] == [None, "2", "4"]


def test_config_extras_are_part_of_the_version_and_the_templates_own_are_kept(b: h.Backend) -> None:
    plain = _template(b)
    for group in ("sg-0aaaaaaaaaaaaaaaa", "sg-0bbbbbbbbbbbbbbbb"):
        cfg = h.make_config(b, launch_template_ids={"default": plain}, security_group_ids=(group,))
        h.make_provider(b, cfg=cfg).launch(h.offering(), 1, request_id=request_id("sg", group))
        assert _sent_version(b, plain)["LaunchTemplateData"]["SecurityGroupIds"] == [group]
    profile = "arn:aws:iam::123456789012:instance-profile/template-own"
    own = _template(b, IamInstanceProfile={"Arn": profile}, SecurityGroupIds=["sg-0cccccccccccccccc"])
    cfg = h.make_config(b, launch_template_ids={"default": own}, security_group_ids=("sg-0dddddddddddddddd",),
                        instance_profile_arn="arn:aws:iam::123456789012:instance-profile/config")
    h.make_provider(b, cfg=cfg).launch(h.offering(), 1, request_id=request_id("own-extras", 1))
    data = _sent_version(b, own)["LaunchTemplateData"]
    assert data["IamInstanceProfile"] == {"Arn": profile}
    assert data["SecurityGroupIds"] == ["sg-0cccccccccccccccc"]


# --- terminate ---------------------------------------------------------------------------------
def test_terminate_goes_on_one_by_one_past_not_found_answers(b: h.Backend) -> None:
    p = h.make_provider(b, cluster=h.unique_name("edges-term"))
    ids = [n.node_id for n in p.launch(h.offering(), 3, request_id=request_id("term-nf", 1))]
    for _ in range(2):  # the batch call, then the first single one
        b.proxy.fail_next("TerminateInstances", "InvalidInstanceID.NotFound", "gone meanwhile")
    p.terminate(ids, request_id=request_id("term-nf", 2))
    assert b.proxy.actions().count("TerminateInstances") == 4
    states = [_instance(b, i)["State"]["Name"] for i in ids]
    assert states.count("terminated") == 2


def test_terminate_finds_the_last_id_of_a_full_filter_chunk(b: h.Backend) -> None:
    p = h.make_provider(b, cluster=h.unique_name("edges-chunk"))
    node = p.launch(h.offering(), 1, request_id=request_id("chunk", 1))[0].node_id
    unknown = [f"i-{n:017x}" for n in range(199)]
    p.terminate([*unknown, node], request_id=request_id("chunk", 2))
    assert _instance(b, node)["State"]["Name"] == "terminated"


# --- interruptions -----------------------------------------------------------------------------
def _queue_provider(b: h.Backend, cluster: str, **overrides: Any) -> tuple[Any, str]:
    url = b.queue(h.unique_name("burster-edges"))
    return h.make_provider(b, cluster=cluster, cfg=h.make_config(b, interruption_queue_url=url), **overrides), url


def _queue_counts(b: h.Backend, url: str) -> list[str]:
    attrs = b.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return sorted(attrs.values())


def test_more_than_ten_messages_are_received_and_deleted_in_one_pass(b: h.Backend) -> None:
    p, url = _queue_provider(b, h.unique_name("edges-many"))
    nodes = [n.node_id for n in p.launch(h.offering(), 12, request_id=request_id("many", 1))]
    sqs = b.client("sqs")
    for node in nodes:
        sqs.send_message(QueueUrl=url, MessageBody=variant("spot_interruption_warning", instance_id=node,
                                                           region=h.REGION))
    assert {i.node_id for i in p.interruptions()} == set(nodes)
    assert _queue_counts(b, url) == ["0", "0"]


def test_a_placeholder_event_time_takes_the_sqs_sent_time(b: h.Backend) -> None:
    p, url = _queue_provider(b, h.unique_name("edges-sent"), now=FakeClock().now)
    node = p.launch(h.offering(), 1, request_id=request_id("sent", 1))[0].node_id
    body = json.loads(sample("rebalance_recommendation"))
    body["region"], body["detail"]["instance-id"] = h.REGION, node
    b.client("sqs").send_message(QueueUrl=url, MessageBody=json.dumps(body))
    (got,) = p.interruptions()
    assert abs(got.notice_at - datetime.now(UTC)) < timedelta(minutes=10)


def test_notice_regions_decide_where_the_instance_is_looked_up(b: h.Backend) -> None:
    p, url = _queue_provider(b, h.unique_name("edges-region"))
    node = p.launch(h.offering(), 1, request_id=request_id("region", 1))[0].node_id
    sqs = b.client("sqs")
    sqs.send_message(QueueUrl=url, MessageBody=variant("rebalance_recommendation", instance_id=node, region=""))
    assert [(i.node_id, i.kind) for i in p.interruptions()] == [(node, "rebalance")]
    sqs.send_message(QueueUrl=url, MessageBody=variant("spot_interruption_warning", instance_id=node,
                                                       region="eu-west-1"))
    b.proxy.reset()
    assert p.interruptions() == []
    assert "DescribeInstances" not in b.proxy.actions()


def test_a_restarted_controller_drops_state_changes_of_api_terminated_instances(b: h.Backend) -> None:
    cluster = h.unique_name("edges-restart")
    first, url = _queue_provider(b, cluster)
    node = first.launch(h.offering(), 1, request_id=request_id("restart", 1))[0].node_id
    first.terminate([node], request_id=request_id("restart-term", 1))
    restarted = h.make_provider(b, cluster=cluster, cfg=h.make_config(b, interruption_queue_url=url))
    b.client("sqs").send_message(QueueUrl=url, MessageBody=variant(
        "state_change_notification", instance_id=node, state="terminated"))
    assert restarted.interruptions() == []


def test_a_legacy_queue_url_names_the_queues_region(b: h.Backend) -> None:
    import boto3

    west = boto3.client("sqs", region_name="us-west-2", endpoint_url=b.moto_url, **h.CREDENTIALS)
    name = h.unique_name("edges-west")
    real = west.create_queue(QueueName=name)["QueueUrl"]
    url = f"https://us-west-2.queue.amazonaws.com/123456789012/{name}"
    p = h.make_provider(b, cluster=h.unique_name("edges-west"), cfg=h.make_config(b, interruption_queue_url=url))
    node = p.launch(h.offering(), 1, request_id=request_id("west", 1))[0].node_id
    west.send_message(QueueUrl=real, MessageBody=variant("spot_interruption_warning", instance_id=node,
                                                         region=h.REGION))
    assert [i.node_id for i in p.interruptions()] == [node]


def test_the_us_east_1_legacy_queue_url_is_read_in_us_east_1(b: h.Backend) -> None:
    name = h.unique_name("edges-legacy")
    real = b.client("sqs").create_queue(QueueName=name)["QueueUrl"]
    cfg = h.make_config(b, regions=("us-west-2", h.REGION),
                        interruption_queue_url=f"https://queue.amazonaws.com/123456789012/{name}")
    p = h.make_provider(b, cluster=h.unique_name("edges-legacy"), cfg=cfg)
    node = p.launch(h.offering(), 1, request_id=request_id("legacy", 1))[0].node_id
    b.client("sqs").send_message(QueueUrl=real, MessageBody=variant(
        "spot_interruption_warning", instance_id=node, region=h.REGION))
    assert [i.node_id for i in p.interruptions()] == [node]


def test_a_state_change_the_controller_did_not_cause_is_reported(b: h.Backend) -> None:
    p, url = _queue_provider(b, h.unique_name("edges-stopping"))
    node = p.launch(h.offering(), 1, request_id=request_id("stopping", 1))[0].node_id
    b.client("sqs").send_message(QueueUrl=url, MessageBody=variant(
        "state_change_notification", instance_id=node, state="stopping"))
    assert [(i.node_id, i.kind) for i in p.interruptions()] == [(node, "preempted")]


# --- events ------------------------------------------------------------------------------------
@pytest.mark.parametrize("state", ["stopping", "stopped"])
def test_stopping_and_stopped_are_a_node_going_away(state: str) -> None:
    n = parse_event(variant("state_change_notification", state=state), sent_at=None, now=NOW)
    assert n is not None and n.kind == "preempted" and n.state == state
    assert parse_event(variant("state_change_notification", state="running"), sent_at=None, now=NOW) is None


@pytest.mark.parametrize("event", [
    {"source": "aws.health", "detail-type": "EC2 Spot Instance Interruption Warning",
     "detail": {"instance-id": "i-0123456789abcdef0"}},
    {"source": "aws.ec2", "detail-type": "EC2 Spot Instance Interruption Warning",
     "detail": {"instance-id": "arn:aws:ec2:us-east-1:1:instance"}},
    {"source": "aws.ec2", "detail-type": "EC2 Fast Launch State-change Notification",
     "detail": {"instance-id": "i-0123456789abcdef0"}},
])
def test_more_poison_messages_are_refused(event: dict[str, Any]) -> None:
    with pytest.raises(PoisonMessage):
        parse_event(json.dumps(event), sent_at=None, now=NOW)


def test_a_time_without_a_zone_is_utc_and_the_events_termination_time_wins() -> None:
    body = variant("spot_interruption_warning", time="2026-03-01T11:58:00",
                   instance_termination_time="2026-03-01T11:59:30Z")
    n = parse_event(body, sent_at=None, now=NOW)
    assert n is not None and n.notice_at == datetime(2026, 3, 1, 11, 58, tzinfo=UTC)
    assert n.terminate_at == datetime(2026, 3, 1, 11, 59, 30, tzinfo=UTC)

