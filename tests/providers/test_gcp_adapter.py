"""GCP adapter specifics, over the real SDK clients and the local Compute Engine fake (HTTP)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from google.auth.credentials import Credentials

from burster.errors import (
    AuthError,
    CapacityError,
    ConfigError,
    InvalidRequestError,
    NotFoundError,
    PartialLaunchError,
    QuotaError,
    ThrottledError,
    TransientError,
)
from burster.lifecycle import NodeState
from burster.model import Market
from burster.plan import request_id
from providers.gcp import naming
from tests.providers.harness_gcp import MACHINE, PROJECT, ZONE, GcpBackend, catalog_offering, gcp_backend

LABELS = {"team": "Vision", "project": "detector", "sprint": "S42"}
NAME_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


@pytest.fixture
def b() -> Iterator[GcpBackend]:
    with gcp_backend() as backend:
        yield backend


def inserts(b: GcpBackend) -> list[dict]:
    return [r for r in b.compute.requests if r["method"] == "POST" and r["path"].endswith("/instances")]


def test_spot_insert_body_follows_the_instances_insert_shape(b: GcpBackend) -> None:
    p = b.provider()
    p.launch(catalog_offering(), 2, request_id=request_id("body", 1), labels=LABELS)
    sent = inserts(b)
    assert len(sent) == 2
    body, query = sent[0]["body"], sent[0]["query"]
    assert body["machineType"] == f"zones/{ZONE}/machineTypes/{MACHINE}"
    assert body["scheduling"] == {"provisioningModel": "SPOT", "preemptible": True, "automaticRestart": False,
                                  "onHostMaintenance": "TERMINATE", "instanceTerminationAction": "DELETE"}
    assert body["labels"] == {"team": "vision", "project": "detector", "sprint": "s42", "managed-by": "burster",
                              "burster-cluster": "c1", "burster-request-id": request_id("body", 1)}
    meta = {i["key"]: i["value"] for i in body["metadata"]["items"]}
    assert meta["user-data"].startswith("#cloud-config") and meta["enable-oslogin"] == "TRUE"
    assert json.loads(meta[naming.OWNERS]) == LABELS  # exact, where the labels lost the case
    assert body["disks"][0]["initializeParams"]["sourceImage"].endswith("debian-12")
    assert uuid.UUID(query["requestId"])  # GCE wants a UUID
    assert sent[0]["query"]["requestId"] != sent[1]["query"]["requestId"]
    assert all(NAME_RE.match(r["body"]["name"]) for r in sent)


def test_on_demand_uses_standard_provisioning_and_the_instance_template(b: GcpBackend) -> None:
    tpl = "https://www.googleapis.com/compute/v1/projects/burster-test/global/instanceTemplates/a100"
    p = b.provider(instance_templates={"A100": tpl})
    p.launch(catalog_offering(market=Market.ON_DEMAND), 1, request_id=request_id("od", 1))
    body, query = inserts(b)[0]["body"], inserts(b)[0]["query"]
    assert body["scheduling"]["provisioningModel"] == "STANDARD"
    assert body["scheduling"]["automaticRestart"] is True
    assert "instanceTerminationAction" not in body["scheduling"]
    assert query["sourceInstanceTemplate"] == tpl
    assert "disks" not in body and "networkInterfaces" not in body  # the template provides them


def test_nodes_map_back_to_catalog_offerings_and_states(b: GcpBackend) -> None:
    p = b.provider()
    offering = catalog_offering()
    nodes = p.launch(offering, 1, request_id=request_id("map", 1), labels=LABELS)
    assert nodes[0].offering == offering and nodes[0].offering.price_per_hour_usd > 0
    assert nodes[0].state in (NodeState.LAUNCHING, NodeState.READY)
    assert nodes[0].team == "Vision" and nodes[0].request_id == request_id("map", 1)
    assert nodes[0].launched_at.tzinfo is not None and nodes[0].launched_at.utcoffset() == UTC.utcoffset(None)
    b.compute.settle()
    assert [n.state for n in p.list_nodes()] == [NodeState.READY]
    b.compute.instance(ZONE, nodes[0].node_id)["status"] = "REPAIRING"
    assert [n.state for n in p.list_nodes()] == [NodeState.FAILED]


@pytest.mark.parametrize("owners", [None, "not json", '["Vision"]', '{"team": 7}'])
def test_an_instance_without_a_readable_owners_item_is_attributed_by_its_labels(b: GcpBackend,
                                                                               owners: str | None) -> None:
    """The metadata item missing (an instance of an older adapter, or edited) or not a JSON object of
    strings: the labels, lowercased, still name the owners."""
    p = b.provider()
    (node,) = p.launch(catalog_offering(), 1, request_id=request_id("owners", 1), labels=LABELS)
    meta = b.compute.instance(ZONE, node.node_id)["metadata"]
    meta["items"] = [i for i in meta["items"] if i["key"] != naming.OWNERS]
    if owners is not None:
        meta["items"].append({"key": naming.OWNERS, "value": owners})
    (listed,) = p.list_nodes()
    assert (listed.team, listed.project, listed.sprint) == ("vision", "detector", "s42")


def test_list_nodes_sees_only_this_clusters_labelled_instances(b: GcpBackend) -> None:
    mine = b.provider("c1").launch(catalog_offering(), 1, request_id=request_id("l", 1))
    b.provider("c2").launch(catalog_offering(), 1, request_id=request_id("l", 2))
    b.compute.put_instance(ZONE, "hand-made", {"machineType": f"zones/{ZONE}/machineTypes/{MACHINE}"})
    assert [n.node_id for n in b.provider("c1").list_nodes()] == [mine[0].node_id]
    lists = [r for r in b.compute.requests if r["path"].endswith("/aggregated/instances")]
    assert lists[-1]["query"]["filter"] == naming.list_filter("c1")


def test_an_unknown_shape_of_ours_gets_a_zero_price_offering(b: GcpBackend) -> None:
    labels = {"managed-by": "burster", "burster-cluster": "c1", "burster-request-id": "x"}
    b.compute.put_instance(ZONE, "bst-c1-odd", {"machineType": f"zones/{ZONE}/machineTypes/n1-standard-4",
                                                "labels": labels})
    (node,) = b.provider().list_nodes()
    assert node.offering.instance_type == "n1-standard-4" and node.offering.price_per_hour_usd == 0.0
    assert node.offering.market is Market.ON_DEMAND


def test_quota_in_the_operation_is_a_quota_error(b: GcpBackend) -> None:
    b.compute.fail_next_insert_op("QUOTA_EXCEEDED", "Quota 'NVIDIA_A100_GPUS' exceeded.  Limit: 0.0 in region "
                                  "us-central1.", details=[{"quotaInfo": {
                                      "metricName": "compute.googleapis.com/nvidia_a100_gpus",
                                      "limitName": "NVIDIA-A100-GPUS-per-project-region",
                                      "dimensions": {"region": "us-central1"}, "limit": 0}}])
    with pytest.raises(QuotaError, match="NVIDIA_A100_GPUS") as info:
        b.provider().launch(catalog_offering(), 1, request_id=request_id("q", 1))
    assert info.value.offering_key == catalog_offering().key


def test_quota_as_http_403_is_a_quota_error(b: GcpBackend) -> None:
    b.compute.fail_next("POST", 403, "quotaExceeded", "Quota 'GPUS_ALL_REGIONS' exceeded.  Limit: 0.0 globally.",
                        domain="usageLimits")
    with pytest.raises(QuotaError, match="GPUS_ALL_REGIONS") as info:
        b.provider().launch(catalog_offering(), 2, request_id=request_id("q", 2))
    assert info.value.offering_key == catalog_offering().key
    assert len(inserts(b)) == 1  # the second insert would meet the same quota


def test_exhausted_with_details_is_a_capacity_error(b: GcpBackend) -> None:
    b.compute.set_capacity(ZONE, MACHINE, 0, code="ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS")
    with pytest.raises(CapacityError, match="resource type:compute"):
        b.provider().launch(catalog_offering(), 1, request_id=request_id("cap", 2))


def test_a_capacity_error_marks_the_offering_unavailable_for_a_while(b: GcpBackend) -> None:
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]
    p = b.provider(now=lambda: clock[0])
    offering = catalog_offering()
    b.compute.set_capacity(ZONE, MACHINE, 1)
    with pytest.raises(PartialLaunchError):
        p.launch(offering, 2, request_id=request_id("blk", 1))
    avail = {o.key: o.available for o in p.offerings()}
    assert avail[offering.key] is False and avail[catalog_offering(market=Market.ON_DEMAND).key] is True
    clock[0] += timedelta(minutes=11)
    assert {o.key: o.available for o in p.offerings()}[offering.key] is True


def test_documented_403_rate_limit_is_retried_with_growing_backoff(b: GcpBackend) -> None:
    b.compute.throttle_next(3, status=403)
    assert len(b.provider().launch(catalog_offering(), 1, request_id=request_id("rl", 1))) == 1
    assert len(b.sleeps) == 3


def test_throttling_that_outlasts_the_retries_raises_throttled(b: GcpBackend) -> None:
    b.compute.throttle_next(10)
    with pytest.raises(ThrottledError):
        b.provider(attempts=3).launch(catalog_offering(), 1, request_id=request_id("rl", 2))
    assert len(b.sleeps) == 2


def test_server_errors_are_retried(b: GcpBackend) -> None:
    b.compute.fail_next("POST", 503, "backendError", "Internal error. Please try again or contact Google "
                        "Support. (Code: '5C54C97EB5265.AA25590.F4046F68')")
    assert len(b.provider().launch(catalog_offering(), 1, request_id=request_id("5xx", 1))) == 1
    assert len(b.sleeps) == 1


class StaticToken(Credentials):
    """A bearer token that 'refreshes' to itself, like an expired or revoked one would."""

    def refresh(self, request: object) -> None:
        self.token = "ya29.SECRET-TOKEN"


def test_401_is_an_auth_error_without_secrets(b: GcpBackend) -> None:
    for _ in range(3):  # google-auth's AuthorizedSession refreshes and retries a 401 twice
        b.compute.fail_next("GET", 401, "required", "Request had invalid authentication credentials. "
                            "access_token=ya29.SECRET-TOKEN")
    with pytest.raises(AuthError) as info:
        b.provider(credentials=StaticToken()).list_nodes()
    assert "ya29" not in str(info.value) and "127.0.0.1" not in str(info.value)
    assert "HTTP 401" in str(info.value)


def test_credentials_that_cannot_refresh_are_an_auth_error(b: GcpBackend) -> None:
    b.compute.fail_next("GET", 401, "required", "Request had invalid authentication credentials.")
    with pytest.raises(AuthError, match="credentials"):
        b.provider().list_nodes()  # AnonymousCredentials cannot refresh


def test_retry_after_the_request_id_window_still_creates_nothing(b: GcpBackend) -> None:
    p = b.provider()
    rid = request_id("late", 1)
    first = p.launch(catalog_offering(), 2, request_id=rid)
    b.compute.forget_request_ids()  # GCE no longer de-duplicates: the insert answers 409 alreadyExists
    again = p.launch(catalog_offering(), 2, request_id=rid)
    assert [n.node_id for n in again] == [n.node_id for n in first]
    assert len(p.list_nodes()) == 2


def test_a_name_clash_with_a_foreign_instance_is_reported(b: GcpBackend) -> None:
    rid = request_id("clash", 1)
    name = naming.instance_name("c1", rid, 0)
    b.compute.put_instance(ZONE, name, {"machineType": f"zones/{ZONE}/machineTypes/{MACHINE}",
                                        "labels": {"burster-request-id": "someone-else"}})
    with pytest.raises(ConfigError, match="not created by request"):
        b.provider().launch(catalog_offering(), 1, request_id=rid)


def test_terminate_is_idempotent_ignores_unknown_ids_and_survives_a_restart(b: GcpBackend) -> None:
    nodes = b.provider().launch(catalog_offering(), 2, request_id=request_id("t", 1))
    fresh = b.provider()  # a restarted controller: learns zones by listing
    fresh.terminate([nodes[0].node_id, "bst-c1-unknown"], request_id=request_id("t-term", 1))
    fresh.terminate([nodes[0].node_id], request_id=request_id("t-term", 1))  # again: GCE answers its operation
    states = {n.node_id: n.state for n in fresh.list_nodes()}
    assert states[nodes[0].node_id] is NodeState.TERMINATING
    b.compute.settle()
    assert [n.node_id for n in fresh.list_nodes()] == [nodes[1].node_id]
    fresh.terminate([nodes[0].node_id], request_id=request_id("t-term", 3))  # gone: ignored


def test_unknown_zone_and_machine_type_list_close_matches(b: GcpBackend) -> None:
    p = b.provider(zones=())
    with pytest.raises(NotFoundError, match="us-central1-a"):
        p.launch(replace(catalog_offering(), zone="us-centrl1-a"), 1, request_id="z")
    with pytest.raises(NotFoundError, match="close matches: a2-highgpu-"):
        p.launch(replace(catalog_offering(), instance_type="a2-highgpu-3g"), 1, request_id="m")
    with pytest.raises(ConfigError, match=r"not in clouds\.gcp\.zones \(us-central1-b\)"):
        b.provider(zones=("us-central1-b",)).launch(catalog_offering(), 1, request_id="c")
    with pytest.raises(ConfigError, match="us-central1-a"):
        b.provider(zones=("us-centrl1-a",))
    assert inserts(b) == []


def test_missing_project_is_a_config_error(b: GcpBackend) -> None:
    from burster.config import GcpConfig
    from providers.gcp import from_config

    with pytest.raises(ConfigError, match=r"clouds\.gcp\.project"):
        from_config(GcpConfig(), cluster="c1", user_data=lambda o: "")


def test_missing_credentials_name_every_place_looked(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from burster.config import GcpConfig
    from providers.gcp import from_config

    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    with pytest.raises(AuthError) as info:
        from_config(GcpConfig(project="p"), cluster="c1", user_data=lambda o: "")
    text = str(info.value)
    assert "GOOGLE_APPLICATION_CREDENTIALS" in text and "metadata server" in text
    assert str(tmp_path / "application_default_credentials.json") in text  # where $CLOUDSDK_CONFIG points


def test_a_broken_key_file_does_not_leak_its_contents(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from burster.config import GcpConfig
    from providers.gcp import from_config

    key = tmp_path / "key.json"
    key.write_text('{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----SECRET"}')
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    with pytest.raises(AuthError) as info:
        from_config(GcpConfig(project="p"), cluster="c1", user_data=lambda o: "")
    assert "SECRET" not in str(info.value) and str(key) in str(info.value)


def test_importing_the_adapter_needs_no_google_sdk() -> None:
    import subprocess
    import sys

    code = ("import sys, providers.gcp; bad = [m for m in sys.modules if m.startswith('google')]; "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_a_delete_refused_as_not_ready_is_retried_not_taken_for_done(b: GcpBackend) -> None:
    """GCE answers 400 resourceNotReady while another operation runs on the instance (a start, a
    stop, setMetadata): the delete is retried with backoff; refused every time, terminate raises a
    retryable error and the instance is still listed running (so the reconciler terminates it
    again), never taken for one being deleted."""
    (node,) = b.provider().launch(catalog_offering(), 1, request_id=request_id("nr", 1))
    b.compute.settle()
    p = b.provider()
    not_ready = ("DELETE", 400, "resourceNotReady",
                 f"The resource 'projects/{PROJECT}/zones/{ZONE}/instances/{node.node_id}' is not ready")
    b.compute.fail_next(*not_ready)
    p.terminate([node.node_id], request_id=request_id("nr-term", 1))  # the retry goes through
    assert {n.node_id: n.state for n in p.list_nodes()} == {node.node_id: NodeState.TERMINATING}
    b.compute.settle()
    assert p.list_nodes() == []
    (other,) = p.launch(catalog_offering(), 1, request_id=request_id("nr", 2))
    b.compute.settle()
    for _ in range(5):  # every attempt
        b.compute.fail_next(*not_ready)
    with pytest.raises(TransientError, match="resourceNotReady, another operation is in progress"):
        p.terminate([other.node_id], request_id=request_id("nr-term", 2))
    assert {n.node_id: n.state for n in p.list_nodes()} == {other.node_id: NodeState.READY}


@pytest.mark.parametrize("status", ["TERMINATED", "SUSPENDED"])
def test_a_stopped_or_suspended_vm_is_listed_as_still_to_terminate(b: GcpBackend, status: str) -> None:
    """GCE's TERMINATED is a stopped VM, and a SUSPENDED one keeps its memory: both still exist and
    bill their disks, so they are listed TERMINATING (the controller deletes a live one), not ended."""
    (node,) = b.provider().launch(catalog_offering(), 1, request_id=request_id("stop", 1))
    b.compute.settle()
    b.compute.instance(ZONE, node.node_id)["status"] = status
    assert {n.node_id: n.state for n in b.provider().list_nodes()} == {node.node_id: NodeState.TERMINATING}


def test_an_insert_gce_refuses_as_invalid_is_a_provider_error_that_blocks_the_offering(b: GcpBackend) -> None:
    """A 400 (a machine type the catalog lists in a zone that no longer offers it) is the cloud's
    answer to this request, not a bad setting of ours found before the call: InvalidRequestError,
    which the reconciler reports and blocks the offering on, like a capacity error."""
    b.compute.fail_next("POST", 400, "invalid",
                        f"Invalid value for field 'resource.machineType': 'zones/{ZONE}/machineTypes/{MACHINE}'. "
                        "Machine type does not exist in zone.")
    with pytest.raises(InvalidRequestError, match=r"Machine type does not exist in zone.*blocks this offering") as err:
        b.provider().launch(catalog_offering(), 1, request_id=request_id("bad", 1))
    assert err.value.offering_key == catalog_offering().key
