"""Properties every plan must have, whatever the snapshot."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from burster.lifecycle import NodeState
from burster.model import Snapshot
from burster.plan import Checkpoint, Drain, Hold, Launch, Plan, Preempt, Terminate
from policies.baselines import OnDemandPolicy
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel
from policies.guards import GuardParams, apply_guards, committed_usd, launch_usd
from policies.reclaim import ReclaimParams, idle_ttl
from policies.standby import StandbyParams
from tests.policies.strategies import snapshots

SETTINGS = settings(max_examples=150, deadline=None)


def policy(budget: float | None = None, team_budget: float | None = None, warm: bool = False) -> BursterPolicy:
    guards = GuardParams(total_budget_usd=budget,
                         team_budget_usd={"a": team_budget} if team_budget is not None else {})
    return BursterPolicy(CostModel(), BursterParams(guards=guards, exclusive_nodes=warm,
                                                    standby=StandbyParams(enabled=warm)))


@SETTINGS
@given(snapshots(), st.floats(0, 5000), st.floats(0, 1000), st.booleans())
def test_dollar_budget_is_never_exceeded(snap: Snapshot, budget: float, team_budget: float, warm: bool) -> None:
    """Launches, and idle exclusive cloud nodes handed to jobs (a Hold: the node runs on)."""
    plan = policy(budget, team_budget, warm).decide(snap)
    total, by_team = committed_usd(snap, GuardParams())
    price = {n.node_id: n.offering.price_per_hour_usd for n in snap.cloud_nodes}
    spends = [(a.team, launch_usd(a)) for a in plan.launches]
    spends += [(a.team, price[a.node_id] * a.est_hours) for a in plan.actions
               if isinstance(a, Hold) and a.node_id in price]
    added = sum(usd for _, usd in spends)
    added_a = sum(usd for team, usd in spends if team == "a")
    if spends:
        assert total + added <= budget + 1e-6
        assert by_team.get("a", 0.0) + added_a <= team_budget + 1e-6 or added_a == 0


@SETTINGS
@given(snapshots())
def test_busy_or_protected_nodes_are_never_terminated(snap: Snapshot) -> None:
    """By any plan, and by each layer on its own (the plans alone pass with either layer removed):
    the idle rule never picks a busy node, even one with a stale ``idle_since``, and the guards
    refuse terminating a busy or protected node whatever rule asked."""
    nodes = {n.node_id: n for n in snap.cloud_nodes}
    for p in (policy(), OnDemandPolicy()):
        plan = p.decide(snap)
        for a in plan.actions:
            if isinstance(a, Terminate):
                for node_id in a.node_ids:
                    assert not nodes[node_id].busy
                    assert not nodes[node_id].protected
            if isinstance(a, Checkpoint | Drain):
                assert not nodes[a.node_id].protected
    # each layer on its own
    spared = {i for i, n in nodes.items() if n.busy or n.protected}
    busy = {i for i, n in nodes.items() if n.busy}
    assert not busy & {i for a in idle_ttl(snap, ReclaimParams()) if isinstance(a, Terminate) for i in a.node_ids}
    every = Plan(tuple(Terminate((i,), "any rule", f"t-{i}") for i in sorted(nodes)))
    kept = apply_guards(every, snap, GuardParams()).actions
    assert not spared & {i for a in kept if isinstance(a, Terminate) for i in a.node_ids}


@SETTINGS
@given(snapshots())
def test_decide_is_deterministic(snap: Snapshot) -> None:
    first = policy(1000.0).decide(snap)
    again = policy(1000.0).decide(snap)
    same_instance = policy(1000.0)
    assert first == again
    assert same_instance.decide(snap) == same_instance.decide(replace(snap)) == first


@SETTINGS
@given(snapshots(), st.floats(1.0, 6 * 3600.0))
def test_decide_does_not_depend_on_the_snapshots_before(snap: Snapshot, later_s: float) -> None:
    """A policy that decided an earlier snapshot sharing the offerings (as a live controller's
    passes do) decides a later one as a fresh policy does: what it memoizes is pure."""
    later = replace(snap, now=snap.now + timedelta(seconds=later_s))
    seen = policy(1000.0)
    seen.decide(snap)
    assert seen.decide(later) == policy(1000.0).decide(later)


@SETTINGS
@given(snapshots())
def test_exact_estimates_decide_as_no_history_does(snap: Snapshot) -> None:
    """Finished jobs that ran exactly their estimates change nothing (the benchmarks rely on it)."""
    p = policy(1000.0)
    assert p.decide(replace(snap, runtime_ratios=(1.0,) * 256)) == p.decide(replace(snap, runtime_ratios=()))


@SETTINGS
@given(snapshots())
def test_gang_launches_are_all_or_nothing(snap: Snapshot) -> None:
    cost = CostModel()
    # pending jobs burst; running ones get new nodes when they move to cheaper capacity
    jobs = {j.job_id: j for j in (*snap.pending, *(p.job for p in snap.running))}
    plan = policy().decide(snap)
    per_job: dict[str, list[Launch]] = {}
    for a in plan.launches:
        if a.job_id is not None:
            per_job.setdefault(a.job_id, []).append(a)
    for job_id, launches in per_job.items():
        assert len(launches) == 1, "one Launch carries the whole gang"
        assert launches[0].count == cost.nodes_for(jobs[job_id], launches[0].offering)
    for a, _ in plan.refused:  # a refused gang is refused whole, never trimmed
        if isinstance(a, Launch) and a.job_id in jobs:
            assert a.count == cost.nodes_for(jobs[a.job_id], a.offering)


@SETTINGS
@given(snapshots())
def test_reserved_capacity_is_used_before_any_cloud_launch(snap: Snapshot) -> None:
    free = {n.node_id: n.free_gpus for n in snap.pool_nodes if not n.held_for}  # held: for its jobs only
    plan = policy().decide(snap)
    launched_for = {a.job_id for a in plan.launches if a.job_id}
    # a pending job that fits on free reserved GPUs right now (alone, single node, V100 or any)
    # must never be sent to the cloud
    for job in snap.pending:
        fits_now = job.nodes == 1 and job.gpu_model in ("", "V100") and \
            sum(free.values()) >= sum(j.gpus for j in snap.pending) and \
            any(f >= job.gpus for f in free.values())
        if fits_now:
            assert job.job_id not in launched_for


@SETTINGS
@given(snapshots())
def test_holds_are_on_unheld_reserved_nodes_for_cloud_or_queued_jobs(snap: Snapshot) -> None:
    """Or on an idle exclusive cloud node that is up, for a queued job, at once."""
    unheld = {n.node_id for n in snap.pool_nodes if not n.held_for}
    idle = {n.node_id for n in snap.cloud_nodes if n.exclusive and not n.busy and n.state is NodeState.READY}
    waiting = {p.job.job_id for p in snap.running if p.on_cloud} | {j.job_id for j in snap.pending}
    holds = [a for a in policy().decide(snap).actions if isinstance(a, Hold)]
    assert len({(h.node_id, h.job_id) for h in holds}) == len(holds), "one hold per node and job"
    jobs = {j.job_id: j for j in snap.pending} | {p.job.job_id: p.job for p in snap.running}
    free = {n.node_id: n.free_gpus for n in snap.pool_nodes}
    for node_id in {h.node_id for h in holds}:
        mine = [h for h in holds if h.node_id == node_id]
        if len(mine) > 1:  # only jobs moving back now that fit the node's free GPUs together
            assert node_id in free and all(h.start_at == snap.now for h in mine)
            assert sum(jobs[h.job_id].gpus_per_node for h in mine) <= free[node_id]
    for h in holds:
        if h.node_id in idle:
            assert h.job_id in {j.job_id for j in snap.pending} and h.start_at == h.until == snap.now
            continue
        assert h.node_id in unheld and h.job_id in waiting
        assert snap.now <= h.start_at < h.until  # now: the work on it is overdue (counted as ending now)


@SETTINGS
@given(snapshots(), st.booleans())
def test_a_preempted_job_runs_on_prem_off_protected_nodes_and_its_node_is_held_for_a_queued_job(
        snap: Snapshot, guard: bool) -> None:
    guards = GuardParams(protected_node_ids=frozenset({"onprem-0"} if guard else set()))
    plan = BursterPolicy(CostModel(), BursterParams(guards=guards)).decide(snap)
    on_prem = {p.job.job_id: p for p in snap.running if not p.on_cloud and p.stopping_at is None}
    pending = {j.job_id for j in snap.pending}
    holds = {h.node_id: h.job_id for h in plan.actions if isinstance(h, Hold)}
    launched = {a.job_id for a in plan.launches}
    for a in plan.actions:
        if isinstance(a, Preempt):
            assert a.job_id in on_prem and a.node_ids == on_prem[a.job_id].node_ids
            assert not (guard and "onprem-0" in a.node_ids)
            (node,) = a.node_ids
            assert holds[node] in pending and holds[node] not in launched
