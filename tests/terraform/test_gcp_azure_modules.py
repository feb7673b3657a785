"""Least-privilege and hardening facts of terraform/modules/gcp and terraform/modules/azure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.terraform.hcl import TERRAFORM, as_list, module

MODULES = TERRAFORM / "modules"


@pytest.fixture(scope="module")
def gcp() -> Any:
    return module("gcp")


@pytest.fixture(scope="module")
def azure() -> Any:
    return module("azure")


def test_gcp_custom_role_is_least_privilege(gcp: Any) -> None:
    perms = gcp.locals["controller_permissions"]  # + useExternalIp with external_ip (test_tf_audit.py)
    assert all("*" not in p for p in perms)
    assert {"compute.instances.create", "compute.instances.delete", "compute.instances.list",
            "compute.zoneOperations.get", "compute.globalOperations.list", "compute.images.useReadOnly"} <= set(perms)
    # Nothing that manages IAM, networks, templates or other services.
    assert all(p.startswith("compute.") for p in perms)
    forbidden = ("setIamPolicy", "firewalls", "compute.networks.", "instanceTemplates.create",
                 "instanceTemplates.delete")
    assert not [p for p in perms if any(f in p for f in forbidden)]
    member = gcp.resource("google_project_iam_member", "controller")
    assert member["role"] == "${google_project_iam_custom_role.controller.id}"


def test_gcp_controller_may_use_only_the_node_account(gcp: Any) -> None:
    binding = gcp.resource("google_service_account_iam_member", "controller_uses_node")
    assert binding["service_account_id"] == "${google_service_account.node.name}"
    assert binding["role"] == "roles/iam.serviceAccountUser"
    project_roles = [r["role"] for r in gcp.resources["google_project_iam_member"].values()]
    assert not [r for r in project_roles if "serviceAccount" in r or r in ("roles/owner", "roles/editor")]
    node_roles = gcp.variables["node_roles"]["default"]
    assert node_roles == ["roles/logging.logWriter", "roles/monitoring.metricWriter"]


def test_gcp_billing_catalog_api_enabled(gcp: Any) -> None:
    apis = gcp.resource("google_project_service", "apis")
    assert "cloudbilling.googleapis.com" in apis["for_each"]


def test_gcp_template_spot_shielded_private(gcp: Any) -> None:
    tpl = gcp.resource("google_compute_instance_template", "gpu")
    sched = as_list(tpl["scheduling"])[0]
    assert sched["provisioning_model"] == '${each.value.spot ? "SPOT" : "STANDARD"}'
    assert sched["instance_termination_action"] == '${each.value.spot ? "DELETE" : null}'
    assert sched["on_host_maintenance"] == "TERMINATE"  # required for GPUs
    assert "spot" in gcp.variables["gpu_classes"]["type"]
    shielded = as_list(tpl["shielded_instance_config"])[0]
    assert shielded["enable_vtpm"] is True and shielded["enable_integrity_monitoring"] is True
    assert shielded["enable_secure_boot"] == "${var.enable_secure_boot}"
    assert gcp.variables["enable_secure_boot"]["default"] is True
    nic = as_list(tpl["network_interface"])[0]
    assert "access_config" not in nic  # only the dynamic block, off unless external_ip
    assert as_list(nic["dynamic"])[0]["access_config"]["for_each"] == "${var.external_ip ? [1] : []}"
    assert gcp.variables["external_ip"]["default"] is False
    assert tpl["can_ip_forward"] is False
    assert as_list(tpl["service_account"])[0]["email"] == "${google_service_account.node.email}"
    assert tpl["metadata"]["block-project-ssh-keys"] == "true"
    assert gcp.locals["managed_labels"] == {"managed-by": "burster", "burster-cluster": "${var.cluster}"}


def test_gcp_firewall_targets_node_account(gcp: Any) -> None:
    for rule in gcp.resources["google_compute_firewall"].values():
        assert rule["direction"] == "INGRESS"
        assert rule["target_service_accounts"] == ["${google_service_account.node.email}"]
        assert "0.0.0.0/0" not in str(rule)
    assert gcp.variables["onprem_source_ranges"]["default"] == []


def test_azure_custom_role_limited_to_vms_in_group(azure: Any) -> None:
    role = azure.resource("azurerm_role_definition", "controller")
    actions = as_list(role["permissions"])[0]["actions"]
    assert all("*" not in a for a in actions)
    assert {"Microsoft.Compute/virtualMachines/read", "Microsoft.Compute/virtualMachines/write",
            "Microsoft.Compute/virtualMachines/delete"} <= set(actions)
    assert "Microsoft.Compute/locations/operations/read" in actions  # long-running operation polling
    allowed = ("Microsoft.Compute/virtualMachines/", "Microsoft.Compute/disks/", "Microsoft.Compute/sshPublicKeys/",
               "Microsoft.Compute/locations/operations/",
               "Microsoft.Network/networkInterfaces/", "Microsoft.Network/virtualNetworks/subnets/")
    assert all(a.startswith(allowed) for a in actions)
    assert not [a for a in actions if "roleAssignments" in a or "Authorization" in a]
    assert role["scope"] == "${azurerm_resource_group.burster.id}"
    assert role["assignable_scopes"] == ["${azurerm_resource_group.burster.id}"]
    assignment = azure.resource("azurerm_role_assignment", "controller")
    assert assignment["scope"] == "${azurerm_resource_group.burster.id}"
    assert assignment["principal_id"] == "${azurerm_user_assigned_identity.controller.principal_id}"
    assert len(azure.resources["azurerm_role_assignment"]) == 1


def test_azure_network_and_image(azure: Any) -> None:
    assoc = azure.resource("azurerm_subnet_network_security_group_association", "nodes")
    assert assoc["network_security_group_id"] == "${azurerm_network_security_group.nodes.id}"
    rule = azure.resource("azurerm_network_security_rule", "onprem")
    assert rule["source_address_prefixes"] == "${var.onprem_source_ranges}"
    assert "public_ip_address_id" not in str(azure.resources.get("azurerm_network_interface", {}))
    image = azure.variables["image_reference"]["default"]
    assert set(image) == {"publisher", "offer", "sku", "version"}
    assert azure.locals["managed_tags"] == {"managed-by": "burster", "burster-cluster": "${var.cluster}"}


@pytest.mark.parametrize(("module", "names"), [
    ("gcp", "[local.controller_account_id, local.node_account_id, local.role_id]"),
    ("aws", "[local.name_base]"),
])
@pytest.mark.parametrize("cluster", ["ml", "ml-research-east-prod", "a" * 63])
def test_names_built_on_the_cluster_fit_the_clouds_limits(tmp_path: Path, module: str, names: str,
                                                          cluster: str) -> None:
    """The modules' name locals, evaluated by terraform itself: a long cluster name (up to the 63
    characters the variable allows) is cut and hashed, so GCP's two service accounts never share an
    ID (they did from 21 characters: apply failed with 409) and every name stays within its limit."""
    import re
    import shutil
    import subprocess

    terraform = shutil.which("terraform")
    if terraform is None:
        pytest.skip("terraform is not installed")
    block = re.search(r"^locals \{.*?^\}", (MODULES / module / "iam.tf").read_text(), flags=re.S | re.M)
    assert block is not None
    text = block.group(0)
    names_only = re.findall(r"^\s*(?:name_full|name_base|role_full|role_id|account_full|account_base|"
                            r"controller_account_id|node_account_id)\s*=.*$", text, flags=re.M)
    (tmp_path / "main.tf").write_text('variable "cluster" {}\nvariable "name_prefix" { default = "burster" }\n'
                                      "locals {\n" + "\n".join(names_only) + "\n}\n")
    done = subprocess.run([terraform, "console", f"-var=cluster={cluster}"], input=f"jsonencode({names})",
                          cwd=tmp_path, capture_output=True, text=True, env={"TF_CLI_CONFIG_FILE": "/dev/null",
                                                                              "PATH": "/usr/bin:/bin"}, check=True)
    got = json.loads(json.loads(done.stdout.strip()))
    if module == "gcp":
        ctl, node, role = got
        assert ctl != node
        assert all(6 <= len(a) <= 30 and re.fullmatch(r"[a-z][a-z0-9-]*[a-z0-9]", a) for a in (ctl, node))
        assert len(role) <= 64 and re.fullmatch(r"[a-zA-Z0-9_.]{3,64}", role)
    else:
        (base,) = got
        assert len(base) <= 30 and len(f"{base}-spot-interruption") <= 64 and len(f"{base}-controller") <= 64
    if len(cluster) <= 20:
        assert cluster in got[0]  # short names stay as they were
