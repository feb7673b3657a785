"""Every snapshot the policy sees is one instant of the world: no job both queued and running."""

from __future__ import annotations

from typing import Any

from burster.app import DEMO_TRACE, build_simulation
from burster.config import parse_config
from burster.model import Snapshot
from burster.plan import Plan
from burster.sim.engine import run
from burster.traces import load_trace


class Checked:
    """The policy under test, asserting on each snapshot it is given; counts the snapshots in which
    a cloud checkpoint had just finished (the job requeued while the pass observed)."""

    def __init__(self, policy: Any) -> None:
        self.policy, self.name, self.seen, self.requeued = policy, policy.name, 0, 0

    def decide(self, snapshot: Snapshot) -> Plan:
        pending = {j.job_id for j in snapshot.pending}
        both = pending & {p.job.job_id for p in snapshot.running}
        assert not both, f"{snapshot.now}: {sorted(both)} both queued and running"
        self.seen += 1
        self.requeued += any(j.attempt > 0 for j in snapshot.pending)
        return self.policy.decide(snapshot)

    def budget_stop(self, snapshot: Snapshot) -> Plan:
        return self.policy.budget_stop(snapshot)  # type: ignore[no-any-return]


def test_a_job_whose_checkpoint_finishes_while_the_pass_observes_is_only_queued() -> None:
    """A checkpoint that finishes during observe requeues its job; the running jobs are read after,
    so the switch, consolidation and move-back rules never act on the placement it just left."""
    sim = build_simulation(parse_config({"pool": {"nodes": 12}}), load_trace(DEMO_TRACE, "philly"),
                           policy="burster", seed=3, days=1, start_day=1, estimate_error=0.5)
    checked = Checked(sim.reconciler.policy)
    sim.reconciler.policy = checked
    run(sim.world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end)
    assert checked.seen > 500 and checked.requeued > 100  # moves and interruptions requeued jobs
