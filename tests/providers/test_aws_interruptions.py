"""Interruption notices: AWS's documented event samples, parsed as-is and through moto's SQS."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("moto", reason="the AWS tests need moto[server] and boto3 (dev extras)")

from burster.plan import request_id
from providers.aws.interruptions import PoisonMessage, parse_event
from tests.providers import harness_aws as h

EVENTS = Path(__file__).resolve().parents[1] / "fakes" / "aws_events"
SENT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOW = datetime(2026, 3, 1, 12, 0, 5, tzinfo=UTC)


def sample(name: str) -> str:
    return (EVENTS / f"{name}.json").read_text()


def variant(name: str, **changes: Any) -> str:
    """A documented sample with concrete values put in (time, instance id, state, action)."""
    event = json.loads(sample(name))
    detail = event["detail"]
    for key, value in changes.items():
        if key == "time":
            event["time"] = value
        elif key == "region":
            event["region"] = value
        else:
            detail[key.replace("_", "-")] = value
    return json.dumps(event)


def test_documented_spot_warning_sample_parses_with_placeholder_time() -> None:
    n = parse_event(sample("spot_interruption_warning"), sent_at=SENT, now=NOW)
    assert n is not None
    assert (n.instance_id, n.region, n.kind) == ("i-1234567890abcdef0", "us-east-2", "spot-interruption")
    assert n.notice_at == SENT  # "yyyy-mm-ddThh:mm:ssZ" is not a time: the SQS SentTimestamp is used
    assert n.terminate_at == SENT + timedelta(minutes=2)
    unsent = parse_event(sample("spot_interruption_warning"), sent_at=None, now=NOW)
    assert unsent is not None and unsent.notice_at == NOW


def test_documented_rebalance_sample_gets_the_two_minute_worst_case() -> None:
    n = parse_event(sample("rebalance_recommendation"), sent_at=SENT, now=NOW)
    assert n is not None and n.kind == "rebalance" and n.instance_id == "i-1234567890abcdef0"
    assert n.terminate_at - n.notice_at == timedelta(minutes=2)


def test_documented_state_change_sample_pending_needs_no_action() -> None:
    assert parse_event(sample("state_change_notification"), sent_at=SENT, now=NOW) is None
    n = parse_event(variant("state_change_notification", state="terminated"), sent_at=SENT, now=NOW)
    assert n is not None and n.kind == "preempted" and n.instance_id == "i-abcd1111"
    assert n.notice_at == n.terminate_at == datetime(2021, 11, 11, 21, 29, 54, tzinfo=UTC)


def test_event_time_wins_and_hibernate_means_now() -> None:
    body = variant("spot_interruption_warning", time="2026-03-01T11:58:00Z", instance_action="terminate")
    n = parse_event(body, sent_at=SENT, now=NOW)
    assert n is not None and n.notice_at == datetime(2026, 3, 1, 11, 58, tzinfo=UTC)
    assert n.terminate_at == datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    body = variant("spot_interruption_warning", instance_action="hibernate")
    hib = parse_event(body, sent_at=SENT, now=NOW)
    assert hib is not None and hib.terminate_at == hib.notice_at


@pytest.mark.parametrize("body", ["not json", "[]", '{"source": "aws.health", "detail": {}}',
                                  '{"source": "aws.ec2", "detail-type": "EC2 Fast Launch", "detail": {}}',
                                  '{"source": "aws.ec2", "detail-type": "EC2 Instance Rebalance '
                                  'Recommendation", "detail": {"instance-id": 7}}'])
def test_poison_messages_are_refused(body: str) -> None:
    with pytest.raises(PoisonMessage):
        parse_event(body, sent_at=SENT, now=NOW)


def test_interruptions_from_the_queue_only_for_this_clusters_nodes(caplog: pytest.LogCaptureFixture) -> None:
    b = h.backend()
    b.proxy.reset()
    url = b.queue("burster-interruptions-a")
    p = h.make_provider(b, cluster="intr", cfg=h.make_config(b, interruption_queue_url=url))
    spot, doomed = (n.node_id for n in p.launch(h.offering(), 2, request_id=request_id("intr", 1)))
    other = h.make_provider(b, cluster="elsewhere")
    foreign = other.launch(h.offering(), 1, request_id=request_id("intr", 2))
    p.terminate([doomed], request_id=request_id("intr-term", 1))
    sqs = b.client("sqs")
    bodies = [
        variant("spot_interruption_warning", instance_id=spot, region=h.REGION, time="2026-03-01T11:58:00Z"),
        variant("rebalance_recommendation", instance_id=spot, region=h.REGION),
        variant("state_change_notification", instance_id=doomed, state="shutting-down"),  # we did it
        variant("spot_interruption_warning", instance_id=foreign[0].node_id, region=h.REGION),  # not ours
        variant("spot_interruption_warning", instance_id="i-1234567890abcdef0"),  # another region
        sample("state_change_notification"),  # pending: nothing to do
        "this is not an event",  # poison: logged and deleted
    ]
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body)
    with caplog.at_level(logging.WARNING, logger="providers.aws"):
        got = p.interruptions()
    assert sorted((i.node_id, i.kind) for i in got) == [(spot, "rebalance"), (spot, "spot-interruption")]
    warning = next(i for i in got if i.kind == "spot-interruption")
    assert warning.provider == "aws"
    assert warning.terminate_at == datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert any("unusable" in r.getMessage() for r in caplog.records)
    assert "this is not an event" not in caplog.text
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages",
                                                                    "ApproximateNumberOfMessagesNotVisible"])
    assert all(v == "0" for v in attrs["Attributes"].values())  # every message was deleted
    assert p.interruptions() == []


def test_redelivered_events_are_reported_once() -> None:
    b = h.backend()
    url = b.queue("burster-interruptions-b")
    p = h.make_provider(b, cluster="redeliver", cfg=h.make_config(b, interruption_queue_url=url))
    node = p.launch(h.offering(), 1, request_id=request_id("redeliver", 1))[0]
    body = variant("spot_interruption_warning", instance_id=node.node_id, region=h.REGION)
    sqs = b.client("sqs")
    sqs.send_message(QueueUrl=url, MessageBody=body)
    assert len(p.interruptions()) == 1
    sqs.send_message(QueueUrl=url, MessageBody=body)  # at-least-once delivery: the same event again
    assert p.interruptions() == []


def test_no_queue_configured_means_no_notices_and_no_calls() -> None:
    b = h.backend()
    b.proxy.reset()
    p = h.make_provider(b)
    assert p.interruptions() == []
    assert b.proxy.actions("sqs") == []


def test_a_notice_for_an_instance_no_listing_shows_yet_waits_in_the_queue() -> None:
    """EC2 lists a new instance up to about five minutes late: a warning of the last five minutes for
    an instance of this region no listing shows is neither reported nor deleted (it comes back, and
    is read again once the instance is listed); an older one is deleted, as is one for an instance
    that is listed but not this cluster's."""
    b = h.backend()
    url = b.queue("burster-interruptions-late")
    sqs = b.client("sqs")
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "0"})  # back at once
    p = h.make_provider(b, cluster="late", cfg=h.make_config(b, interruption_queue_url=url))
    foreign = h.make_provider(b, cluster="late-other").launch(h.offering(), 1, request_id=request_id("late", 1))
    now = datetime.now(UTC)
    stamp = (now - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    stale = (now - timedelta(minutes=6)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for instance_id, time in (("i-0fedcba9876543210", stamp), ("i-0fedcba9876543211", stale),
                              (foreign[0].node_id, stamp)):
        sqs.send_message(QueueUrl=url, MessageBody=variant("spot_interruption_warning", instance_id=instance_id,
                                                           region=h.REGION, time=time))

    def left() -> list[str]:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"])["detail"]["instance-id"] for m in got]

    assert p.interruptions() == [] and p.interruptions() == []  # read twice: still kept
    assert left() == ["i-0fedcba9876543210"]
