"""Azure adapter behaviour beyond the shared contract, over the real SDK client and the local ARM fake."""

from __future__ import annotations

import base64
import logging
import re
import subprocess
import sys
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from burster.errors import (
    AuthError,
    CapacityError,
    ConfigError,
    NotFoundError,
    PartialLaunchError,
    QuotaError,
    ThrottledError,
)
from burster.lifecycle import NodeState
from burster.model import Market
from providers.azure import from_config, vms
from providers.azure.factory import default_credential, throwaway_ssh_key
from tests.fakes.azure_arm import SUBSCRIPTION
from tests.fakes.azure_errors import ZONAL_ALLOCATION_FAILED, error, quota_exceeded, sku_not_available
from tests.providers.harness_azure import config, fakes, provider, spot_offering

LABELS = {"team": "vision", "project": "detector", "sprint": "S42"}


def group() -> str:
    return f"rg-{uuid.uuid4().hex[:8]}"


def vm_puts(rg: str) -> int:
    """VM PUTs in ``rg`` (not the launch records' PUTs)."""
    return fakes().arm.count("PUT", f"/{rg}/providers/Microsoft.Compute/virtualMachines/")


def on_demand():
    return replace(spot_offering(), market=Market.ON_DEMAND, price_per_hour_usd=3.673)


def test_spot_vm_is_put_with_priority_eviction_policy_max_price_tags_and_nic() -> None:
    rg = group()
    p = provider(rg, cluster="prod")
    [node] = p.launch(spot_offering(), 1, request_id="req-1", labels=LABELS)
    vm = fakes().arm.vm(rg, node.node_id)
    assert vm is not None
    props = vm["properties"]
    assert props["priority"] == "Spot" and props["evictionPolicy"] == "Delete"
    assert props["billingProfile"] == {"maxPrice": -1.0}
    assert props["hardwareProfile"]["vmSize"] == "Standard_NC24ads_A100_v4"
    net = props["networkProfile"]
    assert net["networkApiVersion"] == "2020-11-01"
    assert net["networkInterfaceConfigurations"][0]["properties"]["ipConfigurations"][0]["properties"][
        "subnet"]["id"].endswith("/subnets/gpu")
    assert props["osProfile"]["computerName"] == node.node_id
    assert "customData" not in props["osProfile"]  # ARM never returns it
    assert fakes().arm.custom_data(rg, node.node_id).startswith("#cloud-config")
    assert vm["tags"] == {"managed-by": "burster", "burster-cluster": "prod", "burster-request-id": "req-1",
                          **LABELS}
    assert node.state is NodeState.READY and node.team == "vision" and node.request_id == "req-1"
    assert node.offering == spot_offering()


def test_on_demand_vm_is_regular_without_spot_fields() -> None:
    rg = group()
    [node] = provider(rg).launch(on_demand(), 1, request_id="od")
    props = fakes().arm.vm(rg, node.node_id)["properties"]  # type: ignore[index]
    assert props["priority"] == "Regular"
    assert "evictionPolicy" not in props and "billingProfile" not in props
    assert node.offering.market is Market.ON_DEMAND


@given(st.from_regex(r"[a-z0-9][a-z0-9-]{0,62}", fullmatch=True), st.text(min_size=1, max_size=80),
       st.integers(0, 9999))
def test_vm_names_are_deterministic_valid_azure_and_linux_names(cluster: str, rid: str, i: int) -> None:
    name = vms.vm_name(cluster, rid, i)
    assert name == vms.vm_name(cluster, rid, i) != vms.vm_name(cluster, rid, i + 1)
    assert len(name) <= 64 and re.fullmatch(r"[a-z0-9][a-z0-9-]*[a-z0-9]", name)
    assert name != vms.vm_name(cluster + "x", rid, i)


def test_retry_puts_nothing_and_after_partial_only_the_missing_vms() -> None:
    rg, arm = group(), fakes().arm
    p, size = provider(rg), spot_offering().instance_type
    first = p.launch(spot_offering(), 2, request_id="same", labels=LABELS)
    puts = vm_puts(rg)
    assert [n.node_id for n in p.launch(spot_offering(), 2, request_id="same")] == [n.node_id for n in first]
    assert vm_puts(rg) == puts
    arm.set_capacity(size, 1)
    try:
        with pytest.raises(PartialLaunchError) as info:
            p.launch(spot_offering(), 3, request_id="gang")
        assert len(info.value.nodes) == 1 and isinstance(info.value.cause, CapacityError)
        assert info.value.offering_key == spot_offering().key
        assert arm.count("DELETE", rg) == 2  # the two VMs whose allocation failed are removed again
        arm.set_capacity(size, None)
        puts = vm_puts(rg)
        again = p.launch(spot_offering(), 3, request_id="gang")
        assert vm_puts(rg) == puts + 2
        assert again[0].node_id == info.value.nodes[0].node_id  # type: ignore[attr-defined]
    finally:
        arm.set_capacity(size, None)


def test_list_pages_and_keeps_only_this_clusters_tagged_vms() -> None:
    rg, arm = group(), fakes().arm
    mine = provider(rg, cluster="blue")
    other = provider(rg, cluster="green")
    ours = mine.launch(spot_offering(), 4, request_id="r")  # the fake pages by 3: nextLink is followed
    theirs = other.launch(spot_offering(), 1, request_id="r")
    with arm.lock:  # a VM someone else made in the same resource group, without our tags
        arm.groups[rg]["hand-made"] = {**arm.groups[rg][theirs[0].node_id], "name": "hand-made", "tags": {}}
    assert {n.node_id for n in mine.list_nodes()} == {n.node_id for n in ours}
    mine.terminate([theirs[0].node_id, "hand-made", "no-such-vm"], request_id="t")
    assert arm.count("DELETE", rg) == 0
    assert {n.node_id for n in other.list_nodes()} == {theirs[0].node_id}


def test_terminate_is_async_then_vm_disappears() -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg)
    a, b = p.launch(on_demand(), 2, request_id="t")
    p.terminate([a.node_id], request_id="t-1")
    p.terminate([a.node_id], request_id="t-1")  # idempotent: already deleting, no second DELETE
    assert arm.count("DELETE", rg) == 1
    states = {n.node_id: n.state for n in p.list_nodes()}
    assert states == {a.node_id: NodeState.TERMINATING, b.node_id: NodeState.READY}
    arm.settle()
    assert [n.node_id for n in p.list_nodes()] == [b.node_id]


def test_evicted_spot_vm_leaves_the_list() -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg)
    [n] = p.launch(spot_offering(), 1, request_id="e")
    arm.evict(rg, n.node_id)
    assert p.list_nodes() == []


@pytest.mark.parametrize(("status", "body", "kind", "words"), [
    (409, sku_not_available("/vm", "eastus", "sub"), CapacityError, "SkuNotAvailable"),
    (409, quota_exceeded("standardNCADSA100v4Family", "eastus", 24, 24, 24), QuotaError, "quota increase"),
    (409, error("OperationNotAllowed", "Operation could not be completed as it results in exceeding "
                "approved LowPriorityCores quota."), QuotaError, "LowPriorityCores"),
    (400, error("InvalidParameter", "Subnet 'x' is not valid."), Exception, "subnet_id"),
])
def test_synchronous_put_errors_map_to_the_error_tree(status: int, body: dict, kind: type,
                                                      words: str) -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg)
    arm.fail_next_put(status, body)
    with pytest.raises(kind) as info:
        p.launch(spot_offering(), 2, request_id="sync")
    assert words in str(info.value)
    assert getattr(info.value, "offering_key", "") == spot_offering().key
    assert vm_puts(rg) == 1  # the second VM is not tried after a definite answer
    assert p.list_nodes() == []


def test_zonal_allocation_failure_in_the_async_operation_is_capacity() -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg)
    arm.fail_next_allocation(error("ZonalAllocationFailed", ZONAL_ALLOCATION_FAILED))
    with pytest.raises(CapacityError, match="ZonalAllocationFailed"):
        p.launch(spot_offering(), 1, request_id="zonal")
    assert p.list_nodes() == []  # the Failed VM was deleted again


def test_throttled_status_polls_resume_without_a_second_put() -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg)
    arm.throttle_polls(2)
    [node] = p.launch(spot_offering(), 1, request_id="poll")
    assert node.state is NodeState.READY
    assert vm_puts(rg) == 1


def test_persistent_throttling_surfaces_as_throttled_error() -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg, attempts=2)
    arm.throttle_next(5, retry_after_s=17)
    try:
        with pytest.raises(ThrottledError, match="wait 17s"):
            p.list_nodes()
    finally:
        arm.throttle_next(0)


def test_slow_provisioning_is_reported_as_launching() -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg, launch_wait_s=0.1, polling_interval_s=0.02)
    arm.op_polls = 10**6
    try:
        [node] = p.launch(spot_offering(), 1, request_id="slow")
        assert node.state is NodeState.LAUNCHING
    finally:
        arm.op_polls = 1
        arm.settle()
    assert [n.state for n in p.list_nodes()] == [NodeState.READY]


def test_refused_token_and_missing_role_are_auth_errors() -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg)
    arm.denied.add("Microsoft.Compute/virtualMachines/write")
    try:
        with pytest.raises(AuthError, match="virtualMachines/write"):
            p.launch(spot_offering(), 1, request_id="denied")
    finally:
        arm.denied.clear()
    arm.tokens.discard("fake-arm-token")
    try:
        with pytest.raises(AuthError, match="InvalidAuthenticationToken"):
            p.list_nodes()
    finally:
        arm.tokens.add("fake-arm-token")


def test_missing_credentials_name_what_default_credential_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
                "AZURE_FEDERATED_TOKEN_FILE", "AZURE_USERNAME", "IDENTITY_ENDPOINT", "MSI_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AZURE_CLIENT_ID", "client-id-value-not-a-secret-but-unshown")
    monkeypatch.setenv("PATH", "/nonexistent")  # no az / pwsh / azd on PATH
    p = provider(group(), credential=None)
    with pytest.raises(AuthError) as info:
        p.list_nodes()
    text = str(info.value)
    for looked_for in ("AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "managed identity", "az login"):
        assert looked_for in text
    assert "Set now: AZURE_CLIENT_ID." in text and "client-id-value" not in text


def test_unknown_location_and_vm_size_list_close_matches() -> None:
    with pytest.raises(ConfigError, match="close matches: eastus"):
        from_config(config("x", location="eastuss"), cluster="c", user_data=lambda o: "")
    p = provider(group())
    typo = replace(spot_offering(), instance_type="Standard_NC24ads_A100_v5")
    with pytest.raises(NotFoundError, match="Standard_NC24ads_A100_v4"):
        p.launch(typo, 1, request_id="typo")


@pytest.mark.parametrize(("changes", "words"), [
    ({"subscription_id": ""}, "subscription_id is empty"),
    ({"resource_group": " "}, "resource_group is empty"),
    ({"subnet_id": "gpu-subnet"}, "subnet_id must look like"),
    ({"base_url": "http://localhost:1"}, "https://"),
    ({"image_reference": {"publisher": "p", "offre": "o"}}, "offre"),
])
def test_bad_settings_fail_with_the_key_and_the_fix(changes: dict, words: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(words)):
        from_config(config("x", **changes), cluster="c", user_data=lambda o: "")


def test_user_data_and_tokens_never_reach_errors_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    secret = "JOIN-TOKEN-s3cr3t-value"
    rg, arm = group(), fakes().arm
    p = provider(rg, user_data=lambda o: f"#cloud-config\nruncmd: [join --token {secret}]\n")
    caplog.set_level(logging.DEBUG)
    arm.set_capacity(spot_offering().instance_type, 1)
    try:
        with pytest.raises(PartialLaunchError) as info:
            p.launch(spot_offering(), 2, request_id="leak")
    finally:
        arm.set_capacity(spot_offering().instance_type, None)
    arm.fail_next_put(409, sku_not_available("/vm", "eastus", "sub"))
    with pytest.raises(CapacityError) as sync:
        p.launch(spot_offering(), 1, request_id="leak-2")
    encoded = base64.b64encode(secret.encode()).decode()[:16]
    for text in (str(info.value), str(info.value.cause), str(sync.value), caplog.text):
        assert secret not in text and encoded not in text and "fake-arm-token" not in text
    assert secret in arm.custom_data(rg, info.value.nodes[0].node_id)  # type: ignore[attr-defined]


def test_sdk_is_imported_lazily_and_throwaway_key_is_openssh() -> None:
    code = ("import sys, providers.azure; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'azure'))")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "[]"
    assert throwaway_ssh_key().startswith("ssh-rsa AAAA")


def test_capacity_error_marks_the_offering_unavailable_for_ten_minutes() -> None:
    rg, arm = group(), fakes().arm
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    p = provider(rg, now=lambda: now[0])
    arm.set_capacity(spot_offering().instance_type, 0)
    try:
        with pytest.raises(CapacityError):
            p.launch(spot_offering(), 1, request_id="cap")
    finally:
        arm.set_capacity(spot_offering().instance_type, None)
    blocked = [o for o in p.offerings() if not o.available]
    assert [o.key for o in blocked] == [spot_offering().key]
    now[0] += timedelta(minutes=11)
    assert all(o.available for o in p.offerings())


def test_controller_signs_in_as_the_configured_identity_and_nodes_get_none(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict] = []
    identity = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.ManagedIdentity/" \
               "userAssignedIdentities/burster-controller"
    monkeypatch.delenv("AZURE_CLIENT_ID", raising=False)
    default_credential(lambda **kw: calls.append(kw), identity)
    default_credential(lambda **kw: calls.append(kw), "")
    monkeypatch.setenv("AZURE_CLIENT_ID", "00000000-0000-0000-0000-000000000001")
    default_credential(lambda **kw: calls.append(kw), identity)  # the environment names the identity
    assert calls == [{"identity_config": {"resource_id": identity}}, {}, {}]
    rg = group()
    [node] = provider(rg).launch(spot_offering(), 1, request_id="id")
    assert "identity" not in fakes().arm.vm(rg, node.node_id)  # type: ignore[operator]


def test_throttled_status_checks_leave_a_healthy_create_launching_not_deleted() -> None:
    """The create's Azure-AsyncOperation reads are throttled past the retries: the create itself
    did not fail, so its VM is reported launching (listed later), not deleted as a failed one."""
    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    p = provider(rg)
    arm.throttle_polls(5)
    try:
        (node,) = p.launch(spot_offering(), 1, request_id="throttled-polls")
    finally:
        arm.throttle_polls(0)
    assert node.state is NodeState.LAUNCHING and arm.count("DELETE", rg) == 0
    arm.settle()
    assert [n.node_id for n in p.list_nodes()] == [node.node_id]


def test_a_launch_waits_at_most_launch_wait_s_for_all_its_vms_together() -> None:
    import time

    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    p = provider(rg, launch_wait_s=0.5, polling_interval_s=0.05)
    arm.op_polls = 10**6  # the creates never finish while it waits
    try:
        t0 = time.monotonic()
        nodes = p.launch(spot_offering(), 4, request_id="slow4")
        took = time.monotonic() - t0
    finally:
        arm.op_polls = 1
        arm.settle()
    assert [n.state for n in nodes] == [NodeState.LAUNCHING] * 4 and took < 1.5  # not 4 x 0.5 s
