"""Deterministic GCE names, requestIds and labels (standard library only).

- Instance names are valid GCE names (``[a-z]([-a-z0-9]{0,61}[a-z0-9])?``): ``bst-<cluster>-<hash>-<i>``,
  the hash derived from cluster + request id, so a retry targets the same instances.
- A requestId per insert/delete is a UUID derived from the request id (GCE wants a UUID).
- Label keys and values are lowercased and cut to GCE's label alphabet and 63 characters; the
  launch's own labels also go, exact, into the metadata item ``burster-owners`` (JSON), which is
  what a controller adopting the instance reads back (``instances.owners_of``).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime

MANAGED_BY = "managed-by"
CLUSTER = "burster-cluster"
REQUEST_ID = "burster-request-id"
OWNERS = "burster-owners"  # metadata key (GCE: [a-zA-Z0-9-_], under 128 bytes) of the launch's exact labels
_NS = uuid.UUID("6b0f5d3e-2a52-4c1e-9d55-4a3e1f0b9c21")  # Burster's uuid5 namespace for requestIds
_HASH_LEN = 16


def _slug(text: str, limit: int) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return slug[:limit].rstrip("-")


def name_prefix(cluster: str) -> str:
    """``bst-<cluster>``, the cluster cut so a full name stays within 63 characters."""
    return f"bst-{_slug(cluster, 36) or 'x'}"


def instance_name(cluster: str, request_id: str, index: int) -> str:
    digest = hashlib.sha256(f"{cluster}|{request_id}".encode()).hexdigest()[:_HASH_LEN]
    return f"{name_prefix(cluster)}-{digest}-{index}"


def is_cluster_instance(cluster: str, name: str) -> bool:
    """Whether ``name`` has the shape of an instance this cluster's adapter creates."""
    return re.fullmatch(rf"{re.escape(name_prefix(cluster))}-[0-9a-f]{{{_HASH_LEN}}}-\d+", name) is not None


def gce_request_id(request_id: str, *parts: object) -> str:
    """A UUID for GCE's ``requestId``: the same inputs give the same UUID, so GCE de-duplicates."""
    return str(uuid.uuid5(_NS, "|".join([request_id, *map(str, parts)])))


def label_key(key: str) -> str:
    key = re.sub(r"[^a-z0-9_-]+", "_", key.lower())[:63]
    return key if key[:1].isalpha() else f"k{key}"[:63]


def label_value(value: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "_", str(value).lower())[:63]


def labels_for(cluster: str, request_id: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    """The user's labels (team, project, sprint) plus the managed-by, cluster and request-id labels."""
    out = {label_key(k): label_value(v) for k, v in (extra or {}).items()}
    out.update({MANAGED_BY: "burster", CLUSTER: label_value(cluster), REQUEST_ID: label_value(request_id)})
    return out


def list_filter(cluster: str) -> str:
    return f'(labels.{MANAGED_BY} = "burster") AND (labels.{CLUSTER} = "{label_value(cluster)}")'


def last_segment(url: str) -> str:
    """``.../zones/us-central1-a/machineTypes/a2-highgpu-1g`` -> ``a2-highgpu-1g``."""
    return url.rstrip("/").rsplit("/", 1)[-1]


def parse_time(text: str, default: datetime) -> datetime:
    """An RFC 3339 timestamp (``2024-06-26T11:42:22.006-07:00``) as aware UTC; ``default`` if empty."""
    if not text:
        return default
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return default
