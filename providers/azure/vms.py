"""Pure helpers for Azure VMs: deterministic names, tags, the ARM request body, and state mapping.

Everything here works on the ARM wire JSON (``{"name", "location", "tags", "properties": {...}}``),
so it can be tested against the documented examples without the SDK.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from burster.lifecycle import NodeState
from burster.model import Market, Offering
from providers.azure.errors import BadAnswer

MANAGED_BY = "managed-by"
CLUSTER_TAG = "burster-cluster"
REQUEST_TAG = "burster-request-id"
MANAGED_BY_VALUE = "burster"

# The compute-managed NIC (networkInterfaceConfigurations) needs networkApiVersion 2020-11-01 or later.
NETWORK_API_VERSION = "2020-11-01"
# Data-science image with NVIDIA drivers, used when clouds.azure.image_reference is empty.
DEFAULT_IMAGE = {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"}
IMAGE_KEYS = frozenset({"publisher", "offer", "sku", "version", "id", "sharedGalleryImageId",
                        "communityGalleryImageId"})
ADMIN_USERNAME = "burster"
MAX_CUSTOM_DATA_B64 = 87_380  # "Custom data in OSProfile must be in Base64 encoding and ... 87380 characters"
_TAG_FORBIDDEN = re.compile(r"[<>%&\\?/*:+]")

# provisioningState -> cloud-level lifecycle state (Azure has no "Running" here: power state is separate).
_STATES = {
    "creating": NodeState.LAUNCHING,
    "updating": NodeState.READY,
    "migrating": NodeState.READY,
    "succeeded": NodeState.READY,
    "deleting": NodeState.TERMINATING,
    "failed": NodeState.FAILED,
    "canceled": NodeState.FAILED,
}


def _slug(text: str, limit: int) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return slug[:limit].strip("-") or "x"


def vm_name(cluster: str, request_id: str, index: int) -> str:
    """Deterministic VM (and Linux computer) name: <cluster>-<hash(cluster, request id)>-<index>.

    At most 42 characters of letters, digits and hyphens: valid for both the ARM name (<= 64) and
    the Linux hostname (<= 64), never all digits, never ending in a hyphen.
    """
    return f"{launch_name(cluster, request_id)}-{index}"


def launch_name(cluster: str, request_id: str) -> str:
    """<cluster>-<hash(cluster, request id)>: the VM names of one launch less their index (and the
    name of its launch record, ``records.py``)."""
    digest = hashlib.sha256(f"{cluster}|{request_id}".encode()).hexdigest()[:16]
    return f"{name_prefix(cluster)}{digest}"


def name_prefix(cluster: str) -> str:
    """What every VM name of ``cluster`` starts with."""
    return f"{_slug(cluster, 20)}-"


def vm_tags(cluster: str, request_id: str, labels: Mapping[str, str]) -> dict[str, str]:
    """The tags every Burster VM carries; label keys Azure forbids in tag names are rewritten."""
    tags = {_TAG_FORBIDDEN.sub("-", k)[:512]: str(v)[:256] for k, v in labels.items()}
    tags.update({MANAGED_BY: MANAGED_BY_VALUE, CLUSTER_TAG: cluster, REQUEST_TAG: request_id})
    return tags


def is_ours(vm: Mapping[str, Any], cluster: str) -> bool:
    tags = vm.get("tags") or {}
    return tags.get(MANAGED_BY) == MANAGED_BY_VALUE and tags.get(CLUSTER_TAG) == cluster


def encode_custom_data(user_data: str) -> str:
    """Base64 for ``osProfile.customData`` (cloud-init reads it on first boot)."""
    return base64.b64encode(user_data.encode()).decode()


def image_reference(configured: Mapping[str, str]) -> dict[str, str]:
    return dict(configured) if configured else dict(DEFAULT_IMAGE)


def vm_body(
    offering: Offering,
    *,
    name: str,
    tags: Mapping[str, str],
    subnet_id: str,
    image: Mapping[str, str],
    ssh_public_key: str,
    custom_data_b64: str,
    spot_max_price_usd: float = -1.0,
) -> dict[str, Any]:
    """The PUT body for one VM (api-version 2020-11-01+), NIC managed by Compute itself.

    No managed identity is attached: nodes must not carry the controller's identity.
    """
    props: dict[str, Any] = {
        "hardwareProfile": {"vmSize": offering.instance_type},
        "storageProfile": {
            "imageReference": dict(image),
            "osDisk": {"createOption": "FromImage", "deleteOption": "Delete",
                       "managedDisk": {"storageAccountType": "Premium_LRS"}},
        },
        "osProfile": {
            "computerName": name,
            "adminUsername": ADMIN_USERNAME,
            "customData": custom_data_b64,
            "linuxConfiguration": {
                "disablePasswordAuthentication": True,
                "ssh": {"publicKeys": [{"path": f"/home/{ADMIN_USERNAME}/.ssh/authorized_keys",
                                        "keyData": ssh_public_key}]},
            },
        },
        "networkProfile": {
            "networkApiVersion": NETWORK_API_VERSION,
            "networkInterfaceConfigurations": [{
                "name": f"{name}-nic",
                "properties": {
                    "primary": True,
                    "deleteOption": "Delete",
                    "ipConfigurations": [{"name": "ipconfig1",
                                          "properties": {"primary": True, "subnet": {"id": subnet_id}}}],
                },
            }],
        },
        "priority": "Regular",
    }
    if offering.market is Market.SPOT:
        props["priority"] = "Spot"
        props["evictionPolicy"] = "Delete"
        props["billingProfile"] = {"maxPrice": spot_max_price_usd}
    return {"location": offering.region, "tags": dict(tags), "properties": props}


def state_of(vm: Mapping[str, Any]) -> NodeState:
    state = str((vm.get("properties") or {}).get("provisioningState") or "").lower()
    return _STATES.get(state, NodeState.LAUNCHING)


def market_of(vm: Mapping[str, Any]) -> Market:
    priority = str((vm.get("properties") or {}).get("priority") or "Regular")
    return Market.SPOT if priority.lower() in ("spot", "low") else Market.ON_DEMAND


def vm_size_of(vm: Mapping[str, Any]) -> str:
    return str(((vm.get("properties") or {}).get("hardwareProfile") or {}).get("vmSize") or "")


def created_at(vm: Mapping[str, Any]) -> datetime | None:
    raw = (vm.get("properties") or {}).get("timeCreated")
    if not raw:
        return None
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        return None


def wire(res: Any) -> dict[str, Any]:
    """An SDK model (a mapping over the wire JSON: a VM, an instance view, a record) as a plain dict;
    BadAnswer when it is not shaped like an ARM resource (its tags and properties objects)."""
    out = res.as_dict() if hasattr(res, "as_dict") else res
    if not isinstance(out, Mapping) or any(not isinstance(out.get(k) or {}, Mapping) for k in ("tags", "properties")):
        raise BadAnswer(f"not an ARM resource but {type(out).__name__}")
    return dict(out)
