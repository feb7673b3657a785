"""The Azure CloudProvider: one VM per node, created with deterministic names in one resource group.

- launch: ``count`` PUTs of ``Microsoft.Compute/virtualMachines/<name>`` (names derive from the cluster,
  the request id and the index, so a retry re-finds what the first try made), then the long-running
  operations are polled together. VMs whose allocation failed are deleted again; the ones that came
  up are returned, or carried by PartialLaunchError. A launch record (``records.py``), written before
  and after the PUTs, keeps which VMs were (or may have been) made: a replay reports one deleted
  since as ended (a deleting one as terminating), no PUT. A PUT that failed without a clear refusal
  is followed by a GET: ARM may have made the VM and lost the answer.
- list: GET the resource group's VMs, keep those tagged managed-by=burster and burster-cluster; a
  few instance views a listing tell which are stopped or deallocated (``power.py``).
- terminate: DELETE (202, not awaited) of tagged VMs only; unknown ids are ignored.
- interruptions: Scheduled Events documents posted by the node agent (``report_scheduled_events``).
"""

from __future__ import annotations

import difflib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from burster.clock import utc_now
from burster.errors import CapacityError, NotFoundError, PartialLaunchError, ProviderError
from burster.lifecycle import NodeState
from burster.model import Interruption, Node, Offering, node_tags
from burster.retry import call_with_backoff
from providers.azure import vms
from providers.azure.errors import PROVIDER, retry_after_of, sdk_errors, translate
from providers.azure.power import PowerWatch
from providers.azure.pricing import PriceBook
from providers.azure.records import LaunchRecords, Record
from providers.azure.scheduled_events import interruptions_of, parse_document

log = logging.getLogger("burster.providers.azure")
T = TypeVar("T")
MAX_SEEN_EVENTS = 10_000
CAPACITY_BLOCK_S = 600.0  # an offering that met a capacity error is unavailable in offerings() this long


class AzureProvider:
    """CloudProvider over azure-mgmt-compute's ``virtual_machines`` operations."""

    name = PROVIDER

    def __init__(
        self,
        compute: Any,
        *,
        subscription_id: str,
        resource_group: str,
        location: str,
        cluster: str,
        subnet_id: str,
        user_data: Callable[[Offering], str],
        prices: PriceBook,
        catalog: Sequence[Offering],
        ssh_public_key: str,
        image_reference: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = utc_now,
        polling_interval_s: float = 5.0,
        launch_wait_s: float = 900.0,
        spot_max_price_usd: float = -1.0,
        attempts: int = 5,
    ) -> None:
        self._vms = compute.virtual_machines
        self._subscription = subscription_id
        self._rg = resource_group
        self._location = location
        self._cluster = cluster
        self._subnet_id = subnet_id
        self._image = vms.image_reference(image_reference or {})
        self._user_data = user_data
        self._prices = prices
        self._catalog = {(o.region, o.instance_type, o.market): o for o in catalog}
        self._sizes = sorted({o.instance_type for o in catalog})
        self._ssh_key = ssh_public_key
        self._sleep, self._now = sleep, now
        self._poll_s, self._wait_s = polling_interval_s, launch_wait_s
        self._spot_max_price = spot_max_price_usd
        self._attempts = attempts
        self._events_lock = threading.Lock()
        self._pending: list[Interruption] = []
        self._seen: dict[tuple[str, str], None] = {}
        self._blocked: dict[str, datetime] = {}  # offering key -> unavailable until
        self._power = PowerWatch(self._read_view, now)
        self._records = LaunchRecords(compute.ssh_public_keys, self._call, resource_group=resource_group,
                                      location=location, cluster=cluster, now=now)

    # --- CloudProvider -------------------------------------------------------------------
    def offerings(self) -> Sequence[Offering]:
        now = self._now()
        self._blocked = {k: until for k, until in self._blocked.items() if until > now}
        return [replace(o, available=False) if o.key in self._blocked else o
                for o in self._prices.offerings()]

    def list_nodes(self) -> Sequence[Node]:
        """Our VMs; a provisioned one whose instance view shows it stopped or deallocated is
        TERMINATING (it still bills, and runs nothing): the controller deletes it."""
        ours = [vm for vm in self._list_raw() if vms.is_ours(vm, self._cluster)]
        stopped = self._power.stopped([str(vm.get("name")) for vm in ours if vms.state_of(vm) is NodeState.READY])
        return [self._to_node(vm, stopped=str(vm.get("name")) in stopped) for vm in ours]

    def launch(
        self, offering: Offering, count: int, *, request_id: str,
        labels: Mapping[str, str] | None = None,
    ) -> Sequence[Node]:
        self._check(offering)
        if count <= 0:
            return []
        key = offering.key
        names = [vms.vm_name(self._cluster, request_id, i) for i in range(count)]
        existing = {str(vm.get("name")): vm for vm in self._list_raw(offering_key=key)
                    if vm.get("name") in names and vms.is_ours(vm, self._cluster)}
        labels = dict(labels or {})
        done = {name: self._to_node(vm) for name, vm in existing.items()  # a Deleting one: TERMINATING
                if vms.state_of(vm) is not NodeState.FAILED}
        record = self._records.read(request_id) if len(done) < count else None
        todo: list[str] = []
        for i, name in enumerate(names):
            if name in done:
                continue
            if name not in existing and record is not None and i in record.made | record.sent:
                done[name] = self._gone(name, i in record.made, offering, request_id, labels, record)
            else:
                todo.append(name)
        errors = self._create(offering, todo, request_id, labels, done, record) if todo else {}
        nodes = [done[n] for n in names if n in done]
        if not errors:
            return nodes
        cause = next(errors[n] for n in names if n in errors)
        if isinstance(cause, CapacityError):
            self._blocked[key] = self._now() + timedelta(seconds=CAPACITY_BLOCK_S)
        if not nodes:
            raise cause
        raise PartialLaunchError(
            f"azure: launched {len(nodes)} of {count} VMs of {key} ({cause})",
            nodes=tuple(nodes), cause=cause, provider=PROVIDER, offering_key=key,
        )

    def terminate(self, node_ids: Sequence[str], *, request_id: str) -> None:
        wanted = set(node_ids)
        if not wanted:
            return
        ours = {str(vm.get("name")) for vm in self._list_raw() if vms.is_ours(vm, self._cluster)
                and vms.state_of(vm) is not NodeState.TERMINATING}
        for name in sorted(wanted - ours):
            log.info("azure: not deleting %s: no VM of cluster %s has that name", name, self._cluster)
        for name in sorted(wanted & ours):
            self._call(partial(self._vms.begin_delete, self._rg, name, polling=False),
                       doing=f"deleting VM {name}")
            log.info("azure: deleting VM %s (request %s)", name, request_id)

    def interruptions(self) -> Sequence[Interruption]:
        with self._events_lock:
            out, self._pending = self._pending, []
        return out

    # --- evictions -----------------------------------------------------------------------
    def report_scheduled_events(self, payload: Mapping[str, Any] | str | bytes) -> list[Interruption]:
        """Queue the Preempt/Terminate events of a Scheduled Events document for ``interruptions``.

        The node agent posts what IMDS returned; repeated posts of the same event queue it once.
        Returns the newly queued interruptions.
        """
        doc = parse_document(payload)
        new = []
        with self._events_lock:
            for event_id, notice in interruptions_of(doc, self._now(), PROVIDER):
                seen = (event_id, notice.node_id)
                if seen in self._seen:
                    continue
                self._seen[seen] = None
                if len(self._seen) > MAX_SEEN_EVENTS:
                    self._seen.pop(next(iter(self._seen)))
                self._pending.append(notice)
                new.append(notice)
        for notice in new:
            log.warning("azure: %s notice for %s, terminating at %s", notice.kind, notice.node_id,
                        notice.terminate_at.isoformat())
        return new

    # --- internals -----------------------------------------------------------------------
    def _call(self, fn: Callable[[], T], *, doing: str, offering_key: str = "", attempts: int = 0) -> T:
        """One SDK call with Burster's backoff; SDK errors become ProviderErrors."""
        answers = sdk_errors()

        def once() -> T:
            try:
                return fn()
            except answers as err:
                raise translate(err, doing=doing, offering_key=offering_key,
                                subscription=self._subscription, retry_after_s=retry_after_of(err)) from err

        return call_with_backoff(once, attempts=attempts or self._attempts, sleep=self._sleep)

    def _list_raw(self, offering_key: str = "") -> list[dict[str, Any]]:
        return self._call(lambda: [vms.wire(vm) for vm in self._vms.list(self._rg)],
                          doing=f"listing VMs of resource group {self._rg}", offering_key=offering_key)

    def _read_view(self, name: str) -> dict[str, Any]:
        """One VM's instance view, one try (a throttled read waits for a later listing)."""
        return self._call(lambda: vms.wire(self._vms.instance_view(self._rg, name)),
                          doing=f"reading the instance view of VM {name}", attempts=1)

    def _check(self, offering: Offering) -> None:
        if offering.provider != PROVIDER or offering.region != self._location:
            raise NotFoundError(f"azure: offering {offering.key} is not in the configured location "
                                f"{self._location}; pass one of this adapter's offerings()",
                                provider=PROVIDER, offering_key=offering.key)
        if offering.instance_type not in self._sizes:
            close = difflib.get_close_matches(offering.instance_type, self._sizes, n=5)
            hint = f"close matches: {', '.join(close)}" if close else f"known: {', '.join(self._sizes[:10])}"
            raise NotFoundError(f"azure: unknown VM size {offering.instance_type!r} in {self._location}; "
                                f"{hint}", provider=PROVIDER, offering_key=offering.key)

    def _create(self, offering: Offering, names: list[str], request_id: str, labels: dict[str, str],
                done: dict[str, Node], record: Record | None) -> dict[str, ProviderError]:
        key, launched_at = offering.key, record.launched_at if record else self._now()
        tags = vms.vm_tags(self._cluster, request_id, labels)
        custom = vms.encode_custom_data(self._user_data(offering))
        if len(custom) > vms.MAX_CUSTOM_DATA_B64:
            raise ProviderError(f"azure: user data for {key} is {len(custom)} base64 characters; Azure "
                                f"accepts {vms.MAX_CUSTOM_DATA_B64}. Shorten the bootstrap script.",
                                provider=PROVIDER, offering_key=key)
        errors: dict[str, ProviderError] = {}
        started: dict[str, tuple[Any, dict[str, Any]]] = {}
        answered: dict[str, Node] = {}  # made, though the PUT's answer was lost
        made = set(record.made if record else ()) | {_index(n) for n, node in done.items()
                                                     if node.state is not NodeState.TERMINATED}
        unsure = set(record.sent if record else ()) - made
        # before the PUTs: a controller that dies during them leaves which VMs it may have made
        self._records.write(request_id, launched_at, made, tags, sent=unsure | {_index(n) for n in names})
        for name in names:
            body = vms.vm_body(offering, name=name, tags=tags, subnet_id=self._subnet_id, image=self._image,
                               ssh_public_key=self._ssh_key, custom_data_b64=custom,
                               spot_max_price_usd=self._spot_max_price)
            tries: list[None] = []

            def put(name: str = name, body: dict[str, Any] = body, tries: list[None] = tries) -> Any:
                tries.append(None)
                return self._vms.begin_create_or_update(self._rg, name, body, polling_interval=self._poll_s)

            try:
                poller = self._call(put, doing=f"creating VM {name} ({key})", offering_key=key)
            except ProviderError as err:
                # no answer, or a late one (this try's or an earlier one's): ARM may have made the VM
                if err.retryable or len(tries) > 1:
                    try:
                        vm = self._made_anyway(name, request_id)
                    except ProviderError:
                        unsure.add(_index(name))
                        vm = None
                    if vm is not None:
                        answered[name] = self._to_node(vm)
                        log.warning("azure: creating VM %s failed (%s), but ARM made it; reporting it as it "
                                    "is", name, err)
                        continue
                errors[name] = err
                break  # the remaining PUTs would meet the same answer
            started[name] = (poller, body)
            log.info("azure: creating VM %s (%s, request %s)", name, key, request_id)
        made |= {_index(n) for n in [*started, *answered]}
        done.update(answered)
        # before the long wait: a controller that dies in it leaves the record
        self._records.write(request_id, launched_at, made, tags, sent=unsure)
        failed: list[str] = []
        until = time.monotonic() + self._wait_s  # one wait for all of them, not one each
        for name, (poller, body) in started.items():
            try:
                done[name] = self._await(name, poller, body, offering, request_id, labels,
                                         max(until - time.monotonic(), 0.0))
            except ProviderError as err:
                if err.retryable and not self._failed(name):  # the status checks failed, not the create
                    log.warning("azure: could not follow the create of VM %s (%s); reporting it as launching",
                                name, err)
                    done[name] = self._launching(name, offering, request_id, labels)
                    continue
                errors[name] = err
                failed.append(name)
        if failed:  # never ran: a retry with this request id makes them again
            self._records.write(request_id, launched_at, made - {_index(n) for n in failed}, tags, sent=unsure)
        self._delete_and_wait(failed)
        return errors

    def _await(self, name: str, poller: Any, body: dict[str, Any], offering: Offering, request_id: str,
               labels: Mapping[str, str], wait_s: float) -> Node:
        """Wait (up to ``wait_s`` in all) for one create; a throttled or broken poll resumes from its
        continuation token. Raises the create's own failure (a retryable error: the polls')."""
        token = poller.continuation_token()
        first = [poller]
        until = time.monotonic() + wait_s  # one wait for every try, not one each

        def once() -> tuple[Any, bool]:
            p = first.pop() if first else self._vms.begin_create_or_update(
                self._rg, name, body, continuation_token=token, polling_interval=self._poll_s)
            p.wait(max(until - time.monotonic(), 0.0))
            finished = p.done()  # before the result: one read while polling ends may be a status document
            vm = p.result() if finished else None
            return (None if vm is None else vms.wire(vm)), finished

        vm, finished = self._call(once, doing=f"creating VM {name} ({offering.key})",
                                  offering_key=offering.key)
        if finished and vm is not None:
            return self._to_node(vm)
        log.info("azure: VM %s still provisioning after %.0fs; reporting it as launching", name, self._wait_s)
        return self._launching(name, offering, request_id, labels)

    def _failed(self, name: str) -> bool:
        """Whether VM ``name`` is Failed: its create's operation failed with a retryable code (a
        failure of the status reads looks the same). False when it cannot be read: still coming."""
        try:
            vm = self._get_vm(name, attempts=1)
        except ProviderError:
            return False
        return vms.state_of(vm) is NodeState.FAILED

    def _made_anyway(self, name: str, request_id: str) -> dict[str, Any] | None:
        """The VM ``name`` if ARM made it for this request (a PUT failed: its answer may have been
        lost) and it is not Failed; None when it is not there. Raises when it cannot be read."""
        try:
            vm = self._get_vm(name)
        except NotFoundError:
            return None
        ours = vms.is_ours(vm, self._cluster) and (vm.get("tags") or {}).get(vms.REQUEST_TAG) == request_id
        return vm if ours and vms.state_of(vm) is not NodeState.FAILED else None

    def _get_vm(self, name: str, attempts: int = 0) -> dict[str, Any]:
        return self._call(lambda: vms.wire(self._vms.get(self._rg, name)), doing=f"reading VM {name}",
                          attempts=attempts)

    def _gone(self, name: str, made: bool, offering: Offering, request_id: str, labels: Mapping[str, str],
              record: Record) -> Node:
        """A VM the record says this launch made (or, ``sent`` only, may have made) that is gone: ended,
        not made again. One only sent may never have existed: it ends at its start (nothing billed)."""
        log.warning("azure: VM %s of request %s %s and is gone; not making it again", name, request_id,
                    "was made" if made else "may have been made (its PUT's answer was not recorded)")
        node = self._launching(name, offering, request_id, labels, record.launched_at)
        return replace(node, state=NodeState.TERMINATED, ended_at=self._now() if made else record.launched_at)

    def _launching(self, name: str, offering: Offering, request_id: str, labels: Mapping[str, str],
                   launched_at: datetime | None = None) -> Node:
        return Node(name, offering, NodeState.LAUNCHING, launched_at or self._now(), request_id,
                    **node_tags(labels))

    def _delete_and_wait(self, names: list[str]) -> None:
        """Remove VMs whose allocation failed (they linger in provisioningState Failed otherwise)."""
        pollers = []
        for name in names:
            try:
                pollers.append((name, self._call(
                    partial(self._vms.begin_delete, self._rg, name, polling_interval=self._poll_s),
                    doing=f"deleting failed VM {name}")))
            except ProviderError as err:
                log.warning("azure: could not delete failed VM %s: %s", name, err)
        for name, poller in pollers:
            try:
                self._call(partial(poller.result, timeout=self._wait_s), doing=f"deleting failed VM {name}")
            except ProviderError as err:
                log.warning("azure: failed VM %s may linger: %s", name, err)

    def _to_node(self, vm: Mapping[str, Any], *, stopped: bool = False) -> Node:
        tags = vm.get("tags") or {}
        size, market = vms.vm_size_of(vm), vms.market_of(vm)
        location = str(vm.get("location") or self._location)
        key = (location, size, market)
        offering = (self._prices.known(key) or self._catalog.get(key)
                    or Offering(PROVIDER, location, location, size, "unknown", 1, market, 0.0))
        state = NodeState.TERMINATING if stopped else vms.state_of(vm)
        return Node(str(vm.get("name")), offering, state, vms.created_at(vm) or self._now(),
                    str(tags.get(vms.REQUEST_TAG, "")), **node_tags(tags))


def _index(name: str) -> int:
    return int(name.rsplit("-", 1)[1])

