"""The Instance and Operation resources the Compute fake (gcp_compute.py) keeps: an instance's body with
its guest accelerators, an operation's body, and how an operation fails (``error.errors[]`` with
``code``/``message``/``errorDetails``, ``httpErrorStatusCode``) and finishes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

SELF = "https://www.googleapis.com/compute/v1"
GPU_TYPES = {"a2-highgpu": "nvidia-tesla-a100", "a2-megagpu": "nvidia-tesla-a100",
             "a2-ultragpu": "nvidia-a100-80gb", "a3-highgpu": "nvidia-h100-80gb",
             "a3-megagpu": "nvidia-h100-mega-80gb", "a3-ultragpu": "nvidia-h200-141gb"}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Op:
    body: dict[str, Any]
    done_at: int  # tick at which it becomes DONE
    on_done: Any = None  # callable run once when DONE
    error: dict[str, Any] | None = None
    http_error: tuple[int, str] | None = None


def instance_resource(project: str, zone: str, name: str, body: dict[str, Any], status: str,
                      instance_id: str) -> dict[str, Any]:
    """The Instance resource for an insert ``body``."""
    mt = str(body.get("machineType", "")).rsplit("/", 1)[-1]
    family, _, size = mt.rpartition("-")
    inst = {**body, "kind": "compute#instance", "id": instance_id,
            "creationTimestamp": now(), "name": name, "status": status,
            "zone": f"{SELF}/projects/{project}/zones/{zone}",
            "machineType": f"{SELF}/projects/{project}/zones/{zone}/machineTypes/{mt}",
            "selfLink": f"{SELF}/projects/{project}/zones/{zone}/instances/{name}",
            "labelFingerprint": "42WmSpB8rSM=", "fingerprint": "j5Xm1T0Q3pQ=",
            "cpuPlatform": "Unknown CPU Platform", "startRestricted": False,
            "deletionProtection": False}
    if family in GPU_TYPES and size.endswith("g"):
        inst["guestAccelerators"] = [{"acceleratorCount": int(size[:-1]), "acceleratorType":
                                      f"{SELF}/projects/{project}/zones/{zone}/acceleratorTypes/"
                                      f"{GPU_TYPES[family]}"}]
    return inst


def operation_body(project: str, zone: str, name: str, op_id: str, op_type: str, target: dict[str, Any], *,
                   done_in: int, request_id: str | None, user: str) -> dict[str, Any]:
    """A new Operation on ``target``: PENDING, or DONE at once when ``done_in`` is 0."""
    at = now()
    base = f"{SELF}/projects/{project}/zones/{zone}"
    body: dict[str, Any] = {
        "kind": "compute#operation", "id": op_id, "name": name, "zone": base,
        "operationType": op_type, "targetLink": f"{base}/instances/{target['name']}",
        "status": "PENDING" if done_in else "DONE", "user": user, "progress": 0 if done_in else 100,
        "insertTime": at, "selfLink": f"{base}/operations/{name}"}
    if "id" in target:
        body["targetId"] = target["id"]
    if done_in == 0:
        body.update(startTime=at, endTime=at)
    if request_id:
        body["clientOperationId"] = request_id
    return body


def fail(op: Op, code: str, message: str, http: int, details: list[dict[str, Any]]) -> None:
    """Make ``op`` end DONE with this error instead of running its ``on_done``."""
    op.error = {"errors": [{"code": code, "message": message, **({"errorDetails": details}
                                                                  if details else {})}]}
    op.http_error = (http, {403: "FORBIDDEN", 503: "SERVICE UNAVAILABLE", 400: "BAD REQUEST"}.get(
        http, "ERROR"))


def finish(op: Op) -> None:
    """DONE, with its error if it failed, else running its ``on_done``; once only."""
    if op.body["status"] == "DONE":
        return
    op.body.update(status="DONE", progress=100, endTime=now())
    op.body.setdefault("startTime", op.body["insertTime"])
    if op.error is not None:
        op.body["error"] = op.error
        op.body["httpErrorStatusCode"], op.body["httpErrorMessage"] = op.http_error or (400, "")
    elif op.on_done is not None:
        op.on_done()
