"""Launch records: which VMs a launch made, kept where a deleted VM leaves nothing.

ARM's PUT of a VM is idempotent only while the VM exists: once a Spot VM is evicted
(``evictionPolicy: Delete``) or deleted, a PUT of its name makes a new VM, and nothing in the
resource group says the first one ran. EC2 answers a replayed ``ClientToken`` with the instances it
made, terminated ones included; here a launch writes a record instead: an empty
``Microsoft.Compute/sshPublicKeys`` resource (free, no key) named after the launch
(``vms.launch_name``), tagged with the ownership tags, the request id, when it launched, the VM
indexes it is about to PUT (``sent``, written before the PUTs) and those ARM accepted (``made``,
written after them). A replay finds the record and reports a made VM that is gone as ended, so the
controller bills it and launches again under a new request id; a gone VM only ``sent`` (the
controller died during the PUTs, or their answers were lost) may never have existed: it is
reported ended too, with nothing to bill. ``If-None-Match: *`` on the PUT would not do: it refuses
to overwrite an existing VM, and a deleted one no longer exists.

A record serves replays for ``KEEP_S`` after its launch; older ones are expired: ignored, even by
their own request's replay, and deleted by the next read. Records are best effort: a refused or
failed read or write is a warning, and the launch goes on as without them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from burster.errors import ProviderError
from providers.azure import vms

log = logging.getLogger("burster.providers.azure")
KEEP_S = 6 * 3600.0  # a replay comes within a pass or a restart; EC2 lists terminated instances ~1 h
REQUEST_TAG = vms.REQUEST_TAG
MADE_TAG = "burster-made"  # the VM indexes made, as ranges: "0-3,5"
SENT_TAG = "burster-sent"  # indexes PUT (or about to be) whose acceptance is not known
AT_TAG = "burster-launched-at"  # ISO 8601, when the launch started its PUTs


@dataclass(frozen=True, slots=True)
class Record:
    launched_at: datetime
    made: frozenset[int]
    sent: frozenset[int] = frozenset()


def encode(indexes: Iterable[int]) -> str:
    """``{0, 1, 2, 3, 5}`` -> ``"0-3,5"`` (a tag value holds 256 characters)."""
    runs: list[list[int]] = []
    for i in sorted(set(indexes)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


def decode(text: str) -> frozenset[int]:
    out: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return frozenset(out)


def _parse(tags: dict[str, str]) -> Record | None:
    try:
        made = decode(tags.get(MADE_TAG, ""))
        return Record(datetime.fromisoformat(tags[AT_TAG]), made, decode(tags.get(SENT_TAG, "")) - made)
    except (KeyError, ValueError):
        return None


class LaunchRecords:
    """Read, write and expire the launch records of one cluster in one resource group."""

    def __init__(self, ops: Any, call: Callable[..., Any], *, resource_group: str, location: str,
                 cluster: str, now: Callable[[], datetime]) -> None:
        self._ops, self._call = ops, call
        self._rg, self._location, self._cluster, self._now = resource_group, location, cluster, now

    def read(self, request_id: str) -> Record | None:
        """This request's record, if any and not expired; deletes this cluster's records older than
        ``KEEP_S`` (this request's own too)."""
        try:
            listed = self._call(lambda: [vms.wire(r) for r in self._ops.list_by_resource_group(self._rg)],
                                doing=f"listing launch records of resource group {self._rg}")
        except ProviderError as err:
            log.warning("azure: could not read launch records (%s); a VM deleted since a launch that "
                        "is replayed would be made again", err)
            return None
        mine, old_before = vms.launch_name(self._cluster, request_id), self._now() - timedelta(seconds=KEEP_S)
        found = None
        for res in (r for r in listed if vms.is_ours(r, self._cluster)):
            rec, name = _parse(res.get("tags") or {}), str(res.get("name"))
            if rec is None or rec.launched_at < old_before:
                if name == mine:
                    log.warning("azure: the launch record of request %s is older than %.0f h; VMs of it that "
                                "are gone are made again", request_id, KEEP_S / 3600)
                self._delete(name)
            elif name == mine:
                found = rec
        return found

    def write(self, request_id: str, launched_at: datetime, made: Iterable[int], tags: dict[str, str],
              sent: Iterable[int] = ()) -> None:
        """Record that the launch made the VMs of indexes ``made`` and may have made those of ``sent``
        (replaces the record's lists); with both empty the record is deleted."""
        name = vms.launch_name(self._cluster, request_id)
        done = set(made)
        unsure = set(sent) - done
        if not done and not unsure:
            self._delete(name)
            return
        rtags = {**tags, AT_TAG: launched_at.isoformat(), MADE_TAG: encode(done)}
        if unsure:
            rtags[SENT_TAG] = encode(unsure)
        body = {"location": self._location, "properties": {}, "tags": rtags}
        try:
            self._call(partial(self._ops.create, self._rg, name, body), doing=f"writing launch record {name}")
        except ProviderError as err:
            log.warning("azure: could not write launch record %s (%s); if its VMs are deleted before "
                        "the controller records them, a replay makes them again", name, err)

    def _delete(self, name: str) -> None:
        try:
            self._call(partial(self._ops.delete, self._rg, name), doing=f"deleting launch record {name}")
        except ProviderError as err:
            log.warning("azure: could not delete launch record %s: %s", name, err)

