"""EC2 interruption notices from an EventBridge -> SQS queue.

EventBridge delivers each event as the SQS message body, unchanged. Three detail types matter:

- ``EC2 Spot Instance Interruption Warning``: reclaim in two minutes (``hibernate``: now).
- ``EC2 Instance Rebalance Recommendation``: elevated risk; it can arrive together with the
  two-minute warning, so the conservative deadline is the same two minutes.
- ``EC2 Instance State-change Notification``: stopping/stopped/shutting-down/terminated is a
  node going away (the adapter drops the ones it caused itself); pending/running are ignored.

Poison messages (not JSON, not an EC2 event, no instance id) are logged by message id and
deleted, so one bad message never blocks the queue. An event whose ``time`` cannot be parsed
(AWS documentation samples carry ``yyyy-mm-ddThh:mm:ssZ``) takes the SQS SentTimestamp instead.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

log = logging.getLogger(__name__)

SPOT_WARNING = "EC2 Spot Instance Interruption Warning"
REBALANCE = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE = "EC2 Instance State-change Notification"
SPOT_NOTICE_S = 120.0
GOING_AWAY = frozenset({"stopping", "stopped", "shutting-down", "terminated"})


# sqs[-fips].<region>.amazonaws.com[.cn] or .api.aws (dual-stack), the same behind a VPC endpoint
# (vpce-....sqs.<region>.vpce.amazonaws.com), <region>.queue.amazonaws.com, or queue.amazonaws.com
# (us-east-1's legacy form)
_QUEUE_HOST = re.compile(
    r"^https://(?:[a-z0-9-]+\.)*?(?:sqs(?:-fips)?\.(?P<sqs>[a-z0-9-]+)(?:\.vpce)?\.(?:amazonaws\.com(?:\.cn)?|api\.aws)"
    r"|(?P<legacy>[a-z0-9-]+)\.queue\.amazonaws\.com|queue\.amazonaws\.com)(?:[:/]|$)")


def queue_region(url: str) -> str | None:
    """The region an SQS queue URL names (``None`` for another host, such as a local fake's)."""
    match = _QUEUE_HOST.match(url.strip().lower())
    if match is None:
        return None
    return match.group("sqs") or match.group("legacy") or "us-east-1"


class PoisonMessage(ValueError):
    """A queue message that is not an EC2 event this adapter understands."""


@dataclass(frozen=True, slots=True)
class Notice:
    """One parsed event about one instance."""

    instance_id: str
    region: str
    kind: str  # "spot-interruption", "rebalance", "preempted"
    notice_at: datetime
    terminate_at: datetime
    event_id: str
    state: str = ""  # for state-change events


def parse_time(text: object) -> datetime | None:
    """An ISO-8601 UTC time, or None when it is missing or not a time."""
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def parse_event(body: str, *, sent_at: datetime | None, now: datetime) -> Notice | None:
    """The Notice in one EventBridge event; None for events that need no action.

    Raises PoisonMessage for anything that is not a well-formed EC2 event.
    """
    try:
        event = json.loads(body)
    except ValueError:
        raise PoisonMessage("body is not JSON") from None
    if not isinstance(event, dict):
        raise PoisonMessage("body is not a JSON object")
    detail_type = event.get("detail-type")
    detail = event.get("detail")
    if event.get("source") != "aws.ec2" or not isinstance(detail, dict):
        raise PoisonMessage(f"not an aws.ec2 event (detail-type {str(detail_type)[:60]!r})")
    instance_id = detail.get("instance-id")
    if not isinstance(instance_id, str) or not instance_id.startswith("i-"):
        raise PoisonMessage(f"{detail_type} event without an instance-id")
    notice_at = parse_time(event.get("time")) or sent_at or now
    region = str(event.get("region", ""))
    event_id = str(event.get("id", ""))
    if detail_type == SPOT_WARNING:
        action = str(detail.get("instance-action", "terminate"))
        terminate_at = parse_time(detail.get("instance-termination-time")) or (
            notice_at if action == "hibernate" else notice_at + timedelta(seconds=SPOT_NOTICE_S))
        return Notice(instance_id, region, "spot-interruption", notice_at, terminate_at, event_id)
    if detail_type == REBALANCE:
        return Notice(instance_id, region, "rebalance", notice_at,
                      notice_at + timedelta(seconds=SPOT_NOTICE_S), event_id)
    if detail_type == STATE_CHANGE:
        state = str(detail.get("state", ""))
        if state not in GOING_AWAY:
            return None
        return Notice(instance_id, region, "preempted", notice_at, notice_at, event_id, state)
    raise PoisonMessage(f"unhandled detail-type {str(detail_type)[:60]!r}")


@dataclass(frozen=True, slots=True)
class Received:
    """A queue message: its parsed notice (or None) and the handle to delete it."""

    message_id: str
    receipt_handle: str
    notice: Notice | None


def sent_time(message: Mapping[str, Any]) -> datetime | None:
    raw = message.get("Attributes", {}).get("SentTimestamp")
    try:
        return datetime.fromtimestamp(int(raw) / 1000, tz=UTC) if raw else None
    except (TypeError, ValueError):
        return None


class QueueReader:
    """Receives and deletes messages of the interruption queue (short polls, bounded per call)."""

    def __init__(self, sqs: Any, queue_url: str, call: Callable[..., Any], now: Callable[[], datetime],
                 *, max_batches: int = 10) -> None:
        self._sqs = sqs
        self._url = queue_url
        self._call = call
        self._now = now
        self._max_batches = max_batches

    def receive(self) -> list[Received]:
        """Up to ``max_batches`` x 10 messages; poison messages come back with notice None."""
        out: list[Received] = []
        for _ in range(self._max_batches):
            page = self._call("sqs:ReceiveMessage", lambda: self._sqs.receive_message(
                QueueUrl=self._url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                MessageSystemAttributeNames=["SentTimestamp"]))
            messages = page.get("Messages", [])
            for msg in messages:
                out.append(self._parse(msg))
            if len(messages) < 10:
                break
        return out

    def _parse(self, msg: Mapping[str, Any]) -> Received:
        message_id = str(msg.get("MessageId", "?"))
        try:
            notice = parse_event(str(msg.get("Body", "")), sent_at=sent_time(msg), now=self._now())
        except PoisonMessage as err:
            log.warning("aws: deleting unusable interruption-queue message %s: %s", message_id, err)
            notice = None
        return Received(message_id, str(msg["ReceiptHandle"]), notice)

    def delete(self, received: list[Received]) -> None:
        """Delete handled messages; a failure is logged (the messages come back and are deduplicated)."""
        for start in range(0, len(received), 10):
            batch = received[start:start + 10]
            entries = [{"Id": str(i), "ReceiptHandle": r.receipt_handle} for i, r in enumerate(batch)]
            try:
                result = self._call("sqs:DeleteMessageBatch", lambda e=entries:
                                    self._sqs.delete_message_batch(QueueUrl=self._url, Entries=e))
            except Exception as err:
                log.warning("aws: could not delete %d interruption-queue messages: %s", len(batch), err)
                continue
            for failed in result.get("Failed", []):
                log.warning("aws: interruption-queue delete failed (%s)", failed.get("Code", "?"))
