"""The restart check of the fuzzer (tests/sim/oracle_restarts.py): a run kept in SQLite (or in
PostgreSQL) and restarted plans as the uninterrupted one, and a restart that loses part of the state
is found."""

from __future__ import annotations

import functools
import os
from typing import Any

import pytest

from burster.config import parse_config
from burster.sqlstate import SqlState
from tests.sim.fuzz_oracle import draw
from tests.sim.oracle_checks import all_checks
from tests.sim.oracle_fault_view import as_knowable
from tests.sim.oracle_observe import Observed, observe_simulation
from tests.sim.oracle_restarts import PassLog, restart_findings, restart_times
from tests.sim.test_fuzz_oracle import TEAMS, TRACE

SEED = 55  # Burster's policy and every kind of cloud API failure within six hours


def _observe() -> Any:
    d = draw(SEED, TEAMS)
    assert d.faults is not None
    return functools.partial(observe_simulation, parse_config(d.raw), TRACE, seed=SEED, days=1.0,
                             start_day=d.start_day, estimate_error=d.sigma, policy=d.policy, hours=6,
                             faults=d.faults)


def _checks(seen: Observed) -> list[str]:
    return all_checks(seen, billed_as=as_knowable(seen))


def test_restarted_three_times_under_failing_clouds_it_plans_as_if_it_never_stopped() -> None:
    observe, log = _observe(), PassLog()
    seen = observe(per_pass=log)
    times = restart_times(log.times, seen.tick_s, 3, SEED)
    assert len(times) == 3 and all(seen.window_start < t < seen.stop for t in times)
    assert restart_findings(observe, seen, log, count=3, seed=SEED, checks=_checks) == []


@pytest.mark.skipif(os.environ.get("BURSTER_SKIP_POSTGRES") == "1", reason="BURSTER_SKIP_POSTGRES=1")
def test_kept_in_postgresql_and_restarted_it_plans_as_if_it_never_stopped() -> None:
    """The same run with the controller's state in a new PostgreSQL database (``--store postgres``)."""
    observe, log = _observe(), PassLog()
    seen = observe(per_pass=log)
    assert restart_findings(observe, seen, log, count=3, seed=SEED, checks=_checks, store="postgres") == []


def test_a_restart_that_forgets_the_nodes_is_found() -> None:
    observe, log = _observe(), PassLog()
    seen = observe(per_pass=log)

    def observe_forgetful(**kw: Any) -> Observed:
        opens, opened = kw.pop("state"), []

        def forgetful() -> SqlState:
            state = opens()
            if opened:  # a restart: as if the store had kept no node (they are adopted again, untied to jobs)
                for kept in (state.nodes, state._live, state._live_by_provider, state._by_request):
                    kept.clear()  # the records and their indexes alike
            opened.append(state)
            return state  # type: ignore[no-any-return]
        return observe(state=forgetful, **kw)  # type: ignore[no-any-return]

    found = restart_findings(observe_forgetful, seen, log, count=3, seed=SEED, checks=_checks)
    assert found and "the plans differ first at action" in found[0], found[:3]
