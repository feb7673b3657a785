"""A local HTTPS fake of the public ARM REST API for Microsoft.Compute/virtualMachines.

Shapes follow Microsoft's documentation:
- VirtualMachines Create Or Update / Get / List / Delete / Instance View (azure-rest-api-specs examples, e.g.
  VirtualMachine_Create_WithNetworkInterfaceConfiguration.json): PUT answers 201 (new) or 200
  (existing) with the VM and an ``Azure-AsyncOperation`` header; DELETE answers 202 with ``Location``
  and ``Azure-AsyncOperation`` (204 when the VM does not exist); list is ``{"value", "nextLink"}``.
- "Track asynchronous Azure operations": the status resource is ``{"name", "startTime", "status":
  "InProgress"|"Succeeded"|"Failed", "endTime", "error": {"code", "message"}}``; the ``Location``
  (monitor) URL answers 202 while running and 200 when done.
- ARM error bodies (``azure_errors.py``): throttling is 429 + ``Retry-After``; quota 409
  OperationNotAllowed; an unavailable size 409 SkuNotAvailable; a failed allocation fails the async
  operation with (Zonal)AllocationFailed, leaving the VM Failed.
Time does not pass by itself: an operation finishes after ``op_polls`` status reads, or on ``settle()``.
``drop_answers`` loses answers: the request is carried out, then the connection closes unanswered.
"""

from __future__ import annotations

import base64
import copy
import re
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes import azure_records
from tests.fakes.azure_errors import (
    ALLOCATION_FAILED,
    ZONAL_ALLOCATION_FAILED,
    error,
    now_iso,
    sku_not_available,
    throttled,
)
from tests.fakes.azure_tls import DROP, HttpsServer, LocalTls
from tests.fakes.azure_validate import json_body, validate_vm, vm_resource

SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
TOKEN = "fake-arm-token"
Reply = tuple[int, dict[str, str], Any]
_VM = re.compile(r"^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/"
                 r"virtualMachines(?:/([^/]+))?$", re.IGNORECASE)
_VIEW = re.compile(r"^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/"
                   r"virtualMachines/([^/]+)/instanceView$", re.IGNORECASE)
_OP = re.compile(r"^/subscriptions/([^/]+)/providers/Microsoft\.Compute/locations/([^/]+)/operations/"
                 r"([^/]+)$", re.IGNORECASE)
@dataclass
class Operation:
    op_id: str
    kind: str  # create | update | delete
    group: str
    name: str
    location: str
    polls_left: int
    failure: dict[str, Any] | None = None
    status: str = "InProgress"
    start: str = field(default_factory=now_iso)
    end: str = ""


class FakeArm:
    """The fake's state plus knobs; ``url`` is its base URL (AzureConfig.base_url)."""

    def __init__(self, tls: LocalTls, *, sizes: Mapping[str, Iterable[str]], op_polls: int = 1,
                 page_size: int = 50, subscription: str = SUBSCRIPTION) -> None:
        self.subscription = subscription
        self.sizes = {loc.lower(): set(s) for loc, s in sizes.items()}
        self.op_polls, self.page_size = op_polls, page_size
        self.lock = threading.RLock()
        self.groups: dict[str, dict[str, dict[str, Any]]] = {}
        self.private: dict[tuple[str, str], dict[str, Any]] = {}  # customData: never returned
        self.ops: dict[str, Operation] = {}
        self.capacity: dict[str, int] = {}
        self.put_faults: list[tuple[int, dict[str, Any]]] = []
        self.throttled, self.retry_after_s = 0, 1
        self.throttled_polls = 0
        self.allocation_faults: list[dict[str, Any]] = []
        self.denied: set[str] = set()
        self.tokens = {TOKEN}
        self.requests: list[tuple[str, str]] = []
        self.power: dict[tuple[str, str], str] = {}  # (group, VM) -> PowerState, once created
        self.keys: dict[str, dict[str, dict[str, Any]]] = {}  # group -> sshPublicKeys (azure_records.py)
        self.record_faults: list[tuple[int, dict[str, Any]] | None] = []  # per record PUT; None: answer
        self.dropped: dict[str, int] = {}  # method -> answers to lose (requests naming one VM)
        self.drop_group = ""  # ... of this resource group (lower case)
        self.server = HttpsServer(self, tls).start()
        self.url = self.server.url

    # --- knobs -----------------------------------------------------------------------------
    def add_group(self, name: str) -> None:
        with self.lock:
            self.groups.setdefault(name.lower(), {})

    def set_capacity(self, vm_size: str, vms: int | None) -> None:
        """At most ``vms`` more allocations of ``vm_size`` succeed (None: unlimited)."""
        with self.lock:
            if vms is None:
                self.capacity.pop(vm_size.lower(), None)
            else:
                self.capacity[vm_size.lower()] = vms

    def fail_next_put(self, status: int, body: dict[str, Any]) -> None:
        with self.lock:
            self.put_faults.append((status, body))

    def drop_answers(self, group: str = "", **by_method: int) -> None:
        """``drop_answers(rg, PUT=2)``: the next 2 PUTs of a VM in resource group ``rg`` are carried
        out, but the connection closes before the answer (a timeout, a reset). Only that group's
        requests count (an earlier test's SDK poller may still read its own VMs). No counts: none lost."""
        with self.lock:
            self.dropped, self.drop_group = dict(by_method), group.lower()

    def fail_record_writes(self, *faults: tuple[int, dict[str, Any]] | None) -> None:
        """The next record (sshPublicKeys) PUTs answer these (status, ARM error); None: as usual."""
        with self.lock:
            self.record_faults = list(faults)

    def throttle_next(self, calls: int, retry_after_s: int = 1) -> None:
        with self.lock:
            self.throttled, self.retry_after_s = calls, retry_after_s

    def throttle_polls(self, calls: int) -> None:
        """The next ``calls`` async-operation status reads answer 429."""
        with self.lock:
            self.throttled_polls = calls

    def fail_next_allocation(self, body: dict[str, Any]) -> None:
        """The next new VM's async operation fails with ``body`` (an ARM error)."""
        with self.lock:
            self.allocation_faults.append(body)

    def settle(self) -> None:
        """Let every running operation finish (time passing)."""
        with self.lock:
            for op in list(self.ops.values()):
                if op.status == "InProgress":
                    self._finish(op)

    def evict(self, group: str, name: str) -> None:
        """Spot eviction with evictionPolicy Delete: the VM goes away."""
        with self.lock:
            self.groups[group.lower()].pop(name.lower(), None)

    def power_off(self, group: str, name: str, state: str = "deallocated") -> None:
        """The VM is stopped outside the controller (portal, guest shutdown): ``stopped`` keeps
        its host and bills compute, ``deallocated`` releases it; the model view does not change."""
        with self.lock:
            self.power[(group.lower(), name.lower())] = state

    def vm(self, group: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            return copy.deepcopy(self.groups.get(group.lower(), {}).get(name.lower()))

    def records(self, group: str) -> list[dict[str, Any]]:
        """The group's sshPublicKeys resources (the adapter's launch records)."""
        with self.lock:
            return copy.deepcopy(list(self.keys.get(group.lower(), {}).values()))

    def custom_data(self, group: str, name: str) -> str:
        return base64.b64decode(self.private[(group.lower(), name.lower())]["customData"]).decode()

    def count(self, method: str, pattern: str = "") -> int:
        with self.lock:
            return sum(1 for m, p in self.requests if m == method and pattern in p)

    def stop(self) -> None:
        self.server.stop()

    # --- request handling ------------------------------------------------------------------
    def handle(self, method: str, target: str, headers: Mapping[str, str], raw: bytes) -> Reply:
        status, extra, body = self._handle(method, target, headers, raw)
        m_vm = _VM.match(urlsplit(target).path)
        with self.lock:
            if m_vm and m_vm.group(3) and m_vm.group(2).lower() == self.drop_group \
                    and self.dropped.get(method, 0) > 0:
                self.dropped[method] -= 1
                return DROP, {}, None
        kind = "reads" if method == "GET" else "writes"
        ids = {"x-ms-request-id": str(uuid.uuid4()), "x-ms-correlation-request-id": str(uuid.uuid4())}
        return status, {**ids, f"x-ms-ratelimit-remaining-subscription-{kind}": "1199", **extra}, body

    def _handle(self, method: str, target: str, headers: Mapping[str, str], raw: bytes) -> Reply:
        split = urlsplit(target)
        path, query = split.path, {k: v[0] for k, v in parse_qs(split.query).items()}
        with self.lock:
            self.requests.append((method, path))
            auth = headers.get("Authorization", "")
            if not auth.startswith("Bearer "):
                return 401, {}, error("AuthenticationFailed",
                                      "Authentication failed. The 'Authorization' header is missing.")
            if auth[7:] not in self.tokens:
                return 401, {}, error("InvalidAuthenticationToken", "The access token is invalid.")
            if "api-version" not in query:
                return 400, {}, error("MissingApiVersionParameter", "The api-version query parameter "
                                      "(?api-version=) is required for all requests.")
            if self.throttled > 0:
                self.throttled -= 1
                return self._throttle(method)
            m_view, m_key = _VIEW.match(path), azure_records.PATH.match(path)
            if m_view and method == "GET":
                return self._instance_view(*m_view.groups())
            if m_key and m_key.group(1) == self.subscription and m_key.group(2).lower() in self.groups:
                return azure_records.handle(self, method, m_key.group(2), m_key.group(3), query, raw)
            m_vm, m_op = _VM.match(path), _OP.match(path)
            sub = (m_vm or m_op).group(1) if (m_vm or m_op) else ""
            if not (m_vm or m_op):
                return 404, {}, error("InvalidResourceType", f"The resource type could not be found for "
                                      f"path '{path}'.")
            if sub != self.subscription:
                return 404, {}, error("SubscriptionNotFound", f"The subscription '{sub}' could not be found.")
            if m_op and self.throttled_polls > 0:
                self.throttled_polls -= 1
                return self._throttle(method)
            if m_op:
                return self._op(m_op.group(2), m_op.group(3), query)
            group, name = m_vm.group(2), m_vm.group(3)  # type: ignore[union-attr]
            if group.lower() not in self.groups:
                return 404, {}, error("ResourceGroupNotFound",
                                      f"Resource group '{group}' could not be found.")
            if name is None:
                return self._list(group, query) if method == "GET" else (405, {}, None)
            action = {"PUT": "write", "DELETE": "delete", "GET": "read"}.get(method, "")
            if f"Microsoft.Compute/virtualMachines/{action}" in self.denied:
                return 403, {}, error("AuthorizationFailed", "The client 'burster-test' with object id "
                                      "'11111111-2222-3333-4444-555555555555' does not have authorization "
                                      f"to perform action 'Microsoft.Compute/virtualMachines/{action}' over "
                                      f"scope '{path}' or the scope is invalid. If access was recently "
                                      "granted, please refresh your credentials.")
            if method == "GET":
                vm = self.groups[group.lower()].get(name.lower())
                if vm is None:
                    return 404, {}, error("ResourceNotFound", f"The Resource 'Microsoft.Compute/"
                                          f"virtualMachines/{name}' under resource group '{group}' was not "
                                          "found. For more details please go to "
                                          "https://aka.ms/ARMResourceNotFoundFix")
                return 200, {}, vm
            if method == "PUT":
                return self._put(group, name, path, query, raw)
            if method == "DELETE":
                return self._delete(group, name, query)
            return 405, {}, None

    def _throttle(self, method: str) -> Reply:
        return 429, *throttled(method, self.retry_after_s)

    def _op_urls(self, op: Operation, query: Mapping[str, str]) -> dict[str, str]:
        base = (f"{self.url}/subscriptions/{self.subscription}/providers/Microsoft.Compute/locations/"
                f"{op.location}/operations/{op.op_id}?p={uuid.uuid4()}&api-version={query['api-version']}")
        urls = {"Azure-AsyncOperation": base}
        if op.kind == "delete":
            urls["Location"] = base + "&monitor=true"
        return urls

    def _new_op(self, kind: str, group: str, name: str, location: str,
                failure: dict[str, Any] | None = None) -> Operation:
        op = Operation(uuid.uuid4().hex, kind, group.lower(), name.lower(), location, self.op_polls, failure)
        self.ops[op.op_id] = op
        return op

    def _finish(self, op: Operation) -> None:
        op.status, op.end = ("Failed" if op.failure else "Succeeded"), now_iso()
        vms = self.groups.get(op.group, {})
        if op.kind == "delete":
            vms.pop(op.name, None)
            self.private.pop((op.group, op.name), None)
            self.power.pop((op.group, op.name), None)
        elif op.name in vms:
            vms[op.name]["properties"]["provisioningState"] = "Failed" if op.failure else "Succeeded"
            if not op.failure:
                self.power.setdefault((op.group, op.name), "running")

    def _op(self, location: str, op_id: str, query: Mapping[str, str]) -> Reply:
        op = self.ops.get(op_id)
        if op is None or op.location.lower() != location.lower():
            return 404, {}, error("NotFound", "The entity was not found in this Azure location.")
        if op.status == "InProgress":
            op.polls_left -= 1
            if op.polls_left <= 0:
                self._finish(op)
        if query.get("monitor") == "true":  # the Location URL
            if op.status == "InProgress":
                return 202, self._op_urls(op, query), None
            return (400, {}, op.failure) if op.failure else (200, {}, None)
        body: dict[str, Any] = {"startTime": op.start, "status": op.status, "name": op.op_id}
        if op.status != "InProgress":
            body["endTime"] = op.end
        if op.failure:
            body.update(op.failure)
        return 200, {}, body

    def _instance_view(self, sub: str, group: str, name: str) -> Reply:
        """VirtualMachines_InstanceView: ``statuses`` holds ProvisioningState/<state> and, once the VM
        has been allocated, PowerState/<state> (running, stopped, deallocated, ...)."""
        if sub != self.subscription:
            return 404, {}, error("SubscriptionNotFound", f"The subscription '{sub}' could not be found.")
        if "Microsoft.Compute/virtualMachines/instanceView/read" in self.denied:
            return 403, {}, error("AuthorizationFailed", "The client 'burster-test' does not have authorization "
                                  "to perform action 'Microsoft.Compute/virtualMachines/instanceView/read'.")
        vm = self.groups.get(group.lower(), {}).get(name.lower())
        if vm is None:
            return 404, {}, error("ResourceNotFound", f"The Resource 'Microsoft.Compute/virtualMachines/{name}' "
                                  f"under resource group '{group}' was not found.")
        state = vm["properties"]["provisioningState"]
        statuses = [{"code": f"ProvisioningState/{state.lower()}", "level": "Info",
                     "displayStatus": f"Provisioning {state.lower()}", "time": now_iso()}]
        power = self.power.get((group.lower(), name.lower()))
        if power:
            statuses.append({"code": f"PowerState/{power}", "level": "Info", "displayStatus": f"VM {power}"})
        return 200, {}, {"computerName": vm["properties"].get("osProfile", {}).get("computerName", name),
                         "osName": "ubuntu", "osVersion": "22.04", "statuses": statuses}

    def _list(self, group: str, query: Mapping[str, str]) -> Reply:
        vms = list(self.groups[group.lower()].values())
        start = int(query.get("$skiptoken", "0") or 0)
        page: dict[str, Any] = {"value": vms[start:start + self.page_size]}
        if start + self.page_size < len(vms):
            page["nextLink"] = (f"{self.url}/subscriptions/{self.subscription}/resourceGroups/{group}/"
                                f"providers/Microsoft.Compute/virtualMachines?api-version="
                                f"{query['api-version']}&$skiptoken={start + self.page_size}")
        return 200, {}, page

    def _delete(self, group: str, name: str, query: Mapping[str, str]) -> Reply:
        vm = self.groups[group.lower()].get(name.lower())
        if vm is None:
            return 204, {}, None
        running = [o for o in self.ops.values() if o.group == group.lower() and o.name == name.lower()
                   and o.kind == "delete" and o.status == "InProgress"]
        op = running[0] if running else self._new_op("delete", group, name, vm["location"])
        vm["properties"]["provisioningState"] = "Deleting"
        return 202, self._op_urls(op, query), None

    def _put(self, group: str, name: str, path: str, query: Mapping[str, str], raw: bytes) -> Reply:
        body = json_body(raw)
        if body is None:
            return 400, {}, error("InvalidRequestContent", "The request content was invalid and could not "
                                  "be deserialized.")
        invalid = validate_vm(name, body)
        if invalid:
            return 400, {}, invalid
        if self.put_faults:
            return self._fault()
        location = str(body["location"]).lower()
        props = body["properties"]
        size = str(props["hardwareProfile"]["vmSize"])
        if location not in self.sizes:
            return 400, {}, error("LocationNotAvailableForResourceType", f"The provided location "
                                  f"'{location}' is not available for resource type 'Microsoft.Compute/"
                                  f"virtualMachines'. List of available regions for the resource type is "
                                  f"'{','.join(sorted(self.sizes))}'.")
        if size not in set().union(*self.sizes.values()):
            return 400, {}, error("InvalidParameter", f"The requested VM size {size} is not available in "
                                  "the current region. Find out more on the available VM sizes in each "
                                  "region at https://aka.ms/azure-regions.")
        if size not in self.sizes[location]:
            return 409, {}, sku_not_available(path, location, self.subscription)
        vms = self.groups[group.lower()]
        existing = vms.get(name.lower())
        if existing is not None:
            state = existing["properties"]["provisioningState"]
            if state == "Deleting":
                return 409, {}, error("OperationNotAllowed", f"Operation 'PUT' is not allowed on VM "
                                      f"'{name}' since the VM is marked for deletion. You can only retry the "
                                      "Delete operation (or wait for an ongoing one to complete).")
            existing["tags"] = dict(body.get("tags") or {})
            running = next((o for o in self.ops.values() if o.group == group.lower()
                            and o.name == name.lower() and o.status == "InProgress"), None)
            if running is not None:
                op = running
            else:
                existing["properties"]["provisioningState"] = "Creating" if state == "Failed" else "Updating"
                op = self._new_op("update", group, name, location, self._allocate(size, props, state))
            return 200, self._op_urls(op, query), existing
        vm = vm_resource(self.subscription, group, name, body)
        vms[name.lower()] = vm
        self.private[(group.lower(), name.lower())] = {"customData": props.get("osProfile", {})
                                                       .get("customData", "")}
        op = self._new_op("create", group, name, location, self._allocate(size, props, "new"))
        return 201, self._op_urls(op, query), vm

    def _fault(self) -> Reply:
        status, body = self.put_faults.pop(0)
        return status, {}, body

    def _allocate(self, size: str, props: Mapping[str, Any], state: str) -> dict[str, Any] | None:
        if state not in ("new", "Failed"):
            return None
        if self.allocation_faults:
            return self.allocation_faults.pop(0)
        left = self.capacity.get(size.lower())
        if left is None:
            return None
        if left > 0:
            self.capacity[size.lower()] = left - 1
            return None
        zonal = bool(props.get("zones"))
        return error("ZonalAllocationFailed" if zonal else "AllocationFailed",
                     ZONAL_ALLOCATION_FAILED if zonal else ALLOCATION_FAILED)
