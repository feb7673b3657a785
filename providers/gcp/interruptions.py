"""Spot preemption notices, from two sources that back each other up.

- ``compute.instances.preempted`` system-event Operations (``operationType``, ``targetLink``,
  ``targetId``, ``insertTime``; listed with the documented filter ``operationType="compute.instances.
  preempted"``), which outlive the instance itself (Spot VMs here use instanceTerminationAction DELETE).
- Instance status: a Spot VM of ours in STOPPING/TERMINATED that we did not ask to delete is being
  preempted (GCE gives it about 30 seconds).

Each preemption is reported once, keyed by the instance's numeric id (names can be reused).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from datetime import datetime, timedelta
from typing import Any

from burster.model import Interruption
from providers.gcp.naming import is_cluster_instance, last_segment, parse_time

PREEMPTED_FILTER = 'operationType="compute.instances.preempted"'
ENDING_OPS = frozenset({"compute.instances.preempted", "delete"})  # what removes a VM of ours
NOTICE_S = 30.0  # GCE's preemption notice: ACPI soft-off, then the VM stops within about 30 s
STOPPING_STATES = frozenset({"STOPPING", "TERMINATED", "SUSPENDING", "SUSPENDED"})


class PreemptionWatch:
    """Turns preempted Operations and preempted-looking instances into one Interruption per VM."""

    def __init__(self, cluster: str, now: Callable[[], datetime]) -> None:
        self._cluster = cluster
        self._now = now
        self._reported: set[str] = set()

    def _notice(self, key: str, name: str, at: datetime) -> Interruption | None:
        if key in self._reported:
            return None
        self._reported.add(key)
        return Interruption(name, "gcp", "preempted", at, at + timedelta(seconds=NOTICE_S))

    def from_operations(self, ops: Iterable[Any], known: Container[str]) -> list[Interruption]:
        """Notices from ``compute.instances.preempted`` Operations that target our instances."""
        out = []
        for op in ops:
            if op.operation_type != "compute.instances.preempted":
                continue
            name = last_segment(op.target_link)
            if name not in known and not is_cluster_instance(self._cluster, name):
                continue
            key = str(op.target_id or op.target_link)
            notice = self._notice(key, name, parse_time(op.insert_time, self._now()))
            if notice is not None:
                out.append(notice)
        return out

    def from_instances(self, instances: Iterable[Any], deleting: Container[str]) -> list[Interruption]:
        """Notices for Spot VMs of ours that are stopping although we did not delete them."""
        out = []
        for inst in instances:
            spot = inst.scheduling.provisioning_model == "SPOT" or inst.scheduling.preemptible
            if not spot or inst.status not in STOPPING_STATES or inst.name in deleting:
                continue
            notice = self._notice(str(inst.id or inst.self_link), inst.name, self._now())
            if notice is not None:
                out.append(notice)
        return out


def ended_at(ops: Iterable[Any], target_id: int, default: datetime) -> datetime | None:
    """When the instance ``target_id`` went: the earliest end of its preempted or delete Operation
    (``endTime``, else ``insertTime``); None when none is listed."""
    ends = [parse_time(op.end_time or op.insert_time, default) for op in ops
            if op.operation_type in ENDING_OPS and int(op.target_id or 0) == target_id]
    return min(ends, default=None)
