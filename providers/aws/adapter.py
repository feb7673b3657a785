"""The AWS CloudProvider: EC2 instant fleets, tag-scoped listing, SQS interruptions, live prices."""

from __future__ import annotations

import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from burster.catalog import load_catalog
from burster.clock import SystemClock
from burster.config import AwsConfig
from burster.errors import (
    CapacityError,
    ConfigError,
    NotFoundError,
    PartialLaunchError,
    ProviderError,
    TransientError,
)
from burster.lifecycle import NodeState
from burster.model import Interruption, Market, Node, Offering, node_tags
from providers.aws import session as sdk
from providers.aws.errors import PROVIDER, Caller, error_for_code
from providers.aws.fleet import TemplateVersions, fleet_request, fleet_result, tags_for, template_id_for
from providers.aws.interruptions import Notice, QueueReader, queue_region
from providers.aws.offers import Inventory, OfferKey, Zones
from providers.aws.pricing import (
    PRICING_REGION,
    PriceBook,
    on_demand_filters,
    parse_on_demand,
    parse_spot_history,
)

log = logging.getLogger(__name__)

# a stopped instance still exists and bills its volumes: TERMINATING, so the controller terminates it
STATES = {"pending": NodeState.LAUNCHING, "running": NodeState.READY, "shutting-down": NodeState.TERMINATING,
          "stopping": NodeState.TERMINATING, "stopped": NodeState.TERMINATING, "terminated": NodeState.TERMINATED}
FILTER_VALUES_MAX = 200
SPOT_TAKEN_BACK = "Server.SpotInstanceTermination"  # StateReason of a spot instance EC2 terminated (API: StateReason)
LATE_LISTING_S = 300.0  # EC2 may list a new instance this late (its guide): a notice for one unlisted waits so long


class AwsProvider:
    """One AWS account, in the regions of ``clouds.aws.regions``. See docs/providers/aws.md."""

    name = PROVIDER

    def __init__(
        self, cfg: AwsConfig, *, cluster: str, user_data: Callable[[Offering], str],
        sleep: Callable[[float], None] = time.sleep, now: Callable[[], datetime] | None = None,
        catalog: Sequence[Offering] | None = None, session: Any = None, spot_ttl_s: float = 300.0,
        on_demand_ttl_s: float = 86_400.0, block_ttl_s: float = 600.0, attempts: int = 5,
        base_s: float = 0.2,
    ) -> None:
        self._cfg = cfg
        self._cluster = cluster
        self._user_data = user_data
        self._now = now or SystemClock().now
        self._session = session if session is not None else sdk.make_session()
        sdk.check_credentials(self._session)
        self._inventory = Inventory(catalog if catalog is not None else load_catalog(providers=["aws"]),
                                    cfg.regions)
        self._inventory.check_regions(sdk.known_regions(self._session))
        if not cfg.regions:
            raise ConfigError("clouds.aws.regions is empty; list the regions to launch in, e.g. "
                              "[\"us-east-1\"]")
        if not cfg.launch_template_ids:
            raise ConfigError("clouds.aws.launch_template_ids is empty; map each GPU class (or 'default') "
                              "to a launch template id (terraform output launch_template_ids)")
        self._call = Caller(sleep, attempts=attempts, base_s=base_s, profile=sdk.profile_of(self._session))
        self._clients: dict[tuple[str, str], Any] = {}
        self._zones = Zones(self._describe_zones)
        self._subnets: dict[str, dict[str, list[str]]] = {}
        self._subnets_checked = False
        self._templates = TemplateVersions(self._call, instance_profile_arn=cfg.instance_profile_arn,
                                           security_group_ids=cfg.security_group_ids)
        self._prices = PriceBook(now=self._now, spot_ttl_s=spot_ttl_s, on_demand_ttl_s=on_demand_ttl_s)
        self._block_ttl = timedelta(seconds=block_ttl_s)
        self._blocked: dict[str, datetime] = {}
        self._view: dict[OfferKey, Offering] = {}
        self._terminated: OrderedDict[str, None] = OrderedDict()
        self._seen_events: OrderedDict[tuple[str, str, str], None] = OrderedDict()
        self._reader: QueueReader | None = None

    # --- CloudProvider -------------------------------------------------------------------------
    def offerings(self) -> Sequence[Offering]:
        """Catalog offerings of the configured regions (and subnet zones), with live prices merged."""
        for region in self._cfg.regions:
            self._prices.refresh(region, Market.SPOT, functools.partial(self._fetch_spot, region))
            self._prices.refresh(region, Market.ON_DEMAND, functools.partial(self._fetch_on_demand, region))
        allowed = self._allowed_zones()
        now = self._now()
        out: list[Offering] = []
        for o in self._inventory.offerings:
            if allowed is not None and o.zone not in allowed.get(o.region, ()):
                continue
            live = self._prices.price(o)
            out.append(replace(o, price_per_hour_usd=o.price_per_hour_usd if live is None else live,
                               available=o.available and not self._is_blocked(o.key, now)))
        spot_pools = {(o.zone, o.instance_type) for o in out if o.market is Market.SPOT}
        for o in [o for o in out if o.market is Market.ON_DEMAND]:
            usd = self._prices.spot.get((o.zone, o.instance_type))
            if usd is not None and (o.zone, o.instance_type) not in spot_pools:  # live-only spot pool
                spot = replace(o, market=Market.SPOT, price_per_hour_usd=usd)
                out.append(replace(spot, available=not self._is_blocked(spot.key, now)))
        self._view = {(o.zone, o.instance_type, o.market): o for o in out}
        return out

    def list_nodes(self) -> Sequence[Node]:
        """Every instance tagged managed-by=burster and burster-cluster=<cluster>, terminated included."""
        return [self._to_node(region, inst) for region in self._cfg.regions
                for inst in self._describe(region, self._owned())]

    def launch(
        self, offering: Offering, count: int, *, request_id: str,
        labels: Mapping[str, str] | None = None,
    ) -> Sequence[Node]:
        """Launch ``count`` nodes with one instant fleet; idempotent by request id (tags + ClientToken)."""
        if count <= 0:
            return []
        self._inventory.check_offering(offering)
        labels = dict(labels or {})
        region, key = offering.region, offering.key
        existing = self._describe(region, [*self._owned(), _tag("burster-request-id", request_id)])
        if existing:  # a retry, or a crash between the intent and the answer: nothing new
            return [self._to_node(region, inst) for inst in existing]
        template_id = template_id_for(offering, self._cfg.launch_template_ids)
        ec2 = self._client("ec2", region)
        version = self._templates.version_for(ec2, template_id, self._user_data(offering))
        params = fleet_request(offering, count, request_id=request_id, template_id=template_id,
                               version=version, overrides=self._overrides(offering),
                               tags=tags_for(self._cluster, request_id, labels))
        try:
            response = self._call("ec2:CreateFleet", lambda: ec2.create_fleet(**params), offering_key=key)
        except CapacityError:
            self._block(key)
            raise
        result = fleet_result(response)
        now = self._now()
        nodes = [Node(i, offering, NodeState.LAUNCHING, now, request_id, **node_tags(labels))
                 for i in result.instance_ids]
        if len(nodes) >= count:
            return nodes
        cause = _first_error(result.errors, key)
        if isinstance(cause, CapacityError):
            self._block(key)
        if not nodes:
            raise cause
        raise PartialLaunchError(f"aws: launched {len(nodes)} of {count} nodes of {key}: {cause}",
                                 nodes=tuple(nodes), cause=cause, provider=PROVIDER, offering_key=key)

    def terminate(self, node_ids: Sequence[str], *, request_id: str) -> None:
        """Terminate the given instances that this cluster owns; unknown or foreign ids are ignored."""
        ids = list(dict.fromkeys(node_ids))
        for region in self._cfg.regions:
            for chunk in _chunks(ids, FILTER_VALUES_MAX):  # TerminateInstances takes up to 1000 ids too
                owned = self._describe(region, [*self._owned(), _filter("instance-id", chunk)])
                for inst in owned:
                    self._remember(self._terminated, inst["InstanceId"])
                gone = ("terminated", "shutting-down")
                live = [i["InstanceId"] for i in owned if i["State"]["Name"] not in gone]
                if live:
                    self._terminate(region, live)

    def interruptions(self) -> Sequence[Interruption]:
        """Spot warnings, rebalance recommendations and unexpected stops of this cluster's nodes. A
        notice for an instance no listing shows yet is left in the queue for ``LATE_LISTING_S``."""
        if not self._cfg.interruption_queue_url:
            return []
        reader = self._queue()
        received = reader.receive()
        fresh = [r.notice for r in received if r.notice is not None and _event_key(r.notice)
                 not in self._seen_events]
        owned = self._instances(fresh)
        unlisted = self._unlisted(fresh, owned)
        out: dict[tuple[str, str], Interruption] = {}
        for n in fresh:
            if _event_key(n) in unlisted:
                continue  # left in the queue: it comes back when its visibility timeout ends
            self._remember(self._seen_events, _event_key(n))
            inst = owned.get(n.instance_id)
            if inst is None or (n.kind == "preempted" and self._caused_by_us(inst)):
                continue
            out.setdefault((n.instance_id, n.kind),
                           Interruption(n.instance_id, PROVIDER, n.kind, n.notice_at, n.terminate_at))
        reader.delete([r for r in received if r.notice is None or _event_key(r.notice) not in unlisted])
        return list(out.values())

    # --- helpers -------------------------------------------------------------------------------
    def _client(self, service: str, region: str) -> Any:
        if (service, region) not in self._clients:
            self._clients[(service, region)] = sdk.client(self._session, service, region,
                                                          self._cfg.endpoint_url)
        return self._clients[(service, region)]

    def _owned(self) -> list[dict[str, Any]]:
        return [_tag("managed-by", "burster"), _tag("burster-cluster", self._cluster)]

    def _describe(self, region: str, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        ec2 = self._client("ec2", region)

        def pages() -> list[dict[str, Any]]:
            return [inst for page in ec2.get_paginator("describe_instances").paginate(Filters=filters)
                    for res in page.get("Reservations", []) for inst in res.get("Instances", [])]

        return self._call("ec2:DescribeInstances", pages)

    def _to_node(self, region: str, inst: Mapping[str, Any]) -> Node:
        tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
        market = Market.SPOT if inst.get("InstanceLifecycle") == "spot" else Market.ON_DEMAND
        placement = inst.get("Placement", {})
        zone = placement.get("AvailabilityZoneId") or self._zones.id_of(
            region, placement.get("AvailabilityZone", ""))
        offering = self._inventory.lookup(region, zone, inst["InstanceType"], market, self._view)
        launched = inst.get("LaunchTime")
        launched_at = launched.astimezone(UTC) if isinstance(launched, datetime) else self._now()
        state = STATES.get(inst.get("State", {}).get("Name", ""), NodeState.FAILED)
        taken_back = state is NodeState.TERMINATED and market is Market.SPOT \
            and (inst.get("StateReason") or {}).get("Code") == SPOT_TAKEN_BACK
        return Node(inst["InstanceId"], offering, state, launched_at, tags.get("burster-request-id", ""),
                    taken_back=taken_back, **node_tags(tags))

    def _describe_zones(self, region: str) -> list[dict[str, str]]:
        ec2 = self._client("ec2", region)
        return self._call("ec2:DescribeAvailabilityZones",
                          lambda: ec2.describe_availability_zones()["AvailabilityZones"])

    def _subnet_zones(self, region: str) -> dict[str, list[str]]:
        """zone id -> configured subnet ids in that zone, for one region."""
        if region not in self._subnets:
            ec2 = self._client("ec2", region)
            subnets = self._call("ec2:DescribeSubnets", lambda: ec2.describe_subnets(
                Filters=[_filter("subnet-id", list(self._cfg.subnet_ids))])["Subnets"])
            zones: dict[str, list[str]] = {}
            for s in subnets:
                zone = s.get("AvailabilityZoneId") or self._zones.id_of(region, s["AvailabilityZone"])
                zones.setdefault(zone, []).append(s["SubnetId"])
            self._subnets[region] = zones
        return self._subnets[region]

    def _allowed_zones(self) -> dict[str, set[str]] | None:
        if not self._cfg.subnet_ids:
            return None
        try:
            zones = {region: self._subnet_zones(region) for region in self._cfg.regions}
        except ProviderError as err:
            log.warning("aws: cannot read clouds.aws.subnet_ids zones, offering every zone: %s", err)
            return None
        if not self._subnets_checked:  # DescribeSubnets' filter drops an unknown id without an error
            self._subnets_checked = True
            found = {s for z in zones.values() for ids in z.values() for s in ids}
            if missing := [s for s in self._cfg.subnet_ids if s not in found]:
                log.warning("aws: clouds.aws.subnet_ids %s not found in clouds.aws.regions (%s); no node "
                            "launches there: fix the ids or add their regions", ", ".join(missing),
                            ", ".join(self._cfg.regions))
        return {region: set(z) for region, z in zones.items()}

    def _overrides(self, offering: Offering) -> list[dict[str, str]]:
        if not self._cfg.subnet_ids:
            return [{"AvailabilityZone": self._zones.name_of(offering.region, offering.zone)}]
        zones = self._subnet_zones(offering.region)
        if offering.zone not in zones:
            raise NotFoundError(
                f"aws: no subnet of clouds.aws.subnet_ids is in zone {offering.zone} ({offering.region}); "
                f"zones with subnets: {', '.join(sorted(zones)) or 'none'}",
                provider=PROVIDER, offering_key=offering.key)
        return [{"SubnetId": s} for s in zones[offering.zone]]

    def _terminate(self, region: str, ids: list[str]) -> None:
        ec2 = self._client("ec2", region)
        try:
            self._call("ec2:TerminateInstances", lambda: ec2.terminate_instances(InstanceIds=ids))
        except NotFoundError:  # one went away meanwhile: the others still need terminating
            for one in ids:
                try:
                    self._call("ec2:TerminateInstances",
                               functools.partial(ec2.terminate_instances, InstanceIds=[one]))
                except NotFoundError:
                    continue

    def _block(self, key: str) -> None:
        self._blocked[key] = self._now() + self._block_ttl

    def _is_blocked(self, key: str, now: datetime) -> bool:
        until = self._blocked.get(key)
        return until is not None and now < until

    def _fetch_spot(self, region: str) -> dict[tuple[str, str], float]:
        ec2, types = self._client("ec2", region), self._inventory.types_in(region)
        if not types:  # an empty InstanceTypes filter would return every type's history
            return {}

        def rows() -> list[dict[str, Any]]:
            pager = ec2.get_paginator("describe_spot_price_history")
            return [r for page in pager.paginate(InstanceTypes=types, ProductDescriptions=["Linux/UNIX"],
                                                 StartTime=self._now())
                    for r in page.get("SpotPriceHistory", [])]

        latest = parse_spot_history(self._call("ec2:DescribeSpotPriceHistory", rows))
        return {(self._zones.id_of(region, zone), itype): usd for (zone, itype), usd in latest.items()}

    def _fetch_on_demand(self, region: str) -> dict[tuple[str, str], float]:
        pricing = self._client("pricing", PRICING_REGION)
        out: dict[tuple[str, str], float] = {}
        for itype in self._inventory.types_in(region):
            def items(t: str = itype) -> list[str]:
                pager = pricing.get_paginator("get_products")
                return [p for page in pager.paginate(ServiceCode="AmazonEC2", FormatVersion="aws_v1",
                                                     Filters=on_demand_filters(t, region))
                        for p in page.get("PriceList", [])]

            out.update(parse_on_demand(self._call("pricing:GetProducts", items)))
        return out

    def _queue(self) -> QueueReader:
        if self._reader is None:
            url = self._cfg.interruption_queue_url
            region = queue_region(url) or self._cfg.regions[0]
            self._reader = QueueReader(self._client("sqs", region), url, self._call, self._now)
        return self._reader

    def _instances(self, notices: Iterable[Notice], *, owned: bool = True) -> dict[str, dict[str, Any]]:
        """The instances named by ``notices`` that this cluster owns (``owned=False``: anyone's), by id."""
        by_region: dict[str, set[str]] = {}
        for n in notices:
            for region in ([n.region] if n.region in self._cfg.regions else
                           [] if n.region else list(self._cfg.regions)):
                by_region.setdefault(region, set()).add(n.instance_id)
        found: dict[str, dict[str, Any]] = {}
        for region, ids in by_region.items():
            for chunk in _chunks(sorted(ids), FILTER_VALUES_MAX):
                tags = self._owned() if owned else []
                for inst in self._describe(region, [*tags, _filter("instance-id", chunk)]):
                    found[inst["InstanceId"]] = inst
        return found

    def _unlisted(self, notices: Sequence[Notice], owned: Mapping[str, Any]) -> set[tuple[str, str, str]]:
        """The notices (event keys) of the last ``LATE_LISTING_S`` naming an instance of this cluster's
        regions that no listing shows at all: EC2 lists a new instance that late, so it may be ours."""
        now = self._now()
        young = [n for n in notices if n.instance_id not in owned and (not n.region or n.region in self._cfg.regions)
                 and (now - n.notice_at).total_seconds() < LATE_LISTING_S]
        if not young:
            return set()
        anyone = self._instances(young, owned=False)
        return {_event_key(n) for n in young if n.instance_id not in anyone}

    def _caused_by_us(self, inst: Mapping[str, Any]) -> bool:
        reason = str((inst.get("StateReason") or {}).get("Code", ""))
        return inst["InstanceId"] in self._terminated or reason == "Client.UserInitiatedShutdown"

    @staticmethod
    def _remember(memory: OrderedDict[Any, None], key: Any, limit: int = 10_000) -> None:
        memory[key] = None
        memory.move_to_end(key)
        while len(memory) > limit:
            memory.popitem(last=False)


def _tag(key: str, value: str) -> dict[str, Any]:
    return {"Name": f"tag:{key}", "Values": [value]}


def _filter(name: str, values: list[str]) -> dict[str, Any]:
    return {"Name": name, "Values": values}


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _event_key(n: Notice) -> tuple[str, str, str]:
    return (n.event_id, n.kind, n.instance_id)


def _first_error(errors: Sequence[tuple[str, str]], offering_key: str) -> ProviderError:
    """The most telling error of a fleet's errorSet (a known class before a generic one)."""
    mapped = [error_for_code(code, msg, op="ec2:CreateFleet", offering_key=offering_key)
              for code, msg in errors]
    known = [e for e in mapped if type(e) is not ProviderError]
    if known or mapped:
        return (known or mapped)[0]
    return TransientError(f"aws ec2:CreateFleet of {offering_key}: the fleet launched nothing and gave no "
                          f"error; retried later", provider=PROVIDER, offering_key=offering_key)


def from_config(cfg: AwsConfig, *, cluster: str, user_data: Callable[[Offering], str],
                sleep: Callable[[float], None] = time.sleep, **test_overrides: Any) -> AwsProvider:
    """Build the adapter from ``clouds.aws``; ``test_overrides``: now, catalog, session, TTLs, attempts."""
    return AwsProvider(cfg, cluster=cluster, user_data=user_data, sleep=sleep, **test_overrides)
