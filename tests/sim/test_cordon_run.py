"""Over a simulated day of the demo trace with spot notices and moves, only the checkpoints of nodes
that go whatever their job does cordon them (a notice's; the budget stop's, tests/policies/
test_cordon.py); the moves' (reclaim, consolidation, deadline switches) do not, and no job starts on
a node after a checkpoint cordoned it."""

from __future__ import annotations

from burster.app import DEMO_TRACE
from burster.config import parse_config
from burster.plan import Checkpoint
from burster.reconciler import PassReport
from burster.traces import load_trace
from tests.sim.oracle_actions import check_cordons
from tests.sim.oracle_observe import observe_simulation

TRACE = load_trace(DEMO_TRACE, "philly")


def test_only_notices_cordon_and_nothing_starts_on_a_cordoned_node() -> None:
    asks: list[Checkpoint] = []

    def watch(seen: object, report: PassReport) -> list[str]:
        asks.extend(a for a in report.plan.actions if isinstance(a, Checkpoint))
        return []
    seen = observe_simulation(parse_config({}), TRACE, seed=0, days=1.0, start_day=1, hours=24,
                              per_pass=watch)
    notices = [a for a in asks if "notice for" in a.reason]
    assert notices and len(notices) < len(asks)  # both kinds were asked
    assert all(a.cordon == (a in notices) for a in asks)
    assert check_cordons(seen) == []
