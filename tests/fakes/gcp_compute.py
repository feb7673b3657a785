"""A local HTTP fake of the Compute Engine REST API v1 (the parts Burster's GCP adapter uses).

Shapes follow the public reference (cloud.google.com/compute/docs/reference/rest/v1): Instance and
Operation resources (``kind``, ``selfLink``, ``status`` PENDING/RUNNING/DONE, ``error.errors[]`` with
``code``/``message``/``errorDetails``, ``httpErrorStatusCode``), list and aggregatedList envelopes
(``items``, ``nextPageToken``, per-scope ``warning`` NO_RESULTS_ON_PAGE), ``requestId`` de-duplication
(a repeated requestId returns the original Operation), and JSON error bodies
``{"error": {"code", "message", "errors": [{"message", "domain", "reason"}], "status"}}``.

Time is a tick per HTTP request: an operation goes PENDING -> RUNNING -> DONE on the next ticks
(``wait`` finishes it), an instance PROVISIONING -> STAGING (insert done) -> RUNNING, a deleted or
preempted one STOPPING -> gone. Fault knobs make the server answer with GCE's real error bodies.
Error bodies are in gcp_errors.py, insert and filter validation in gcp_validate.py, the Instance and
Operation bodies in gcp_resources.py, the list envelopes in gcp_listing.py, the server in gcp_http.py.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.fakes.gcp_errors import ApiError, rate_limited, zone_exhausted
from tests.fakes.gcp_http import serve_json
from tests.fakes.gcp_listing import aggregated_list, page, zone_list
from tests.fakes.gcp_resources import Op, fail, finish, instance_resource, operation_body
from tests.fakes.gcp_validate import matches, validate_insert

__all__ = ["ApiError", "FakeCompute", "rate_limited"]  # gcp_billing takes ApiError, rate_limited


@dataclass
class State:
    project: str
    zones: set[str]
    tick: int = 0
    instances: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    ops: dict[tuple[str, str], Op] = field(default_factory=dict)
    by_request: dict[str, tuple[str, str]] = field(default_factory=dict)
    capacity: dict[tuple[str, str], int] = field(default_factory=dict)
    capacity_code: str = "ZONE_RESOURCE_POOL_EXHAUSTED"
    throttle: list[int] = field(default_factory=list)
    fail_requests: list[tuple[str, str, ApiError]] = field(default_factory=list)  # method, path part
    fail_insert_ops: list[tuple[str, str, int, list[dict[str, Any]]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)  # method, path, query, body
    transitions: list[tuple[int, Any]] = field(default_factory=list)


class FakeCompute:
    """The fake's state and fault knobs; ``endpoint`` is what the SDK's api_endpoint points at."""

    def __init__(self, project: str = "burster-test", zones: set[str] | None = None) -> None:
        self.s = State(project, set(zones or {"us-central1-a", "us-central1-b", "us-east1-b"}))
        self._lock = threading.RLock()
        self._ids = itertools.count(7_000_000_000_000_000_001)
        self._server: ThreadingHTTPServer | None = None

    # --- fault knobs -------------------------------------------------------------------------
    def set_capacity(self, zone: str, machine_type: str, instances: int,
                     code: str = "ZONE_RESOURCE_POOL_EXHAUSTED") -> None:
        """Allow only ``instances`` more of this shape in ``zone``; later inserts end in ``code``."""
        with self._lock:
            self.s.capacity[(zone, machine_type)] = instances
            self.s.capacity_code = code

    def throttle_next(self, calls: int, status: int = 429) -> None:
        with self._lock:
            self.s.throttle += [status] * calls

    def fail_next(self, method: str, code: int, reason: str, message: str, domain: str = "global",
                  path: str = "") -> None:
        """The next request with this HTTP method (and ``path`` in its URL path) answers this error
        (403 quotaExceeded, 401, 503...)."""
        with self._lock:
            self.s.fail_requests.append((method, path, ApiError(code, message, reason, domain)))

    def fail_next_insert_op(self, code: str, message: str, http_status: int = 403,
                            details: list[dict[str, Any]] | None = None) -> None:
        """The next insert is accepted and its Operation ends DONE with ``error.errors[0].code``."""
        with self._lock:
            self.s.fail_insert_ops.append((code, message, http_status, details or []))

    def forget_request_ids(self) -> None:
        """Completed operations age out: a repeated requestId is no longer de-duplicated."""
        with self._lock:
            self.s.by_request.clear()

    def preempt(self, zone: str, name: str) -> dict[str, Any]:
        """Reclaim a Spot VM: STOPPING now, a ``compute.instances.preempted`` system event operation."""
        with self._lock:
            inst = self.s.instances[(zone, name)]
            inst["status"] = "STOPPING"
            op = self._new_op(zone, "compute.instances.preempted", inst, name_prefix="systemevent",
                              user="system", done_in=0)
            op.body["statusMessage"] = "Instance was preempted."
            action = inst.get("scheduling", {}).get("instanceTerminationAction", "STOP")
            self._later(2, lambda: self._finish_stop(zone, name, delete=action == "DELETE"))
            return op.body

    def instance(self, zone: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self.s.instances.get((zone, name))

    def put_instance(self, zone: str, name: str, body: dict[str, Any]) -> None:
        """Seed an instance someone else created (another cluster, by hand)."""
        with self._lock:
            self.s.instances[(zone, name)] = self._resource(zone, name, body, "RUNNING")

    def settle(self) -> None:
        """Let every pending transition happen."""
        with self._lock:
            self._advance(10**9)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.s.requests)

    # --- server ------------------------------------------------------------------------------
    def start(self) -> str:
        self._server = serve_json(self.handle)
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # --- request handling --------------------------------------------------------------------
    def handle(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
        url = urlparse(path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with self._lock:
            self.s.requests.append({"method": method, "path": url.path, "query": query, "body": body})
            self._advance(1)
            try:
                if self.s.throttle:
                    raise rate_limited(self.s.throttle.pop(0))
                for i, (m, part, err) in enumerate(self.s.fail_requests):
                    if m == method and part in url.path:
                        del self.s.fail_requests[i]
                        raise err
                return 200, self._route(method, url.path, query, body)
            except ApiError as err:
                return err.code, err.body

    def _route(self, method: str, path: str, q: dict[str, str], body: dict[str, Any] | None,
               ) -> dict[str, Any]:
        parts = path.removeprefix("/compute/v1/").split("/")
        if len(parts) < 3 or parts[0] != "projects" or parts[1] != self.s.project:
            raise ApiError(404, f"The resource '{path}' was not found", "notFound")
        rest = parts[2:]
        if rest == ["aggregated", "instances"] and method == "GET":
            return self._aggregated("instance", q)
        if rest == ["aggregated", "operations"] and method == "GET":
            return self._aggregated("operation", q)
        if len(rest) < 3 or rest[0] != "zones":
            raise ApiError(404, f"The resource '{path}' was not found", "notFound")
        zone, kind, tail = rest[1], rest[2], rest[3:]
        if zone not in self.s.zones:
            raise ApiError(400, f"Invalid value for field 'zone': '{zone}'. Unknown zone.", "invalid")
        if kind == "instances":
            if not tail and method == "POST":
                return self._insert(zone, body or {}, q.get("requestId"))
            if not tail and method == "GET":
                return self._list("instance", zone, q)
            if len(tail) == 1 and method == "GET":
                return self._get_instance(zone, tail[0])
            if len(tail) == 1 and method == "DELETE":
                return self._delete(zone, tail[0], q.get("requestId"))
        if kind == "operations":
            if not tail and method == "GET":
                return self._list("operation", zone, q)
            op = self.s.ops.get((zone, tail[0])) if tail else None
            if op is None:
                raise ApiError(404, f"The resource 'projects/{self.s.project}/zones/{zone}/operations/"
                               f"{tail[0] if tail else ''}' was not found", "notFound")
            if len(tail) == 2 and tail[1] == "wait" and method == "POST":
                finish(op)
            return op.body
        raise ApiError(404, f"The resource '{path}' was not found", "notFound")

    def _insert(self, zone: str, body: dict[str, Any], request_id: str | None) -> dict[str, Any]:
        if request_id and request_id in self.s.by_request:
            return self.s.ops[self.s.by_request[request_id]].body
        name = body.get("name", "")
        mt = validate_insert(zone, body)
        if (zone, name) in self.s.instances:
            raise ApiError(409, f"The resource 'projects/{self.s.project}/zones/{zone}/instances/{name}' "
                           "already exists", "alreadyExists")
        op = self._new_op(zone, "insert", {"name": name}, done_in=2, request_id=request_id)
        if self.s.fail_insert_ops:
            code, msg, http, details = self.s.fail_insert_ops.pop(0)
            fail(op, code, msg, http, details)
            return op.body
        left = self.s.capacity.get((zone, mt))
        if left is not None and left <= 0:
            msg, details = zone_exhausted(self.s.project, zone, self.s.capacity_code)
            fail(op, self.s.capacity_code, msg, 503, details)
            return op.body
        if left is not None:
            self.s.capacity[(zone, mt)] = left - 1
        inst = self._resource(zone, name, body, "PROVISIONING")
        self.s.instances[(zone, name)] = inst
        op.body["targetId"] = inst["id"]
        op.on_done = lambda: inst.update(status="STAGING") or self._later(
            1, lambda: inst["status"] == "STAGING" and inst.update(status="RUNNING"))
        return op.body

    def _delete(self, zone: str, name: str, request_id: str | None) -> dict[str, Any]:
        if request_id and request_id in self.s.by_request:
            return self.s.ops[self.s.by_request[request_id]].body
        inst = self.s.instances.get((zone, name))
        if inst is None:
            raise ApiError(404, f"The resource 'projects/{self.s.project}/zones/{zone}/instances/{name}' "
                           "was not found", "notFound")
        if inst["status"] == "STOPPING":
            raise ApiError(400, f"The resource 'projects/{self.s.project}/zones/{zone}/instances/{name}' "
                           "is not ready", "resourceNotReady")
        inst["status"] = "STOPPING"
        op = self._new_op(zone, "delete", inst, done_in=5, request_id=request_id)
        op.on_done = lambda: self.s.instances.pop((zone, name), None)
        return op.body

    def _get_instance(self, zone: str, name: str) -> dict[str, Any]:
        inst = self.s.instances.get((zone, name))
        if inst is None:
            raise ApiError(404, f"The resource 'projects/{self.s.project}/zones/{zone}/instances/{name}' "
                           "was not found", "notFound")
        return inst

    # --- listing -----------------------------------------------------------------------------
    def _items(self, kind: str, zone: str, flt: str) -> list[dict[str, Any]]:
        src = self.s.instances if kind == "instance" else {k: o.body for k, o in self.s.ops.items()}
        return [r for (z, _), r in sorted(src.items(), key=lambda kv: kv[0]) if z == zone
                and matches(r, flt)]

    def _list(self, kind: str, zone: str, q: dict[str, str]) -> dict[str, Any]:
        items, token = page(self._items(kind, zone, q.get("filter", "")), q)
        return zone_list(self.s.project, kind, zone, items, token)

    def _aggregated(self, kind: str, q: dict[str, str]) -> dict[str, Any]:
        flat = [(z, r) for z in sorted(self.s.zones) for r in self._items(kind, z, q.get("filter", ""))]
        got, token = page(flat, q)
        return aggregated_list(self.s.project, kind, self.s.zones, got, token)

    # --- resources and time ------------------------------------------------------------------
    def _resource(self, zone: str, name: str, body: dict[str, Any], status: str) -> dict[str, Any]:
        return instance_resource(self.s.project, zone, name, body, status, str(next(self._ids)))

    def _new_op(self, zone: str, op_type: str, target: dict[str, Any], *, done_in: int,
                request_id: str | None = None, name_prefix: str = "operation", user: str = "burster@"
                "burster-test.iam.gserviceaccount.com") -> Op:
        name = f"{name_prefix}-{self.s.tick:013d}-{next(self._ids):x}"
        body = operation_body(self.s.project, zone, name, str(next(self._ids)), op_type, target, done_in=done_in,
                              request_id=request_id, user=user)
        if request_id:
            self.s.by_request[request_id] = (zone, name)
        op = Op(body, self.s.tick + done_in)
        self.s.ops[(zone, name)] = op
        return op

    def _finish_stop(self, zone: str, name: str, *, delete: bool) -> None:
        if delete:
            self.s.instances.pop((zone, name), None)
        elif (zone, name) in self.s.instances:
            self.s.instances[(zone, name)]["status"] = "TERMINATED"

    def _later(self, ticks: int, fn: Any) -> None:
        self.s.transitions.append((self.s.tick + ticks, fn))

    def _advance(self, ticks: int) -> None:
        self.s.tick += ticks
        for op in list(self.s.ops.values()):
            if op.body["status"] != "DONE":
                if self.s.tick >= op.done_at:
                    finish(op)
                else:
                    op.body.update(status="RUNNING", progress=50, startTime=op.body["insertTime"])
        due = [t for t in self.s.transitions if t[0] <= self.s.tick]
        self.s.transitions = [t for t in self.s.transitions if t[0] > self.s.tick]
        for _, fn in due:
            fn()
