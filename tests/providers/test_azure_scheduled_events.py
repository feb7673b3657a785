"""Scheduled Events documents (as the node agent posts them) become Azure interruptions."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest

from burster.errors import InputError
from providers.azure.scheduled_events import interruptions_of, parse_document
from tests.providers.harness_azure import provider

NOW = datetime(2022, 8, 9, 17, 7, 0, tzinfo=UTC)

# Verbatim: "Example responses", Azure Metadata Service: Scheduled Events for Linux VMs
# (https://learn.microsoft.com/azure/virtual-machines/linux/scheduled-events#example-responses;
# MicrosoftDocs/azure-docs articles/virtual-machines/linux/scheduled-events.md).
DOCS_EXAMPLES = """
{
    "DocumentIncarnation":  1,
    "Events":  [
               ]
}

{
    "DocumentIncarnation":  2,
    "Events":  [
                   {
                       "EventId":  "C7061BAC-AFDC-4513-B24B-AA5F13A16123",
                       "EventStatus":  "Scheduled",
                       "EventType":  "Freeze",
                       "ResourceType":  "VirtualMachine",
                       "Resources":  [
                                         "WestNO_0",
                                         "WestNO_1"
                                     ],
                       "NotBefore":  "Mon, 11 Apr 2022 22:26:58 GMT",
                       "Description":  "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
                       "EventSource":  "Platform",
                       "DurationInSeconds":  5
                   }
               ]
}

{
    "DocumentIncarnation":  3,
    "Events":  [
                   {
                       "EventId":  "C7061BAC-AFDC-4513-B24B-AA5F13A16123",
                       "EventStatus":  "Started",
                       "EventType":  "Freeze",
                       "ResourceType":  "VirtualMachine",
                       "Resources":  [
                                         "WestNO_0",
                                         "WestNO_1"
                                     ],
                       "NotBefore":  "",
                       "Description":  "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
                       "EventSource":  "Platform",
                       "DurationInSeconds":  5
                   }
               ]
}

{
    "DocumentIncarnation":  4,
    "Events":  [
               ]
}
"""  # noqa: E501

# Verbatim: the IMDS answer after `az vm simulate-eviction`, from Microsoft Patterns & Practices'
# Azure Spot VM reference implementation (mspnp "interruptible workload on Spot", README).
PREEMPT_SAMPLE = """
   {
      "DocumentIncarnation": 1,
      "Events":[
         {
            "EventId": "C1BF8322-4CBF-4FC4-9C45-B40CF3106D0E",
            "EventStatus": "Scheduled",
            "EventType": "Preempt",
            "ResourceType": "VirtualMachine",
            "Resources": ["vm-spot"],
            "NotBefore": "Tue, 09 Aug 2022 17:07:32 GMT",
            "Description": "",
            "EventSource": "Platform",
            "DurationInSeconds": -1
         }
      ]
   }
"""


def docs_documents() -> list[str]:
    return [chunk.strip() for chunk in DOCS_EXAMPLES.split("\n\n") if chunk.strip()]


def test_documented_freeze_examples_parse_and_are_not_interruptions() -> None:
    docs = [parse_document(text) for text in docs_documents()]
    assert [d.incarnation for d in docs] == [1, 2, 3, 4]
    assert docs[1].events[0].not_before == "Mon, 11 Apr 2022 22:26:58 GMT"
    assert docs[2].events[0].event_status == "Started" and docs[2].events[0].not_before == ""
    assert all(interruptions_of(d, NOW) == [] for d in docs)


def test_documented_preempt_sample_queues_one_interruption_once() -> None:
    p = provider(f"rg-{uuid.uuid4().hex[:8]}", now=lambda: NOW)
    new = p.report_scheduled_events(PREEMPT_SAMPLE)
    assert len(new) == 1
    (notice,) = new
    assert notice.node_id == "vm-spot" and notice.provider == "azure" and notice.kind == "preempted"
    assert notice.notice_at == NOW
    assert notice.terminate_at == datetime(2022, 8, 9, 17, 7, 32, tzinfo=UTC)
    assert p.report_scheduled_events(json.loads(PREEMPT_SAMPLE)) == []  # the agent posts every second
    assert p.interruptions() == [notice]
    assert p.interruptions() == []


def test_started_preempt_and_terminate_events() -> None:
    doc = json.loads(PREEMPT_SAMPLE)
    event = doc["Events"][0]
    doc["Events"] = [{**event, "EventStatus": "Started", "NotBefore": ""},
                     {**event, "EventId": "other", "EventType": "Terminate", "Resources": ["a", "b"]},
                     {**event, "EventId": "reboot", "EventType": "Reboot"}]
    got = interruptions_of(parse_document(json.dumps(doc).encode()), NOW)
    assert [(i.node_id, i.kind, i.terminate_at) for _, i in got] == [
        ("vm-spot", "preempted", NOW),
        ("a", "evicted", datetime(2022, 8, 9, 17, 7, 32, tzinfo=UTC)),
        ("b", "evicted", datetime(2022, 8, 9, 17, 7, 32, tzinfo=UTC)),
    ]


@pytest.mark.parametrize(("payload", "where"), [
    ('{"Events": []}', "DocumentIncarnation"),
    ('{"DocumentIncarnation": 1, "Events": [{"EventType": "Preempt"}]}', "Events.0.EventId"),
    ("not json", "document"),
])
def test_malformed_documents_name_the_problem(payload: str, where: str) -> None:
    with pytest.raises(InputError, match=where):
        parse_document(payload)
