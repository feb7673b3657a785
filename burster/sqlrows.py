"""How the controller's state values are rows of the store's tables (burster/sqlschema.py), both ways."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import RowMapping, Table

from burster.lifecycle import NodeState
from burster.model import Offering
from burster.sqlschema import (
    blocks,
    failed_requests,
    intents,
    launch_json,
    notices,
    offering_json,
    tickets,
    watched_ends,
)
from burster.state import LedgerEntry, MemoryState, NodeRecord

# the small keyed tables: (table, key column, the other columns of a value)
KEYED: dict[str, tuple[Table, Any, Any]] = {
    "intents": (intents, intents.c.request_id, lambda v: {"launch": json.dumps(launch_json(v[0])),
                                                          "sent_at": v[1]}),
    "tickets": (tickets, tickets.c.node_id, lambda t: {"job_id": t.job_id, "deadline": t.deadline, "done": t.done,
                                                       "saved_s": t.saved_s}),
    "blocks": (blocks, blocks.c.offering_key, lambda v: {"blocked_until": v[0], "strikes": v[1]}),
    "failed": (failed_requests, failed_requests.c.request_id, lambda tries: {"tries": tries}),
    "notices": (notices, notices.c.node_id, lambda n: {"provider": n.provider, "kind": n.kind,
                                                       "notice_at": n.notice_at, "terminate_at": n.terminate_at}),
    "watched": (watched_ends, watched_ends.c.node_id, lambda w: {"ended_at": w.ended_at, "unseen": w.unseen,
                                                                 "running": w.running}),
}


def keyed_values(state: MemoryState) -> dict[str, dict[str, Any]]:
    """The values of each small keyed table (``KEYED``'s names) as ``state`` holds them now: an
    intent with when its call was first sent, an offering's block with its strikes."""
    keys = sorted(set(state.blocked) | set(state.block_strikes))
    return {"intents": {rid: (a, state.sent.get(rid)) for rid, a in state.intents.items()},
            "tickets": dict(state.tickets),
            "blocks": {k: (state.blocked.get(k), state.block_strikes.get(k)) for k in keys},
            "failed": dict(state.failed_requests), "notices": dict(state.notices), "watched": dict(state.watched)}


LEDGER_FIELDS = ("node_id", "provider", "market", "instance_type", "region", "team", "project", "sprint",
                 "reason", "start", "end", "billed_s", "usd")


def ledger_row(cluster: str, seq: int, e: LedgerEntry) -> dict[str, Any]:
    return {"cluster": cluster, "seq": seq, **{c: getattr(e, c) for c in LEDGER_FIELDS}}


def ledger_entry_of(r: RowMapping) -> LedgerEntry:
    return LedgerEntry(**{c: r[c] for c in LEDGER_FIELDS})


def node_row(cluster: str, seq: int, rec: NodeRecord, live: bool) -> dict[str, Any]:
    return {
        "cluster": cluster, "node_id": rec.node_id, "seq": seq,
        "provider": rec.provider, "request_id": rec.request_id, "offering": json.dumps(offering_json(rec.offering)),
        "launched_at": rec.launched_at, "state": rec.state.value, "for_job": rec.for_job, "team": rec.team,
        "project": rec.project, "sprint": rec.sprint, "reason": rec.reason, "idle_since": rec.idle_since,
        "ended_at": rec.ended_at, "exclusive": rec.exclusive, "live": live, "charged_from": rec.charged_from,
    }


def record_of(r: RowMapping, offering: Offering) -> NodeRecord:
    """A node record from its row (``offering``: the row's, parsed once and shared)."""
    return NodeRecord(
        node_id=r["node_id"], provider=r["provider"], offering=offering,
        request_id=r["request_id"], launched_at=r["launched_at"], state=NodeState(r["state"]),
        for_job=r["for_job"], team=r["team"], project=r["project"], sprint=r["sprint"],
        reason=r["reason"], idle_since=r["idle_since"], ended_at=r["ended_at"], exclusive=r["exclusive"],
        charged_from=r["charged_from"])
