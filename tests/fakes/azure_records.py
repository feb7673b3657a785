"""``Microsoft.Compute/sshPublicKeys`` for the ARM fake (the Azure adapter's launch records).

Shapes follow the SSH Public Keys REST reference: Create is a synchronous PUT answering 200 (an
existing key, replaced) or 201 (new) with the resource; Get answers 404 ResourceNotFound for a
missing one; List By Resource Group is ``{"value", "nextLink"}``; Delete answers 200, or 204 when
there was nothing to delete. ``properties.publicKey`` is optional at creation ("If this property is not
initially provided when the resource is created, the publicKey property will be populated when
generateKeyPair is called", azure-mgmt-compute's SshPublicKeyResourceProperties). A PUT answers
the next of ``arm.record_faults`` instead, when one is set (``FakeArm.fail_record_writes``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from tests.fakes.azure_validate import error, json_body, validate_tags

PATH = re.compile(r"^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/"
                  r"sshPublicKeys(?:/([^/]+))?$", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
Reply = tuple[int, dict[str, str], Any]


def handle(arm: Any, method: str, group: str, name: str | None, query: Mapping[str, str], raw: bytes) -> Reply:
    """One request to ``.../sshPublicKeys[/{name}]`` of resource group ``group`` (known to exist)."""
    action = {"PUT": "write", "DELETE": "delete", "GET": "read"}.get(method, "")
    if f"Microsoft.Compute/sshPublicKeys/{action}" in arm.denied:
        return 403, {}, error("AuthorizationFailed", "The client 'burster-test' does not have authorization "
                              f"to perform action 'Microsoft.Compute/sshPublicKeys/{action}'.")
    keys = arm.keys.setdefault(group.lower(), {})
    if name is None:
        return _list(arm, group, keys, query) if method == "GET" else (405, {}, None)
    if method == "GET":
        if name.lower() not in keys:
            return 404, {}, error("ResourceNotFound", f"The Resource 'Microsoft.Compute/sshPublicKeys/{name}' "
                                  f"under resource group '{group}' was not found.")
        return 200, {}, copy.deepcopy(keys[name.lower()])
    if method == "DELETE":
        return (200 if keys.pop(name.lower(), None) is not None else 204), {}, None
    if method != "PUT":
        return 405, {}, None
    fault = arm.record_faults.pop(0) if arm.record_faults else None
    if fault is not None:
        return fault[0], {}, fault[1]
    body = json_body(raw)
    if body is None:
        return 400, {}, error("InvalidRequestContent", "The request content was invalid and could not be "
                              "deserialized.")
    if not body.get("location"):
        return 400, {}, error("LocationRequired", "The location property is required for this definition.")
    if not _NAME.match(name):
        return 400, {}, error("InvalidParameter", f"The SSH public key name '{name}' is invalid.")
    invalid = validate_tags(body.get("tags") or {})
    if invalid:
        return 400, {}, invalid
    new = name.lower() not in keys
    keys[name.lower()] = {
        "id": f"/subscriptions/{arm.subscription}/resourceGroups/{group}/providers/Microsoft.Compute/"
              f"sshPublicKeys/{name}",
        "name": name, "type": "Microsoft.Compute/sshPublicKeys", "location": body["location"],
        "tags": dict(body.get("tags") or {}), "properties": dict(body.get("properties") or {}),
    }
    return (201 if new else 200), {}, copy.deepcopy(keys[name.lower()])


def _list(arm: Any, group: str, keys: dict[str, Any], query: Mapping[str, str]) -> Reply:
    values = list(keys.values())
    start = int(query.get("$skiptoken", "0") or 0)
    page: dict[str, Any] = {"value": copy.deepcopy(values[start:start + arm.page_size])}
    if start + arm.page_size < len(values):
        page["nextLink"] = (f"{arm.url}/subscriptions/{arm.subscription}/resourceGroups/{group}/providers/"
                            f"Microsoft.Compute/sshPublicKeys?api-version={query['api-version']}"
                            f"&$skiptoken={start + arm.page_size}")
    return 200, {}, page
