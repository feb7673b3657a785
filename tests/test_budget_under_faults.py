"""The hard dollar budget under cloud faults: the chaos machine (tests/test_reconcile_chaos.py) run
under a hard budget always, with outages of the pool too (passes in a row that cannot read it, which
decide only what the budgets demand), checking pass by pass and at the end what was billed against it.

What the budget promises (policies/guards.py): a launch is kept only if spend so far (the ledger,
plus what live nodes accrued, the billing minimum included) plus live nodes' expected remaining
cost plus the launch's (its run and a boot) fits; and once spend plus the burn of live nodes over
``tick_s + 2 * stop_grace_s`` would pass it, nothing is launched and every node is stopped (a
checkpoint due in ``stop_grace_s``, then drained and terminated by the pass after). So with passes
at most ``tick_s`` apart and ``tick_s <= stop_grace_s``, what nodes the controller knows of bill
stays within the budget, but for two things no pass can prevent:

- nodes the controller does not know of: made by a launch whose reply was lost and not listed
  yet (the guards count them as in flight, but no stop reaches them), or left out of listings past
  ``listing_grace_s`` and taken for gone (charged once found);
- the stop's reach over nodes launched in the pass before it fires: the launch guard weighs a
  launch at its expected run, while a stop ends a node at most ``2 * tick_s + stop_grace_s`` after
  it was launched; a short run near the budget is launched, stopped, and billed past it.

``allowed_excess_usd`` is their sum: the bill (the ledger and live nodes' accrued cost, and the
clouds' own count of what ran) may pass the budget by no more. The machine passes every
``TICK_S`` at most (its controller is told so), not up to ten minutes apart as the chaos test does:
the stop reserves one tick of burn, and a pass that comes later than its tick is not a fault
this controller can answer.
"""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from burster.billing import billing_rule
from burster.reconciler import Reconciler
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import GuardParams
from policies.reclaim import ReclaimParams
from tests.test_reconcile_chaos import IDLE_TTL_S, ChaosMachine, _BootingCloud
from tests.test_reconcile_launch_failures import lost_gang_listed_in_part
from tests.test_reconciler import World

TICK_S = 60  # the longest gap between passes, and the controller's tick
STOP_GRACE_S = GuardParams().stop_grace_s
MAX_NODES = 4
TOLERANCE_USD = 1e-6  # float sums of Decimal ledger entries


def billed_usd(cloud: _BootingCloud) -> float:
    """What the cloud bills for every node it ran, up to now for those still running."""
    now, rule_ = cloud._now(), billing_rule(cloud.name)
    return sum(cloud._nodes[i].offering.price_per_hour_usd * rule_.billed_s(((end or now) - start).total_seconds())
               for i, (start, end) in cloud.ran.items()) / 3600.0


class BudgetChaos(ChaosMachine):
    """The chaos machine, always under a hard budget, its passes at most ``TICK_S`` apart."""

    def _controller(self) -> Reconciler:
        guards = GuardParams(total_budget_usd=self.budget_usd, max_nodes=MAX_NODES, stop_grace_s=STOP_GRACE_S)
        reclaim = ReclaimParams(idle_ttl_s=IDLE_TTL_S, move_back=False, tick_s=TICK_S)
        policy = BursterPolicy(CostModel(CostParams(launch_latency_s=60)),
                               BursterParams(reclaim=reclaim, guards=guards))
        return Reconciler(providers={c.name: c for c in self.clouds}, pool=self.pool, policy=policy,
                          clock=self.clock, state=self.state)

    @initialize(hours=st.lists(st.floats(0.5, 3.0), min_size=2, max_size=4),
                budget_usd=st.sampled_from([5.0, 15.0, 25.0, 40.0]))
    def busy(self, hours: list[float], budget_usd: float) -> None:
        self.unknown_usd = 0.0  # what nodes ran while the controller held no live record of them
        self.stop_reach_usd = 0.0  # the most nodes new in the passes a stop came in or after burn until it ends them
        self.new_before_usd = 0.0  # what the nodes new in the last pass burn until a stop can end them
        self.last_pass = self.clock.now()
        self.down_passes = 0  # passes left with the pool unreadable
        super().busy(hours, budget_usd)

    @rule(seconds=st.integers(1, TICK_S))
    def a_pass(self, seconds: int) -> None:
        self._step(seconds)

    @rule(passes=st.integers(2, 40))
    def pool_down(self, passes: int) -> None:
        """The pool cannot be read for this many passes (slurmctld down): only the budgets decide."""
        self.down_passes = passes

    def _settle(self) -> None:
        self.down_passes = 0
        super()._settle()

    def _step(self, seconds: float) -> None:
        if self.down_passes:
            self.down_passes -= 1
            self.pool_fault = "fail_pending"
        self._count_unknown(self.clock.now() + timedelta(seconds=seconds))
        known = {rec.node_id for rec in self.state.live()}
        super()._step(seconds)
        self.last_pass = self.clock.now()
        new_usd = sum(r.offering.price_per_hour_usd for r in self.state.live() if r.node_id not in known) \
            * (2 * TICK_S + STOP_GRACE_S) / 3600.0  # launched, or adopted (its reply lost), this pass
        if any("hard budget" in getattr(a, "reason", "") for a in self.last.plan.actions):
            self.stop_reach_usd = max(self.stop_reach_usd, self.new_before_usd + new_usd)
        self.new_before_usd = new_usd
        self._within_budget()

    def _count_unknown(self, until: object) -> None:
        """Add what running nodes the controller has no live record of bill until the next pass."""
        for cloud in self.clouds:
            for node_id in cloud.running():
                if not self.state.is_live(node_id):
                    start = max(self.last_pass, cloud.ran[node_id][0])
                    price = cloud._nodes[node_id].offering.price_per_hour_usd
                    self.unknown_usd += price * (until - start).total_seconds() / 3600.0  # type: ignore[operator]

    def allowed_excess_usd(self) -> float:
        return self.unknown_usd + self.stop_reach_usd + TOLERANCE_USD

    def _within_budget(self) -> None:
        assert self.budget_usd is not None
        now = self.clock.now()
        ledger = float(sum(e.usd for e in self.state.ledger)) + sum(u for _, u in self.rec.nodes.accrued_usd_all(now))
        billed = sum(billed_usd(c) for c in self.clouds)
        allowed = self.allowed_excess_usd()
        assert ledger <= self.budget_usd + allowed, f"{now:%H:%M:%S}: ledger ${ledger:.4f} > budget + ${allowed:.4f}"
        assert billed <= self.budget_usd + allowed, f"{now:%H:%M:%S}: billed ${billed:.4f} > budget + ${allowed:.4f}"

    def teardown(self) -> None:
        super().teardown()  # settles (every pass checked), and every node was paid for once
        self._within_budget()


EXAMPLES = int(os.environ.get("BURSTER_CHAOS_EXAMPLES", "150"))
TestBudgetUnderFaults = BudgetChaos.TestCase
TestBudgetUnderFaults.settings = settings(max_examples=EXAMPLES, stateful_step_count=40, deadline=None,
                                          suppress_health_check=[HealthCheck.too_slow])


def _budgeted_world(budget_usd: float) -> World:
    """The reconciler test world under a hard dollar budget."""
    w = World()
    guards = GuardParams(total_budget_usd=budget_usd, soft_fraction=1.0)  # on-demand to the end
    policy = BursterPolicy(CostModel(CostParams(launch_latency_s=60)),
                           BursterParams(reclaim=ReclaimParams(idle_ttl_s=120, move_back=False), guards=guards))
    w.rec = Reconciler(providers={"fake": w.cloud}, pool=w.pool, policy=policy, clock=w.clock)
    return w


def test_a_lost_gang_launch_ended_in_part_is_not_launched_anew_past_the_guards() -> None:
    """A gang's launch reply is lost; listings show one node of two, its replay's reply is lost too
    (the node is kept: the other is in flight), and the one node then ends (its cloud took it). The
    intent stood, so the next pass made it again while observing, and its request id, now spent, took
    a fresh one: two new nodes launched that no guard weighed, here past a hard budget the policy's own
    relaunch is refused at."""
    # the gang (2 x $10/h x (2 h + a boot): $40.33) fits once; job a takes the reserved node
    w, (first, second), made = lost_gang_listed_in_part(_budgeted_world(budget_usd=40.40), job="g")
    assert made.plan.launches  # made, its reply lost
    w.cloud.lose_next_replies(10)
    w.clock.advance(10)
    assert w.rec.run_once().plan.actions == ()  # the replay's reply is lost too
    w.cloud.list_ended()
    w.cloud.end(first.node_id)
    w.clock.advance(10)
    report = w.rec.run_once()
    assert [why for _, why in report.plan.refused if "budget" in why]  # $0.17 spent + $40.33 > $40.40
    w.cloud.list_again()
    w.cloud.list_ended(False)
    assert w.cloud.list_nodes() == [second]  # nothing launched: only the gang's node listed late runs
    assert w.rec.state.intents == {}
    w.clock.advance(10)
    w.rec.run_once()
    assert w.rec.state.nodes[second.node_id].for_job is None  # listed at last: adopted untied, reclaimed idle
