"""GCP adapter edges a mutation audit found unpinned (real SDK clients over the local Compute fake):
Operation and HTTP error mapping, insert body without a template, template precedence, listed states
and shapes, terminate safety, waiting, 409-then-gone, preemption details, SKU selection, paging."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from burster.clock import FakeClock
from burster.config import GcpConfig
from burster.errors import (
    AuthError,
    CapacityError,
    ConfigError,
    NotFoundError,
    ProviderError,
    QuotaError,
    ThrottledError,
    TransientError,
)
from burster.lifecycle import NodeState
from burster.model import Market
from providers.gcp import GcpProvider, from_config
from providers.gcp.naming import parse_time
from tests.fakes.gcp_billing import default_skus, sku
from tests.fakes.gcp_resources import fail, finish
from tests.providers.harness_gcp import MACHINE, PROJECT, ZONE, ZONES, GcpBackend, catalog_offering, gcp_backend

OURS = {"managed-by": "burster", "burster-cluster": "c1", "burster-request-id": "r"}


@pytest.fixture
def b() -> Iterator[GcpBackend]:
    with gcp_backend() as backend:
        yield backend


def provider_cfg(b: GcpBackend, *, attempts: int = 5, now: Any = None, **fields: Any) -> GcpProvider:
    """The adapter built from a full ``clouds.gcp`` section (network, service account, endpoint)."""
    from google.auth.credentials import AnonymousCredentials

    cfg = GcpConfig(**{"enabled": True, "project": PROJECT, "zones": ZONES, "api_endpoint": b.compute_url,
                       **fields})
    extra = {"now": now} if now else {}
    return from_config(cfg, cluster="c1", user_data=lambda o: "#cloud-config\n", sleep=b.sleeps.append,
                       credentials=AnonymousCredentials(), billing_endpoint=b.billing_url, attempts=attempts,
                       **extra)


def inserts(b: GcpBackend) -> list[dict[str, Any]]:
    return [r for r in b.compute.requests if r["method"] == "POST" and r["path"].endswith("/instances")]


def put(b: GcpBackend, name: str, status: str, zone: str = ZONE, created: str = "", **body: Any) -> None:
    b.compute.put_instance(zone, name, {"machineType": f"zones/{zone}/machineTypes/{MACHINE}",
                                        "labels": OURS, **body})
    b.compute.instance(zone, name).update(status=status, **({"creationTimestamp": created} if created else {}))


@pytest.mark.parametrize(("code", "http", "cls"), [
    ("PERMISSIONS_ERROR", 403, AuthError), ("RESOURCE_NOT_FOUND", 404, NotFoundError),
    ("INTERNAL_ERROR", 500, ProviderError), ("RATE_LIMIT_EXCEEDED", 403, ProviderError)])
def test_a_failed_insert_operation_is_final_for_its_request_id(b: GcpBackend, code: str, http: int,
                                                                cls: type[ProviderError]) -> None:
    """GCE answers a repeated requestId with the original Operation: a DONE one that failed fails the
    same way every time. A retryable error would keep the reconciler's intent and replay the same id
    (the same failure) for as long as GCE remembers it; not retryable, the next try gets a new id."""
    b.compute.fail_next_insert_op(code, f"{code}: the insert failed.", http_status=http)
    p = b.provider()
    for _ in range(2):
        with pytest.raises(ProviderError, match=code) as info:
            p.launch(catalog_offering(), 1, request_id="op-failed")
        assert type(info.value) is cls and not info.value.retryable
        assert info.value.offering_key == catalog_offering().key
    assert len(inserts(b)) == 2 and b.compute.s.instances == {}  # the replay made nothing


@pytest.mark.parametrize(("code", "reason", "message", "cls"), [
    (404, "notFound", "The resource 'projects/burster-test/global/instanceTemplates/a100' was not found",
     NotFoundError),
    (403, "forbidden", "Required 'compute.instances.create' permission; token ya29.a0AfB_SECRET-value "
     "-----BEGIN PRIVATE KEY-----MIIEvQSECRET", AuthError),
    (429, "tooManyRequests", "Too many requests, slow down.", ThrottledError),
    (403, "forbidden", "QUOTA_EXCEEDED: Quota 'CPUS' exceeded.  Limit: 24.0 in region us-central1.", QuotaError),
    (503, "backendError", "ZONE_RESOURCE_POOL_EXHAUSTED: the zone does not have enough resources", CapacityError),
])
def test_http_errors_of_an_insert_map_to_the_error_tree_without_secrets(
        b: GcpBackend, code: int, reason: str, message: str, cls: type[ProviderError]) -> None:
    b.compute.fail_next("POST", code, reason, message)
    with pytest.raises(ProviderError) as info:
        b.provider(attempts=1).launch(catalog_offering(), 1, request_id="http-err")
    assert type(info.value) is cls
    assert "ya29" not in str(info.value) and "MIIEvQ" not in str(info.value)


def test_an_unreachable_endpoint_is_transient_and_retried(b: GcpBackend) -> None:
    p = provider_cfg(b, attempts=2, api_endpoint="http://127.0.0.1:1")
    with pytest.raises(TransientError):
        p.list_nodes()
    assert len(b.sleeps) == 1


def test_without_a_template_the_body_names_network_subnetwork_service_account_and_disk(b: GcpBackend) -> None:
    p = provider_cfg(b, network="projects/net/global/networks/gpu", subnetwork="regions/us-central1/subnetworks/g",
                     node_service_account="node@burster-test.iam.gserviceaccount.com")
    p.launch(catalog_offering(), 1, request_id="nic")
    body = inserts(b)[0]["body"]
    assert body["networkInterfaces"] == [{"network": "projects/net/global/networks/gpu",
                                          "subnetwork": "regions/us-central1/subnetworks/g"}]
    assert body["serviceAccounts"] == [{"email": "node@burster-test.iam.gserviceaccount.com",
                                        "scopes": ["https://www.googleapis.com/auth/cloud-platform"]}]
    assert body["disks"][0]["initializeParams"]["diskType"] == f"zones/{ZONE}/diskTypes/pd-balanced"
    meta = {i["key"]: i["value"] for i in body["metadata"]["items"]}
    assert meta["block-project-ssh-keys"] == "true" and meta["serial-port-enable"] == "false"


def test_templates_by_machine_type_then_default(b: GcpBackend) -> None:
    tpl = "projects/burster-test/global/instanceTemplates/"
    p = b.provider(instance_templates={MACHINE: tpl + "by-type", "default": tpl + "fallback"})
    p.launch(catalog_offering(), 1, request_id="tpl-1")
    p.launch(catalog_offering(machine="a3-highgpu-1g"), 1, request_id="tpl-2")
    assert [r["query"]["sourceInstanceTemplate"] for r in inserts(b)] == [tpl + "by-type", tpl + "fallback"]


def test_listed_states_shapes_markets_and_creation_times(b: GcpBackend) -> None:
    clock = FakeClock(datetime(2026, 3, 1, tzinfo=UTC))
    put(b, "bst-c1-stg", "STAGING", created="2024-06-26T11:42:22.006-07:00")
    put(b, "bst-c1-stp", "STOPPING", created="not a time")
    put(b, "bst-c1-new", "SOME_NEW_STATUS")
    put(b, "bst-c1-old", "RUNNING", scheduling={"preemptible": True})  # a legacy preemptible VM
    put(b, "bst-c1-t4", "RUNNING", zone="us-east1-b", machineType="zones/us-east1-b/machineTypes/n1-standard-4",
        guestAccelerators=[{"acceleratorCount": 2, "acceleratorType": "zones/us-east1-b/acceleratorTypes/"
                            "nvidia-tesla-t4"}])
    nodes = {n.node_id: n for n in b.provider(now=clock.now).list_nodes()}
    assert {k: n.state for k, n in nodes.items()} == {
        "bst-c1-stg": NodeState.LAUNCHING, "bst-c1-stp": NodeState.TERMINATING,
        "bst-c1-new": NodeState.LAUNCHING, "bst-c1-old": NodeState.READY, "bst-c1-t4": NodeState.READY}
    stg = nodes["bst-c1-stg"].launched_at
    assert stg == datetime(2024, 6, 26, 18, 42, 22, 6000, tzinfo=UTC) and stg.utcoffset() == timedelta(0)
    assert nodes["bst-c1-stp"].launched_at == clock.now()
    assert nodes["bst-c1-old"].offering == catalog_offering(market=Market.SPOT)
    t4 = nodes["bst-c1-t4"].offering
    assert (t4.region, t4.zone, t4.gpu_model, t4.gpus_per_node) == ("us-east1", "us-east1-b", "nvidia-tesla-t4", 2)


def test_a_node_being_deleted_lists_terminating_even_before_gce_updates_its_status(b: GcpBackend) -> None:
    p = b.provider()
    (node,) = p.launch(catalog_offering(), 1, request_id="del-early")
    p.terminate([node.node_id], request_id="del-early-t")
    b.compute.instance(ZONE, node.node_id)["status"] = "STAGING"  # the listing lags the delete
    assert [n.state for n in p.list_nodes()] == [NodeState.TERMINATING]


def test_a_name_made_again_after_a_delete_is_not_taken_for_the_deleted_one(b: GcpBackend) -> None:
    p = b.provider()
    (node,) = p.launch(catalog_offering(), 1, request_id="reuse")
    p.terminate([node.node_id], request_id="reuse-t")
    b.compute.settle()
    assert p.list_nodes() == []
    b.compute.forget_request_ids()  # past GCE's window a launch under the same id makes it again
    (again,) = p.launch(catalog_offering(), 1, request_id="reuse")
    assert again.node_id == node.node_id
    assert [n.state for n in p.list_nodes()] in ([NodeState.LAUNCHING], [NodeState.READY])


def test_terminate_never_deletes_another_clusters_instance(b: GcpBackend) -> None:
    (theirs,) = b.provider("c2").launch(catalog_offering(), 1, request_id="c2-node")
    b.provider("c1").terminate([theirs.node_id], request_id="c1-term")
    assert not [r for r in b.compute.requests if r["method"] == "DELETE"]
    assert b.compute.instance(ZONE, theirs.node_id) is not None


def test_a_delete_whose_operation_failed_is_sent_again_under_a_new_request_id(b: GcpBackend) -> None:
    """The reconciler terminates a node under one request id (term-<node>); GCE answers a delete
    replayed under it with the Operation that failed, so the VM would bill on until GCE forgets."""
    p = b.provider()
    (node,) = p.launch(catalog_offering(), 1, request_id="del-fail")
    b.compute.settle()
    p.terminate([node.node_id], request_id="term-x")
    for _ in range(2):  # the delete fails, and so does the one sent again
        (op,) = [o for o in b.compute.s.ops.values() if o.body["operationType"] == "delete"
                 and o.body["status"] != "DONE"]
        fail(op, "INTERNAL_ERROR", "Internal error.", 500, [])
        op.on_done = None
        finish(op)
        b.compute.instance(ZONE, node.node_id)["status"] = "RUNNING"  # a failed delete leaves it running
        p.terminate([node.node_id], request_id="term-x")
    p.terminate([node.node_id], request_id="term-x")  # a replay: the same last delete, not a fourth
    deletes = [r["query"]["requestId"] for r in b.compute.requests if r["method"] == "DELETE"]
    assert len(set(deletes)) == 3
    b.compute.settle()
    assert b.compute.instance(ZONE, node.node_id) is None


def test_nothing_to_launch_and_foreign_offerings_send_nothing(b: GcpBackend) -> None:
    p = b.provider()
    assert p.launch(replace(catalog_offering(), zone="nowhere-1a"), 0, request_id="zero") == []
    with pytest.raises(ConfigError, match="'aws' offering"):
        p.launch(replace(catalog_offering(), provider="aws"), 1, request_id="aws")
    assert b.compute.requests == []


def test_a_long_request_id_is_cut_to_a_label_value_and_still_recognised(b: GcpBackend) -> None:
    rid = "req-" + "x" * 80
    (node,) = b.provider().launch(catalog_offering(), 1, request_id=rid)
    assert inserts(b)[0]["body"]["labels"]["burster-request-id"] == rid[:63]
    b.compute.forget_request_ids()  # a retry reads the existing instance's label back
    assert [n.node_id for n in b.provider().launch(catalog_offering(), 1, request_id=rid)] == [node.node_id]


def test_a_capacity_block_ends_exactly_at_its_time(b: GcpBackend) -> None:
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    p = b.provider(now=clock.now)
    b.compute.set_capacity(ZONE, MACHINE, 0)
    with pytest.raises(CapacityError):
        p.launch(catalog_offering(), 1, request_id="blk-edge")
    clock.advance(599)
    assert {o.key: o.available for o in p.offerings()}[catalog_offering().key] is False
    clock.advance(1)
    assert {o.key: o.available for o in p.offerings()}[catalog_offering().key] is True


def test_one_wait_call_is_enough_and_an_unfinished_operation_resumes_under_the_same_id(b: GcpBackend) -> None:
    assert len(b.provider(max_wait_calls=1).launch(catalog_offering(), 1, request_id="w1")) == 1
    with pytest.raises(TransientError, match="still running"):
        b.provider(max_wait_calls=0).launch(catalog_offering(), 1, request_id="w0")
    (node,) = b.provider().launch(catalog_offering(), 1, request_id="w0")
    assert node.state in (NodeState.LAUNCHING, NodeState.READY) and len(b.compute.s.instances) == 2


def test_an_instance_that_answered_409_and_is_gone_by_the_get_is_transient(b: GcpBackend) -> None:
    p = b.provider()
    (node,) = p.launch(catalog_offering(), 1, request_id="gone-409")
    b.compute.preempt(ZONE, node.node_id)  # deleted two requests from now
    b.compute.forget_request_ids()  # the insert answers 409 alreadyExists, the get 404
    with pytest.raises(TransientError, match="created but is gone already"):
        p.launch(catalog_offering(), 1, request_id="gone-409")


def test_a_gone_instance_never_ends_before_it_began(b: GcpBackend) -> None:
    clock = FakeClock(datetime.now(UTC) + timedelta(seconds=60))
    p = b.provider(now=clock.now)
    (node,) = p.launch(catalog_offering(), 1, request_id="skew-end")
    b.compute.preempt(ZONE, node.node_id)
    b.compute.settle()
    (ev,) = [o.body for o in b.compute.s.ops.values() if o.body["operationType"] == "compute.instances.preempted"]
    ev["endTime"] = "2020-01-01T00:00:00Z"  # another clock's time, before the insert
    (gone,) = p.launch(catalog_offering(), 1, request_id="skew-end")
    assert gone.state is NodeState.TERMINATED and gone.ended_at == gone.launched_at < clock.now()


def test_preemption_notices_date_by_the_event_and_cover_stopped_and_legacy_preemptible_vms(b: GcpBackend) -> None:
    p = b.provider(now=lambda: datetime.now(UTC) + timedelta(minutes=5))
    (a,) = p.launch(catalog_offering(), 1, request_id="pre-a")
    (c,) = p.launch(catalog_offering(), 1, request_id="pre-c")
    b.compute.settle()
    ev = b.compute.preempt(ZONE, a.node_id)
    b.compute.settle()
    b.compute.instance(ZONE, c.node_id)["status"] = "TERMINATED"  # stopped, not by us
    put(b, "bst-c1-legacy", "STOPPING", scheduling={"preemptible": True})
    notices = {n.node_id: n for n in p.interruptions()}
    assert set(notices) == {a.node_id, c.node_id, "bst-c1-legacy"}
    assert notices[a.node_id].notice_at == parse_time(ev["insertTime"], datetime.now(UTC))


def test_skus_of_other_regions_premium_and_old_prices_and_upper_tiers_are_not_used(b: GcpBackend) -> None:
    skus = default_skus()
    core = next(s for s in skus if s["description"] == "A2 Instance Core running in Americas")
    old = {**core["pricingInfo"][0], "effectiveTime": "2025-01-01T08:00:00.000Z",
           "pricingExpression": {**core["pricingInfo"][0]["pricingExpression"],
                                 "tieredRates": [{"startUsageAmount": 0, "unitPrice": {"units": "7"}}]}}
    core["pricingInfo"].insert(0, old)  # an older price listed first
    ram = next(s for s in skus if s["description"] == "A2 Instance Ram running in Americas")
    rates = ram["pricingInfo"][0]["pricingExpression"]["tieredRates"]
    rates.insert(0, {"startUsageAmount": 100, "unitPrice": {"units": "0", "nanos": 1000}})  # a higher tier first
    b.billing.skus = [sku("DEC0-0001-0001", "Sole Tenancy Premium for A2 Instance Core running in Americas",
                          "CPU", "OnDemand", 9.0),
                      sku("DEC0-0001-0002", "A2 Instance Core running in Netherlands", "CPU", "OnDemand", 8.0,
                          regions=["europe-west4"]), *skus]
    b.billing.skus += [sku("A3P0-0001-0001", "A3Plus Instance Core running in Americas", "CPU", "OnDemand", 0.03),
                       sku("A3P0-0001-0002", "A3Plus Instance Ram running in Americas", "RAM", "OnDemand", 0.004,
                           "GiBy.h"),
                       sku("H1M0-0001-0003", "Nvidia H100 80GB Mega GPU running in Americas", "GPU", "OnDemand", 11.0)]
    offers = {o.key: o for o in b.provider(zones=(ZONE,)).offerings()}
    got = offers[catalog_offering(market=Market.ON_DEMAND).key]
    assert got.price_per_hour_usd == pytest.approx(12 * 0.031611 + 85 * 0.004237 + 2.75, abs=1e-5)
    mega = offers[catalog_offering(machine="a3-megagpu-8g", market=Market.ON_DEMAND).key]
    assert mega.price_per_hour_usd == pytest.approx(208 * 0.03 + 1872 * 0.004 + 8 * 11.0, abs=1e-5)  # not A3's host


def test_all_pages_of_the_instance_listing_are_read(b: GcpBackend) -> None:
    for i in range(501):  # the API's page holds at most 500
        put(b, f"bst-c1-page-{i}", "RUNNING")
    assert len(b.provider().list_nodes()) == 501
    lists = [r for r in b.compute.requests if r["path"].endswith("/aggregated/instances")]
    assert len(lists) == 2 and lists[1]["query"]["pageToken"] == "500"
