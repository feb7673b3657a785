"""Nodes for the jobs that will burst: idle exclusive nodes handed out, a standby stock kept warm
while bursts keep coming, and nodes launched ahead of a signal (pre-warm).

An exclusive node (``Launch.exclusive``: every Burster launch with ``exclusive_nodes``, and every
standby node) runs only the job it was launched for, or one the policy hands it to (a ``Hold`` on
the node). So when its job ends, the node waits for the policy: a job the policy bursts takes it at
once instead of a fresh boot, when the node is in the market the job's own launch would use (for a
deadline job, a spot pool its rework limit allows) and costs, deadline risk included, no more than
that launch plus the boot's wait (``burst._may_take``); a job deferring to its wait budget, or one
the pool will start on-prem soon, never takes it.

Standby (``StandbyParams``): while bursts keep coming, nodes are also launched ahead to be handed
out. Single-node cloud starts in the last ``window_s`` per node shape (GPU model, GPUs per node);
starts come in batches (a sweep of jobs submitted together), so the stock covers the most starts
seen within one boot, but only as many nodes as pay for themselves: a stock of k idles about k x
window / starts per node between takers, and that idle time must cost less than the boot's wait it
saves a job (``CostModel.wait_cost_usd``). Idle nodes within the stock are kept past their idle
TTL; the stock falls as starts age out of the window. A stock launch in flight (``Snapshot.in_flight``:
its reply lost, its nodes not listed yet) is stock on the way: asked again under its request id
while the stock still wants all of it, never launched anew beside it.

Pre-warm (``BurstParams.prewarm``): in the two boots before a signal's (a Jira sprint's) window
opens, if its GPU rate exceeds spare reserved GPUs and warm nodes, nodes are launched early when the
jobs' wait for a launch would cost more than the nodes idling until the window opens. Once the
window is open its jobs burst as any job does.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, InFlight, Node, Offering, Signal, Snapshot
from burster.plan import Hold, Launch, request_id
from policies.cost import CostModel
from policies.offers import OfferBook, offer_book
from policies.queue import ReservedQueue

Shape = tuple[str, int]  # (GPU model, GPUs per node)
USABLE = frozenset({"launching", "joining", "ready"})  # node states that can take a job now or on joining


@dataclass(frozen=True, slots=True)
class StandbyParams:
    enabled: bool = True  # launch the stock (handing idle exclusive nodes out needs no switch)
    window_s: float = 900.0  # cloud starts counted over this long
    min_starts: int = 3  # fewer in the window: no stock


@dataclass(slots=True)
class Standby:
    """One pass's standby: per shape, the nodes wanted warm and where to launch them; the free
    exclusive nodes (cheapest first; ``take`` hands them out); when the counts next fall; the
    holds that handed nodes out this pass; per shape the ids of the live exclusive nodes launched
    for no job (a stock launch's request id: it changes once a node of it is seen); and per shape
    the stock launches in flight, each with whether it may be asked again (no node of it listed,
    its offering not blocked)."""

    stock: dict[Shape, tuple[int, Offering]] = field(default_factory=dict)
    free: list[Node] = field(default_factory=list)
    next_change: datetime | None = None
    holds: list[Hold] = field(default_factory=list)
    unowned: dict[Shape, tuple[str, ...]] = field(default_factory=dict)
    flying: dict[Shape, tuple[tuple[InFlight, bool], ...]] = field(default_factory=dict)

    def keep(self) -> frozenset[str]:
        """The free nodes within each shape's stock, cheapest first: kept past their idle TTL."""
        left = {s: k for s, (k, _) in self.stock.items()}
        kept: list[str] = []
        for n in self.free:
            if left.get(_shape(n.offering), 0) > 0:
                left[_shape(n.offering)] -= 1
                kept.append(n.node_id)
        return frozenset(kept)

    def take(self, job: Demand, fits: Callable[[Node], bool], now: datetime, launch: Launch) -> bool:
        """Hand the cheapest free node that is up and ``fits`` to single-node ``job`` instead of
        ``launch`` (the hold carries its reason, team and hours); False if none."""
        for i, n in enumerate(self.free):
            if job.nodes == 1 and n.state is NodeState.READY and n.offering.gpus_per_node >= job.gpus \
                    and (not job.gpu_model or job.gpu_model == n.offering.gpu_model) and fits(n):
                del self.free[i]
                self.holds.append(Hold(n.node_id, job.job_id, now, now,
                                       f"idle {n.node_id} ({n.offering.key}) taken, no boot, by {launch.reason}",
                                       team=launch.team, est_hours=launch.est_hours))
                return True
        return False


def _shape(o: Offering) -> Shape:
    return o.gpu_model, o.gpus_per_node


def _most_within(times: list[float], span_s: float) -> int:
    """The most of ``times`` (sorted) that fall within any ``span_s`` interval."""
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while t - times[lo] > span_s:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def live_jobs(snapshot: Snapshot) -> frozenset[str]:
    """Ids of the jobs pending or running."""
    return frozenset(j.job_id for j in snapshot.pending) | {p.job.job_id for p in snapshot.running}


def free_nodes(nodes: Iterable[Node], live: frozenset[str], *, exclusive: bool) -> list[Node]:
    """Nodes of one kind (exclusive or not) up or booting with no job, cheapest first; a node launched
    for a job that is no longer pending or running (it finished) is free, one for a live job is not."""
    return sorted((n for n in nodes if n.exclusive is exclusive and not n.busy and n.state.value in USABLE
                   and (n.for_job is None or n.for_job not in live)),
                  key=lambda n: (n.offering.price_per_hour_usd, n.node_id))


def free_exclusive(snapshot: Snapshot) -> list[Node]:
    """Exclusive nodes up or booting with no job and none of their own waiting, cheapest first."""
    if not any(n.exclusive and not n.busy for n in snapshot.cloud_nodes):
        return []
    return free_nodes(snapshot.cloud_nodes, live_jobs(snapshot), exclusive=True)


def standby(snapshot: Snapshot, cost: CostModel, params: StandbyParams) -> Standby:
    """The free exclusive nodes, and the stock per shape from recent single-node cloud starts."""
    if not params.enabled:
        return Standby(free=free_exclusive(snapshot))
    now, window = snapshot.now, params.window_s
    since = (now - timedelta(seconds=window)).timestamp()
    offering_of = {n.node_id: n.offering for n in snapshot.cloud_nodes}
    starts: dict[Shape, list[float]] = defaultdict(list)
    for p in snapshot.running:
        if p.on_cloud and len(p.node_ids) == 1 and p.node_ids[0] in offering_of and p.started_at.timestamp() > since:
            starts[_shape(offering_of[p.node_ids[0]])].append(p.started_at.timestamp())
    book = offer_book(snapshot, cost)
    boot_s = cost.p.launch_latency_s
    stock: dict[Shape, tuple[int, Offering]] = {}
    for shape, times in sorted(starts.items()):
        if len(times) < params.min_starts:
            continue
        times.sort()
        probe = Demand("standby", shape[1], now, 3600.0, gpu_model=shape[0])
        offering = book.best(probe)
        if offering is None or _shape(offering) != shape:
            continue
        wait_usd = cost.wait_cost_usd(probe, boot_s, now)
        k = _most_within(times, boot_s)  # a stock of k idles about k x window / starts per node
        while k > 0 and cost.idle_cost_usd(offering, k * window / len(times)) >= wait_usd:
            k -= 1
        if k > 0:
            stock[shape] = (k, offering)
    free = free_exclusive(snapshot)
    ages = [t + window for s in stock for t in starts[s]]
    next_change = datetime.fromtimestamp(min(ages), tz=now.tzinfo) if ages else None
    unowned: dict[Shape, tuple[str, ...]] = {}
    if stock:  # by id: the snapshot lists nodes in launch order, which adoption takes from a listing
        for n in sorted(snapshot.cloud_nodes, key=lambda n: n.node_id):
            if n.exclusive and n.for_job is None and _shape(n.offering) in stock:
                unowned[_shape(n.offering)] = (*unowned.get(_shape(n.offering), ()), n.node_id)
    return Standby(stock, free, next_change, unowned=unowned, flying=_stock_in_flight(snapshot, stock))


def _stock_in_flight(snapshot: Snapshot, stock: dict[Shape, tuple[int, Offering]]) -> dict[Shape, tuple[
        tuple[InFlight, bool], ...]]:
    """Per stocked shape, the stock launches in flight (exclusive, for no job), by request id, each with
    whether it may be asked again: a launch with nodes listed (a retry's ``-rN`` among them) is made
    again whole by the reconciler itself, and one to a blocked offering would fail."""
    flights = [f for f in snapshot.in_flight if f.exclusive and f.job_id is None and _shape(f.offering) in stock]
    listed = {n.request_id for n in snapshot.cloud_nodes} if flights else set()
    out: dict[Shape, tuple[tuple[InFlight, bool], ...]] = {}
    for f in flights:
        again = f.offering.key not in snapshot.blocked_offerings and not any(
            r == f.request_id or r.startswith(f"{f.request_id}-r") for r in listed)
        out[_shape(f.offering)] = (*out.get(_shape(f.offering), ()), (f, again))
    return out


def stock_launches(sb: Standby, boot_s: float) -> list[Launch]:
    """Launches that bring each shape's free nodes (after this pass's holds) and stock launches in
    flight up to its stock. A launch in flight is asked again, under its id, while the stock wants
    all of it. A new launch's request id names no instant: while its nodes are unseen (reply lost,
    listed late) the next pass sends it again under the same id; once seen, they change ``unowned``
    and so the id (which names the launches in flight beside it too)."""
    out: list[Launch] = []
    for (model, gpus), (k, offering) in sorted(sb.stock.items()):
        have = sum(1 for n in sb.free if _shape(n.offering) == (model, gpus))
        flying = sb.flying.get((model, gpus), ())
        count = k - have
        reason = (f"standby: {k} x {model or 'any'} {gpus}-GPU node(s) kept warm for jobs bursting now "
                  f"({have} free{f', {sum(f.count for f, _ in flying)} on the way' if flying else ''}); "
                  "a boot's wait costs more than a node idling between them")
        for f, again in flying:
            if again and f.count <= count:
                out.append(Launch(f.offering, f.count, f"{reason}; asked again, its reply lost", f.request_id,
                                  est_hours=boot_s / 3600.0, exclusive=True))
            count -= f.count
        if count <= 0:
            continue
        out.append(Launch(
            offering=offering, count=count, exclusive=True, reason=reason,
            request_id=request_id("standby", offering.key, count, *sb.unowned.get((model, gpus), ()),
                                  *(f.request_id for f, _ in flying)),
            est_hours=boot_s / 3600.0,
        ))
    return out


def prewarm_opens(sig: Signal, cost: CostModel) -> datetime:
    """When pre-warm first weighs ``sig``: two boots before its window opens."""
    return sig.window_start - timedelta(seconds=2 * cost.p.launch_latency_s)


def prewarm(snapshot: Snapshot, cost: CostModel, book: OfferBook, queue: ReservedQueue,
            idle: list[Node]) -> list[Launch]:
    """Launch ahead of a signal when the expected wait cost exceeds the idle cost of being early."""
    now, out = snapshot.now, []
    lead_s = cost.p.launch_latency_s
    for sig in sorted(snapshot.signals, key=_signal_key):
        until_s = (sig.window_start - now).total_seconds()
        hours = (sig.window_end - sig.window_start).total_seconds() / 3600.0
        if hours <= 0 or not prewarm_opens(sig, cost) <= now < sig.window_start:
            continue
        rate_gpus = sig.gpu_hours / hours
        model = sig.gpu_model or queue.any_model
        warm = sum(n.offering.gpus_per_node for n in idle if n.offering.gpu_model == model)
        excess = rate_gpus - queue.spare_gpus(model) - warm
        probe = Demand(f"signal:{sig.source}", max(1, math.ceil(excess)), now, hours * 3600.0,
                       gpu_model=model, team=sig.team, project=sig.project, sprint=sig.sprint)
        offering = book.best(probe)
        if excess <= 0 or offering is None:
            continue
        count = math.ceil(excess / offering.gpus_per_node)
        idle_usd = count * cost.idle_cost_usd(offering, max(until_s - lead_s, 0.0) + lead_s)
        wait_usd = cost.wait_cost_usd(probe, lead_s, now)
        if wait_usd <= idle_usd:
            continue
        out.append(Launch(
            offering=offering, count=count, request_id=request_id("prewarm", *_signal_key(sig), offering.key, count),
            reason=(f"pre-warm {count} x {offering.key} for signal {sig.source}: {sig.gpu_hours:.0f} "
                    f"GPU-h from {sig.window_start:%Y-%m-%d %H:%M}; waiting would cost ${wait_usd:.2f} "
                    f"> idle ${idle_usd:.2f}"),
            team=sig.team, project=sig.project, sprint=sig.sprint, est_hours=hours,
        ))
    return out


def _signal_key(sig: Signal) -> tuple[object, ...]:
    """Every field of a signal, window first: its pre-warm's order and request id. Two signals of one
    source and window (two teams' or GPU models' share of a sprint) are two demands: under one id the
    second launch was taken for the first asked again (the cloud answers with the first's nodes)."""
    return (sig.window_start, sig.source, sig.window_end, sig.gpu_model, sig.team, sig.project, sig.sprint,
            sig.gpu_hours)
