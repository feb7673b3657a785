"""Hypothesis drives the reconcile pass through any mix of the faults clouds and pools show: refused
and throttled launches, launches whose reply is lost, partial gangs, failed listings and terminates,
late listings, interruption notices and preemptions, nodes removed outside the controller, a pool
that fails to checkpoint, drain or list, and controller restarts (a new Reconciler on the same
state, as from a store), over two clouds, so one is degraded while the other is not.

Whatever happened, once the faults stop and the jobs are done the controller must have given every
node back (none left running, none it still counts live, no intent) and the ledger must have paid
for each node's whole run, once: at least the time the cloud ran it (billed, 60 s minimum), at
most until the first listing that surely shows it gone (one past its end and past the listing
grace after its launch).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from burster.billing import billing_rule
from burster.clock import FakeClock
from burster.errors import CapacityError, ProviderError, TransientError
from burster.lifecycle import NodeState
from burster.model import Demand, Market, Node, Offering
from burster.plan import Launch, Plan
from burster.reconcile_nodes import LISTING_GRACE_S
from burster.reconciler import PassReport, Reconciler
from burster.state import MemoryState
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import GuardParams
from policies.reclaim import ReclaimParams
from providers.fake import FakeCloudProvider
from providers.sim.events import EventQueue
from tests.test_reconciler import CHEAP, DEAR, T0, FlakyPool

SPOT = Offering("fake", "r1", "r1c", "gpu.8x", "V100", 8, Market.SPOT, 4.0)
OTHERS = [Offering("fake2", "r2", "r2a", "gpu.8x", "V100", 8, Market.ON_DEMAND, 11.0),
          Offering("fake2", "r2", "r2b", "gpu.8x", "V100", 8, Market.SPOT, 4.5)]
CLOUD = st.integers(0, 1)  # which of the two clouds a fault hits
MAX_STEP_S = 600
IDLE_TTL_S = 120


class _BootingCloud(FakeCloudProvider):
    """The fake cloud, whose nodes join the pool as they come up and leave it as they go (as a
    bootstrapped Slurm or Kubernetes node would), and which keeps when each node really ran."""

    def __init__(self, name: str, offerings: Sequence[Offering], pool: FlakyPool, clock: FakeClock) -> None:
        super().__init__(name, offerings, now=clock.now)
        self.pool = pool
        self.ran: dict[str, tuple[datetime, datetime | None]] = {}  # node id -> (launched, ended)
        self.listed_at: list[datetime] = []  # when a listing went through
        self.hidden: dict[str, datetime] = {}  # node id -> until when listings leave it out
        self.last_listed: set[str] = set()  # the nodes the last listing that went through showed
        self.boot_s = 0.0  # how long the next nodes take to come up and join
        self.booting: dict[str, datetime] = {}  # node id -> when it comes up
        self.due: dict[str, datetime] = {}  # node id -> when its interruption notice runs out

    def boot(self) -> None:
        """Nodes whose boot is over come up and join the pool."""
        for node_id, at in list(self.booting.items()):
            if at <= self._now():
                del self.booting[node_id]
                if self.ran[node_id][1] is None:
                    self._nodes[node_id] = replace(self._nodes[node_id], state=NodeState.READY)
                    self.pool.join(node_id)

    def list_nodes(self) -> Sequence[Node]:
        self._unlisted = {i for i, until in self.hidden.items() if until > self._now()}
        nodes = super().list_nodes()
        self.listed_at.append(self._now())
        self.last_listed = {n.node_id for n in nodes}
        return nodes

    def _make(self, offering: Offering, request_id: str, labels: Mapping[str, str]) -> Node:
        node = super()._make(offering, request_id, labels)
        self.ran[node.node_id] = (node.launched_at, None)
        self.pool.expect(node.node_id, offering, labels.get("job"))
        if self.boot_s:
            node = self._nodes[node.node_id] = replace(node, state=NodeState.LAUNCHING)
            self.booting[node.node_id] = node.launched_at + timedelta(seconds=self.boot_s)
        else:
            self.pool.join(node.node_id)
        return node

    def terminate(self, node_ids: Sequence[str], *, request_id: str) -> None:
        super().terminate(node_ids, request_id=request_id)
        for node_id in node_ids:
            self.gone(node_id, preempted=False)

    def gone(self, node_id: str, *, preempted: bool, at: datetime | None = None) -> None:
        """The node stops running (terminated by anyone, or taken back by the cloud), now or ``at``."""
        self._nodes[node_id] = replace(self._nodes[node_id], state=NodeState.TERMINATED)
        start, end = self.ran[node_id]
        if end is None:
            self.ran[node_id] = (start, at or self._now())
            self.pool.leave(node_id, preempted=preempted)

    def interrupt(self, node_id: str, kind: str = "spot-interruption", notice_s: float = 120) -> None:
        super().interrupt(node_id, kind, notice_s)
        self.due[node_id] = self._now() + timedelta(seconds=notice_s)

    def take_back(self) -> None:
        """Nodes whose notice ran out are taken back, then (one hidden from listings is spared)."""
        for node_id, at in list(self.due.items()):
            if at <= self._now():
                del self.due[node_id]
                if node_id in self.shown():
                    self.gone(node_id, preempted=True, at=at)

    def running(self) -> list[str]:
        return sorted(i for i, (_, end) in self.ran.items() if end is None)

    def shown(self) -> list[str]:
        """Running nodes a listing shows now, and the last one that went through showed."""
        return [i for i in self.running() if self.hidden.get(i, self._now()) <= self._now() and i in self.last_listed]

    def detected_by(self, start: datetime, end: datetime) -> datetime:
        """The first listing a node that ran from ``start`` to ``end`` is surely missing from,
        once older than the listing grace: the latest its record can end."""
        grace_end = start + timedelta(seconds=LISTING_GRACE_S)
        return next(t for t in self.listed_at if t > end and t >= grace_end)  # a listing at ``end`` came before it


class ChaosMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(T0)
        self.pool = FlakyPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
        self.clouds = [_BootingCloud("fake", [CHEAP, DEAR, SPOT], self.pool, self.clock),
                       _BootingCloud("fake2", OTHERS, self.pool, self.clock)]
        self.budget_usd: float | None = None  # a hard dollar budget (``busy`` draws it)
        self.state = self._open_state()
        self.rec = self._controller()
        self.jobs = 0
        self.pool_fault = ""  # a pool call to fail in the next pass
        self.checkpoints = 0  # checkpoints the controller asked for
        self.last = PassReport(T0, Plan())  # the last pass's

    def _open_state(self) -> MemoryState:
        return self.state if hasattr(self, "state") else MemoryState()  # a restart keeps it, as a store would

    def _controller(self) -> Reconciler:
        guards = GuardParams(total_budget_usd=self.budget_usd, max_nodes=4)
        policy = BursterPolicy(CostModel(CostParams(launch_latency_s=60)),
                               BursterParams(reclaim=ReclaimParams(idle_ttl_s=IDLE_TTL_S, move_back=False),
                                             guards=guards))
        return Reconciler(providers={c.name: c for c in self.clouds}, pool=self.pool, policy=policy,
                          clock=self.clock, state=self.state)

    def _running(self) -> list[tuple[int, str]]:
        return [(k, i) for k, c in enumerate(self.clouds) for i in c.running()]

    def _shown(self) -> list[tuple[int, str]]:
        return [(k, i) for k, c in enumerate(self.clouds) for i in c.shown()]

    # --- demand and time ---------------------------------------------------------------------
    @initialize(hours=st.lists(st.floats(0.5, 3.0), min_size=2, max_size=4),
                budget_usd=st.sampled_from([None, None, 25.0, 80.0]))
    def busy(self, hours: list[float], budget_usd: float | None) -> None:
        """Start with more work than the one reserved node takes: something bursts. Under a hard
        dollar budget or none, and at most four cloud nodes."""
        self.budget_usd = budget_usd
        self.rec = self._controller()
        for h in hours:
            self.submit(1, h)

    @rule(nodes=st.sampled_from([1, 1, 2]), hours=st.floats(0.1, 3.0))
    def submit(self, nodes: int, hours: float) -> None:
        self.jobs += 1
        job = Demand(f"j{self.jobs}", 8 * nodes, self.clock.now(), hours * 3600, nodes=nodes, gpu_model="V100")
        self.pool.submit(job, self.clock.now())

    @rule(seconds=st.integers(1, MAX_STEP_S))
    def a_pass(self, seconds: int) -> None:
        self._step(seconds)

    def _step(self, seconds: float) -> None:
        self.clock.advance(seconds)
        now = self.clock.now()
        for cloud in self.clouds:
            cloud.boot()
            cloud.take_back()
        self.pool.events.run_until(now)
        self.pool.schedule(now)
        if self.pool_fault:  # the pool fails the controller's call, not its own scheduling
            setattr(self.pool, self.pool_fault, TransientError(f"pool: {self.pool_fault} refused"))
        report = self.last = self.rec.run_once()  # never raises on a cloud's or the pool's error
        self.checkpoints += len(report.plan.checkpoints)
        for knob in ("fail_checkpoint", "fail_drain", "fail_pending"):
            setattr(self.pool, knob, None)
        self.pool_fault = ""
        self.pool.schedule(now)

    # --- faults ------------------------------------------------------------------------------
    @rule(k=CLOUD, error=st.sampled_from([CapacityError("fake: InsufficientInstanceCapacity"),
                                          TransientError("fake: 500 on launch")]))
    def launch_fails(self, k: int, error: ProviderError) -> None:
        self.clouds[k].fail_next_launch(error)

    @rule(k=CLOUD, calls=st.integers(1, 6))
    def throttled(self, k: int, calls: int) -> None:
        self.clouds[k].throttle_next(calls)

    @rule(k=CLOUD, seconds=st.sampled_from([0, 90, 1500]))
    def boots_take(self, k: int, seconds: int) -> None:
        """New nodes come up at once, in 90 s, or past the join timeout (a bootstrap that hangs)."""
        self.clouds[k].boot_s = seconds

    @rule(k=CLOUD, calls=st.integers(1, 7))
    def replies_lost(self, k: int, calls: int) -> None:
        """Launches happen but their replies time out (past five, the launch fails, its node made)."""
        self.clouds[k].lose_next_replies(calls)

    @rule(k=CLOUD)
    def partial_gang(self, k: int) -> None:
        self.clouds[k].partial_next(1)

    @rule(k=CLOUD)
    def listing_fails(self, k: int) -> None:
        """The provider is degraded for a pass (nothing of it is reclaimed then)."""
        self.clouds[k].fail_next_list(TransientError("fake: 503 on list"))

    @rule(k=CLOUD)
    def terminate_fails(self, k: int) -> None:
        self.clouds[k].fail_next_terminate(TransientError("fake: 503 on terminate"))

    @precondition(lambda self: bool(self._shown()))
    @rule(data=st.data(), seconds=st.integers(10, int(3 * LISTING_GRACE_S)))
    def listed_late(self, data: st.DataObject, seconds: int) -> None:
        """Listings leave a node out for a while (EC2's, for up to about five minutes; longer here
        too, a node then taken for gone and found running again). It runs on until listed again."""
        k, node_id = data.draw(st.sampled_from(self._shown()))
        self.clouds[k].hidden[node_id] = self.clock.now() + timedelta(seconds=seconds)

    @precondition(lambda self: bool(self._running()))
    @rule(data=st.data(), notice_s=st.sampled_from([30, 120]))
    def interrupted(self, data: st.DataObject, notice_s: int) -> None:
        """A notice, and the node taken back when it runs out (unless gone by then)."""
        k, node_id = data.draw(st.sampled_from(self._running()))
        self.clouds[k].interrupt(node_id, notice_s=notice_s)

    @precondition(lambda self: bool(self._shown()))
    @rule(data=st.data(), preempted=st.booleans())
    def removed_outside(self, data: st.DataObject, preempted: bool) -> None:
        """Preempted by the cloud, or terminated by someone else (a console, a script). Only a node
        the controller's last listing showed: one that listings left out past the grace and that
        goes before any shows it again is charged only until it was taken for gone (no controller
        can know it ran on)."""
        k, node_id = data.draw(st.sampled_from(self._shown()))
        self.clouds[k].gone(node_id, preempted=preempted)

    @rule(knob=st.sampled_from(["fail_checkpoint", "fail_drain", "fail_pending"]))
    def pool_fails(self, knob: str) -> None:
        self.pool_fault = knob

    @rule()
    def restart(self) -> None:
        """The controller process goes; a new one starts on the state it kept."""
        self.state = self._open_state()
        self.rec = self._controller()

    # --- what must hold ----------------------------------------------------------------------
    @invariant()
    def records_follow_the_lifecycle(self) -> None:
        for node_id in (i for c in self.clouds for i in c.ran):
            rec = self.state.nodes.get(node_id)
            assert rec is None or self.state.is_live(node_id) is (rec.state not in (NodeState.TERMINATED,
                                                                                     NodeState.FAILED))

    def teardown(self) -> None:
        """The faults stop and the work runs out: everything is given back and paid for once."""
        self._settle()
        left = {j.job_id for j in self.pool.pending()}
        assert left <= self._refused_by_budget() and not self.pool.running(), "the jobs never finished"
        assert not left or self.budget_usd is not None  # only a hard budget keeps a job waiting for good
        assert self._running() == [], "nodes left running"
        assert not self.state.has_live() and not self.state.intents and not self.state.tickets
        paid: dict[str, float] = {}
        for entry in self.state.ledger:
            paid[entry.node_id] = paid.get(entry.node_id, 0.0) + entry.billed_s
        for cloud in self.clouds:
            billed = billing_rule(cloud.name).billed_s
            for node_id, (start, end) in cloud.ran.items():
                assert end is not None
                ran, latest = billed((end - start).total_seconds()), cloud.detected_by(start, end)
                assert ran <= paid.get(node_id, 0.0) <= billed((latest - start).total_seconds()), (node_id, ran, paid)
        self._report()

    def _settle(self) -> None:
        """Clear the faults and run until the jobs and nodes are done (but for jobs a hard budget
        refuses a cloud launch that on-prem cannot run), and have stayed so for two listing graces
        (strays come to light; a budget's room can open again as live nodes end)."""
        for cloud in self.clouds:
            cloud.hidden.clear()
            cloud.boot_s = 0
        self.pool_fault = ""
        self._step(1)  # one-shot faults still armed fire here, or at the latest in the next passes
        settled = timedelta(seconds=2 * LISTING_GRACE_S + IDLE_TTL_S)
        done_since = None
        for _ in range(4 * 24 * 60):  # four days in passes of a minute: every job (<= 3 h, restarts) ends
            if not self._done():
                done_since = None
            elif done_since is None:
                done_since = self.clock.now()
            elif self.clock.now() - done_since >= settled:
                break
            self._step(60)

    def _done(self) -> bool:
        """Nothing runs or is live, and nothing waits but what a hard budget refused."""
        if self.pool.running() or self._running() or self.state.has_live():
            return False
        return {j.job_id for j in self.pool.pending()} <= self._refused_by_budget()

    def _refused_by_budget(self) -> set[str | None]:
        return {a.job_id for a, why in self.last.plan.refused if isinstance(a, Launch) and "budget" in why}

    def _report(self) -> None:
        """What the example exercised (``--hypothesis-show-statistics``)."""
        event(f"cloud nodes run: {'/'.join(str(min(len(c.ran), 3)) for c in self.clouds)} (3: 3 or more)")
        event(f"strays charged: {any('ran on after' in e.reason for e in self.state.ledger)}")
        event(f"checkpoints asked: {min(self.checkpoints, 2)}{'+' if self.checkpoints >= 2 else ''}")
        event(f"budget: {self.budget_usd}, jobs it left waiting: {bool(self.pool.pending())}")


# BURSTER_CHAOS_EXAMPLES=3000 for a deeper search (minutes; the suite runs 150, and a tenth on SQL:
# tests/store/test_reconcile_chaos_store.py)
EXAMPLES = int(os.environ.get("BURSTER_CHAOS_EXAMPLES", "150"))
TestReconcileChaos = ChaosMachine.TestCase
TestReconcileChaos.settings = settings(max_examples=EXAMPLES, stateful_step_count=40, deadline=None,
                                       suppress_health_check=[HealthCheck.too_slow])
