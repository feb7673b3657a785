"""Reclaim: give burst capacity back when it stops paying for itself.

- Idle TTL aligned to billing: an idle node goes once idle for ``idle_ttl_s`` *and* terminating now
  saves money: never inside a billing minimum already paid for, and for per-minute billing only in
  the last tick of a billed minute.
- Join timeout: a node launched for a job that has not started on it ``join_timeout_s`` after the
  launch (it never came up, or never joined the pool) goes, so the job can burst again; else it
  would bill on and keep the job waiting for it for good.
- Short gangs: the nodes launched for a job that one of them ended before it started there leaves
  too few for its gang go at once (``give_back_short``), so it launches whole again.
- Move back: when reserved GPUs are free beyond what queued jobs ahead of it are owed, a running
  cloud job is checkpointed (then drained and terminated), most expensive first, when the cloud
  dollars saved exceed the restart cost.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Node, Offering, Placement, PoolNode, QueueKey, Requeue, Snapshot, queue_key
from burster.plan import Action, Checkpoint, Hold, Terminate, request_id
from policies.cost import BILLING, DEFAULT_BILLING, CostModel
from policies.deadline import UP, launched_for_running
from policies.late import move_miss_usd
from policies.queue import ReservedQueue


@dataclass(frozen=True, slots=True)
class ReclaimParams:
    idle_ttl_s: float = 300.0
    tick_s: float = 10.0
    join_timeout_s: float = 1200.0  # a node launched for a job that has not started on it by then goes
    move_back: bool = True
    consolidate: bool = True  # move cloud jobs to cheaper cloud capacity (policies/consolidate.py)
    hold_nodes: bool = True  # hold reserved nodes that empty soon for cloud jobs (policies/defrag.py)
    requeue: Requeue = Requeue.SUBMISSION  # the pool's requeue order: decides who is ahead of a moved job


def billing_aligned(node: Node, snapshot: Snapshot, tick_s: float) -> bool:
    """True when terminating ``node`` now does not throw away time already billed."""
    rule = BILLING.get(node.offering.provider, DEFAULT_BILLING)
    run_s = (snapshot.now - node.launched_at).total_seconds()
    if run_s + tick_s < rule.minimum_s:
        return False  # the minimum is paid anyway; keep it available
    if rule.round_up or rule.increment_s <= tick_s:
        return True
    into = run_s % rule.increment_s
    return into >= rule.increment_s - tick_s  # the partial minute is free: use it up


def idle_ttl(snapshot: Snapshot, params: ReclaimParams, keep: frozenset[str] = frozenset()) -> list[Action]:
    """Terminate idle nodes past their TTL when billing allows (``keep``: nodes kept warm)."""
    pending_for = {j.job_id for j in snapshot.pending}
    out: list[Action] = []
    for node in sorted(snapshot.cloud_nodes, key=lambda n: n.node_id):
        if node.busy or node.node_id in keep or node.offering.provider in snapshot.degraded_providers:
            continue  # (a degraded provider's: we cannot see it well enough to reclaim it safely)
        if unjoined(node, pending_for):  # launched for a job still waiting to start on it
            age_s = (snapshot.now - node.launched_at).total_seconds()
            if age_s >= params.join_timeout_s:
                out.append(Terminate((node.node_id,), request_id=request_id("unjoined", node.node_id), reason=(
                    f"{node.node_id} ({node.offering.key}) launched {age_s:.0f}s ago for {node.for_job}, which has "
                    f"not started on it (join timeout {params.join_timeout_s:.0f}s): it never came up or joined"),
                    never_joined=True))
            continue
        if node.state is not NodeState.READY or node.idle_since is None:
            continue
        idle_s = (snapshot.now - node.idle_since).total_seconds()
        if idle_s >= params.idle_ttl_s and billing_aligned(node, snapshot, params.tick_s):
            out.append(Terminate(
                (node.node_id,), request_id=request_id("idle", node.node_id),
                reason=f"{node.node_id} ({node.offering.key}) idle {idle_s:.0f}s >= ttl {params.idle_ttl_s:.0f}s",
            ))
    return out


_COMING = frozenset({NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY})


def stopped_by(actions: Sequence[Action]) -> frozenset[str]:
    """The nodes that ``actions`` terminate or checkpoint (being stopped in this pass)."""
    return frozenset(i for a in actions for i in (a.node_ids if isinstance(a, Terminate) else
                                                  (a.node_id,) if isinstance(a, Checkpoint) else ()))


def give_back_short(snapshot: Snapshot, cost: CostModel, gone: frozenset[str] = frozenset(),
                    protected: frozenset[str] = frozenset()) -> list[Terminate]:
    """Terminate the nodes launched for a job (pending, or running elsewhere: a move) that are too
    few for its gang (``Demand.held_by``; those booting count, and so do those of a launch for it
    in flight, ``Snapshot.in_flight``: its reply lost, its nodes not listed yet): one ended before
    the job started there (a budget stop, its cloud, a console). The pool does not start a job on a
    short set and a move waits for a whole one, so it would bill until the join timeout; given
    back, the burst, switch or consolidation rule launches a whole set again.
    ``gone``: nodes stopped in this pass (not counted). A set with a ``protected`` (or
    ``Node.protected``) node, or on a degraded provider, is left alone."""
    sets: dict[str, list[Node]] = {}
    for n in snapshot.cloud_nodes:
        if n.for_job is not None and not n.busy and n.state in UP and n.node_id not in gone:
            sets.setdefault(n.for_job, []).append(n)
    if not sets:
        return []
    pending = {j.job_id: j for j in snapshot.pending if j.job_id in sets}
    jobs = pending | {p.job.job_id: p.job for p in snapshot.running if p.job.job_id in sets}
    coming: dict[str, list[Offering]] = {}  # nodes of launches in flight, by job
    for f in snapshot.in_flight:
        if f.job_id in sets:
            coming.setdefault(f.job_id, []).extend([f.offering] * f.count)
    out: list[Terminate] = []
    for job_id, nodes in sorted(sets.items()):
        job = jobs.get(job_id)
        if job is None or job.held_by([*(n.offering for n in nodes), *coming.get(job_id, ())]) or any(
                n.protected or n.node_id in protected or n.offering.provider in snapshot.degraded_providers
                for n in nodes):
            continue
        ids = tuple(sorted(n.node_id for n in nodes))
        what, before = ("gang", "started") if job_id in pending else ("move's new set", "moved")
        out.append(Terminate(ids, request_id=request_id("short", job_id, *ids), reason=(
            f"job {job_id}'s {what} lost a node before the job {before} there: {len(ids)} of "
            f"{cost.nodes_for(job, nodes[0].offering)} left; giving it back to relaunch whole")))
    return out


def unjoined(node: Node, pending_for: set[str] | frozenset[str]) -> bool:
    """Whether ``node`` is on its way to, or up for, a job that has not started on it yet."""
    return node.for_job is not None and node.for_job in pending_for and node.state in _COMING


def move_back(snapshot: Snapshot, cost: CostModel, queue: ReservedQueue,
              requeue: Requeue = Requeue.SUBMISSION, margin_s: float = 900.0,
              room: NodeRoom | None = None, protected: frozenset[str] = frozenset(),
              wakes: list[datetime] | None = None) -> list[Checkpoint | Hold]:
    """Checkpoint cloud jobs that now fit on free reserved GPUs, most expensive first, and hold the
    nodes they were fitted to for them while they checkpoint (else the pool gives those GPUs to
    whatever it can start in that minute, and the job, requeued with no room, bursts again).

    A stopped job goes back in the pool's queue, and the pool gives free GPUs to the queue's head
    whatever the controller plans. So a job may move only into GPUs not owed to the jobs that will
    be ahead of it: every pending job (also one whose burst nodes are booting), or, with
    ``Requeue.SUBMISSION`` or a ranked pool, only those ahead of it in queue order (``queue_key``:
    submission, or priority then start-by), and every job already leaving the cloud whenever
    submitted (an earlier job put ahead of one would send it back to the cloud after its
    checkpoint). Moving into GPUs owed to others would strand it on-prem and burst it again, unless
    the pool's EASY backfill would start it anyway (``_Backfill``). The job must also fit the nodes
    as they are: each gang member on one node with enough free GPUs. A deadline job moves only if
    its slack keeps ``margin_s`` after the pause (checkpoint write and restart), or, late by its
    estimate, if the move saves more than the misses the pause adds by the runtime ratios' spread. ``room``: the
    nodes' free GPUs (``reserved_room``, less nodes held in this pass); the moves take from it.
    A job on a protected node stays (``movable_cloud``). ``wakes`` (if given) receives the deadline of
    each job too tight to move, where it may (``tight``).
    """
    out: list[Checkpoint | Hold] = []
    free = {m: queue.free_gpus(m) for m in queue.total}
    if not any(v > 0 for v in free.values()):
        return out
    nodes = room if room is not None else reserved_room(snapshot, queue)
    for m in free:
        free[m] -= nodes.withheld[m]
    leaving = leaving_cloud(snapshot)
    owed = [*snapshot.pending, *leaving]
    claims = claims_of(snapshot, queue, requeue)
    backfill = _Backfill(snapshot, owed, queue)
    for p in sorted(movable_cloud(snapshot, protected), key=lambda p: (-p.price_per_hour_usd, p.job.job_id)):
        model = queue.model_for(p.job)
        if model is None:
            continue
        restart_s = cost.p.restart_overhead_s
        if free.get(model, 0) - claims.ahead_of(p.job, model) < p.job.gpus and \
                not backfill.admits(p, model, free.get(model, 0), restart_s, snapshot.now):
            continue
        if tight(p, snapshot.now, cost, margin_s, wakes):
            continue
        saved = move_paying_usd(p, cost, snapshot)
        if saved <= 0:
            continue
        slots = nodes.fit(p.job.nodes, p.job.gpus_per_node, model)
        if slots is None:
            continue
        free[model] -= p.job.gpus
        backfill.take(p, model, restart_s, snapshot.now)
        for node_id in slots:
            nodes.take(node_id, p.job.gpus_per_node)
        moves = move_checkpoints(p, cost, snapshot.now, f"reserved GPUs free: move job {p.job.job_id} back on-prem, "
                                 f"saving ${saved:.2f} of cloud at ${p.price_per_hour_usd:.2f}/h")
        until = moves[0].deadline + timedelta(seconds=cost.p.launch_latency_s)
        out += moves
        out += [Hold(node_id, p.job.job_id, snapshot.now, until,
                     reason=f"hold {node_id} for job {p.job.job_id} while it checkpoints to move back")
                for node_id in dict.fromkeys(slots)]
    return out


def move_paying_usd(p: Placement, cost: CostModel, snapshot: Snapshot) -> float:
    """What a move back on-prem saves (``move_saving_usd``) where that is more than the misses its pause
    adds by the spread of runtime estimates (``policies.late.move_miss_usd``), else 0."""
    saved = move_saving_usd(p, cost, snapshot.now)
    if saved <= 0 or saved <= move_miss_usd(p, cost.pause_s, snapshot.runtime_ratios, cost):
        return 0.0
    return saved


def move_saving_usd(p: Placement, cost: CostModel, now: datetime) -> float:
    """Cloud $ a move back on-prem saves over the job's remaining run, net of the restart (its
    billed time and wait value); <= 0 when it does not pay."""
    restart_s = cost.p.restart_overhead_s
    saved = p.price_per_hour_usd * p.remaining_s(now) / 3600.0
    billed = p.price_per_hour_usd * restart_s / 3600.0
    if saved <= billed + cost.wait_cost_usd(p.job, restart_s, now, deadline=False):
        return 0.0  # a lower bound of the restart's cost already eats the saving
    if saved <= billed + cost.wait_cost_usd(p.job_now(now), restart_s, now):
        return 0.0
    return saved


def move_checkpoints(p: Placement, cost: CostModel, now: datetime, reason: str) -> list[Checkpoint]:
    """The checkpoints that move cloud job ``p`` back to the pool's queue."""
    deadline = cost.checkpoint_deadline(now)
    return [Checkpoint(node_id, p.job.job_id, deadline, reason=reason) for node_id in p.node_ids]


_CLAIMS: list[tuple[Snapshot, ReservedQueue, Requeue, Claims]] = []


def claims_of(snapshot: Snapshot, queue: ReservedQueue, requeue: Requeue) -> Claims:
    """The ``Claims`` of a pass (its snapshot and queue), built once: the node holds and move-back
    read the same (a memo of a pure function: building it twice was 2 ms of a 30 ms 1k-job decision)."""
    if _CLAIMS and _CLAIMS[0][0] is snapshot and _CLAIMS[0][1] is queue and _CLAIMS[0][2] is requeue:
        return _CLAIMS[0][3]
    claims = Claims(snapshot.pending, leaving_cloud(snapshot), queue, requeue)
    _CLAIMS[:] = [(snapshot, queue, requeue, claims)]
    return claims


class Claims:
    """GPUs per model owed ahead of a requeued job: every job already leaving the cloud (its
    checkpoint was started for those GPUs; putting an earlier job ahead of it would only send it
    back to the cloud), and the pending jobs the pool will put ahead of it."""

    def __init__(self, pending: Sequence[Demand], leaving: Sequence[Demand], queue: ReservedQueue,
                 requeue: Requeue) -> None:
        self.back = requeue is Requeue.BACK
        self.firm: dict[str, int] = {}
        for j in leaving:
            model = queue.model_for(j)
            if model is not None:
                self.firm[model] = self.firm.get(model, 0) + j.gpus
        by_model: dict[str, list[tuple[QueueKey, int]]] = {}
        for j in pending:
            model = queue.model_for(j)
            if model is not None:
                by_model.setdefault(model, []).append((queue_key(j), j.gpus))
        self.times: dict[str, list[QueueKey]] = {}
        self.sums: dict[str, list[int]] = {}  # sums[m][k]: GPUs of the k first in queue order
        for model, items in by_model.items():
            items.sort()
            self.times[model] = [t for t, _ in items]
            self.sums[model] = [0, *itertools.accumulate(g for _, g in items)]

    def ahead_of(self, job: Demand, model: str) -> int:
        firm = self.firm.get(model, 0)
        sums = self.sums.get(model)
        if sums is None:
            return firm
        if self.back and job.start_by is None:  # a ranked pool re-ranks a requeued job by its rule
            return firm + sums[-1]
        return firm + sums[bisect.bisect_right(self.times[model], queue_key(job))]


class _Backfill:
    """The pool's EASY backfill, seen from a cloud job that would requeue behind a blocked head: the
    pool starts it now if it fits the free GPUs and ends before the head's reserved start (the
    shadow time) or uses only GPUs spare at that time."""

    def __init__(self, snapshot: Snapshot, owed: list[Demand], queue: ReservedQueue) -> None:
        """``owed``: the pending jobs in queue order, then the jobs leaving the cloud (``leaving_cloud``)."""
        self.heads: dict[str, tuple[float, int]] = {}  # model -> (shadow s from now, spare GPUs)
        booting = {n.for_job for n in snapshot.cloud_nodes if n.for_job is not None and not n.busy}
        for j in owed:
            model = queue.model_for(j)
            if model is None or model in self.heads or j.job_id in booting:
                continue
            self.heads[model] = queue.shadow(model, j.gpus)

    def admits(self, p: Placement, model: str, free: int, restart_s: float, now: datetime) -> bool:
        head = self.heads.get(model)
        if head is None or p.job.gpus > free:
            return False
        shadow_s, spare = head
        return p.remaining_s(now) + restart_s <= shadow_s or p.job.gpus <= spare

    def take(self, p: Placement, model: str, restart_s: float, now: datetime) -> None:
        """A move made, by either check: GPUs it will still hold when the head starts are not spare
        then (one that was not made, a deadline too tight or no node to fit, takes nothing)."""
        head = self.heads.get(model)
        if head is not None and p.remaining_s(now) + restart_s > head[0]:
            self.heads[model] = (head[0], head[1] - p.job.gpus)


def too_tight(p: Placement, now: datetime, cost: CostModel, margin_s: float) -> bool:
    """A deadline job whose slack would fall under the margin if paused for a move. One its estimate
    says is late already may move (with wrong estimates, keeping such jobs on the cloud cost 67 %
    more: docs/benchmarks-history.md), unless its deadline is nearer than the pause (a strict job's:
    than the pause and the margin): the move would make it miss for certain, or likely, where
    staying meets it if it ends sooner than believed (an overrun job's end is a belief); once the
    deadline has passed it may move. One that may move still must save more than the misses its
    pause adds by the spread of estimates (``move_paying_usd``)."""
    job = p.job
    if job.deadline is None or job.job_class is JobClass.BEST_EFFORT:
        return False
    to_deadline = (job.deadline - now).total_seconds()
    left = to_deadline - p.remaining_s(now)
    near_s = cost.pause_s + (margin_s if job.job_class is JobClass.STRICT else 0.0)
    return 0 <= left < cost.pause_s + margin_s or 0 < to_deadline <= near_s


def tight(p: Placement, now: datetime, cost: CostModel, margin_s: float, wakes: list[datetime] | None) -> bool:
    """``too_tight``, naming in ``wakes`` (if given) the job's deadline, where it stops being so (past
    its deadline a job may move): an instant no event marks, which a skipping simulation passed by
    (random trace 2036: a move back ticking made at 04:12:30, skipping at the next event, 04:22:10)."""
    if not too_tight(p, now, cost, margin_s):
        return False
    if wakes is not None and p.job.deadline is not None and p.job.deadline > now:
        wakes.append(p.job.deadline)
    return True


def leaving_cloud(snapshot: Snapshot) -> list[Demand]:
    """Cloud jobs being stopped (checkpointing or draining) on their way to the pool's queue; not
    those moving to cloud nodes launched for them (a cheaper pool, on-demand): the pool waits for those."""
    stopping = {n.node_id for n in snapshot.cloud_nodes if n.state in (NodeState.CHECKPOINTING, NodeState.DRAINING)}
    awaited = launched_for_running(snapshot)
    return [p.job for p in snapshot.running if p.on_cloud and p.job.job_id not in awaited
            and any(i in stopping for i in p.node_ids)]



def reserved_room(snapshot: Snapshot, queue: ReservedQueue) -> NodeRoom:
    """Free GPUs per reserved node once the jobs already leaving the cloud have landed (best fit,
    in the order the pool will start them)."""
    room = NodeRoom(snapshot.pool_nodes)
    for job in sorted(leaving_cloud(snapshot), key=lambda j: (queue_key(j), j.job_id)):
        model = queue.model_for(job)
        slots = None if model is None else room.fit(job.nodes, job.gpus_per_node, model)
        for node_id in slots or ():
            room.take(node_id, job.gpus_per_node)
    return room


def movable_cloud(snapshot: Snapshot, protected: frozenset[str] = frozenset()) -> list[Placement]:
    """Cloud jobs whose nodes are all up (not booting, not being stopped) on a provider seen well,
    and none protected (``Node.protected``, or in ``protected``: it may not be checkpointed)."""
    ready = {n.node_id for n in snapshot.cloud_nodes
             if n.state is NodeState.READY and n.offering.provider not in snapshot.degraded_providers
             and not n.protected and n.node_id not in protected}
    return [p for p in snapshot.running if p.on_cloud and all(i in ready for i in p.node_ids)]


class NodeRoom:
    """Free GPUs per reserved node (a held node has none for others), with a count of nodes per
    model and free-GPU level so that most fit checks need no scan of the nodes."""

    def __init__(self, pool_nodes: Sequence[PoolNode]) -> None:
        self.free = {n.node_id: 0 if n.held_for else n.free_gpus for n in pool_nodes}
        self.model_of = {n.node_id: n.gpu_model for n in pool_nodes}
        self.held = {n.node_id for n in pool_nodes if n.held_for}  # held before or in this pass
        self.withheld: Counter[str] = Counter()  # free GPUs per model on nodes held in this pass
        self.levels: dict[str, Counter[int]] = {}
        for node_id, f in self.free.items():
            self.levels.setdefault(self.model_of[node_id], Counter())[f] += 1

    def with_room(self, model: str, gpus_each: int) -> int:
        """How many nodes of ``model`` have ``gpus_each`` GPUs free."""
        levels = self.levels.get(model)
        return 0 if levels is None else sum(c for f, c in levels.items() if f >= gpus_each)

    def fit(self, members: int, gpus_each: int, model: str) -> list[str] | None:
        """Pool nodes (best fit: fewest free GPUs first) for each gang member, or None if it does not fit."""
        if self.with_room(model, gpus_each) < members:
            return None
        fitting = sorted((free, node_id) for node_id, free in self.free.items()
                         if self.model_of[node_id] == model and free >= gpus_each)
        return [node_id for _, node_id in fitting[:members]]

    def withhold(self, node_id: str) -> None:
        """A node held for a job in this pass: its free GPUs are nobody else's."""
        self.withheld[self.model_of[node_id]] += self.free[node_id]
        self.held.add(node_id)
        self.take(node_id, self.free[node_id])

    def take(self, node_id: str, gpus: int) -> None:
        levels = self.levels[self.model_of[node_id]]
        levels[self.free[node_id]] -= 1
        self.free[node_id] -= gpus
        levels[self.free[node_id]] += 1
