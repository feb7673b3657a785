"""The GCP CloudProvider: Compute Engine instances via google-cloud-compute (REST transport).

A launch of ``count`` nodes is ``count`` instances.insert calls, each with a deterministic instance
name and a deterministic ``requestId`` (both derived from the launch's request id and the index), then
each zone Operation is waited on with our own ZoneOperationsClient. Per-instance inserts (rather than
bulkInsert) give exact idempotency per node -- GCE de-duplicates a repeated requestId, and an insert
of an existing name answers 409 alreadyExists, which we read as "already launched" -- and partial
results fall out naturally: the instances whose Operations succeeded are the nodes that came up.
A replayed insert whose instance is gone since (GCE answers the original DONE Operation and makes
nothing) reports that node TERMINATED, so the controller bills it and launches under a new request id.
"""

from __future__ import annotations

import difflib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from burster.catalog import load_catalog
from burster.clock import utc_now
from burster.config import GcpConfig
from burster.errors import (
    BursterError,
    CapacityError,
    ConfigError,
    NotFoundError,
    PartialLaunchError,
    ProviderError,
    TransientError,
)
from burster.model import Interruption, Node, Offering
from burster.retry import call_with_backoff
from providers.gcp import naming
from providers.gcp.clients import Clients, check_endpoint, default_credentials, make_clients
from providers.gcp.errors import from_api_error, from_operation
from providers.gcp.instances import gone_node, insert_body, node_of, template_for
from providers.gcp.interruptions import PREEMPTED_FILTER, PreemptionWatch, ended_at
from providers.gcp.pricing import COMPUTE_SERVICE, PriceBook

T = TypeVar("T")
log = logging.getLogger(__name__)
CALL_TIMEOUT_S = 60.0
WAIT_TIMEOUT_S = 150.0  # zoneOperations.wait returns by itself after about 2 minutes
CAPACITY_BLOCK_S = 600.0  # an offering that met ZONE_RESOURCE_POOL_EXHAUSTED is unavailable this long
NOTICE_MAX_AGE_S = 3600.0  # ignore preemption events older than this (e.g. after a restart)


def close(word: str, choices: Sequence[str]) -> str:
    got = difflib.get_close_matches(word, sorted(set(choices)), n=3, cutoff=0.6)
    return f"; close matches: {', '.join(got)}" if got else ""


class GcpProvider:
    """One GCP project; only instances labelled managed-by=burster and burster-cluster=<cluster>."""

    name = "gcp"

    def __init__(
        self, cfg: GcpConfig, *, cluster: str, user_data: Callable[[Offering], str],
        sleep: Callable[[float], None] = time.sleep, credentials: Any = None, billing_endpoint: str = "",
        catalog: Sequence[Offering] | None = None, now: Callable[[], datetime] | None = None,
        price_clock: Callable[[], float] = time.monotonic, price_ttl_s: float = 3600.0,
        attempts: int = 5, base_s: float = 0.5, max_wait_calls: int = 20, clients: Clients | None = None,
    ) -> None:
        if not cfg.project:
            raise ConfigError("clouds.gcp.project is empty: set it to the id of the project that runs "
                              "the GPU nodes (see docs/providers/gcp.md)")
        check_endpoint(cfg.api_endpoint, "clouds.gcp.api_endpoint")
        self._cfg = cfg
        self._cluster = cluster
        self._user_data = user_data
        self._sleep = sleep
        self._now = now or utc_now
        self._attempts, self._base_s, self._max_wait_calls = attempts, base_s, max_wait_calls
        self._catalog = list(catalog) if catalog is not None else load_catalog(providers=["gcp"])
        zones = sorted({o.zone for o in self._catalog})
        for zone in cfg.zones:
            if zone not in zones:
                raise ConfigError(f"clouds.gcp.zones: {zone!r} is not a zone with GPU offerings in the "
                                  f"price catalog{close(zone, zones)}")
        self._by_key = {(o.zone, o.instance_type, o.market): o for o in self._catalog}
        if clients is None:
            creds = credentials if credentials is not None else default_credentials()
            clients = make_clients(creds, cfg.api_endpoint, billing_endpoint)
        self._c = clients
        self._zone_of: dict[str, str] = {}  # instance name -> zone, from launches and listings
        self._deleting: set[str] = set()
        self._blocked: dict[str, datetime] = {}  # offering key -> available again at
        self._prices = PriceBook(self._fetch_skus, ttl_s=price_ttl_s, clock=price_clock)
        self._watch = PreemptionWatch(cluster, self._now)

    # --- plumbing ----------------------------------------------------------------------------
    def _call(self, fn: Callable[[], T], what: str, offering_key: str = "") -> T:
        """One API call, SDK errors translated, retryable ones (throttling, 5xx) backed off."""

        def once() -> T:
            try:
                return fn()
            except BursterError:
                raise
            except Exception as err:  # the SDK's whole error surface, translated here
                raise from_api_error(err, what, offering_key) from None

        return call_with_backoff(once, attempts=self._attempts, base_s=self._base_s, sleep=self._sleep)

    def _fetch_skus(self) -> list[Any]:
        req = {"parent": COMPUTE_SERVICE, "currency_code": "USD", "page_size": 5000}
        return self._call(lambda: list(self._c.catalog.list_skus(request=req, retry=None,
                                                                 timeout=CALL_TIMEOUT_S)), "list SKUs")

    def _validate(self, offering: Offering) -> None:
        if offering.provider != self.name:
            raise ConfigError(f"gcp: cannot launch {offering.key}: it is a {offering.provider!r} offering")
        if self._cfg.zones and offering.zone not in self._cfg.zones:
            raise ConfigError(f"gcp: zone {offering.zone!r} is not in clouds.gcp.zones "
                              f"({', '.join(self._cfg.zones)}){close(offering.zone, self._cfg.zones)}")
        zones = [o.zone for o in self._catalog]
        if offering.zone not in zones:
            raise NotFoundError(f"gcp: unknown zone {offering.zone!r}{close(offering.zone, zones)}",
                                provider=self.name, offering_key=offering.key)
        types = [o.instance_type for o in self._catalog if o.zone == offering.zone]
        if offering.instance_type not in types:
            raise NotFoundError(
                f"gcp: machine type {offering.instance_type!r} is not offered in {offering.zone}"
                f"{close(offering.instance_type, types)}", provider=self.name, offering_key=offering.key)

    # --- CloudProvider -------------------------------------------------------------------------
    def offerings(self) -> Sequence[Offering]:
        mine = [o for o in self._catalog if not self._cfg.zones or o.zone in self._cfg.zones]
        now = self._now()
        self._blocked = {k: t for k, t in self._blocked.items() if t > now}
        return [replace(o, available=False) if o.key in self._blocked else o
                for o in self._prices.merge(mine)]

    def _instances(self, flt: str) -> list[Any]:
        from google.cloud import compute_v1

        req = compute_v1.AggregatedListInstancesRequest(project=self._cfg.project, filter=flt)

        def fetch() -> list[Any]:
            pager = self._c.instances.aggregated_list(request=req, retry=None, timeout=CALL_TIMEOUT_S)
            return [i for _, scoped in pager for i in scoped.instances]

        return self._call(fetch, "list instances")

    def _mine(self) -> list[Any]:
        out = []
        for inst in self._instances(naming.list_filter(self._cluster)):
            labels = dict(inst.labels)  # the server filtered; check again, cheaply
            if labels.get(naming.MANAGED_BY) == "burster" and \
                    labels.get(naming.CLUSTER) == naming.label_value(self._cluster):
                out.append(inst)
        return out

    def list_nodes(self) -> Sequence[Node]:
        insts = self._mine()
        self._zone_of.update({i.name: naming.last_segment(i.zone) for i in insts})
        self._deleting &= {i.name for i in insts}
        return [node_of(i, self._by_key, deleting=i.name in self._deleting, now=self._now()) for i in insts]

    def launch(self, offering: Offering, count: int, *, request_id: str,
               labels: Mapping[str, str] | None = None) -> Sequence[Node]:
        if count <= 0:
            return []
        self._validate(offering)
        key = offering.key
        tags = naming.labels_for(self._cluster, request_id, labels)
        template = template_for(self._cfg, offering)
        user_data = self._user_data(offering)
        started: list[tuple[str, Any]] = []
        errors: list[ProviderError] = []
        for i in range(count):
            name = naming.instance_name(self._cluster, request_id, i)
            body = insert_body(self._cfg, offering, name, tags, labels or {}, user_data, with_template=bool(template))
            try:
                op = self._insert(offering, body, naming.gce_request_id(request_id, "insert", i), template)
            except ProviderError as err:
                errors.append(err)
                break  # the rest would meet the same refusal (quota, auth, bad request)
            self._zone_of[name] = offering.zone
            started.append((name, op))
        nodes: list[Node] = []
        for name, op in started:
            try:
                nodes.append(self._settle(offering, name, op, request_id, labels or {}))
            except ProviderError as err:
                errors.append(err)
        if not errors:
            return nodes
        cause = errors[0]
        cause.offering_key = cause.offering_key or key
        if any(isinstance(e, CapacityError) for e in errors):
            self._blocked[key] = self._now() + timedelta(seconds=CAPACITY_BLOCK_S)
        if not nodes:
            raise cause
        raise PartialLaunchError(
            f"gcp: launched {len(nodes)} of {count} nodes of {key}; the rest failed: {cause}",
            nodes=tuple(nodes), cause=cause, provider=self.name, offering_key=key)

    def _insert(self, offering: Offering, body: dict[str, Any], gce_rid: str, template: str) -> Any:
        """instances.insert; None when the instance already exists (an earlier try created it)."""
        from google.api_core import exceptions as gexc
        from google.cloud import compute_v1

        req = compute_v1.InsertInstanceRequest(
            project=self._cfg.project, zone=offering.zone, request_id=gce_rid,
            instance_resource=compute_v1.Instance.from_json(json.dumps(body)))
        if template:
            req.source_instance_template = template

        def fn() -> Any:
            try:
                return self._c.instances.insert_unary(request=req, retry=None, timeout=CALL_TIMEOUT_S)
            except gexc.Conflict:
                return None

        return self._call(fn, f"insert instance {body['name']}", offering.key)

    def _settle(self, offering: Offering, name: str, op: Any, request_id: str, owners: Mapping[str, str]) -> Node:
        """Wait for an insert Operation; the created instance as a Node, or the Operation's error
        (``owners``: the launch's labels, for an instance gone already)."""
        if op is not None:
            op = self._wait(offering.zone, op, offering.key)
            err = from_operation(op, f"insert instance {name}", offering.key)
            if err is not None:
                self._zone_of.pop(name, None)
                raise err
        inst = self._get(offering.zone, name, offering.key)
        if inst is None and op is not None:
            return self._gone(offering, name, op, request_id, owners)
        if inst is None:  # it answered 409 alreadyExists, and is gone now; after GCE's window: made again
            raise TransientError(f"gcp: instance {name} was created but is gone already (preempted or "
                                 "deleted); a later tick will launch again", provider=self.name,
                                 offering_key=offering.key)
        if dict(inst.labels).get(naming.REQUEST_ID) != naming.label_value(request_id):
            raise ConfigError(f"gcp: instance {name} exists but was not created by request {request_id}; "
                              f"is another controller using cluster name {self._cluster!r}?")
        return node_of(inst, self._by_key, deleting=False, now=self._now())

    def _gone(self, offering: Offering, name: str, op: Any, request_id: str, owners: Mapping[str, str]) -> Node:
        """Our insert made ``name`` (its Operation is DONE without error) and it is gone: a replay after
        a preemption or delete. TERMINATED, from the insert to the end its Operations give, else now."""
        self._zone_of.pop(name, None)
        now = self._now()
        launched = min(naming.parse_time(op.insert_time, now), now)
        end = None
        if op.target_id:
            try:
                end = ended_at(self._operations(f"targetId = {op.target_id}"), int(op.target_id), now)
            except ProviderError as err:
                log.warning("gcp: cannot list the operations of gone instance %s, taking it as ended now: %s",
                            name, err)
        log.warning("gcp: instance %s of request %s was made and is gone (preempted or deleted); not made "
                    "again under this request id", name, request_id)
        return gone_node(name, offering, request_id, owners, launched_at=launched,
                         ended_at=min(max(end or now, launched), now))

    def _wait(self, zone: str, op: Any, offering_key: str) -> Any:
        from google.cloud import compute_v1

        done = compute_v1.Operation.Status.DONE
        for _ in range(self._max_wait_calls):
            if op.status == done:
                return op
            op = self._call(self._waiter(zone, op.name), f"wait for operation {op.name}", offering_key)
        if op.status == done:
            return op
        raise TransientError(f"gcp: operation {op.name} in {zone} is still running; launching again with "
                             "the same request id resumes it", provider=self.name, offering_key=offering_key)

    def _waiter(self, zone: str, name: str) -> Callable[[], Any]:
        return lambda: self._c.zone_operations.wait(project=self._cfg.project, zone=zone, operation=name,
                                                     retry=None, timeout=WAIT_TIMEOUT_S)

    def _get(self, zone: str, name: str, offering_key: str = "") -> Any:
        from google.api_core import exceptions as gexc

        def fn() -> Any:
            try:
                return self._c.instances.get(project=self._cfg.project, zone=zone, instance=name,
                                             retry=None, timeout=CALL_TIMEOUT_S)
            except gexc.NotFound:
                return None

        return self._call(fn, f"get instance {name}", offering_key)

    def terminate(self, node_ids: Sequence[str], *, request_id: str) -> None:
        if any(n not in self._zone_of for n in node_ids):
            self.list_nodes()  # learn the zones of ids we have not seen; unknown ids stay unknown
        errors: list[ProviderError] = []
        for node_id in node_ids:
            zone = self._zone_of.get(node_id)
            if zone is None:
                continue
            try:
                op = self._delete(zone, node_id, naming.gce_request_id(request_id, "delete", node_id))
                for _ in range(5):  # GCE answers a requestId whose delete failed with that failure again:
                    if op is None or from_operation(op, "") is None:  # delete under one derived from it
                        break
                    op = self._delete(zone, node_id, naming.gce_request_id(request_id, "delete", node_id, op.name))
            except ProviderError as err:
                errors.append(err)
                continue
            self._deleting.add(node_id)
            failed = from_operation(op, f"delete instance {node_id}") if op is not None else None
            if failed is not None:
                errors.append(failed)
        if errors:
            raise errors[0]

    def _delete(self, zone: str, name: str, gce_rid: str) -> Any:
        """instances.delete without waiting; None when it is gone."""
        from google.api_core import exceptions as gexc

        def fn() -> Any:
            try:
                return self._c.instances.delete_unary(
                    request={"project": self._cfg.project, "zone": zone, "instance": name,
                             "request_id": gce_rid}, retry=None, timeout=CALL_TIMEOUT_S)
            except gexc.NotFound:
                self._zone_of.pop(name, None)
                return None
            except gexc.BadRequest as err:
                if any(e.get("reason") == "resourceNotReady" for e in err.errors or []):
                    # another operation is in progress on it (a start, a stop, GCE's preemption): a
                    # delete later goes through; ours in progress would have answered by its request id
                    raise TransientError(f"gcp: delete instance {name}: resourceNotReady, another operation "
                                         "is in progress on it; retried", provider="gcp") from None
                raise

        return self._call(fn, f"delete instance {name}")

    def _operations(self, flt: str) -> list[Any]:
        """globalOperations.aggregatedList (every zone's Operations too) with this filter."""
        from google.cloud import compute_v1

        req = compute_v1.AggregatedListGlobalOperationsRequest(project=self._cfg.project, filter=flt)

        def fetch() -> list[Any]:
            pager = self._c.global_operations.aggregated_list(request=req, retry=None,
                                                              timeout=CALL_TIMEOUT_S)
            return [op for _, scoped in pager for op in scoped.operations]

        return self._call(fetch, "list operations")

    def interruptions(self) -> Sequence[Interruption]:
        since = self._now() - timedelta(seconds=NOTICE_MAX_AGE_S)
        try:
            ops = [op for op in self._operations(PREEMPTED_FILTER)
                   if naming.parse_time(op.insert_time, self._now()) >= since]
        except ProviderError as err:  # a second source: instance status below still works
            log.warning("gcp: cannot list preemption events, relying on instance status: %s", err)
            ops = []
        insts = self._mine()
        self._zone_of.update({i.name: naming.last_segment(i.zone) for i in insts})
        return (self._watch.from_operations(ops, self._zone_of)
                + self._watch.from_instances(insts, self._deleting))


def from_config(cfg: GcpConfig, *, cluster: str, user_data: Callable[[Offering], str],
                sleep: Callable[[float], None] = time.sleep, **test_overrides: Any) -> GcpProvider:
    """Build the adapter from ``clouds.gcp``. ``test_overrides``: credentials, billing_endpoint,
    catalog, now, price_clock, price_ttl_s, attempts, base_s, max_wait_calls, clients."""
    return GcpProvider(cfg, cluster=cluster, user_data=user_data, sleep=sleep, **test_overrides)


__all__ = ["GcpProvider", "from_config"]
