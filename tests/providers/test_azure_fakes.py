"""The Azure fakes answer with the documented wire shapes (raw HTTPS, no SDK), and azure-core's TLS rule."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest

from tests.fakes.azure_arm import SUBSCRIPTION, TOKEN
from tests.providers.harness_azure import SSH_KEY, SUBNET, fakes, spot_offering

API = "api-version=2024-07-01"


def call(method: str, url: str, body: Any = None, token: str | None = TOKEN) -> tuple[int, dict, Any]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    context = ssl.create_default_context(cafile=fakes().tls.ca_path)
    try:
        with urllib.request.urlopen(request, context=context) as response:
            raw = response.read()
            return response.status, dict(response.headers), json.loads(raw) if raw else None
    except urllib.error.HTTPError as err:
        raw = err.read()
        return err.code, dict(err.headers), json.loads(raw) if raw else None


def vm_url(group: str, name: str = "") -> str:
    base = (f"{fakes().arm.url}/subscriptions/{SUBSCRIPTION}/resourceGroups/{group}/providers/"
            "Microsoft.Compute/virtualMachines")
    return f"{base}/{name}?{API}" if name else f"{base}?{API}"


def body() -> dict[str, Any]:
    from providers.azure.vms import vm_body

    return vm_body(spot_offering(), name="vm1", tags={"a": "b"}, subnet_id=SUBNET,
                   image={"publisher": "p", "offer": "o", "sku": "s", "version": "latest"},
                   ssh_public_key=SSH_KEY, custom_data_b64="IyE=")


def test_put_is_201_with_async_operation_then_status_resource_then_get() -> None:
    rg = f"rg-{uuid.uuid4().hex[:8]}"
    fakes().arm.add_group(rg)
    status, headers, vm = call("PUT", vm_url(rg, "vm1"), body())
    assert status == 201 and vm["properties"]["provisioningState"] == "Creating"
    assert vm["id"].endswith(f"/resourceGroups/{rg}/providers/Microsoft.Compute/virtualMachines/vm1")
    assert vm["type"] == "Microsoft.Compute/virtualMachines"
    assert "customData" not in vm["properties"]["osProfile"]
    op_url = headers["Azure-AsyncOperation"]
    assert "/providers/Microsoft.Compute/locations/eastus/operations/" in op_url
    status, _, op = call("GET", op_url)
    assert status == 200 and op["status"] == "Succeeded" and {"startTime", "endTime", "name"} <= set(op)
    status, _, again = call("PUT", vm_url(rg, "vm1"), body())
    assert status == 200 and again["properties"]["vmId"] == vm["properties"]["vmId"]
    fakes().arm.settle()
    assert call("GET", vm_url(rg, "vm1"))[2]["properties"]["provisioningState"] == "Succeeded"
    assert [v["name"] for v in call("GET", vm_url(rg))[2]["value"]] == ["vm1"]


def test_delete_is_202_with_location_then_gone_and_204() -> None:
    rg = f"rg-{uuid.uuid4().hex[:8]}"
    fakes().arm.add_group(rg)
    call("PUT", vm_url(rg, "vm1"), body())
    fakes().arm.settle()
    status, headers, payload = call("DELETE", vm_url(rg, "vm1"))
    assert status == 202 and payload is None
    assert {"Location", "Azure-AsyncOperation"} <= set(headers)
    assert call("GET", vm_url(rg, "vm1"))[2]["properties"]["provisioningState"] == "Deleting"
    assert call("GET", headers["Location"])[0] == 200  # one poll finishes it in the fake
    status, _, err = call("GET", vm_url(rg, "vm1"))
    assert status == 404 and err["error"]["code"] == "ResourceNotFound"
    assert call("DELETE", vm_url(rg, "vm1"))[0] == 204


def test_failed_allocation_is_an_async_failure_leaving_a_failed_vm() -> None:
    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    arm.add_group(rg)
    arm.set_capacity(spot_offering().instance_type, 0)
    try:
        status, headers, _ = call("PUT", vm_url(rg, "vm1"), body())
    finally:
        arm.set_capacity(spot_offering().instance_type, None)
    assert status == 201
    op = call("GET", headers["Azure-AsyncOperation"])[2]
    assert op["status"] == "Failed" and op["error"]["code"] == "AllocationFailed"
    assert call("GET", vm_url(rg, "vm1"))[2]["properties"]["provisioningState"] == "Failed"


@pytest.mark.parametrize(("mutate", "status", "code"), [
    (lambda b: b.pop("location"), 400, "LocationRequired"),
    (lambda b: b["properties"]["networkProfile"].pop("networkApiVersion"), 400, "InvalidParameter"),
    (lambda b: b["properties"].pop("evictionPolicy"), 400, "InvalidParameter"),
    (lambda b: b["properties"]["osProfile"].update(customData="not base64!"), 400, "InvalidParameter"),
    (lambda b: b["properties"]["hardwareProfile"].update(vmSize="Standard_Nope"), 400, "InvalidParameter"),
    (lambda b: b.update(location="westus2"), 409, "SkuNotAvailable"),
])
def test_bad_put_bodies_get_arm_error_bodies(mutate: Any, status: int, code: str) -> None:
    rg = f"rg-{uuid.uuid4().hex[:8]}"
    fakes().arm.add_group(rg)
    b = body()
    mutate(b)
    got, _, err = call("PUT", vm_url(rg, "vm1"), b)
    assert (got, err["error"]["code"]) == (status, code) and err["error"]["message"]


def test_auth_api_version_throttling_and_missing_group() -> None:
    arm = fakes().arm
    assert call("GET", vm_url("nope"), token=None)[2]["error"]["code"] == "AuthenticationFailed"
    assert call("GET", vm_url("nope").replace(f"?{API}", ""))[2]["error"]["code"] == \
        "MissingApiVersionParameter"
    assert call("GET", vm_url("nope"))[2]["error"]["code"] == "ResourceGroupNotFound"
    arm.throttle_next(1, retry_after_s=9)
    status, headers, err = call("GET", vm_url("nope"))
    assert status == 429 and headers["Retry-After"] == "9"
    assert err["error"]["code"] == "OperationNotAllowed"
    assert err["error"]["details"][0]["code"] == "TooManyRequests"


def test_azure_core_refuses_bearer_tokens_over_plain_http() -> None:
    from azure.core.exceptions import ServiceRequestError
    from azure.mgmt.compute import ComputeManagementClient

    from tests.providers.harness_azure import StaticToken

    client = ComputeManagementClient(StaticToken(), SUBSCRIPTION, base_url="http://127.0.0.1:9",
                                     retry_total=0)
    with pytest.raises(ServiceRequestError, match="non-TLS"):
        list(client.virtual_machines.list("rg"))
