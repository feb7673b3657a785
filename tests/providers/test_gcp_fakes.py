"""The local GCP fakes answer in the documented REST shapes (raw HTTP, no SDK in between)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.gcp_billing import FakeBilling
from tests.fakes.gcp_compute import FakeCompute

BASE = "/compute/v1/projects/p"
BODY = {"name": "vm-1", "machineType": "zones/us-central1-a/machineTypes/a2-highgpu-1g",
        "scheduling": {"onHostMaintenance": "TERMINATE", "provisioningModel": "SPOT", "automaticRestart": False,
                       "instanceTerminationAction": "DELETE"}}


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[FakeCompute, str, FakeBilling, str]]:
    compute, billing = FakeCompute("p", {"us-central1-a", "us-east1-b"}), FakeBilling()
    yield compute, compute.start(), billing, billing.start()
    compute.stop()
    billing.stop()


def call(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_error_bodies_have_the_google_json_error_shape(servers) -> None:
    _, url, _, _ = servers
    code, body = call(f"{url}{BASE}/zones/us-central1-a/instances/missing")
    assert code == 404
    err = body["error"]
    assert err["code"] == 404 and err["status"] == "NOT_FOUND" and "was not found" in err["message"]
    assert err["errors"] == [{"message": err["message"], "domain": "global", "reason": "notFound"}]


def test_the_billing_catalog_is_read_only(servers) -> None:
    _, _, _, billing_url = servers
    code, body = call(f"{billing_url}/v1/services/6F81-5844-456A/skus", method="POST", body={})
    assert code == 405 and body["error"]["errors"][0]["reason"] == "methodNotAllowed"


def test_insert_returns_a_zone_operation_and_dedupes_its_request_id(servers) -> None:
    _, url, _, _ = servers
    rid = str(uuid.uuid4())
    code, op = call(f"{url}{BASE}/zones/us-central1-a/instances?requestId={rid}", "POST", BODY)
    assert code == 200
    assert op["kind"] == "compute#operation" and op["operationType"] == "insert"
    assert op["status"] in ("PENDING", "RUNNING") and op["clientOperationId"] == rid
    assert op["targetLink"].endswith("/zones/us-central1-a/instances/vm-1")
    assert op["selfLink"].endswith(f"/zones/us-central1-a/operations/{op['name']}")
    _, again = call(f"{url}{BASE}/zones/us-central1-a/instances?requestId={rid}", "POST", BODY)
    assert again["name"] == op["name"]
    _, done = call(f"{url}{BASE}/zones/us-central1-a/operations/{op['name']}/wait", "POST")
    assert done["status"] == "DONE" and done["progress"] == 100 and "error" not in done
    _, inst = call(f"{url}{BASE}/zones/us-central1-a/instances/vm-1")
    assert inst["kind"] == "compute#instance" and inst["status"] in ("STAGING", "RUNNING")
    assert inst["guestAccelerators"][0]["acceleratorCount"] == 1
    code, dup = call(f"{url}{BASE}/zones/us-central1-a/instances", "POST", BODY)
    assert code == 409 and dup["error"]["errors"][0]["reason"] == "alreadyExists"


def test_a_replayed_insert_after_the_instance_went_answers_the_original_done_operation(servers) -> None:
    """GCE ignores a repeated requestId and answers the original Operation, DONE and error-free, even
    when the instance it made is gone: its targetLink then GETs 404, and nothing new is made."""
    compute, url, _, _ = servers
    rid, body = str(uuid.uuid4()), {**BODY, "name": "vm-gone"}
    _, op = call(f"{url}{BASE}/zones/us-central1-a/instances?requestId={rid}", "POST", body)
    _, done = call(f"{url}{BASE}/zones/us-central1-a/operations/{op['name']}/wait", "POST")
    _, inst = call(f"{url}{BASE}/zones/us-central1-a/instances/vm-gone")
    compute.preempt("us-central1-a", "vm-gone")  # instanceTerminationAction DELETE
    compute.settle()
    code, again = call(f"{url}{BASE}/zones/us-central1-a/instances?requestId={rid}", "POST", body)
    assert code == 200 and again == done and again["targetId"] == inst["id"]
    assert again["status"] == "DONE" and "error" not in again and again["clientOperationId"] == rid
    assert call(f"{url}{BASE}/zones/us-central1-a/instances/vm-gone")[0] == 404
    flt = urllib.parse.quote(f"targetId = {inst['id']}")
    _, ops = call(f"{url}{BASE}/aggregated/operations?filter={flt}")
    types = sorted(o["operationType"] for o in ops["items"]["zones/us-central1-a"]["operations"])
    assert types == ["compute.instances.preempted", "insert"]


def test_capacity_is_reported_in_the_done_operation(servers) -> None:
    compute, url, _, _ = servers
    compute.set_capacity("us-east1-b", "a2-highgpu-1g", 0)
    body = {**BODY, "name": "vm-cap", "machineType": "zones/us-east1-b/machineTypes/a2-highgpu-1g"}
    _, op = call(f"{url}{BASE}/zones/us-east1-b/instances", "POST", body)
    _, done = call(f"{url}{BASE}/zones/us-east1-b/operations/{op['name']}/wait", "POST")
    (error,) = done["error"]["errors"]
    assert error["code"] == "ZONE_RESOURCE_POOL_EXHAUSTED"
    assert "does not have enough resources available" in error["message"]
    assert done["httpErrorStatusCode"] == 503
    assert call(f"{url}{BASE}/zones/us-east1-b/instances/vm-cap")[0] == 404


def test_gpu_machine_types_must_not_live_migrate(servers) -> None:
    _, url, _, _ = servers
    body = {**BODY, "name": "vm-mig", "scheduling": {"provisioningModel": "STANDARD"}}
    code, err = call(f"{url}{BASE}/zones/us-central1-a/instances", "POST", body)
    assert code == 400 and "live migration" in err["error"]["message"]


def test_aggregated_list_warns_on_empty_scopes_and_filters_labels(servers) -> None:
    compute, url, _, _ = servers
    compute.put_instance("us-central1-a", "lab", {**BODY, "labels": {"managed-by": "burster"}})
    flt = urllib.parse.quote('(labels.managed-by = "burster")')
    _, body = call(f"{url}{BASE}/aggregated/instances?filter={flt}")
    assert body["kind"] == "compute#instanceAggregatedList"
    assert [i["name"] for i in body["items"]["zones/us-central1-a"]["instances"]] == ["lab"]
    assert body["items"]["zones/us-east1-b"]["warning"]["code"] == "NO_RESULTS_ON_PAGE"


def test_rate_limiting_answers_429_rate_limit_exceeded(servers) -> None:
    compute, url, _, _ = servers
    compute.throttle_next(1)
    code, body = call(f"{url}{BASE}/zones/us-central1-a/instances")
    assert code == 429 and body["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert body["error"]["errors"][0]["reason"] == "rateLimitExceeded"


def test_billing_skus_carry_money_as_units_and_nanos(servers) -> None:
    _, _, _, url = servers
    code, body = call(f"{url}/v1/services/6F81-5844-456A/skus?currencyCode=USD")
    assert code == 200 and body["nextPageToken"] == ""
    gpu = next(s for s in body["skus"] if s["description"].startswith("Nvidia Tesla A100 GPU running"))
    rate = gpu["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]
    assert rate["unitPrice"] == {"currencyCode": "USD", "units": "2", "nanos": 750000000}
    assert gpu["category"]["resourceGroup"] == "GPU" and gpu["category"]["usageType"] == "OnDemand"
