"""Benchmark of the state store: writing a history of ended nodes and reopening it.

    python -m bench.store [--quick] [--json] [--url URL]

A controller opening its store loads its cluster's live nodes, and the ended ones and ledger
entries of the last ``sqlstate.HISTORY`` (45 days). Each size adds N nodes at 1,000 a day
(launched, ended an hour later, charged: a node record and a ledger entry each, over the bundled
catalog's offerings), writes them in one commit, and opens the store again. Quick: 2k and 20k
nodes; full adds 100k (100 days: about 45k loaded). Prints {nodes, loaded, write_s, open_s,
peak_mib} per size (a list; ``loaded``: the node records the open kept in memory). ``--url``: a
database to use (each size in a ``bench-*`` cluster of its own, deleted afterwards; default: a
temporary SQLite file).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from burster.catalog import BUNDLED_DIR, load_catalog
from burster.errors import ConfigError, StoreError
from burster.lifecycle import NodeState
from burster.reconcile_nodes import NodeBook
from burster.sqlschema import STATE_TABLES
from burster.sqlstate import SqlState
from burster.state import NodeRecord

SIZES_QUICK = [2_000, 20_000]
SIZES_FULL = [*SIZES_QUICK, 100_000]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def fill(state: SqlState, nodes: int) -> None:
    """``nodes`` nodes launched, ended and charged, 1,000 a day, an hour each."""
    offerings = list(load_catalog(BUNDLED_DIR))
    book = NodeBook(state)
    for i in range(nodes):
        o = offerings[i % len(offerings)]
        start = T0 + timedelta(seconds=86.4 * i)
        state.add_node(NodeRecord(f"n-{i:07d}", o.provider, o, f"req-{i}", start, NodeState.REQUESTED,
                                  for_job=f"job-{i}", team=f"team-{i % 7}", project="p", sprint="S-1",
                                  reason="burst: waited past its budget"))
        for step in (NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY, NodeState.TERMINATING):
            state.move(f"n-{i:07d}", step)
        state.move(f"n-{i:07d}", NodeState.TERMINATED, ended_at=start + timedelta(hours=1))
        for e in book.ledger_entries(f"n-{i:07d}", start + timedelta(hours=1)):
            state.charge(e)


def measure(url: str, nodes: int) -> dict[str, Any]:
    cluster = f"bench-{uuid.uuid4().hex[:8]}"
    state = SqlState.open(url, cluster)
    fill(state, nodes)
    t0 = time.perf_counter()
    state.commit()
    write_s = time.perf_counter() - t0
    spent = state.spent_usd
    state.close()
    t0 = time.perf_counter()
    again = SqlState.open(url, cluster)
    open_s = time.perf_counter() - t0
    loaded = len(again.nodes)
    assert abs(again.spent_usd - spent) < 1e-6 and len(SqlState.read(url, cluster).ledger) == nodes, "lost some"
    again.close()
    tracemalloc.start()  # memory from a second, untimed open (tracing slows Python down)
    SqlState.open(url, cluster).close()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # leave a shared database as it was
        for table in STATE_TABLES:
            conn.execute(sa.delete(table).where(table.c.cluster == cluster))
    engine.dispose()
    return {"nodes": nodes, "loaded": loaded, "write_s": round(write_s, 3), "open_s": round(open_s, 3),
            "peak_mib": round(peak / 2**20, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.store", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the 100k size")
    ap.add_argument("--json", action="store_true", help="print a JSON list of records")
    ap.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    args = ap.parse_args()
    sizes = SIZES_QUICK if args.quick else SIZES_FULL
    with tempfile.TemporaryDirectory(prefix="burster-bench-") as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'state.db'}"
        try:
            records = [measure(url, n) for n in sizes]
        except (ConfigError, StoreError) as err:
            ap.error(f"--url: {err}")
    if args.json:
        print(json.dumps(records))
    else:
        for r in records:
            print(f"{r['nodes']:>7} nodes: write {r['write_s']} s, open {r['open_s']} s with {r['loaded']} "
                  f"loaded (peak {r['peak_mib']} MiB while opening)")


if __name__ == "__main__":
    main()
