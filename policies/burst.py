"""Burst: fill reserved capacity first, then launch the cheapest effective cloud offering.

For each pending job, in queue order: if reserved capacity (or an idle/incoming burst node) will
start it soon enough, it stays queued. Otherwise it bursts when the cost of waiting for on-prem
exceeds the cloud cost, or when the wait would pass its wait budget
(max(max_wait_s, wait_fraction x runtime)), or would leave less than the margin of deadline slack,
or would use up the deadline slack a spot run needs (so a deadline job is not pushed onto
on-demand by queueing). With ``defer_to_budget``, a job not started yet whose budget is longer
than the floor (``max_wait_s``) treats its budget as a service level: it waits for reserved GPUs,
whatever the wait costs, until only a boot and a margin of the budget are left (longer if the
pool is expected to start it before a node could boot), if its deadline slack allows that wait
and a spot run after it; of a budget it uses only the share recent jobs' true / estimated runtimes
say its estimate keeps (``estimate_scale``). A gang launches all its nodes in one Launch (all or none).

A job with a launch in flight (``Snapshot.in_flight``: its reply lost, its nodes not listed yet) is
planned that launch again (its offering, so its request id: the guards' replay) while the offering
is launchable, not a fresh choice beside it; once it is blocked (a capacity error) the job chooses
anew, and the guards weigh both launches.

Market choice follows Uniform Progress with rework: a spot offering qualifies for a deadline job
only while the slack covers its expected rework (interruptions x lost work, per gang member) plus
a changeover and a margin, and it competes at its expected cost plus its deadline risk
(``CostModel.deadline_risk_usd``); otherwise the job goes to a safer spot pool or to on-demand.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from burster.model import Demand, InFlight, Market, Node, Offering, PoolNode, QueueKey, Snapshot, queue_key
from burster.plan import Launch, request_id
from policies.cost import CostModel
from policies.estimates import estimate_scale, runs_long, taken_long
from policies.late import choose_late, late_by_estimate
from policies.offers import ANY, OfferBook, flights_by_job, kept_in_flight, offer_book
from policies.queue import ReservedQueue, held_by_job
from policies.quiet import FOREVER
from policies.slack import (
    behind_schedule,
    defer_left_s,
    defers,
    slack_s,
    spot_rework_limit,
    spot_slack_s,
    wait_budget_s,
)
from policies.standby import USABLE, Standby, free_nodes, live_jobs, prewarm, stock_launches


@dataclass(frozen=True, slots=True)
class BurstParams:
    max_wait_s: float = 600.0
    wait_fraction: float = 0.25
    deadline_margin_s: float = 900.0
    prewarm: bool = True
    markets: frozenset[Market] | None = None  # restrict every launch to these markets
    market_order: tuple[frozenset[Market], ...] = ()  # try these in turn (e.g. spot, then on-demand)
    cost_trigger: bool = True  # burst when waiting costs more than the cloud
    wait_s_per_gpu_hour: float = 0.0  # compute-proportional wait budget (Starburst-like)
    # a job the projection says starts now counts as stuck once queued this long (a scheduler cycle)
    stuck_after_s: float = 60.0
    # spot qualifies for a deadline job only if its slack also covers the expected rework
    # (False: classic Uniform Progress, slack vs changeover + margin only)
    rework_aware: bool = True
    # rank offerings by listed price alone (a price-greedy baseline), not by expected cost
    by_price: bool = False
    # burst a deadline job when waiting would leave less than deadline_margin_s of slack
    deadline_trigger: bool = True
    # a job not started yet whose wait budget is longer than max_wait_s waits for reserved GPUs until
    # its budget is nearly spent (a boot and defer_margin_s left); the cost trigger does not apply to it
    defer_to_budget: bool = False
    defer_margin_s: float = 120.0  # beyond the modelled boot: slower boots, a pass's granularity
    # defer to this share of a budget: the quantile of true / estimated runtime over recently finished
    # jobs (at most 1), so that most deferring jobs keep the budget of their true runtime
    defer_quantile: float = 0.05
    # a deadline job not running yet chooses spot or on-demand as if it ran this quantile of true /
    # estimated runtime over recently finished jobs (at least 1x its estimate; 0: as estimated)
    market_quantile: float = 0.0
    # a deadline job late by its estimate even on a launch now: markets priced by the spread (policies/late.py)
    price_late: bool = False


def choose(job: Demand, now: datetime, cost: CostModel, params: BurstParams, book: OfferBook,
           long: float = 1.0, ratios: Sequence[float] = ()) -> Offering | None:
    """The offering a job would burst to under these params (None: nothing launchable), a deadline
    job taken to run ``long`` times its estimate (``policies.estimates.runs_long``, ``taken_long``),
    or with ``price_late`` one late by its estimate priced by the spread of ``ratios`` (``policies.late``)."""
    if params.price_late and not params.market_order and late_by_estimate(job, now, cost):
        return choose_late(job, now, cost, book, params.markets or ANY, ratios)
    job = taken_long(job, long)
    for markets in params.market_order:
        offering = book.best(job, markets, by_price=params.by_price)
        if offering is not None:
            return offering
    if params.market_order:
        return None
    return book.best_for_deadline(job, params.markets or ANY, spot_rework_limit(job, now, cost, params),
                                  slack_s(job, now, cost))


class _IdleCapacity:
    """Idle and incoming burst nodes that pending jobs can use before anything new is launched."""

    def __init__(self, nodes: tuple[Node, ...], live: frozenset[str], taken: set[str] | None = None) -> None:
        self.free: list[Node] = free_nodes(nodes, live, exclusive=False)  # the pool gives these to any job
        self.taken = taken if taken is not None else set()  # ids of the nodes jobs were counted on

    def take(self, job: Demand) -> bool:
        """Whether an idle node fits ``job`` (it is then counted on to take it)."""
        if job.nodes > 1 or not self.free:
            return False  # gangs get a fresh, co-located launch
        for i, n in enumerate(self.free):
            fits = n.offering.gpus_per_node >= job.gpus
            if fits and (not job.gpu_model or job.gpu_model == n.offering.gpu_model):
                self.taken.add(self.free.pop(i).node_id)
                return True
        return False



class _Room:
    """Whether the pool will surely start a job: a node fits it and free GPUs cover all pending work."""

    def __init__(self, snapshot: Snapshot, queue: ReservedQueue) -> None:
        self.queue = queue
        self.free: dict[str, list[int]] = {}
        for n in snapshot.pool_nodes:
            self.free.setdefault(n.gpu_model, []).append(0 if n.held_for else n.free_gpus)
        self.pending: dict[str | None, int] = {}
        for j in snapshot.pending:
            model = queue.model_for(j)
            self.pending[model] = self.pending.get(model, 0) + j.gpus

    def surely_starts(self, job: Demand) -> bool:
        model = self.queue.model_for(job)
        if model is None or job.nodes > 1:
            return False
        free = self.free.get(model, [])
        return sum(free) >= self.pending.get(model, 0) and any(f >= job.gpus for f in free)


def burst(snapshot: Snapshot, cost: CostModel, params: BurstParams,
          queue: ReservedQueue | None = None, wakes: list[datetime] | None = None,
          incoming: frozenset[str] = frozenset(), standby: Standby | None = None,
          stays: dict[str, Callable[[], datetime | None]] | None = None,
          taken: set[str] | None = None) -> list[Launch]:
    """Launches for the pending jobs that should not wait for reserved capacity (``incoming``: jobs
    whose GPUs are on the way already, e.g. a preempted reserved job's).

    Jobs are projected by priority, then in the pool's serving order (``Snapshot.pending``'s).

    ``wakes`` (if given) receives the future instants at which a job kept waiting would burst with
    nothing else happening: a job the projection says starts now, but that the pool has not started
    (fragmentation, a FIFO head's reservation), still ages towards its wait budget and spot slack.
    ``stays`` (if given) receives, by request id, how to work out until when each launch stays
    wanted with nothing else happening (``wanted_until``; asked of the launches the node cap holds back).
    ``taken`` (if given) receives the idle non-exclusive nodes counted on to take a pending job.
    """
    now = snapshot.now
    queue = queue or ReservedQueue(now, snapshot.pool_nodes, snapshot.running)
    book = offer_book(snapshot, cost)
    live = live_jobs(snapshot)
    idle = _IdleCapacity(snapshot.cloud_nodes, live, taken)
    room = _Room(snapshot, queue)
    served = {n.for_job for n in snapshot.cloud_nodes if n.for_job is not None and n.state.value in USABLE}
    served |= incoming
    held = held_by_job(snapshot.pool_nodes)
    scale = estimate_scale(snapshot.runtime_ratios, params.defer_quantile) if params.defer_to_budget else 1.0
    long = runs_long(snapshot.runtime_ratios, params.market_quantile)
    flights = flights_by_job(snapshot)
    launches: list[Launch] = []
    for job in projection_order(snapshot.pending):
        if job.job_id in served:
            continue
        if job.job_id in held and _held_room_soon(job, held[job.job_id], queue, cost):
            queue.enqueue(job)  # its held nodes have room before a cloud node could boot
            continue
        wait_s = queue.expected_wait_s(job)
        waited_s = (now - job.submitted_at).total_seconds()
        if wait_s > 0.0 and idle.take(job):
            continue
        queued_s = (now - (job.queued_at or job.submitted_at)).total_seconds()
        # the pool may not have looked yet, or it will surely start it: it fits and so does the queue
        fresh = wait_s == 0.0 and (queued_s < params.stuck_after_s or room.surely_starts(job))
        kept = _in_flight(job, flights, book, cost) if flights and not fresh else None  # its launch, asked again
        offering = kept or (None if fresh else choose(job, now, cost, params, book, long, snapshot.runtime_ratios))
        deferring = offering is not None and defers(job, waited_s, now, cost, params, offering, scale)
        launch = None if offering is None else _consider(job, offering, deferring, wait_s, waited_s, now, cost,
                                                         params, scale)
        if launch is not None and wait_s == 0.0 and idle.take(job):
            continue
        if launch is not None and offering is not None and standby is not None and standby.free and \
                standby.take(job, _may_take(job, offering, now, cost, params, long), now, launch):
            continue
        if launch is None:
            queue.enqueue(job)
            if fresh and wakes is not None:
                wakes.append(now + timedelta(seconds=params.stuck_after_s - queued_s))
            elif offering is None or wakes is None:
                pass  # no offering: only an event (an offering change) can let it burst
            elif wait_s == 0.0:
                wakes += _stuck_wakes(job, waited_s, now, cost, params, offering, deferring, scale)
            elif deferring and (left_s := defer_left_s(job, waited_s, cost, params, scale)) >= 0:
                wakes.append(at_or_before(now, left_s))
        else:
            launches.append(launch)
            if stays is not None and offering is not None and job.job_id not in held:
                stays[launch.request_id] = functools.partial(wanted_until, job, wait_s, deferring, now, cost,
                                                             params, offering)
    if params.prewarm and snapshot.signals:
        launches += prewarm(snapshot, cost, book, queue, idle.free + (standby.free if standby else []))
    if standby is not None and standby.stock:
        launches += stock_launches(standby, cost.p.launch_latency_s)
    return launches


def _in_flight(job: Demand, flights: dict[str, list[InFlight]], book: OfferBook, cost: CostModel) -> Offering | None:
    """The offering of ``job``'s launch in flight while it is launchable (``kept_in_flight``)."""
    return kept_in_flight(flights.get(job.job_id, ()), book, lambda o: _burst_request_id(
        job.job_id, job.attempt, o.key, cost.nodes_for(job, o)))


def _may_take(job: Demand, chosen: Offering, now: datetime, cost: CostModel,
             params: BurstParams, long: float = 1.0) -> Callable[[Node], bool]:
    """Whether an idle exclusive node may take ``job`` instead of a launch to ``chosen``: the same
    market and, for a deadline job on spot, a pool its rework limit allows (any node, if a launch
    would come too late for its deadline and starting now would not), and a run there costing,
    deadline risk included, no more than ``chosen``'s plus the boot's wait it saves. The job is
    taken to run ``long`` times its estimate, as when ``chosen`` was chosen (``choose``). A late
    job takes no spot node the deadline switch would move it off at once (by its estimate, its
    slack there under a changeover and the margin, but not under the changeover alone:
    ``deadline.switch_behind_schedule``): the move's pause would cost more than the boot saved."""
    on_node_s = slack_s(job, now, cost) + cost.p.launch_latency_s  # by its estimate, started now
    switched = on_node_s >= 0 and behind_schedule(job.remaining_s, on_node_s, cost.pause_s, params.deadline_margin_s)
    job = taken_long(job, long)
    limit = spot_rework_limit(job, now, cost, params)
    slack = slack_s(job, now, cost)
    late = slack < 0  # a launch now would miss the deadline: only an idle node can make it

    def expected_usd(o: Offering) -> float:
        return cost.job_cost_usd(job, o) + cost.deadline_risk_usd(job, o, slack)
    ceiling = expected_usd(chosen) + cost.wait_cost_usd(job, cost.p.launch_latency_s, now)

    def fits(n: Node) -> bool:
        o = n.offering
        if cost.nodes_for(job, o) != 1:
            return False
        if not late and (o.market is not chosen.market or (
                o.market is Market.SPOT and limit != math.inf
                and cost.rework_fraction(o, job.checkpoint_interval_s, 1) > limit)):
            return False
        if late and switched and o.market is Market.SPOT:
            return False
        return expected_usd(o) <= ceiling
    return fits


def _held_room_soon(job: Demand, nodes: list[PoolNode], queue: ReservedQueue, cost: CostModel) -> bool:
    """Whether the nodes held for ``job`` have room for it now, or will before a cloud node could
    boot (by the expected ends of the work on them; work past its estimate by the end the policy
    believes: ``policies.estimates.believe_overruns``)."""
    room_s = queue.held_room_s(job)
    if room_s > 0.0:
        return room_s <= cost.p.launch_latency_s
    return sum(n.free_gpus >= job.gpus_per_node for n in nodes) >= job.nodes


def _consider(job: Demand, offering: Offering, deferring: bool, wait_s: float, waited_s: float, now: datetime,
              cost: CostModel, params: BurstParams, scale: float = 1.0) -> Launch | None:
    """A Launch to ``offering`` (the job's choice) if ``job`` should burst now (the first rule that
    fires gives the reason), else None. ``deferring``: ``defers(job, ..., scale)``."""
    why = _burst_reason(job, wait_s, waited_s, now, cost, params, offering, deferring, scale)
    if why is None:
        return None
    return _launch(job, offering, cost, f"job {job.job_id} ({job.gpus} GPU{'s' if job.gpus != 1 else ''}): {why}; "
                   f"cheapest effective is {offering.key} at ${offering.price_per_hour_usd:.2f}/h")


def _burst_reason(job: Demand, wait_s: float, waited_s: float, now: datetime, cost: CostModel,
                  params: BurstParams, offering: Offering, deferring: bool, scale: float = 1.0) -> str | None:
    """Why ``job`` should burst to ``offering`` now, or None; cheap rules first."""
    if wait_s == math.inf:
        return "no reserved capacity can run it"
    budget = wait_budget_s(job, params)
    if deferring and defer_left_s(job, waited_s, cost, params, scale) < 0 \
            and not 0 < wait_s <= cost.p.launch_latency_s:  # the pool would start it before a node could boot
        share = "" if scale == 1.0 else f" ({scale:.0%} of it: estimates run long)"
        return (f"waited {waited_s:.0f}s of its {budget:.0f}s wait budget{share}, a boot and a margin short of it; "
                + (f"reserved GPUs expected in {wait_s:.0f}s" if wait_s > 0 else
                   "reserved GPUs look free but it has not started (fragmented, or held for the queue's head)"))
    if not deferring and waited_s + wait_s > budget:
        return (f"expected wait {wait_s:.0f}s would pass its wait budget {budget:.0f}s" if wait_s > 0 else
                f"waited {waited_s:.0f}s, past its wait budget {budget:.0f}s, though reserved GPUs look free "
                f"(fragmented, or held for the queue's head)")
    spot_slack = spot_slack_s(job, now, cost, params, offering)
    expected = wait_s or params.stuck_after_s  # a stuck job waits a scheduler cycle at least
    if 0 <= spot_slack < expected:
        return (f"waiting {expected:.0f}s would leave too little deadline slack to run on spot "
                f"({spot_slack:.0f}s left for waiting)")
    slack = slack_s(job, now, cost)
    if params.deadline_trigger and slack - expected < params.deadline_margin_s:
        return (f"waiting {expected:.0f}s would leave {slack - expected:.0f}s of deadline slack, "
                f"under the {params.deadline_margin_s:.0f}s margin")
    if params.cost_trigger and wait_s > 0 and not deferring:
        wait_usd = cost.wait_cost_usd(job, wait_s, now)
        cloud_usd = cost.job_cost_usd(job, offering)
        if wait_usd > cloud_usd:
            return f"waiting {wait_s:.0f}s costs ${wait_usd:.2f} > cloud ${cloud_usd:.2f}"
    return None


def wanted_until(job: Demand, wait_s: float, deferring: bool, now: datetime, cost: CostModel,
                 params: BurstParams, offering: Offering) -> datetime | None:
    """Until when a launch for ``job`` to ``offering``, wanted now, stays wanted with nothing else
    happening (a second early, so a pass cannot land past it); None for a job with a deadline to
    meet (its slack moves its market and its rules). With none, the offering and every rule are
    fixed but for the projected wait, which falls as the clock runs: at 0 the pool may be about to
    start the job (``fresh``), within a boot of it a deferring job waits for the pool, and a wait
    that costs less than the cloud run stops the cost trigger."""
    if slack_s(job, now, cost) != math.inf:
        return None
    if wait_s <= 0.0 or wait_s == math.inf:
        return FOREVER  # no reserved capacity for it, or the pool passed it over: nothing falls
    ahead = [wait_s]
    if deferring:
        ahead.append(wait_s - cost.p.launch_latency_s)
    elif params.cost_trigger and (usd_per_s := cost.wait_cost_usd(job, 3600.0, now) / 3600.0) > 0:
        ahead.append(wait_s - cost.job_cost_usd(job, offering) / usd_per_s)  # waiting's cost is linear
    return now + timedelta(seconds=max(min(s for s in ahead if s > 0) - 1.0, 0.0))


def _stuck_wakes(job: Demand, waited_s: float, now: datetime, cost: CostModel, params: BurstParams,
                 offering: Offering, deferring: bool, scale: float = 1.0) -> list[datetime]:
    """When a job whose projected wait stays 0 will pass its wait budget (``deferring``: its deferral's
    end), spot slack or deadline margin (bursting to ``offering``)."""
    budget_s = defer_left_s(job, waited_s, cost, params, scale) if deferring else \
        wait_budget_s(job, params) - waited_s
    ahead = [budget_s,
             spot_slack_s(job, now, cost, params, offering) - params.stuck_after_s,
             slack_s(job, now, cost) - params.stuck_after_s - params.deadline_margin_s
             if params.deadline_trigger else math.inf]
    return [at_or_before(now, s) for s in ahead if 0 <= s < math.inf]


def at_or_before(now: datetime, s: float) -> datetime:
    """A wake for a rule that fires strictly past ``now + s``: that instant rounded down to the
    microsecond, so the pass lands on the first tick where the rule holds, or one before it (then
    it decides nothing and wakes again). ``timedelta(seconds=s)`` rounds to the nearest
    microsecond, and a wake just past that could skip the tick where the rule first held."""
    return now + timedelta(microseconds=math.floor(s * 1_000_000))


def _launch(job: Demand, offering: Offering, cost: CostModel, reason: str) -> Launch:
    count = cost.nodes_for(job, offering)
    return Launch(
        offering=offering, count=count, reason=reason,
        request_id=_burst_request_id(job.job_id, job.attempt, offering.key, count),
        job_id=job.job_id, team=job.team, project=job.project, sprint=job.sprint,
        est_hours=(job.remaining_s + cost.p.launch_latency_s) / 3600.0,
    )


@functools.lru_cache(maxsize=16_384)  # a controller runs for months: the held-back launches of a pass fit
def _burst_request_id(job_id: str, attempt: int, offering_key: str, count: int) -> str:
    """``request_id`` of a job's launch, memoized: a job held back at the node cap is launched again,
    under the same id, every pass it waits (a hash each time was 3 % of a capped run)."""
    return request_id(job_id, attempt, offering_key, count)


_FIFO: QueueKey = (0, 0.0)


def projection_order(pending: tuple[Demand, ...]) -> list[Demand]:
    """Pending jobs by priority, then in the pool's serving order: a ranked pool's ``queue_key``, a
    FIFO pool's listing (``Snapshot.pending``), not submission: a job a FIFO pool requeued at the back
    (``Requeue.BACK``) is served after those queued since, though submitted before them; ties in
    listing order."""
    keys = [(-j.priority, queue_key(j) if j.start_by is not None else _FIFO, i) for i, j in enumerate(pending)]
    return [pending[k[2]] for k in sorted(keys)]
