"""Azure Scheduled Events (IMDS) documents, as a node agent is to post them, turned into Interruptions.

An agent on each VM is to poll ``http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01``
and post the document it gets to the controller (neither end is built yet: docs/providers/azure.md)::

    {"DocumentIncarnation": 2,
     "Events": [{"EventId": "...", "EventType": "Preempt", "ResourceType": "VirtualMachine",
                 "Resources": ["vm-name"], "EventStatus": "Scheduled",
                 "NotBefore": "Tue, 09 Aug 2022 17:07:32 GMT", "Description": "",
                 "EventSource": "Platform", "DurationInSeconds": -1}]}

``Preempt`` (spot eviction, at least 30 s notice) and ``Terminate`` (the VM is being deleted) take
the node away; ``Freeze``, ``Reboot`` and ``Redeploy`` do not, so they are not interruptions.
``NotBefore`` is an RFC 1123 date, and empty once the event has started.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from burster.errors import InputError
from burster.model import Interruption

KINDS = {"Preempt": "preempted", "Terminate": "evicted"}
PREEMPT_NOTICE_S = 30.0  # documented minimum notice for Preempt


class ScheduledEvent(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    event_id: str = Field(alias="EventId")
    event_type: str = Field(alias="EventType")
    resource_type: str = Field(default="VirtualMachine", alias="ResourceType")
    resources: tuple[str, ...] = Field(default=(), alias="Resources")
    event_status: str = Field(default="Scheduled", alias="EventStatus")
    not_before: str = Field(default="", alias="NotBefore")
    description: str = Field(default="", alias="Description")
    event_source: str = Field(default="", alias="EventSource")
    duration_s: int = Field(default=-1, alias="DurationInSeconds")


class ScheduledEventsDocument(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    incarnation: int | str = Field(alias="DocumentIncarnation")
    events: tuple[ScheduledEvent, ...] = Field(default=(), alias="Events")


def parse_document(payload: Mapping[str, Any] | str | bytes) -> ScheduledEventsDocument:
    """Validate a Scheduled Events document; InputError names what is wrong."""
    try:
        data = json.loads(payload) if isinstance(payload, str | bytes) else dict(payload)
        return ScheduledEventsDocument.model_validate(data)
    except (ValueError, TypeError, ValidationError) as err:
        detail = err.errors()[0] if isinstance(err, ValidationError) else {"msg": str(err), "loc": ()}
        where = ".".join(str(p) for p in detail.get("loc", ())) or "document"
        raise InputError(f"azure scheduled events: invalid document at {where}: {detail['msg']}; "
                         "post the JSON exactly as IMDS returned it") from None


def not_before(raw: str, now: datetime) -> datetime:
    """``NotBefore`` as aware UTC; blank (event started) means now."""
    raw = raw.strip()
    if not raw:
        return now
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        try:
            when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            return now + timedelta(seconds=PREEMPT_NOTICE_S)
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


def interruptions_of(doc: ScheduledEventsDocument, now: datetime,
                     provider: str = "azure") -> list[tuple[str, Interruption]]:
    """(event id, Interruption) for each VM an interrupting event names."""
    out = []
    for event in doc.events:
        kind = KINDS.get(event.event_type)
        if kind is None or event.resource_type != "VirtualMachine":
            continue
        at = not_before(event.not_before, now)
        for resource in event.resources:
            out.append((event.event_id, Interruption(resource, provider, kind, now, max(at, now))))
    return out
