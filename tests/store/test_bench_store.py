"""``python -m bench.store``: its record, what it leaves in a shared database, and a bad URL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

from bench.store import measure
from burster.sqlschema import STATE_TABLES

ROOT = Path(__file__).resolve().parents[2]


def test_a_size_is_written_reopened_whole_and_cleared_away(store_url: str) -> None:
    record = measure(store_url, 300)  # (it checks the reopened ledger and spend against what was written)
    assert record["nodes"] == record["loaded"] == 300  # (300 nodes are 7 hours: all within the history)
    assert record["write_s"] > 0 and record["open_s"] > 0 and record["peak_mib"] > 0
    engine = sa.create_engine(store_url)
    with engine.connect() as conn:
        left = {t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar() for t in STATE_TABLES}
    engine.dispose()
    assert set(left.values()) == {0}, left


def test_a_url_that_is_no_database_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, "-m", "bench.store", "--quick", "--url", "nonsense://x"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and "--url: store.url 'nonsense://x' is not a database URL" in done.stderr
