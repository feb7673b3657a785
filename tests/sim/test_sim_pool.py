"""The simulated pool's placement rules that the policies rely on."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from burster.model import Demand, Market, Offering, Requeue, queue_key
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)
ON_DEMAND = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)


def job(name: str, submitted_min: int = 0) -> Demand:
    return Demand(name, 1, T0 + timedelta(minutes=submitted_min), 3600.0, gpu_model="V100")


def test_an_idle_burst_node_does_not_take_a_job_whose_own_node_is_booting() -> None:
    """The controller launched an on-demand node for A (say, for its deadline); an idle spot node must
    not take A meanwhile (the controller would pull it off again and launch another node); B is free
    to take the idle node, and A starts on its own node when that joins."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    pool.submit(job("a"), T0)
    pool.expect("spare", SPOT, None)
    pool.join("spare")
    pool.expect("a-node", ON_DEMAND, "a")
    pool.schedule(T0)
    assert [p.job.job_id for p in pool.running()] == []  # A waits for its own node
    pool.submit(job("b"), T0)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"b": ("spare",)}
    pool.join("a-node")
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"b": ("spare",), "a": ("a-node",)}
    assert pool.metrics.reclaims == 0


def test_an_exclusive_node_takes_only_its_own_job_or_one_held_for_it() -> None:
    """A plain idle node takes the queue's head; an exclusive one waits for the controller's Hold."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    for name in ("a", "b", "c"):
        pool.submit(job(name), T0)
    pool.expect("mine", SPOT, "c", exclusive=True)
    pool.expect("warm", SPOT, None, exclusive=True)
    for node_id in ("mine", "warm"):
        pool.join(node_id)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"c": ("mine",)}
    pool.hold("warm", "b", T0, T0)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"c": ("mine",), "b": ("warm",)}
    pool.hold("warm", "a", T0, T0)  # busy: a hold on it does nothing
    pool.schedule(T0)
    assert [j.job_id for j in pool.pending()] == ["a"]
    assert pool.metrics.idle_nodes_handed == 1


@pytest.mark.parametrize(("requeue", "order"), [(Requeue.SUBMISSION, ["a", "b", "c"]),
                                                (Requeue.BACK, ["b", "c", "a"])])
def test_a_stopped_job_is_requeued_where_the_pool_puts_it(requeue: Requeue, order: list[str]) -> None:
    """A, submitted first, runs on a burst node that is drained while B and C wait."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100", requeue=requeue)
    pool.submit(job("a"), T0)
    pool.expect("a-node", ON_DEMAND, "a")
    pool.join("a-node")
    pool.schedule(T0)
    later = T0 + timedelta(minutes=5)
    pool.submit(job("b", 1), later)
    pool.submit(job("c", 2), later)
    pool.drain("a-node")
    assert [j.job_id for j in pool.pending()] == order
    assert pool.pending()[order.index("a")].attempt == 1


def test_a_job_stopped_after_running_past_its_estimate_is_requeued_with_the_work_it_reached() -> None:
    """Estimated at 10 min, it really runs an hour; interrupted 25 min in with no checkpoint yet
    (every 30 min), it keeps no work but tells the policy it needed more than 25 min."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100", runtimes={"a": 3600.0})
    pool.submit(Demand("a", 1, T0, 600.0, gpu_model="V100"), T0)
    pool.expect("n1", SPOT, "a")
    pool.join("n1")
    pool.schedule(T0)
    pool.metrics.advance(T0 + timedelta(minutes=25))
    pool.leave("n1", preempted=True)
    (again,) = pool.pending()
    assert (again.done_s, again.reached_s, again.attempt) == (0.0, 25 * 60.0, 1)


def test_the_pause_of_a_stopped_job_until_its_restart_is_measured() -> None:
    """A 2-GPU job stopped 5 min in and restarted 10 min later: 2 GPUs x 10 min queued again, which
    the first-wait percentiles do not see."""
    x4 = replace(ON_DEMAND, instance_type="p3.8xlarge", gpus_per_node=4, price_per_hour_usd=12.24)
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    pool.submit(Demand("a", 2, T0, 3600.0, gpu_model="V100"), T0)
    pool.expect("n1", x4, "a")
    pool.join("n1")
    pool.schedule(T0)
    pool.metrics.advance(T0 + timedelta(minutes=5))
    pool.drain("n1")
    assert pool.metrics.requeued_wait_gpu_hours == 0.0
    pool.expect("n2", x4, "a")
    pool.join("n2")
    pool.schedule(T0 + timedelta(minutes=15))
    assert [p.job.job_id for p in pool.running()] == ["a"]
    assert pool.metrics.requeued_wait_gpu_hours == pytest.approx(2 * 10 / 60)
    assert pool.metrics.waits_s == [0.0]  # its first wait only


def test_reserved_gpus_idle_while_jobs_that_could_use_them_run_on_the_cloud_are_measured() -> None:
    """One 8-GPU reserved node runs A (4 GPUs); B (6 GPUs, V100) and C (1 GPU, A100, which the pool
    cannot run) run on burst nodes. For 30 min, min(4 idle, 6) reserved GPUs sit idle beside B; once
    B's node is drained (B does not fit the 4 free GPUs and waits) nothing more is counted."""
    big = Offering("aws", "us-east-1", "use1-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
    a100 = Offering("aws", "us-east-1", "use1-az1", "p4d.24xlarge", "A100", 8, Market.ON_DEMAND, 32.77)
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    pool.submit(Demand("a", 4, T0, 7200.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    pool.submit(Demand("b", 6, T0, 7200.0, gpu_model="V100"), T0)
    pool.submit(Demand("c", 1, T0, 7200.0, gpu_model="A100"), T0)
    pool.expect("b-node", big, "b")
    pool.expect("c-node", a100, "c")
    pool.join("b-node")
    pool.join("c-node")
    pool.schedule(T0)
    assert {p.job.job_id: p.on_cloud for p in pool.running()} == {"a": False, "b": True, "c": True}
    pool.metrics.advance(T0 + timedelta(minutes=30))
    assert pool.metrics.stranded_gpu_hours == pytest.approx(4 * 0.5)
    pool.drain("b-node")
    pool.schedule(T0 + timedelta(minutes=30))
    pool.metrics.advance(T0 + timedelta(minutes=45))
    assert [j.job_id for j in pool.pending()] == ["b"]
    assert pool.metrics.stranded_gpu_hours == pytest.approx(4 * 0.5)


def test_queued_jobs_take_the_cheapest_idle_burst_node_that_fits_in_queue_order() -> None:
    """Idle nodes: an 8-GPU on-demand ($24.48/h), a 1-GPU on-demand and a 1-GPU spot. The first job
    (1 GPU) gets the spot node, the second the 1-GPU on-demand, the third (4 GPUs) the big one."""
    big = Offering("aws", "us-east-1", "use1-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    for node_id, offering in (("a-big", big), ("b-od", ON_DEMAND), ("c-spot", SPOT)):
        pool.expect(node_id, offering, None)
        pool.join(node_id)
    pool.submit(job("first"), T0)
    pool.submit(job("second"), T0)
    pool.submit(Demand("third", 4, T0, 3600.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {
        "first": ("c-spot",), "second": ("b-od",), "third": ("a-big",)}


def _by_budget(j: Demand) -> datetime:
    """A start-by rule for the tests: submission + a quarter of the runtime."""
    return j.submitted_at + timedelta(seconds=0.25 * j.est_runtime_s)


def test_a_ranked_pool_serves_priority_then_the_earliest_start_by_whatever_the_arrival_order() -> None:
    """One free GPU after a 1-GPU job ends. Queued: a 10 h job (start by 2.5 h after it came), a
    1 h job that came a minute later (start by 16 min) and a priority job that came last."""
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=1, gpu_model="V100", ranker=_by_budget)
    pool.submit(Demand("running", 1, T0, 600.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    pool.submit(Demand("long", 1, T0, 36_000.0, gpu_model="V100"), T0)
    pool.submit(Demand("short", 1, T0 + timedelta(minutes=1), 3600.0, gpu_model="V100"), T0 + timedelta(minutes=1))
    assert [j.job_id for j in pool.pending()] == ["short", "long"]
    assert pool.pending()[0].start_by == T0 + timedelta(minutes=16)
    pool.submit(Demand("urgent", 1, T0 + timedelta(minutes=2), 36_000.0, gpu_model="V100", priority=1),
                T0 + timedelta(minutes=2))
    assert [j.job_id for j in pool.pending()] == ["urgent", "short", "long"]
    pool.events.run_until(T0 + timedelta(minutes=10))  # "running" ends; the head takes its GPU
    assert [p.job.job_id for p in pool.running()] == ["urgent"]


def test_a_fifo_pool_serves_in_arrival_order() -> None:
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=1, gpu_model="V100")
    pool.submit(Demand("long", 1, T0, 36_000.0, gpu_model="V100"), T0)
    pool.submit(Demand("short", 1, T0 + timedelta(minutes=1), 3600.0, gpu_model="V100"), T0)
    assert [(j.job_id, j.start_by) for j in pool.pending()] == [("long", None), ("short", None)]


@pytest.mark.parametrize("requeue", list(Requeue))
def test_a_ranked_pool_ranks_a_stopped_job_again_by_its_remaining_work(requeue: Requeue) -> None:
    """A 2 h deadline-free job checkpointed after 1 h: its start-by comes from the rule again, and it
    keeps its place ahead of a job that must start later, whatever ``requeue`` says."""
    def by_remaining(j: Demand) -> datetime:
        return j.submitted_at + timedelta(seconds=j.remaining_s)

    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100", requeue=requeue, ranker=by_remaining)
    pool.submit(Demand("a", 1, T0, 7200.0, gpu_model="V100"), T0)
    pool.expect("a-node", ON_DEMAND, "a")
    pool.join("a-node")
    pool.schedule(T0)
    hour = T0 + timedelta(hours=1)
    pool.events.run_until(hour)
    pool.submit(Demand("b", 1, hour, 7200.0, gpu_model="V100"), hour)
    pool.checkpoint("a-node", hour + timedelta(minutes=5))
    pool.events.run_until(hour + timedelta(minutes=1))
    pool.drain("a-node")
    a = pool.pending()[0]
    assert [j.job_id for j in pool.pending()] == ["a", "b"]
    assert a.remaining_s == 3600.0 and a.start_by == T0 + timedelta(hours=1)


def test_a_ranked_queue_stays_in_rank_order_as_jobs_come_start_and_stop() -> None:
    """The ranked queue is kept sorted as jobs arrive, backfill starts jobs from its middle and
    stopped jobs come back: after every step it is what sorting it afresh would give."""
    rng = random.Random(7)
    pool = SimPool(EventQueue(), nodes=2, gpus_per_node=8, gpu_model="V100", ranker=_by_budget)
    now = T0
    for i in range(300):
        now += timedelta(seconds=rng.randrange(0, 300))
        pool.events.run_until(now)
        pool.submit(Demand(f"j{i}", rng.choice((1, 2, 4, 8)), now, float(rng.randrange(60, 7200)),
                           gpu_model="V100", priority=rng.choice((0, 0, 0, 1))), now)
        if i % 50 == 49:  # a burst node takes the head, then is drained: its job is requeued
            head = pool.pending()[0].job_id
            pool.expect(f"n{i}", ON_DEMAND, head)
            pool.join(f"n{i}")
            pool.schedule(now)
            pool.drain(f"n{i}")
        pool.schedule(now)
        queued = list(pool.pending())
        # the policies' projection reads the same order (queue_key): the two must not drift apart
        assert queued == sorted(queued, key=lambda j: (queue_key(j), j.submitted_at, j.job_id))
        assert queued == sorted(queued, key=lambda j: (-j.priority, j.start_by, j.submitted_at, j.job_id))
        assert {j.job_id for j in queued} == set(pool.queue)
    assert len(pool.pending()) > 20  # the queue grew long enough for the order to matter


def _pool_with_two_half_full_nodes() -> SimPool:
    """Two 8-GPU reserved nodes, each running a 4-GPU job (ending at 30 and 90 min)."""
    pool = SimPool(EventQueue(), nodes=2, gpus_per_node=8, gpu_model="V100")
    for name, minutes in (("s0", 30), ("filler", 0), ("s1", 90)):  # best fit: s0 and filler share a node
        pool.submit(Demand(name, 4, T0, minutes * 60.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    pool.events.run_until(T0)  # the filler ends at once
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"s0": ("onprem-0000",), "s1": ("onprem-0001",)}
    return pool


def test_a_held_node_takes_only_the_job_it_is_held_for_even_behind_a_blocked_head() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.submit(Demand("big", 8, T0, 3600.0, gpu_model="V100"), T0)  # waits: no node has 8 free
    pool.hold("onprem-0000", "big", T0 + timedelta(minutes=30), T0 + timedelta(hours=2))
    assert pool.nodes()[0].held_for == "big"
    pool.submit(Demand("head", 12, T0, 600.0, gpu_model="V100", nodes=2), T0)
    pool.submit(Demand("short", 2, T0, 1200.0, gpu_model="V100"), T0)
    pool.submit(Demand("long", 2, T0, 3600.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    # backfill: "short" ends before the hold starts, so it may use the held node; "long" may not
    running = {p.job.job_id: p.node_ids for p in pool.running()}
    assert (running["short"], running["long"]) == (("onprem-0000",), ("onprem-0001",))
    pool.events.run_until(T0 + timedelta(minutes=30))  # s0 and "short" end: the held node is empty
    pool.schedule(T0 + timedelta(minutes=30))
    running = {p.job.job_id: p.node_ids for p in pool.running()}
    assert running["big"] == ("onprem-0000",)  # it starts there though "head" is ahead and blocked
    assert "head" not in running
    assert pool.nodes()[0].held_for == ""  # started on-prem: the hold is done
    m = pool.metrics
    assert (m.node_holds, m.node_holds_landed, m.node_holds_expired) == (1, 1, 0)


def test_a_hold_ends_at_its_deadline_and_survives_a_restart_on_the_cloud() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.submit(Demand("big", 8, T0, 7200.0, gpu_model="V100"), T0)
    pool.expect("big-node", replace(ON_DEMAND, gpus_per_node=8), "big")
    pool.join("big-node")
    pool.schedule(T0)
    pool.hold("onprem-0000", "big", T0, T0 + timedelta(minutes=20))
    pool.drain("big-node")  # stopped: back in the queue, then restarted on a new cloud node
    pool.expect("big-node-2", replace(ON_DEMAND, gpus_per_node=8), "big")
    pool.join("big-node-2")
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()}["big"] == ("big-node-2",)
    assert pool.nodes()[0].held_for == "big"
    pool.submit(Demand("other", 2, T0, 600.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()}["other"] == ("onprem-0001",)
    pool.events.run_until(T0 + timedelta(minutes=20))  # the hold expires
    assert pool.nodes()[0].held_for == ""
    assert (pool.metrics.node_holds, pool.metrics.node_holds_expired) == (1, 1)
    pool.submit(Demand("late", 4, T0, 600.0, gpu_model="V100"), T0 + timedelta(minutes=20))
    pool.schedule(T0 + timedelta(minutes=20))
    assert {p.job.job_id: p.node_ids for p in pool.running()}["late"] == ("onprem-0000",)


def test_a_hold_for_a_gone_job_a_job_running_on_prem_or_a_cloud_node_is_ignored() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.hold("onprem-0000", "nobody", T0, T0 + timedelta(hours=1))
    pool.hold("onprem-0000", "s1", T0, T0 + timedelta(hours=1))  # s1 runs on onprem-0001
    pool.hold("big-node", "s0", T0, T0 + timedelta(hours=1))
    assert [n.held_for for n in pool.nodes()] == ["", ""]


def test_a_hold_renewed_for_longer_is_not_cut_short_by_the_first_ones_end() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.submit(Demand("big", 12, T0, 3600.0, gpu_model="V100", nodes=2), T0)  # 6 + 6: waits for s1
    pool.hold("onprem-0001", "big", T0, T0 + timedelta(minutes=20))
    pool.hold("onprem-0001", "big", T0, T0 + timedelta(minutes=40))
    pool.events.run_until(T0 + timedelta(minutes=25))
    assert pool.nodes()[1].held_for == "big"
    pool.events.run_until(T0 + timedelta(minutes=40))
    assert pool.nodes()[1].held_for == ""
    assert (pool.metrics.node_holds, pool.metrics.node_holds_expired) == (1, 1)


@pytest.mark.parametrize("depth", [256, 0])
def test_a_holder_starts_on_its_held_node_not_on_the_best_fit_one_whatever_its_queue_place(depth: int) -> None:
    """Best fit would pick the other empty node (lowest index) and the blocked head would keep the
    job off it; the held node is the job's: it starts there, even past the backfill depth."""
    pool = SimPool(EventQueue(), nodes=3, gpus_per_node=8, gpu_model="V100", backfill_depth=depth)
    for name, minutes in (("x", 30), ("y", 30), ("z", 60)):
        pool.submit(Demand(name, 8, T0, minutes * 60.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    pool.submit(Demand("head", 16, T0 - timedelta(hours=1), 600.0, gpu_model="V100", nodes=2), T0)
    pool.submit(Demand("big", 8, T0, 20000.0, gpu_model="V100"), T0)
    pool.hold("onprem-0001", "big", T0 + timedelta(minutes=30), T0 + timedelta(minutes=45))
    pool.events.run_until(T0 + timedelta(minutes=30))  # x and y end: nodes 0 and 1 are empty
    pool.schedule(T0 + timedelta(minutes=30))
    assert {p.job.job_id: p.node_ids for p in pool.running()}["big"] == ("onprem-0001",)
    assert [j.job_id for j in pool.pending()] == ["head"]
    assert (pool.metrics.node_holds, pool.metrics.node_holds_landed) == (1, 1)


def test_a_preempted_reserved_job_checkpoints_then_requeues_with_its_work_and_the_holder_takes_its_gpus() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.submit(Demand("fill", 4, T0, 7200.0, gpu_model="V100"), T0)
    pool.submit(Demand("fill2", 4, T0, 7200.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    assert [n.free_gpus for n in pool.nodes()] == [0, 0]
    at = T0 + timedelta(minutes=10)
    pool.events.run_until(at)
    pool.metrics.advance(at)
    pool.submit(Demand("urgent", 4, at, 1800.0, gpu_model="V100"), at)
    pool.hold("onprem-0001", "urgent", at, at + timedelta(minutes=5))
    pool.preempt("s1", at + timedelta(minutes=2))
    stopping = {p.job.job_id: p for p in pool.running()}["s1"]
    assert stopping.stopping_at == at + timedelta(seconds=60) and stopping.remaining_s(at) == 60.0
    pool.preempt("s1", at + timedelta(minutes=2))  # asking again changes nothing
    pool.events.run_until(at + timedelta(seconds=59))
    assert "s1" in {p.job.job_id for p in pool.running()}
    pool.events.run_until(at + timedelta(seconds=60))
    running = {p.job.job_id: p.node_ids for p in pool.running()}
    assert running["urgent"] == ("onprem-0001",)
    (s1,) = [j for j in pool.pending() if j.job_id == "s1"]
    assert (s1.done_s, s1.attempt, s1.queued_at) == (600.0, 1, at + timedelta(seconds=60))  # saved at the request
    m = pool.metrics
    assert (m.onprem_preemptions, m.reclaims, m.preemptions) == (1, 1, 0)
    assert m.lost_gpu_hours == pytest.approx(4 / 60)  # the checkpoint write minute
    assert (m.node_holds, m.node_holds_landed) == (1, 1)


def test_preempting_a_cloud_job_a_finished_one_or_an_unknown_one_does_nothing() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.submit(Demand("c", 1, T0, 600.0, gpu_model="V100"), T0)
    pool.expect("n1", SPOT, "c")
    pool.join("n1")
    pool.schedule(T0)
    for job_id in ("c", "nobody"):
        pool.preempt(job_id, T0 + timedelta(minutes=2))
    pool.events.run_until(T0 + timedelta(minutes=40))  # s0 has ended
    pool.preempt("s0", T0 + timedelta(minutes=42))
    assert pool.metrics.onprem_preemptions == 0
    assert all(p.stopping_at is None for p in pool.running())


def _starts_by(pool: SimPool, events: EventQueue, until: datetime) -> dict[str, float]:
    """Run the pool's events (scheduling after each) up to ``until``; each job's first start, s after T0."""
    while (t := events.next_time()) is not None and t <= until:
        events.run_until(t)
        pool.schedule(t)
    return {k: (v - T0).total_seconds() for k, v in pool.metrics.first_start.items()}


@pytest.mark.parametrize("never_fits", [None, "A100", "gang"])
def test_a_job_the_reserved_nodes_can_never_run_does_not_take_the_heads_reservation(never_fits: str | None) -> None:
    """EASY backfill reserves for the first queued job that can run on the reserved nodes: one that
    never can (another GPU model, a gang larger than the pool) waits for the cloud and reserves
    nothing, so a long job behind the real head does not overtake it."""
    events = EventQueue()
    pool = SimPool(events, nodes=2, gpus_per_node=8, gpu_model="V100")
    events.before = pool.metrics.advance
    for j in (Demand("A", 8, T0, 100.0, gpu_model="V100"), Demand("B", 8, T0, 200.0, gpu_model="V100")):
        pool.submit(j, T0)
    pool.schedule(T0)
    at = T0 + timedelta(seconds=1)
    if never_fits == "A100":
        pool.submit(Demand("X", 1, at, 600.0, gpu_model="A100"), at)
    elif never_fits == "gang":
        pool.submit(Demand("X", 24, at, 600.0, nodes=3, gpu_model="V100"), at)
    pool.submit(Demand("Y", 16, at, 600.0, nodes=2, gpu_model="V100"), at)  # the head: both nodes
    pool.submit(Demand("Z", 8, at, 5000.0, gpu_model="V100"), at)  # long, behind it
    pool.schedule(at)
    starts = _starts_by(pool, events, T0 + timedelta(hours=3))
    assert starts["Y"] == 200.0 and starts["Z"] == 800.0


def test_a_backfilled_job_never_takes_the_node_the_head_is_reserved_on() -> None:
    """Two 8-GPU nodes, each with a 4-GPU job left (to 100 s on node 0, 1000 s on node 1): the 8-GPU
    head can start at 100 s, on node 0. A 4-GPU job of 5000 s behind it still backfills, onto node
    1 (free GPUs enough there), not onto node 0, where it would hold the head back to 1000 s: the
    reservation is per node, not a count of free GPUs."""
    events = EventQueue()
    pool = SimPool(events, nodes=2, gpus_per_node=8, gpu_model="V100")
    events.before = pool.metrics.advance
    for name, run_s in (("A", 100.0), ("A2", 50.0), ("B", 1000.0), ("B2", 50.0)):
        pool.submit(Demand(name, 4, T0, run_s, gpu_model="V100"), T0)
    pool.schedule(T0)
    for name, gpus, run_s, at_s in (("H", 8, 100.0, 60), ("C", 4, 5000.0, 61)):
        at = T0 + timedelta(seconds=at_s)
        _starts_by(pool, events, at)
        pool.submit(Demand(name, gpus, at, run_s, gpu_model="V100"), at)
        pool.schedule(at)
    starts = _starts_by(pool, events, T0 + timedelta(hours=3))
    assert starts["C"] == 61.0 and starts["H"] == 100.0
