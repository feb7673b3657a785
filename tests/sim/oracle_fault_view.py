"""What a controller could know of its nodes when its clouds' API failed (tests/sim/oracle_faults.py):
the oracle's billing checks hold it to that, not to what the clouds did.

Where a listing failed or a terminate's reply was lost, a node's end reaches the controller late: it
ends the record at the pass that finds the node gone, or at its own terminate of a node its cloud had
taken back unseen, and charges the plain rule to then. That is allowed up to the first listing of the
node's provider that went through after its end, no further. A node made by a launch whose reply was
lost, that no listing went through to show before the stop, is unknown to it. Until a listing goes
through, a pass counts a node gone unseen as still up, and one a lost reply made not at all
(``Snapshot.spend``; the guards count it as in flight).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import replace
from datetime import datetime

from tests.sim.oracle_checks import USD_TOL, node_usd
from tests.sim.oracle_faults import FaultyCloud
from tests.sim.oracle_observe import CloudNode, Observed


def as_knowable(seen: Observed) -> Observed:
    """``seen`` with each node as the controller could know it: its true life, or (where its bill is
    what the ledger charged for it) that life ended at its record's end by the plain rule, when that
    end lies in the window above; nodes unknown to the controller left out (and from the launches)."""
    if not seen.faulty:
        return seen
    charged: dict[str, float] = defaultdict(float)
    entries: dict[str, int] = defaultdict(int)
    for e in seen.sim.reconciler.state.ledger:
        charged[e.node_id] += float(e.usd)
        entries[e.node_id] += 1
    records = seen.sim.reconciler.state.nodes
    nodes: dict[str, CloudNode] = {}
    for node_id, node in seen.nodes.items():
        cloud = seen.faulty[node.offering.provider]
        rec = records.get(node_id)
        if rec is None and node_id in cloud.unanswered and not _listed_after(cloud, node.launched_at):
            continue
        nodes[node_id] = node
        tol = USD_TOL * max(entries[node_id], 1)
        if rec is None or rec.ended_at is None or node.end is None or (
                rec.ended_at == node.end and abs(charged[node_id] - node_usd(node, seen.stop)) <= tol):
            continue
        late = replace(node, end=rec.ended_at, taken_back=False)
        if node.end <= rec.ended_at <= min(_listed_after(cloud, node.end) or seen.stop, seen.stop) \
                and abs(charged[node_id] - node_usd(late, seen.stop)) <= tol:
            nodes[node_id] = late
    summary = seen.summary if "launches" not in seen.summary else {  # (none yet while it runs)
        **seen.summary, "launches": seen.summary["launches"] - (len(seen.nodes) - len(nodes))}
    return replace(seen, nodes=nodes, summary=summary, known_at=lambda n, now: _known_at(seen, n, now))


def _known_at(seen: Observed, node: CloudNode, now: datetime) -> CloudNode | None:
    """``node`` as the pass at ``now`` knew it: still up if its record was live then, at or after its end,
    when no listing of its provider had gone through since that end; None (unknown) if a launch whose
    reply was lost made it and no listing had gone through since."""
    cloud, live = seen.faulty[node.offering.provider], node.node_id in seen.live_seen.get(now, ())
    if not live and node.node_id in cloud.unanswered and node.launched_at <= now:
        shown = _listed_after(cloud, node.launched_at)
        return None if shown is None or shown >= now else node
    if node.end is None or node.end > now or not live:
        return node
    known = _listed_after(cloud, node.end)
    return node if known is not None and known < now else replace(node, end=None, taken_back=False)


def _listed_after(cloud: FaultyCloud, t: datetime) -> datetime | None:
    """The first listing of ``cloud`` that went through after ``t``."""
    i = bisect_right(cloud.listed_at, t)
    return cloud.listed_at[i] if i < len(cloud.listed_at) else None
