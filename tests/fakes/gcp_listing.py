"""The list and aggregatedList envelopes of the Compute fake (gcp_compute.py): ``items``,
``nextPageToken`` paging by ``maxResults``, and the per-scope ``warning`` NO_RESULTS_ON_PAGE."""

from __future__ import annotations

from typing import Any

from tests.fakes.gcp_resources import SELF


def page(items: list[Any], q: dict[str, str]) -> tuple[list[Any], str]:
    """The page of ``items`` that ``pageToken`` and ``maxResults`` ask for, and the next page's token."""
    size = min(int(q.get("maxResults") or 500), 500)
    start = int(q.get("pageToken") or 0)
    token = str(start + size) if start + size < len(items) else ""
    return items[start:start + size], token


def zone_list(project: str, kind: str, zone: str, items: list[dict[str, Any]], token: str) -> dict[str, Any]:
    """A zone's ``compute#{kind}List`` page."""
    return _page(f"compute#{kind}List", f"projects/{project}/zones/{zone}/{kind}s", items, token)


def aggregated_list(project: str, kind: str, zones: set[str], page_items: list[tuple[str, dict[str, Any]]],
                    token: str) -> dict[str, Any]:
    """A ``compute#{kind}AggregatedList`` page of (zone, resource) pairs, every zone a scope."""
    items: dict[str, Any] = {}
    for zone in sorted(zones):
        got = [r for z, r in page_items if z == zone]
        items[f"zones/{zone}"] = {f"{kind}s": got} if got else {"warning": {
            "code": "NO_RESULTS_ON_PAGE",
            "message": f"There are no results for scope 'zones/{zone}' on this page.",
            "data": [{"key": "scope", "value": f"zones/{zone}"}]}}
    return _page(f"compute#{kind}AggregatedList", f"projects/{project}/aggregated/{kind}s", items, token)


def _page(kind: str, path: str, items: Any, token: str) -> dict[str, Any]:
    """A list page: its kind, id and selfLink (both from ``path``), items, and the next page's token if any."""
    out: dict[str, Any] = {"kind": kind, "id": path, "items": items, "selfLink": f"{SELF}/{path}"}
    if token:
        out["nextPageToken"] = token
    return out
