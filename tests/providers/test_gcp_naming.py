"""Properties of the GCP adapter's names, requestIds and labels (pure functions, no server)."""

from __future__ import annotations

import re
import uuid

from hypothesis import given
from hypothesis import strategies as st

from providers.gcp import naming

NAME_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
KEY_RE = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
VALUE_RE = re.compile(r"^[a-z0-9_-]{0,63}$")
clusters = st.from_regex(r"[a-z0-9][a-z0-9-]{0,62}", fullmatch=True)


@given(clusters, st.text(max_size=200), st.integers(0, 9999))
def test_instance_names_are_valid_gce_names_and_recognisably_ours(cluster: str, rid: str, i: int) -> None:
    name = naming.instance_name(cluster, rid, i)
    assert NAME_RE.match(name) and len(name) <= 63
    assert name == naming.instance_name(cluster, rid, i)
    assert naming.is_cluster_instance(cluster, name)


def test_a_cluster_does_not_claim_a_longer_named_clusters_instances() -> None:
    assert not naming.is_cluster_instance("a", naming.instance_name("a-b", "r", 0))
    assert naming.instance_name("c", "r", 0) != naming.instance_name("c", "r", 1)


@given(st.text(max_size=80), st.text(max_size=80))
def test_request_ids_are_stable_uuids(rid: str, part: str) -> None:
    a = naming.gce_request_id(rid, "insert", part)
    assert uuid.UUID(a) and a == naming.gce_request_id(rid, "insert", part)
    assert a != naming.gce_request_id(rid, "delete", part)


@given(clusters, st.text(max_size=100), st.dictionaries(st.text(min_size=1, max_size=80), st.text(max_size=99),
                                                        max_size=5))
def test_labels_are_label_safe(cluster: str, rid: str, extra: dict[str, str]) -> None:
    labels = naming.labels_for(cluster, rid, extra)
    assert labels["managed-by"] == "burster"
    assert all(KEY_RE.match(k) and VALUE_RE.match(v) for k, v in labels.items())
