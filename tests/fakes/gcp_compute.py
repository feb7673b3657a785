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
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

SELF = "https://www.googleapis.com/compute/v1"
GPU_TYPES = {"a2-highgpu": "nvidia-tesla-a100", "a2-megagpu": "nvidia-tesla-a100",
             "a2-ultragpu": "nvidia-a100-80gb", "a3-highgpu": "nvidia-h100-80gb",
             "a3-megagpu": "nvidia-h100-mega-80gb", "a3-ultragpu": "nvidia-h200-141gb"}
MACHINE_TYPES = frozenset(
    [f"a2-highgpu-{n}g" for n in (1, 2, 4, 8)] + ["a2-megagpu-16g"]
    + [f"a2-ultragpu-{n}g" for n in (1, 2, 4, 8)] + [f"a3-highgpu-{n}g" for n in (1, 2, 4, 8)]
    + ["a3-megagpu-8g", "a3-ultragpu-8g", "n1-standard-4", "e2-medium"])
NAME_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
LABEL_KEY_RE = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
LABEL_VALUE_RE = re.compile(r"^[a-z0-9_-]{0,63}$")
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
          409: "ALREADY_EXISTS", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
EXHAUSTED_MSG = ("The zone 'projects/{p}/zones/{z}' does not have enough resources available to fulfill "
                 "the request.  Try a different zone, or try again later.")


class ApiError(Exception):
    """Answered as a Google JSON error body."""

    def __init__(self, code: int, message: str, reason: str, domain: str = "global",
                 details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.body: dict[str, Any] = {"error": {
            "code": code, "message": message,
            "errors": [{"message": message, "domain": domain, "reason": reason}],
            "status": STATUS.get(code, "UNKNOWN")}}
        if details:
            self.body["error"]["details"] = details
        self.code = code


def rate_limited(status: int = 429) -> ApiError:
    """Compute's rate-quota answer: 403 rateLimitExceeded (documented), or 429 from the front end."""
    msg = ("Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service "
           "'compute.googleapis.com' for consumer 'project_number:1234567890'.")
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED",
            "domain": "googleapis.com", "metadata": {"service": "compute.googleapis.com"}}
    return ApiError(status, msg, "rateLimitExceeded", "usageLimits", [info])


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Op:
    body: dict[str, Any]
    done_at: int  # tick at which it becomes DONE
    on_done: Any = None  # callable run once when DONE
    error: dict[str, Any] | None = None
    http_error: tuple[int, str] | None = None


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
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, body = fake.handle(method, self.path, json.loads(raw) if raw else None)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def do_DELETE(self) -> None:
                self._serve("DELETE")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()
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
                self._finish(op)
            return op.body
        raise ApiError(404, f"The resource '{path}' was not found", "notFound")

    def _insert(self, zone: str, body: dict[str, Any], request_id: str | None) -> dict[str, Any]:
        if request_id and request_id in self.s.by_request:
            return self.s.ops[self.s.by_request[request_id]].body
        name = body.get("name", "")
        if not NAME_RE.match(name):
            raise ApiError(400, f"Invalid value for field 'resource.name': '{name}'. Must be a match of "
                           "regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?|[1-9][0-9]{0,19})'", "invalid")
        mt = str(body.get("machineType", "")).rsplit("/", 1)[-1]
        if mt not in MACHINE_TYPES:
            raise ApiError(400, f"Invalid value for field 'resource.machineType': "
                           f"'{body.get('machineType')}'. Machine type with name '{mt}' does not exist "
                           f"in zone '{zone}'.", "invalid")
        labels = body.get("labels") or {}
        bad = [k for k, v in labels.items() if not LABEL_KEY_RE.match(k) or not LABEL_VALUE_RE.match(v)]
        if bad or len(labels) > 64:
            raise ApiError(400, f"Invalid value for field 'resource.labels': '{bad}'. Label keys and "
                           "values can only contain lowercase letters, numeric characters, underscores "
                           "and dashes.", "invalid")
        sched = body.get("scheduling") or {}
        if mt.split("-")[0] in ("a2", "a3") and sched.get("onHostMaintenance") != "TERMINATE":
            raise ApiError(400, "Instances with guest accelerators do not support live migration.",
                           "badRequest")
        if sched.get("provisioningModel") == "SPOT" and sched.get("automaticRestart", True):
            raise ApiError(400, "Invalid value for field 'resource.scheduling.automaticRestart': 'true'. "
                           "Spot VMs cannot have automatic restart set to true.", "invalid")
        if (zone, name) in self.s.instances:
            raise ApiError(409, f"The resource 'projects/{self.s.project}/zones/{zone}/instances/{name}' "
                           "already exists", "alreadyExists")
        op = self._new_op(zone, "insert", {"name": name}, done_in=2, request_id=request_id)
        if self.s.fail_insert_ops:
            code, msg, http, details = self.s.fail_insert_ops.pop(0)
            self._fail(op, code, msg, http, details)
            return op.body
        left = self.s.capacity.get((zone, mt))
        if left is not None and left <= 0:
            msg = EXHAUSTED_MSG.format(p=self.s.project, z=zone)
            if self.s.capacity_code.endswith("_WITH_DETAILS"):
                msg = msg.split("  Try")[0] + "  '(resource type:compute)'."
            self._fail(op, self.s.capacity_code, msg, 503, [
                {"help": {"links": [{"description": "Troubleshooting documentation",
                                     "url": "https://cloud.google.com/compute/docs/resource-error"}]}},
                {"localizedMessage": {"locale": "en-US", "message": msg}}])
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

    def _page(self, items: list[dict[str, Any]], q: dict[str, str]) -> tuple[list[dict[str, Any]], str]:
        size = min(int(q.get("maxResults") or 500), 500)
        start = int(q.get("pageToken") or 0)
        token = str(start + size) if start + size < len(items) else ""
        return items[start:start + size], token

    def _list(self, kind: str, zone: str, q: dict[str, str]) -> dict[str, Any]:
        items, token = self._page(self._items(kind, zone, q.get("filter", "")), q)
        out: dict[str, Any] = {"kind": f"compute#{kind}List", "id": f"projects/{self.s.project}/zones/"
                               f"{zone}/{kind}s", "items": items,
                               "selfLink": f"{SELF}/projects/{self.s.project}/zones/{zone}/{kind}s"}
        if token:
            out["nextPageToken"] = token
        return out

    def _aggregated(self, kind: str, q: dict[str, str]) -> dict[str, Any]:
        flat = [(z, r) for z in sorted(self.s.zones) for r in self._items(kind, z, q.get("filter", ""))]
        page, token = self._page(flat, q)  # type: ignore[arg-type]
        items: dict[str, Any] = {}
        for zone in sorted(self.s.zones):
            got = [r for z, r in page if z == zone]
            items[f"zones/{zone}"] = {f"{kind}s": got} if got else {"warning": {
                "code": "NO_RESULTS_ON_PAGE",
                "message": f"There are no results for scope 'zones/{zone}' on this page.",
                "data": [{"key": "scope", "value": f"zones/{zone}"}]}}
        out: dict[str, Any] = {"kind": f"compute#{kind}AggregatedList", "id": f"projects/{self.s.project}"
                               f"/aggregated/{kind}s", "items": items,
                               "selfLink": f"{SELF}/projects/{self.s.project}/aggregated/{kind}s"}
        if token:
            out["nextPageToken"] = token
        return out

    # --- resources and time ------------------------------------------------------------------
    def _resource(self, zone: str, name: str, body: dict[str, Any], status: str) -> dict[str, Any]:
        mt = str(body.get("machineType", "")).rsplit("/", 1)[-1]
        family, _, size = mt.rpartition("-")
        inst = {**body, "kind": "compute#instance", "id": str(next(self._ids)),
                "creationTimestamp": _now(), "name": name, "status": status,
                "zone": f"{SELF}/projects/{self.s.project}/zones/{zone}",
                "machineType": f"{SELF}/projects/{self.s.project}/zones/{zone}/machineTypes/{mt}",
                "selfLink": f"{SELF}/projects/{self.s.project}/zones/{zone}/instances/{name}",
                "labelFingerprint": "42WmSpB8rSM=", "fingerprint": "j5Xm1T0Q3pQ=",
                "cpuPlatform": "Unknown CPU Platform", "startRestricted": False,
                "deletionProtection": False}
        if family in GPU_TYPES and size.endswith("g"):
            inst["guestAccelerators"] = [{"acceleratorCount": int(size[:-1]), "acceleratorType":
                                          f"{SELF}/projects/{self.s.project}/zones/{zone}/acceleratorTypes/"
                                          f"{GPU_TYPES[family]}"}]
        return inst

    def _new_op(self, zone: str, op_type: str, target: dict[str, Any], *, done_in: int,
                request_id: str | None = None, name_prefix: str = "operation", user: str = "burster@"
                "burster-test.iam.gserviceaccount.com") -> Op:
        now = _now()
        name = f"{name_prefix}-{self.s.tick:013d}-{next(self._ids):x}"
        base = f"{SELF}/projects/{self.s.project}/zones/{zone}"
        body: dict[str, Any] = {
            "kind": "compute#operation", "id": str(next(self._ids)), "name": name, "zone": base,
            "operationType": op_type, "targetLink": f"{base}/instances/{target['name']}",
            "status": "PENDING" if done_in else "DONE", "user": user, "progress": 0 if done_in else 100,
            "insertTime": now, "selfLink": f"{base}/operations/{name}"}
        if "id" in target:
            body["targetId"] = target["id"]
        if done_in == 0:
            body.update(startTime=now, endTime=now)
        if request_id:
            body["clientOperationId"] = request_id
            self.s.by_request[request_id] = (zone, name)
        op = Op(body, self.s.tick + done_in)
        self.s.ops[(zone, name)] = op
        return op

    def _fail(self, op: Op, code: str, message: str, http: int, details: list[dict[str, Any]]) -> None:
        op.error = {"errors": [{"code": code, "message": message, **({"errorDetails": details}
                                                                      if details else {})}]}
        op.http_error = (http, {403: "FORBIDDEN", 503: "SERVICE UNAVAILABLE", 400: "BAD REQUEST"}.get(
            http, "ERROR"))

    def _finish(self, op: Op) -> None:
        if op.body["status"] == "DONE":
            return
        op.body.update(status="DONE", progress=100, endTime=_now())
        op.body.setdefault("startTime", op.body["insertTime"])
        if op.error is not None:
            op.body["error"] = op.error
            op.body["httpErrorStatusCode"], op.body["httpErrorMessage"] = op.http_error or (400, "")
        elif op.on_done is not None:
            op.on_done()

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
                    self._finish(op)
                else:
                    op.body.update(status="RUNNING", progress=50, startTime=op.body["insertTime"])
        due = [t for t in self.s.transitions if t[0] <= self.s.tick]
        self.s.transitions = [t for t in self.s.transitions if t[0] > self.s.tick]
        for _, fn in due:
            fn()


_TERM = re.compile(r'\(?\s*([A-Za-z][\w.-]*)\s*(!=|=|:|\beq\b|\bne\b)\s*("(?:[^"]*)"|[^\s)]+)\s*\)?')


def matches(resource: dict[str, Any], flt: str) -> bool:
    """The subset of the list ``filter`` syntax the adapter uses: terms joined by AND."""
    for term in [t for t in re.split(r"\s+AND\s+", flt.strip()) if t]:
        m = _TERM.fullmatch(term.strip())
        if m is None:
            raise ApiError(400, f"Invalid value for field 'filter': '{flt}'. Invalid list filter "
                           "expression.", "invalid")
        path, op, value = m.group(1), m.group(2), m.group(3).strip('"')
        got: Any = resource
        for key in path.split("."):
            got = got.get(key) if isinstance(got, dict) else None
        got = "" if got is None else str(got).lower() if isinstance(got, bool) else str(got)
        ok = (value in got) if op == ":" and value != "*" else bool(got) if op == ":" else got == value
        if (op in ("!=", "ne")) == ok:
            return False
    return True
