"""A controller restarted from its state store decides as one that never stopped.

A busy day of the bundled trace (day 4: 188 cloud nodes) runs through the live reconcile path
twice: once with the state in memory, once kept in SQLite or PostgreSQL, where the controller is
thrown away four times while cloud nodes are live, twice with checkpoints in flight (a new
reconciler, policy and store connection, as after a crash or a deploy) and rebuilt from the
database alone. The clouds and the pool go on, as real ones would.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from burster.app import DEMO_TRACE, Simulation, build_simulation
from burster.config import parse_config
from burster.reconciler import PassReport, Reconciler
from burster.sim.engine import run
from burster.sim.summary import summarize
from burster.sqlstate import SqlState
from burster.state import MemoryState
from burster.traces import load_trace

TRACE = load_trace(DEMO_TRACE, "philly")
CONFIG = parse_config({"pool": {"nodes": 18}})


def _simulation(state: Callable[[], MemoryState] | None = None) -> Simulation:
    return build_simulation(CONFIG, TRACE, policy="burster", seed=0, days=1.0, start_day=4.0,
                            state=state)


def _kpis(sim: Simulation, ledger: list[Any]) -> dict[str, Any]:
    world: Any = sim.world
    out = summarize(metrics=world.pool.metrics, ledger=ledger, launches=sum(c.launches for c in world.clouds.values()),
                    passes=0, policy="burster", trace=TRACE.name, pool_gpus=sim.pool_gpus, seed=0, wall_s=0.0)
    return out


def test_a_controller_restarted_from_the_store_decides_as_one_that_never_stopped(store_url: str) -> None:
    reference = _simulation()
    actions: list[str] = []
    run(reference.world, reference.reconciler, reference.clock, tick_s=10.0, end=reference.end,
        on_pass=lambda r: actions.extend(f"{r.now:%H:%M:%S} {line}" for line in r.plan.explain()))

    sim = _simulation(lambda: SqlState.open(store_url))
    restarted: list[str] = []

    def on_pass(r: PassReport) -> None:
        restarted.extend(f"{r.now:%H:%M:%S} {line}" for line in r.plan.explain())

    rec = sim.reconciler
    start = sim.clock.now()
    seen_live = 0
    seen_tickets = 0
    # just after passes that left checkpoints in flight (8 at 72,900 s, 15 at 73,500 s), and two more
    restarts = [start + timedelta(seconds=s) for s in (72_901, 73_501, 25 * 3600 + 5, 32 * 3600 + 5)]
    for restart_at in (*restarts, sim.end):
        run(sim.world, rec, sim.clock, tick_s=10.0, end=restart_at, on_pass=on_pass, last=restart_at == sim.end)
        if restart_at == sim.end:
            break
        seen_live += len(rec.state.live())
        seen_tickets += len(rec.state.tickets)
        assert isinstance(rec.state, SqlState)
        rec.state.close()  # the controller goes away; a new one has only the database
        rec = Reconciler(providers=rec.providers, pool=rec.pool, policy=_simulation().reconciler.policy,
                         clock=sim.clock, state=SqlState.open(store_url))
    assert seen_live >= 4  # the restarts found cloud nodes to take over, not an idle cluster
    assert seen_tickets >= 10  # and checkpoint handshakes to finish

    kept = SqlState.read(store_url)
    assert restarted == actions
    assert kept.ledger == reference.reconciler.state.ledger and len(kept.ledger) > 10
    assert kept.spent_usd == reference.reconciler.state.spent_usd
    assert _kpis(sim, kept.ledger) == _kpis(reference, reference.reconciler.state.ledger)
