"""A launch whose reply was lost, its nodes not listed yet, is in flight: the pass shows it to the policy
(``Snapshot.in_flight``), whose guards count its nodes, so a launch for another job planned meanwhile
cannot take the same budget or the same slots twice. Before, it counted nowhere until listed."""

from __future__ import annotations

from datetime import timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, InFlight, Node
from burster.plan import Launch
from burster.reconciler import Reconciler
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import GuardParams
from policies.reclaim import ReclaimParams
from tests.test_reconcile_launch_failures import lost_gang_listed_in_part
from tests.test_reconciler import CHEAP, T0, World


def _guarded(guards: GuardParams) -> World:
    w = World()
    policy = BursterPolicy(CostModel(CostParams(launch_latency_s=60)),
                           BursterParams(reclaim=ReclaimParams(idle_ttl_s=120, move_back=False), guards=guards))
    w.rec = Reconciler(providers={"fake": w.cloud}, pool=w.pool, policy=policy, clock=w.clock)
    return w


def _b_in_flight(w: World) -> str:
    """Job a on the reserved node, job b's launch made but its reply lost and its node listed late; then
    job c, ranked ahead of b, arrives. The id of b's node."""
    w.job("a")
    w.job("b")
    w.cloud.lose_next_replies(5)
    first = w.rec.run_once()
    assert [a.job_id for a in first.plan.launches] == ["b"] and first.launched_nodes == 0
    (node,) = w.cloud.list_nodes()
    w.cloud.list_late([node.node_id])
    w.clock.advance(10)
    w.pool.submit(Demand("c", 8, T0 - timedelta(hours=2), 2 * 3600, gpu_model="V100", priority=5), w.clock.now())
    return node.node_id


def _launched_and_refused(w: World) -> tuple[list[str | None], list[str | None]]:
    """The next pass's launches and refused launches, by job."""
    report = w.rec.run_once()
    return ([a.job_id for a in report.plan.launches],
            [a.job_id for a, _ in report.plan.refused if isinstance(a, Launch)])


def _only_b_runs(w: World, b_node: str) -> None:
    w.cloud.list_again()
    assert [n.node_id for n in w.cloud.list_nodes()] == [b_node]
    assert [(r.node_id, r.for_job) for r in w.rec.state.live()] == [(b_node, "b")]
    assert w.rec.state.intents == {}


def test_a_launch_in_flight_keeps_its_budget_from_a_job_planned_after_it() -> None:
    """$30 fits one node for a 2 h job ($20.17 and its boot), not two: job c's launch took the budget
    b's lost launch holds and b's, planned again, was refused; both nodes ran (b's adopted once listed).
    Now c is refused, and b's launch is asked again, its node adopted for it."""
    w = _guarded(GuardParams(total_budget_usd=30.0, soft_fraction=1.0))
    b_node = _b_in_flight(w)
    assert _launched_and_refused(w) == (["b"], ["c"])
    _only_b_runs(w, b_node)


def test_a_launch_in_flight_keeps_its_slot_under_the_node_cap() -> None:
    w = _guarded(GuardParams(max_nodes=1))
    b_node = _b_in_flight(w)
    launched, _ = _launched_and_refused(w)
    assert launched == ["b"]
    _only_b_runs(w, b_node)


def test_a_retry_in_flight_shows_under_the_id_the_policy_planned_and_the_time_it_was_sent() -> None:
    """A retry runs under ``<id>-rN`` (the first id spent or refused): planned again under ``<id>``, it is
    the same launch. One a restart found (no send recorded) dates from the pass that found it."""
    w = World()
    w.rec.state.failed_requests["rq-b"] = 1
    w.rec.state.put_intent(Launch(CHEAP, 2, "burst b", "rq-b-r1", job_id="b", team="ml"), T0 - timedelta(seconds=30))
    w.rec.state.put_intent(Launch(CHEAP, 1, "burst c", "rq-c-r1", job_id="c"))  # -r1 of no retry: its own id
    w.rec.nodes.expire_intents(T0)
    assert w.rec.nodes.in_flight(T0) == (InFlight("rq-b", CHEAP, 2, T0 - timedelta(seconds=30), "b", "ml"),
                                         InFlight("rq-c-r1", CHEAP, 1, T0, "c"))


def test_a_gang_listed_in_part_is_in_flight_for_its_nodes_not_listed() -> None:
    w, _, _ = lost_gang_listed_in_part(replies_lost=10)
    w.clock.advance(10)
    w.rec.run_once()  # made again, its reply lost again
    (rid,) = w.rec.state.intents
    (flight,) = w.rec.nodes.in_flight(w.clock.now())
    assert (flight.request_id, flight.count, flight.job_id, flight.asked_at) == (rid, 1, "b", T0)


def test_an_intent_asked_again_after_it_was_answered_dates_from_its_new_send() -> None:
    """Its first send is dropped once the intent clears (answered): asked again later under the same
    id (the cloud answers it with its live nodes), it is not taken as in flight since the first."""
    w = World()
    launch = Launch(CHEAP, 1, "burst b", "rq-b", job_id="b")
    w.rec.state.put_intent(launch, T0)
    w.rec.state.clear_intent("rq-b")
    w.rec.nodes.expire_intents(T0 + timedelta(seconds=10))
    w.rec.state.put_intent(launch, T0 + timedelta(seconds=20))
    (flight,) = w.rec.nodes.in_flight(T0 + timedelta(seconds=20))
    assert flight.asked_at == T0 + timedelta(seconds=20)


def test_an_intent_whose_nodes_are_all_recorded_is_not_in_flight() -> None:
    """Not even as none: its request id would pass the guards as a replay (``guards.replays``)."""
    w = World()
    w.rec.state.put_intent(Launch(CHEAP, 1, "burst b", "rq-b", job_id="b"))
    w.rec.nodes.adopt([Node("n1", CHEAP, NodeState.READY, T0, "rq-b")], None, T0)
    assert w.rec.nodes.in_flight(T0) == ()
