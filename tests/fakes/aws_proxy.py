"""A fault-injecting HTTP proxy in front of moto's server, answering with AWS's real wire formats.

boto3 talks to the proxy (``endpoint_url``); the proxy forwards to moto unless a fault knob is armed:

- ``throttle(n)``: the next ``n`` EC2 calls get HTTP 503 ``RequestLimitExceeded`` in EC2's XML
  error body (``<Response><Errors><Error><Code>..``).
- ``fail_next(action, code, message, status)``: the next ``action`` gets that EC2 XML error (an
  SQS action: SQS's JSON error).
- ``capacity_next()``: the next CreateFleet answers HTTP 200 with no instances and an ``errorSet``
  item ``InsufficientInstanceCapacity`` - what an ``instant`` fleet returns when a pool is empty.
- ``partial_next(k)``: the next CreateFleet is forwarded asking moto for ``k`` instances and its
  answer gets an ``errorSet`` item for the rest.
- ``set_on_demand_price(type, region, usd)`` / ``fail_pricing(n)``: the Price List API
  (``AWSPriceListService.GetProducts``, JSON 1.1), which moto lacks, is served here in the
  documented response shape (see aws_events/pricing_get_products_cli_example.json).

- ``page_versions(size)``: DescribeLaunchTemplateVersions listings (``MaxResults`` given) answer in
  pages of at most ``size`` versions with a ``nextToken``, as EC2 does (moto answers all at once).
- ``spot_taken_back(instance_id)``: DescribeInstances shows that (ended) instance's ``stateReason`` as
  ``Server.SpotInstanceTermination``, as EC2 does for a spot instance it took back (moto knows only
  the reason of our own terminate).

It also fills one moto gap: CreateLaunchTemplateVersion's ``SourceVersion`` (moto stores only
the new data; EC2 copies the source version and applies the new data over it).
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl
from xml.etree import ElementTree as ET

from tests.fakes.aws_wire import add_error_item, ask_for, capacity_response, page_of, spot_reason, unpaged


def ec2_error_body(code: str, message: str) -> bytes:
    """EC2's documented XML error response."""
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{code}</Code>'
            f"<Message>{_esc(message)}</Message></Error></Errors><RequestID>{uuid.uuid4()}</RequestID>"
            f"</Response>").encode()


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def price_list_item(instance_type: str, region: str, usd: float) -> str:
    """One GetProducts PriceList entry (a JSON string) for a Linux on-demand instance, in the
    documented shape: product.attributes, terms.OnDemand.<sku>.<offer>.priceDimensions.*.pricePerUnit."""
    sku = uuid.uuid5(uuid.NAMESPACE_DNS, f"{instance_type}/{region}").hex[:16].upper()
    offer, rate = f"{sku}.JRTCKXETXF", f"{sku}.JRTCKXETXF.6YS6EN2CT7"
    doc = {
        "product": {"productFamily": "Compute Instance", "sku": sku, "attributes": {
            "instanceType": instance_type, "regionCode": region, "operatingSystem": "Linux",
            "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
            "servicecode": "AmazonEC2", "locationType": "AWS Region",
            "usagetype": f"BoxUsage:{instance_type}",
            "operation": "RunInstances", "servicename": "Amazon Elastic Compute Cloud"}},
        "serviceCode": "AmazonEC2",
        "terms": {"OnDemand": {offer: {
            "priceDimensions": {rate: {
                "unit": "Hrs", "endRange": "Inf", "beginRange": "0", "appliesTo": [], "rateCode": rate,
                "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                "pricePerUnit": {"USD": f"{usd:.10f}"}}},
            "sku": sku, "effectiveDate": "2025-01-01T00:00:00Z", "offerTermCode": "JRTCKXETXF",
            "termAttributes": {}}}},
        "version": "20250101000000", "publicationDate": "2025-01-01T00:00:00Z",
    }
    return json.dumps(doc)


class AwsFaultProxy:
    """The proxy server and its fault knobs (thread-safe)."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._lock = threading.Lock()
        self.calls: list[tuple[str, str, dict[str, Any]]] = []  # (service, action, params)
        self.on_demand: dict[tuple[str, str], float] = {}
        self.reset()
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> AwsFaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- knobs ---------------------------------------------------------------------------------
    def reset(self) -> None:
        with self._lock:
            self._throttle = 0
            self._fail: list[tuple[str, str, str, int]] = []
            self._capacity = 0
            self._partial: list[int] = []
            self._pricing_failures = 0
            self.taken_back: set[str] = set()
            self.version_page = 0  # page_versions' size; 0: as moto answers
            self.calls.clear()

    def throttle(self, calls: int) -> None:
        with self._lock:
            self._throttle = calls

    def fail_next(self, action: str, code: str, message: str, status: int = 400) -> None:
        with self._lock:
            self._fail.append((action, code, message, status))

    def capacity_next(self, times: int = 1) -> None:
        with self._lock:
            self._capacity += times

    def partial_next(self, fulfilled: int) -> None:
        with self._lock:
            self._partial.append(fulfilled)

    def page_versions(self, size: int) -> None:
        with self._lock:
            self.version_page = size

    def spot_taken_back(self, instance_id: str) -> None:
        with self._lock:
            self.taken_back.add(instance_id)

    def set_on_demand_price(self, instance_type: str, region: str, usd: float) -> None:
        with self._lock:
            self.on_demand[(instance_type, region)] = usd

    def fail_pricing(self, calls: int) -> None:
        with self._lock:
            self._pricing_failures = calls

    def actions(self, service: str = "ec2") -> list[str]:
        with self._lock:
            return [a for s, a, _ in self.calls if s == service]

    def last(self, action: str) -> dict[str, Any]:
        with self._lock:
            return next(p for _, a, p in reversed(self.calls) if a == action)

    def _failure(self, action: str) -> tuple[str, Any] | None:
        """The first armed ``fail_next`` for ``action`` (consumed); the caller holds the lock."""
        for i, (act, code, message, status) in enumerate(self._fail):
            if act == action:
                del self._fail[i]
                return ("error", (code, message, status))
        return None

    # --- decisions, called by the handler ------------------------------------------------------
    def _take(self, service: str, action: str) -> tuple[str, Any] | None:
        """The fault to apply to this request, if any (consumes it)."""
        with self._lock:
            if service == "pricing" and self._pricing_failures > 0:
                self._pricing_failures -= 1
                return ("pricing-error", None)
            if service == "sqs":
                return self._failure(action)
            if service != "ec2":
                return None
            if self._throttle > 0:
                self._throttle -= 1
                return ("error", ("RequestLimitExceeded", "Request limit exceeded.", 503))
            failure = self._failure(action)
            if failure:
                return failure
            if action == "CreateFleet" and self._capacity > 0:
                self._capacity -= 1
                return ("capacity", None)
            if action == "CreateFleet" and self._partial:
                return ("partial", self._partial.pop(0))
        return None


class _Handler(BaseHTTPRequestHandler):
    owner: AwsFaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        service, region = _scope(self.headers.get("Authorization", ""))
        target = self.headers.get("X-Amz-Target", "")
        params = dict(parse_qsl(body.decode(), keep_blank_values=True)) if not target else _json(body)
        action = target.rsplit(".", 1)[-1] if target else params.get("Action", "")
        with self.owner._lock:
            self.owner.calls.append((service, action, params))
        fault = self.owner._take(service, action)
        if target.startswith("AWSPriceListService."):
            return self._pricing(action, body, fault)
        if fault and fault[0] == "error" and service == "sqs":  # SQS's JSON protocol error body
            code, message, status = fault[1]
            err = {"__type": f"com.amazonaws.sqs#{code}", "message": message}
            return self._reply(status, json.dumps(err).encode(), "application/x-amz-json-1.0")
        if fault and fault[0] == "error":
            code, message, status = fault[1]
            return self._reply(status, ec2_error_body(code, message), "text/xml;charset=UTF-8")
        if fault and fault[0] == "capacity":
            return self._reply(200, capacity_response(params), "text/xml;charset=UTF-8")
        if fault and fault[0] == "partial":
            body = ask_for(params, int(fault[1]))
        paged = action == "DescribeLaunchTemplateVersions" and "MaxResults" in params and self.owner.version_page
        status, headers, data = self._forward(unpaged(params) if paged else body)
        if paged and status == 200:
            data = page_of(data, params, self.owner.version_page)
        if fault and fault[0] == "partial" and status == 200:
            data = add_error_item(data, params)
        if action == "DescribeInstances" and status == 200 and self.owner.taken_back:
            data = spot_reason(data, self.owner.taken_back)
        if action == "CreateLaunchTemplateVersion" and status == 200 and params.get("SourceVersion"):
            _apply_source_version(region, params, data)
        self._reply(status, data, headers.get("Content-Type", "text/xml"))

    def _forward(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(*self.owner.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
        headers["Content-Length"] = str(len(body))
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        out = {k: v for k, v in resp.getheaders()}
        conn.close()
        return resp.status, out, data

    def _pricing(self, action: str, body: bytes, fault: tuple[str, Any] | None) -> None:
        ctype = "application/x-amz-json-1.1"
        if fault:
            err = {"__type": "InternalErrorException", "Message": "An internal error occurred."}
            return self._reply(500, json.dumps(err).encode(), ctype)
        if action != "GetProducts":
            err = {"__type": "InvalidParameterException", "Message": f"{action} is not served by this fake"}
            return self._reply(400, json.dumps(err).encode(), ctype)
        request = json.loads(body or b"{}")
        terms = {f["Field"]: f["Value"] for f in request.get("Filters", [])}
        with self.owner._lock:
            rows = [price_list_item(t, r, usd) for (t, r), usd in sorted(self.owner.on_demand.items())
                    if terms.get("instanceType", t) == t and terms.get("regionCode", r) == r]
        self._reply(200, json.dumps({"FormatVersion": "aws_v1", "PriceList": rows}).encode(), ctype)

    def _reply(self, status: int, data: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(data)


def _json(body: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(body or b"{}")
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _scope(authorization: str) -> tuple[str, str]:
    """(service, region) from a SigV4 Authorization header's credential scope."""
    try:
        scope = authorization.split("Credential=", 1)[1].split(",", 1)[0].split("/")
        return scope[3], scope[2]
    except IndexError:
        return "", ""


def _apply_source_version(region: str, params: dict[str, str], data: bytes) -> None:
    """EC2 semantics moto lacks: the new version = source version's data + the request's data."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends

    root = ET.fromstring(data)
    number = next((el.text for el in root.iter() if el.tag.endswith("versionNumber")), None)
    backend = ec2_backends[DEFAULT_ACCOUNT_ID][region or "us-east-1"]
    template = backend.get_launch_template(params["LaunchTemplateId"])
    source = template.get_version(params["SourceVersion"])
    new = template.get_version(int(number or 0))
    new.data = {**source.data, **new.data}


@contextmanager
def moto_behind_proxy() -> Iterator[tuple[Any, AwsFaultProxy]]:
    """A moto ThreadedMotoServer on a free port with an AwsFaultProxy in front of it."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    proxy = AwsFaultProxy(host, port).start()
    try:
        yield server, proxy
    finally:
        proxy.stop()
        server.stop()
