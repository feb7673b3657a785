"""The 400 answers Compute gives for the insert bodies and list filters an adapter can get wrong, for
the Compute fake in gcp_compute.py: resource names, machine types, labels, scheduling, and the subset
of the list ``filter`` syntax the adapter uses."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.gcp_errors import ApiError

MACHINE_TYPES = frozenset(
    [f"a2-highgpu-{n}g" for n in (1, 2, 4, 8)] + ["a2-megagpu-16g"]
    + [f"a2-ultragpu-{n}g" for n in (1, 2, 4, 8)] + [f"a3-highgpu-{n}g" for n in (1, 2, 4, 8)]
    + ["a3-megagpu-8g", "a3-ultragpu-8g", "n1-standard-4", "e2-medium"])
NAME_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
LABEL_KEY_RE = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
LABEL_VALUE_RE = re.compile(r"^[a-z0-9_-]{0,63}$")
METADATA_KEY_RE = re.compile(r"^[a-zA-Z0-9_-]{1,127}$")  # "[a-zA-Z0-9-_]+, less than 128 bytes" (Items.key)
METADATA_VALUE_BYTES = 262144  # "less than or equal to 262144 bytes (256 KiB)" (Items.value)
_TERM = re.compile(r'\(?\s*([A-Za-z][\w.-]*)\s*(!=|=|:|\beq\b|\bne\b)\s*("(?:[^"]*)"|[^\s)]+)\s*\)?')


def validate_insert(zone: str, body: dict[str, Any]) -> str:
    """The machine type of a valid instances.insert body; ApiError 400 for an invalid one."""
    name = body.get("name", "")
    if not NAME_RE.match(name):
        raise ApiError(400, f"Invalid value for field 'resource.name': '{name}'. Must be a match of "
                       "regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?|[1-9][0-9]{0,19})'", "invalid")
    mt = str(body.get("machineType", "")).rsplit("/", 1)[-1]
    if mt not in MACHINE_TYPES:
        raise ApiError(400, f"Invalid value for field 'resource.machineType': "
                       f"'{body.get('machineType')}'. Machine type with name '{mt}' does not exist "
                       f"in zone '{zone}'.", "invalid")
    labels = body.get("labels") or {}
    bad = [k for k, v in labels.items() if not LABEL_KEY_RE.match(k) or not LABEL_VALUE_RE.match(v)]
    if bad or len(labels) > 64:
        raise ApiError(400, f"Invalid value for field 'resource.labels': '{bad}'. Label keys and "
                       "values can only contain lowercase letters, numeric characters, underscores "
                       "and dashes.", "invalid")
    for i, item in enumerate((body.get("metadata") or {}).get("items") or []):
        key, value = str(item.get("key", "")), str(item.get("value", ""))
        if not METADATA_KEY_RE.match(key):
            raise ApiError(400, f"Invalid value for field 'resource.metadata.items[{i}].key': '{key}'. Must be "
                           "a match of regex '[a-zA-Z0-9-_]{1,128}'", "invalid")
        if len(value.encode()) > METADATA_VALUE_BYTES:
            raise ApiError(400, f"Invalid value for field 'resource.metadata.items[{i}].value': the value of "
                           f"metadata key '{key}' is over {METADATA_VALUE_BYTES} bytes", "invalid")
    sched = body.get("scheduling") or {}
    if mt.split("-")[0] in ("a2", "a3") and sched.get("onHostMaintenance") != "TERMINATE":
        raise ApiError(400, "Instances with guest accelerators do not support live migration.",
                       "badRequest")
    if sched.get("provisioningModel") == "SPOT" and sched.get("automaticRestart", True):
        raise ApiError(400, "Invalid value for field 'resource.scheduling.automaticRestart': 'true'. "
                       "Spot VMs cannot have automatic restart set to true.", "invalid")
    return mt


def matches(resource: dict[str, Any], flt: str) -> bool:
    """The subset of the list ``filter`` syntax the adapter uses: terms joined by AND."""
    for term in [t for t in re.split(r"\s+AND\s+", flt.strip()) if t]:
        m = _TERM.fullmatch(term.strip())
        if m is None:
            raise ApiError(400, f"Invalid value for field 'filter': '{flt}'. Invalid list filter "
                           "expression.", "invalid")
        path, op, value = m.group(1), m.group(2), m.group(3).strip('"')
        got: Any = resource
        for key in path.split("."):
            got = got.get(key) if isinstance(got, dict) else None
        got = "" if got is None else str(got).lower() if isinstance(got, bool) else str(got)
        ok = (value in got) if op == ":" and value != "*" else bool(got) if op == ":" else got == value
        if (op in ("!=", "ne")) == ok:
            return False
    return True
