"""The chaos test of tests/test_reconcile_chaos.py with the state kept in SQL: each restart closes
the store and opens it again, so whatever a restarted controller must not forget has to be in the
database. SQLite in a temporary file, and PostgreSQL."""

from __future__ import annotations

import shutil
import tempfile
import uuid

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from burster.sqlstate import SqlState
from burster.state import MemoryState
from tests.test_reconcile_chaos import EXAMPLES, ChaosMachine


class SqlChaosMachine(ChaosMachine):
    """The same, the state kept in SQL: each restart closes the store and opens it again. SQLite in
    a temporary file, or the database at ``shared_url`` (a cluster of its own per example)."""

    shared_url = ""

    def _open_state(self) -> MemoryState:
        if not hasattr(self, "url"):
            self.dir = tempfile.mkdtemp(prefix="burster-chaos-")
            self.url = self.shared_url or f"sqlite:///{self.dir}/state.db"
            self.cluster = f"chaos-{uuid.uuid4().hex[:12]}"
        else:
            assert isinstance(self.state, SqlState)
            self.state.close()
        return SqlState.open(self.url, self.cluster)

    def teardown(self) -> None:
        try:
            super().teardown()
            assert SqlState.read(self.url, self.cluster).ledger == self.state.ledger
        finally:
            self.state.close()
            shutil.rmtree(self.dir, ignore_errors=True)


SQL_SETTINGS = settings(max_examples=max(10, EXAMPLES // 10), stateful_step_count=30, deadline=None,
                        suppress_health_check=[HealthCheck.too_slow])
TestReconcileChaosOnSqlite = SqlChaosMachine.TestCase
TestReconcileChaosOnSqlite.settings = SQL_SETTINGS


def test_reconcile_chaos_on_postgresql(postgres_url: str) -> None:
    class OnPostgres(SqlChaosMachine):
        shared_url = postgres_url

    run_state_machine_as_test(OnPostgres, settings=SQL_SETTINGS)
