"""The 400 answers Compute gives for the VM body mistakes an adapter can make (ARM's InvalidParameter
and friends), and the VM resource it keeps for a valid body, for the ARM fake in azure_arm.py."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from tests.fakes.azure_errors import error, now_iso

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def validate_vm(name: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The 400 InvalidParameter answers Compute gives for the body mistakes an adapter can make."""
    def bad(target: str, message: str) -> dict[str, Any]:
        return {"error": {"code": "InvalidParameter", "message": message, "target": target}}

    if not body.get("location"):
        return error("LocationRequired", "The location property is required for this definition.")
    if not _NAME.match(name) or name.endswith((".", "-")):
        return bad("vmName", f"The VM name '{name}' is invalid.")
    props = body.get("properties") or {}
    if not (props.get("hardwareProfile") or {}).get("vmSize"):
        return bad("hardwareProfile.vmSize", "Required parameter 'hardwareProfile.vmSize' is missing (null).")
    invalid = validate_tags(body.get("tags") or {})
    if invalid:
        return invalid
    priority = props.get("priority", "Regular")
    if priority not in ("Regular", "Low", "Spot"):
        return bad("priority", f"The value '{priority}' of parameter 'priority' is not allowed.")
    if priority == "Regular" and ("evictionPolicy" in props or "billingProfile" in props):
        return bad("evictionPolicy", "Eviction policy and max price can be set only on Azure Spot Virtual "
                   "Machines.")
    if priority == "Spot" and props.get("evictionPolicy") not in ("Deallocate", "Delete"):
        return bad("evictionPolicy", "Azure Spot Virtual Machines need evictionPolicy Deallocate or Delete.")
    network = props.get("networkProfile") or {}
    if network.get("networkInterfaceConfigurations") and not network.get("networkApiVersion"):
        return bad("networkProfile.networkApiVersion", "networkApiVersion is required when "
                   "networkInterfaceConfigurations are given.")
    if not (network.get("networkInterfaces") or network.get("networkInterfaceConfigurations")):
        return bad("networkProfile", "The VM needs at least one network interface.")
    os_profile = props.get("osProfile") or {}
    computer = os_profile.get("computerName", name)
    if len(computer) > 64 or not re.match(r"^[A-Za-z0-9-]+$", computer) or computer.isdigit():
        return bad("osProfile.computerName", "Linux host name cannot exceed 64 characters in length or "
                   "contain the following characters: ` ~ ! @ # $ % ^ & * ( ) = + _ [ ] { } \\ | ; : ' \" , "
                   "< > / ?.")
    custom = os_profile.get("customData")
    if custom is not None:
        try:
            base64.b64decode(custom, validate=True)
            assert len(custom) <= 87380
        except (binascii.Error, ValueError, AssertionError):
            return bad("customData", "Custom data in OSProfile must be in Base64 encoding and with a "
                       "maximum length of 87380 characters.")
    linux = os_profile.get("linuxConfiguration") or {}
    if linux.get("disablePasswordAuthentication") and not (linux.get("ssh") or {}).get("publicKeys"):
        return bad("linuxConfiguration.ssh.publicKeys", "Authentication using either SSH or by user name "
                   "and password must be enabled in Linux profile.")
    return None


def validate_tags(tags: Mapping[str, Any]) -> dict[str, Any] | None:
    """ARM's limits on any resource's tags."""
    if len(tags) > 50 or any(len(k) > 512 or len(str(v)) > 256 for k, v in tags.items()):
        return {"error": {"code": "InvalidParameter", "target": "tags", "message": "A resource can have "
                          "at most 50 tags; tag names are limited to 512 characters and values to 256."}}
    return None


def json_body(raw: bytes) -> dict[str, Any] | None:
    """A request's JSON object body; None when it is not one (ARM: 400 InvalidRequestContent)."""
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def vm_resource(subscription: str, group: str, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The VM resource ARM keeps for a valid PUT body: customData and adminPassword are never returned."""
    props = copy.deepcopy(body["properties"])
    os_profile = props.get("osProfile", {})
    os_profile.pop("customData", None)
    os_profile.pop("adminPassword", None)
    os_profile.setdefault("secrets", [])
    props.update({"vmId": str(uuid.uuid4()), "provisioningState": "Creating", "timeCreated": now_iso()})
    vm: dict[str, Any] = {
        "id": f"/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Compute/"
              f"virtualMachines/{name}",
        "name": name, "type": "Microsoft.Compute/virtualMachines", "location": body["location"],
        "tags": dict(body.get("tags") or {}), "properties": props,
    }
    if "identity" in body:
        vm["identity"] = copy.deepcopy(body["identity"])
    return vm
