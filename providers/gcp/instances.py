"""The Instance resource both ways: the insert body we send, and Instance -> Node when we read back
(or, for an instance a replayed insert made and that is gone since, the ended Node it was)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from burster.catalog import gcp_gpu_of
from burster.config import GcpConfig
from burster.lifecycle import NodeState
from burster.model import Market, Node, Offering, node_tags
from providers.gcp.naming import OWNERS, REQUEST_ID, last_segment, parse_time

DEFAULT_IMAGE = "projects/debian-cloud/global/images/family/debian-12"  # without an instance template
BOOT_DISK_GB = "200"
# Hardening that Burster's Terraform templates also set; our metadata replaces the template's.
HARDENING = {"block-project-ssh-keys": "true", "enable-oslogin": "TRUE", "serial-port-enable": "false"}
STATES = {
    "PROVISIONING": NodeState.LAUNCHING, "STAGING": NodeState.LAUNCHING, "PENDING": NodeState.LAUNCHING,
    "RUNNING": NodeState.READY,
    "STOPPING": NodeState.TERMINATING, "SUSPENDING": NodeState.TERMINATING,
    "PENDING_STOP": NodeState.TERMINATING,
    # a stopped (GCE: TERMINATED) or suspended VM still exists and bills its disks (a suspended one its
    # memory too): TERMINATING, so the controller deletes it; a deleted VM is no longer listed
    "SUSPENDED": NodeState.TERMINATING, "TERMINATED": NodeState.TERMINATING,
    "REPAIRING": NodeState.FAILED,  # host failure: the VM is down until GCE repairs it; replace it
}


def template_for(cfg: GcpConfig, offering: Offering) -> str:
    """``clouds.gcp.instance_templates`` by GPU class (e.g. "A100"), then machine type, then "default"."""
    t = cfg.instance_templates
    return t.get(offering.gpu_model) or t.get(offering.instance_type) or t.get("default", "")


def insert_body(cfg: GcpConfig, offering: Offering, name: str, labels: Mapping[str, str], owners: Mapping[str, str],
                user_data: str, *, with_template: bool) -> dict[str, Any]:
    """The REST ``Instance`` body of instances.insert (camelCase, as the API documents it); ``owners``:
    the launch's labels as given, kept exact in metadata (``labels`` are GCE's lowercased cut of them)."""
    spot = offering.market is Market.SPOT
    scheduling: dict[str, Any] = {
        "provisioningModel": "SPOT" if spot else "STANDARD", "preemptible": spot,
        "automaticRestart": not spot, "onHostMaintenance": "TERMINATE",  # GPUs cannot live-migrate
    }
    if spot:
        scheduling["instanceTerminationAction"] = "DELETE"  # a reclaimed VM leaves no billed disk
    items = [{"key": k, "value": v} for k, v in HARDENING.items()] + [{"key": "user-data", "value": user_data}]
    if owners:
        items.append({"key": OWNERS, "value": json.dumps(dict(owners), sort_keys=True)})
    body: dict[str, Any] = {
        "name": name, "machineType": f"zones/{offering.zone}/machineTypes/{offering.instance_type}",
        "labels": dict(labels), "scheduling": scheduling, "metadata": {"items": items},
    }
    if with_template:
        return body
    body["disks"] = [{"boot": True, "autoDelete": True, "initializeParams": {
        "sourceImage": DEFAULT_IMAGE, "diskSizeGb": BOOT_DISK_GB,
        "diskType": f"zones/{offering.zone}/diskTypes/pd-balanced"}}]
    nic: dict[str, Any] = {"network": cfg.network or "global/networks/default"}
    if cfg.subnetwork:
        nic["subnetwork"] = cfg.subnetwork
    body["networkInterfaces"] = [nic]
    if cfg.node_service_account:
        body["serviceAccounts"] = [{"email": cfg.node_service_account,
                                    "scopes": ["https://www.googleapis.com/auth/cloud-platform"]}]
    return body


def market_of(inst: Any) -> Market:
    sched = inst.scheduling
    return Market.SPOT if sched.provisioning_model == "SPOT" or sched.preemptible else Market.ON_DEMAND


def offering_of(inst: Any, catalog: Mapping[tuple[str, str, Market], Offering]) -> Offering:
    """The catalog Offering of an instance's zone/type/market; else one built from it at price 0."""
    zone, itype, market = last_segment(inst.zone), last_segment(inst.machine_type), market_of(inst)
    found = catalog.get((zone, itype, market))
    if found is not None:
        return found
    gpu = gcp_gpu_of(itype)
    if gpu is None:
        accels = list(inst.guest_accelerators)
        gpus = sum(int(a.accelerator_count) for a in accels)
        gpu = (last_segment(accels[0].accelerator_type) if accels else "", gpus)
    # At least 1 GPU: Offering.price_per_gpu_hour_usd divides by it.
    return Offering("gcp", zone.rpartition("-")[0], zone, itype, gpu[0], max(gpu[1], 1), market, 0.0)


def node_of(inst: Any, catalog: Mapping[tuple[str, str, Market], Offering], *, deleting: bool,
            now: datetime) -> Node:
    state = STATES.get(str(inst.status), NodeState.LAUNCHING)
    if deleting and state in (NodeState.LAUNCHING, NodeState.READY):
        state = NodeState.TERMINATING  # delete accepted, status not updated yet
    labels = dict(inst.labels)
    return Node(node_id=inst.name, offering=offering_of(inst, catalog), state=state,
                launched_at=parse_time(inst.creation_timestamp, now),
                request_id=labels.get(REQUEST_ID, ""), **node_tags(owners_of(inst) or labels))


def owners_of(inst: Any) -> dict[str, str] | None:
    """The launch's labels as it gave them (the ``burster-owners`` metadata item: GCE labels lose case,
    characters and length); None where the item is missing or not a JSON object of strings."""
    raw = next((item.value for item in inst.metadata.items if item.key == OWNERS), None)
    try:
        got = json.loads(raw) if raw else None
    except ValueError:
        return None
    ok = isinstance(got, dict) and all(isinstance(v, str) for v in got.values())
    return got if ok else None


def gone_node(name: str, offering: Offering, request_id: str, labels: Mapping[str, str], *,
              launched_at: datetime, ended_at: datetime) -> Node:
    """An instance our insert made that is gone (preempted and deleted, or deleted): TERMINATED."""
    return Node(node_id=name, offering=offering, state=NodeState.TERMINATED, launched_at=launched_at,
                request_id=request_id, ended_at=ended_at, **node_tags(labels))
