"""Preempt for an urgent job: give it a reserved job's GPUs when that job is cheaper on the cloud.

The burst rule sends a job that cannot wait to the cloud, at whatever its cheapest offering costs:
on-demand, when its deadline leaves no slack for spot rework. A job already running on a reserved
node may end before a cloud node could boot: then its node is held for the urgent job from its
end (``Hold``), and nothing is launched. Or it may be far cheaper to run on the cloud (no deadline
or ample slack, so spot): then it checkpoints and requeues (``Preempt``), its node is held for the
urgent job from now, and the requeued job bursts or waits by the usual rules.

A preemption is priced as a swap of cloud hours, made only when the reserved job's GPU-hours are
cheaper on the cloud than the urgent job's: the urgent job's launch is saved; the reserved job runs
on its own cheapest offering for as long as the urgent job would have run (then its GPUs free up
again and move-back may bring it home), pays a relaunch (boot and restart billed) and, when it
has work left after that, a move back; and its pauses cost their wait value. Single-node jobs only.
A job sent away is priced where the burst rule would send it once requeued: a deadline job's
market chosen for its run taken as long as ``BurstParams.market_quantile`` says
(``policies.estimates.runs_long``); priced on the estimate instead, swaps chained, a requeued job
preempting the next. Its work left is what the burst rule will believe once it is requeued
(``policies.estimates.believed_requeued``: more than its estimate says, when an earlier attempt ran
past it); priced on the estimate, two such jobs swapped one node back and forth.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from burster.billing import billing_rule
from burster.model import Demand, JobClass, Market, Offering, Placement, PoolNode, Snapshot
from burster.plan import Action, Hold, Launch, Preempt
from policies.burst import BurstParams, choose
from policies.cost import CostModel
from policies.estimates import TRUSTED_WITHIN, believed_requeued, runs_long, sorted_ratios
from policies.offers import OfferBook, offer_book
from policies.slack import slack_s


def preempt_for_urgent(snapshot: Snapshot, cost: CostModel, params: BurstParams, launches: Sequence[Launch],
                       protected: frozenset[str],
                       slot_waits: Callable[[], Mapping[str, float]] | None = None
                       ) -> tuple[list[Launch], list[Action]]:
    """The launches kept, and for each on-demand launch a reserved job's GPUs replace more cheaply, a
    Hold (the job ends soon) or a Preempt plus a Hold; dearest launches first, each reserved job and
    node at most once. ``slot_waits()``: the seconds each launch the node cap holds back waits for a
    slot (``NodeRoom.slot_waits``), worked out and weighed only where estimates run long
    (docs/policy.md)."""
    pending = {j.job_id: j for j in snapshot.pending}
    now = snapshot.now
    long = runs_long(snapshot.runtime_ratios, params.market_quantile)  # as burst chooses for a requeued job
    # held back launches are weighed at their wait only where estimates are seen to run long: with
    # exact ones, a swap at the boot's miss (as for a launch that goes) is in time, and cheaper
    waits = slot_waits() if slot_waits is not None and long > TRUSTED_WITHIN else {}
    urgent = [(_launch_usd(cost, job, a, now, waits.get(a.request_id, 0.0)), a, job)
              for a in launches if (job := _urgent(a, pending, deadline_too=a.request_id in waits)) is not None]
    if not urgent:
        return list(launches), []
    away = _Away(cost, params, offer_book(snapshot, cost), now, long, sorted_ratios(snapshot.runtime_ratios))
    reserved = _Reserved(snapshot, protected, away)
    replaced: set[str] = set()
    actions: list[Action] = []
    for launch_usd, launch, job in sorted(urgent, key=lambda u: (-u[0], u[2].job_id)):
        # a job that could not wait for a checkpoint may still wait for a reserved job's end
        can_preempt = slack_s(job, now, cost) + cost.p.launch_latency_s >= cost.p.checkpoint_write_s
        choice = reserved.choose(job, launch_usd, cost.run_rate_usd_per_hour(job, launch.offering) / job.gpus,
                                 preempt=can_preempt)
        if choice is None:
            continue
        saving, wait, p, node_id = choice
        replaced.add(launch.request_id)
        left_s = p.remaining_s(now)
        instead = f"instead of {launch.offering.key} (${launch_usd:.2f})"
        if wait:
            ends = now + timedelta(seconds=left_s)
            actions.append(Hold(node_id, job.job_id, ends, ends + timedelta(seconds=cost.p.launch_latency_s), reason=(
                f"hold {node_id} for job {job.job_id}: reserved job {p.job.job_id} ends there in "
                f"{left_s:.0f}s, before a cloud node could boot; it runs there {instead}")))
            continue
        deadline = cost.checkpoint_deadline(now)
        actions.append(Preempt(p.job.job_id, p.node_ids, deadline, reason=(
            f"requeue reserved job {p.job.job_id} ({p.job.gpus} GPU{'s' if p.job.gpus != 1 else ''}, "
            f"{reserved.away.left_s(p) / 3600.0:.1f} h left) so that "
            f"job {job.job_id} runs on {node_id} {instead}: saves ${saving:.2f}")))
        actions.append(Hold(node_id, job.job_id, now, deadline + timedelta(seconds=cost.p.launch_latency_s), reason=(
            f"hold {node_id} for job {job.job_id} while {p.job.job_id} checkpoints")))
    return [a for a in launches if a.request_id not in replaced], actions


def _launch_usd(cost: CostModel, job: Demand, launch: Launch, now: datetime, slot_wait_s: float) -> float:
    """What ``launch`` costs ``job``: its expected bill plus the deadline it may miss while the node
    boots, or, held back at the node cap, the value of waiting ``slot_wait_s`` for a slot and a boot
    (at most a day of it), with the deadline that wait may miss."""
    if slot_wait_s <= 0.0:
        return cost.job_cost_usd(job, launch.offering) + cost.boot_miss_usd(job, now)
    wait_s = min(slot_wait_s, 86400.0) + cost.p.launch_latency_s
    return cost.job_cost_usd(job, launch.offering) + cost.wait_cost_usd(job, wait_s, now)


def may_turn_urgent(launches: Iterable[Launch], snapshot: Snapshot) -> bool:
    """Whether ``preempt_for_urgent`` weighs, or may come to weigh, reserved GPUs against any of
    ``launches`` held back (so not made) with no event: an on-demand launch for a pending
    single-node job, as its alternatives' reserved jobs near their ends, or one for a single-node
    deadline job, which turns on-demand as its slack runs out."""
    pending = {j.job_id: j for j in snapshot.pending}
    return any(_urgent(a, pending, deadline_too=True) is not None for a in launches)


def _urgent(launch: Launch, pending: dict[str, Demand], *, deadline_too: bool = False) -> Demand | None:
    """The pending single-node job of an on-demand ``launch`` (``deadline_too``: or of any launch for
    a job with a deadline to meet, not a best-effort one), else None."""
    job = pending.get(launch.job_id or "")
    if job is None or job.nodes != 1:
        return None
    deadline = job.deadline is not None and job.job_class is not JobClass.BEST_EFFORT
    return job if launch.offering.market is Market.ON_DEMAND or (deadline_too and deadline) else None


def incoming(snapshot: Snapshot) -> frozenset[str]:
    """Jobs a preempted reserved job's node is held for: their GPUs are on the way."""
    stopping = {n for p in snapshot.running if p.stopping_at is not None and not p.on_cloud for n in p.node_ids}
    return frozenset(j for n in snapshot.pool_nodes if n.node_id in stopping for j in n.held_for)


@dataclass(slots=True)  # not frozen: one is built per reserved job per pass (3x faster to build)
class _Candidate:
    index: int  # place in the snapshot (the last tie-break)
    placement: Placement
    node: PoolNode
    left_s: float  # until it ends


class _Reserved:
    """The reserved jobs an urgent job may take the node of: running single-node jobs, not stopping,
    not at their expected end (one past its estimate counts by the step of it the policy believes it
    needs: ``policies.estimates.believe_overruns``), on unheld, unprotected nodes. Each
    node (so each job) goes to one urgent job at most.

    Indexed for many urgent jobs over many reserved ones: candidates are grouped by what fitting
    reads (GPU model, free GPUs, free GPUs once the job leaves), each group by (seconds left,
    index), and, once priced, by their target's price terms too, within which the floor of
    ``_floors`` rises with the seconds left."""

    def __init__(self, snapshot: Snapshot, protected: frozenset[str], away: _Away) -> None:
        nodes = {n.node_id: n for n in snapshot.pool_nodes}
        self.away = away
        self.taken: set[str] = set()
        self.by_fit: dict[_FitKey, list[_Candidate]] = {}
        for i, p in enumerate(snapshot.running):
            if p.on_cloud or p.stopping_at is not None or p.job.nodes != 1 or len(p.node_ids) != 1:
                continue
            node = nodes.get(p.node_ids[0])
            left_s = p.remaining_s(away.now)
            if node is not None and not node.held_for and node.node_id not in protected and left_s > 0:
                key = (node.gpu_model, node.free_gpus, node.free_gpus + p.job.gpus)
                self.by_fit.setdefault(key, []).append(_Candidate(i, p, node, left_s))
        for group in self.by_fit.values():
            group.sort(key=lambda c: (c.left_s, c.index))
        self._priced: dict[_FitKey, list[_Priced]] = {}
        self._least_rates: dict[_FitKey, float] = {}

    def choose(self, job: Demand, launch_usd: float, rate: float,
               preempt: bool = True) -> tuple[float, bool, Placement, str] | None:
        """(saving, wait?, reserved job, node) for an urgent job whose launch costs ``launch_usd`` at
        ``rate`` $ per GPU-hour: the job ending soonest before a cloud node could boot (in time for
        the deadline), else (with ``preempt``) the one cheapest to send away, if that saves money;
        ties go to the sooner end, then the earlier in the snapshot. The node is taken."""
        keys = [k for k in self.by_fit if (not job.gpu_model or job.gpu_model == k[0]) and k[1] < job.gpus <= k[2]]
        wait, doubtful = self._wait_for(keys, job)
        if wait is not None:
            self.taken.add(wait.node.node_id)
            return launch_usd, True, wait.placement, wait.node.node_id
        if not preempt:
            return None
        floors = sorted(self._floors(keys, job, launch_usd, rate, self.taken | doubtful if doubtful else self.taken))
        best: tuple[float, float, int, _Candidate] | None = None
        for floor, _, c in floors:
            if best is not None and launch_usd - floor < best[0] - 1e-9:
                break  # sorted by floor: none after this can save more (within rounding: ties count)
            saving = launch_usd - self.away.usd(c.placement, job)
            if saving > 0 and (best is None or (saving, -c.left_s, -c.index) > best[:3]):
                best = (saving, -c.left_s, -c.index, c)
        if best is None:
            return None
        self.taken.add(best[3].node.node_id)
        return best[0], False, best[3].placement, best[3].node.node_id

    def _wait_for(self, keys: list[_FitKey], job: Demand) -> tuple[_Candidate | None, set[str]]:
        """The reserved job not taken that ends soonest (then the earliest in the snapshot) within the
        wait limit: before a cloud node could boot, and in time for ``job``'s deadline. For a deadline
        job whose slack past the margin is under that limit (a wait that fails is a miss), where
        estimates run long (``TRUSTED_WITHIN``), a job ending by its estimate must also end in time
        if it ran ``long`` times its estimate. Also the nodes of the jobs that end in time only by their
        estimates: not sent away either (a swap is priced on the estimate; these may run far longer)."""
        away = self.away
        slack = slack_s(job, away.now, away.cost)
        limit_s = min(away.cost.p.launch_latency_s, slack + away.cost.p.launch_latency_s)
        # a wait that fails costs up to the limit: only where the margin cannot take that is it a miss
        risky = away.long > TRUSTED_WITHIN and slack < away.params.deadline_margin_s + limit_s
        wait: _Candidate | None = None
        doubtful: set[str] = set()
        for k in keys:  # each group's first job not taken that ends within the limit
            for c in self.by_fit[k]:
                if c.left_s > limit_s:
                    break  # sorted by (seconds left, index)
                if c.node.node_id in self.taken:
                    continue
                if risky and away.long_left_s(c.placement) > limit_s:
                    doubtful.add(c.node.node_id)
                    continue
                if wait is None or (c.left_s, c.index) < (wait.left_s, wait.index):
                    wait = c
                break
        return wait, doubtful

    def _floors(self, keys: list[_FitKey], job: Demand, launch_usd: float, rate: float,
                taken: set[str]) -> list[tuple[float, int, _Candidate]]:
        """(a lower bound of ``_Away.usd``, index, candidate) for the fitting candidates not taken that
        can be sent away, whose GPU-hours are cheaper on the cloud than ``rate``, and whose bound is
        below the launch's cost; of those, only the ones ``choose`` could reach: a bound above the
        $ of the candidate with the least bound cannot win (that candidate saves money, or every
        bound is kept)."""
        urgent_s, restart_s = job.remaining_s, self.away.cost.p.restart_overhead_s
        groups = [group for k in keys if self._least_rate(k) < rate
                  for group in self._priced_group(k) if group[0][0] < rate]
        least: tuple[float, int, _Candidate] | None = None
        for terms, _, members in groups:  # a group's least bound: its first job not taken
            for left_s, index, c in members:
                if c.node.node_id not in taken:
                    floor = _floor(terms, left_s, urgent_s, restart_s)
                    if floor < launch_usd and (least is None or (floor, index) < least[:2]):
                        least = (floor, index, c)
                    break
        if least is None:
            return []
        usd = self.away.usd(least[2].placement, job)
        cutoff = usd + 1e-6 if usd < launch_usd else launch_usd
        out = []
        for terms, alike, members in groups:
            for i, (left_s, index, c) in enumerate(members):
                floor = _floor(terms, left_s, urgent_s, restart_s)
                if floor > cutoff:
                    break  # rising with the seconds left
                if alike and left_s > urgent_s:  # these outlast the urgent job: all cost the same, the sooner end wins
                    first = min(((m.left_s, m.index, m) for _, _, m in members[i:] if m.node.node_id not in taken),
                                default=None)
                    if first is not None and floor < launch_usd:
                        out.append((floor, first[1], first[2]))
                    break
                if floor < launch_usd and c.node.node_id not in taken:
                    out.append((floor, index, c))
        return out

    def _least_rate(self, key: _FitKey) -> float:
        """The least $ per GPU-hour any candidate of fit group ``key`` could run at on the cloud (its
        shape's cheapest effective offering, any market): where that is no cheaper than an urgent
        job's, none of the group is priced for it (an urgent spot launch's own shape, mostly)."""
        least = self._least_rates.get(key)
        if least is None:
            book = self.away.book
            least = math.inf
            for c in self.by_fit[key]:
                job = c.placement.job
                o = book.best(job)
                if o is not None:
                    least = min(least, book.rate(job, o) / job.gpus)
            self._least_rates[key] = least
        return least

    def _priced_group(self, key: _FitKey) -> list[_Priced]:
        """The candidates of fit group ``key`` that can be sent away, by their target's price terms and
        what else ``_Away.usd`` reads of them, each list by (seconds left, index); worked out once per
        group, when the first urgent job that fits it gets this far (about half the candidates of a
        busy pool are in groups no urgent job fits). ``alike``: no deadline to price, so the jobs of
        a list that outlast an urgent job cost the same to send away for as long as it runs."""
        priced = self._priced.get(key)
        if priced is None:
            by_price: dict[tuple[_Terms, bool, Offering, int, int, float], list[tuple[float, int, _Candidate]]] = {}
            for c in self.by_fit[key]:
                t = self.away.target(c.placement)
                if t is not None:
                    job = t.job
                    risky = job.deadline is not None and job.job_class is not JobClass.BEST_EFFORT
                    price = ((t.per_gpu_usd, t.pause_usd, t.hourly_usd, t.fixed_usd, t.back_usd), not risky,
                             t.offering, job.nodes, job.gpus_per_node, job.checkpoint_interval_s)
                    by_price.setdefault(price, []).append((job.remaining_s, c.index, c))
            priced = self._priced[key] = [(price[0], price[1], sorted(members, key=lambda m: m[:2]))
                                          for price, members in by_price.items()]
        return priced


_FitKey = tuple[str, int, int]  # a reserved node's GPU model, free GPUs, free GPUs once its job leaves
_Terms = tuple[float, float, float, float, float]  # a target's per-GPU $/h, pause $, $/h, fixed $, move-back $
_Priced = tuple[_Terms, bool, list[tuple[float, int, "_Candidate"]]]  # terms, alike, (seconds left, index, candidate)


def _floor(terms: _Terms, left_s: float, urgent_s: float, restart_s: float) -> float:
    """A lower bound of ``_Away.usd`` for a job with ``left_s`` to run, sent away for an urgent one
    with ``urgent_s``: no billing rules, no risk. Rises with ``left_s``."""
    _, pause_usd, hourly_usd, fixed_usd, back_usd = terms
    away_s = left_s if left_s < urgent_s else urgent_s
    floor = pause_usd + hourly_usd * (away_s + restart_s) / 3600.0 + fixed_usd
    return floor + back_usd if left_s > away_s else floor


@dataclass(frozen=True, slots=True)
class _Target:
    """Where a reserved job would go if sent away now, and what of its price does not depend on how long."""

    job: Demand  # as it stands now (work done counted)
    offering: Offering
    hourly_usd: float  # its gang's expected $ per hour of run there (rework included)
    per_gpu_usd: float  # the same per GPU
    fixed_usd: float  # billed beyond the run at least: its nodes' boot, less what rounding down may take off
    slack_s: float  # its deadline slack after the pause
    pause_usd: float  # wait value of the pause: checkpoint write, boot, restart
    back_usd: float  # wait value of a move back: checkpoint write, restart


class _Away:
    """The price of sending reserved jobs to the cloud, per job worked out once per pass.

    ``usd``: expected $ of sending a job away for as long as an urgent job runs: its cloud run, a
    restart and a boot billed, its deadline risk there, its pause's wait value and, when it has work
    left after that, one more pause for the move back. No target when it has no offering or its
    deadline would not keep the margin; ``_Reserved`` also skips it when its GPU-hours cost no less
    on the cloud than the urgent job's (a swap moves work to a cheaper market, it does not merely
    shorten the cloud run)."""

    def __init__(self, cost: CostModel, params: BurstParams, book: OfferBook, now: datetime,
                 long: float = 1.0, ratios: Sequence[float] = ()) -> None:
        self.cost, self.params, self.book, self.now, self.long = cost, params, book, now, long
        self.ratios = ratios  # sorted Snapshot.runtime_ratios
        self._targets: dict[str, _Target | None] = {}

    def long_left_s(self, p: Placement) -> float:
        """Seconds until reserved job ``p`` ends if it runs ``long`` times its estimate (at least as
        long as by its estimate)."""
        return max(p.remaining_s(self.now), p.job.est_runtime_s * self.long - p.done_s(self.now))

    def left_s(self, p: Placement) -> float:
        """Seconds of work reserved job ``p`` has left as its price reads them (believed requeued)."""
        t = self.target(p)
        return p.remaining_s(self.now) if t is None else t.job.remaining_s

    def target(self, p: Placement) -> _Target | None:
        key = p.job.job_id
        if key not in self._targets:
            self._targets[key] = self._target(p)
        return self._targets[key]

    def _target(self, p: Placement) -> _Target | None:
        cost = self.cost
        pause_s = cost.pause_s + cost.p.launch_latency_s  # the write, its new node's boot, the restart
        job = believed_requeued(p.job_now(self.now), self.ratios)  # as the burst rule will see it requeued
        later = self.now + timedelta(seconds=pause_s)
        slack = slack_s(job, later, cost)
        if slack < self.params.deadline_margin_s + cost.p.restart_overhead_s:
            return None
        offering = choose(job, later, cost, self.params, self.book, self.long)
        if offering is None:
            return None
        hourly = cost.run_rate_usd_per_hour(job, offering)
        node_usd = cost.nodes_for(job, offering) * offering.price_per_hour_usd
        rule = billing_rule(offering.provider)
        rounded_off_s = 0.0 if rule.round_up else rule.increment_s / 2  # a forecast bills run - this, at least
        fixed = node_usd * (cost.p.launch_latency_s - rounded_off_s) / 3600.0
        return _Target(job, offering, hourly, hourly / job.gpus, fixed,
                       slack, cost.wait_cost_usd(job, pause_s, self.now, deadline=False),
                       cost.wait_cost_usd(job, cost.pause_s, self.now, deadline=False))

    def usd(self, p: Placement, urgent: Demand) -> float:
        t = self.target(p)
        assert t is not None
        cost = self.cost
        away_s = min(t.job.remaining_s, urgent.remaining_s)
        work_s = away_s + cost.p.restart_overhead_s
        usd = cost.job_cost_usd(t.job, t.offering, work_s) + t.pause_usd \
            + cost.deadline_risk_usd(t.job, t.offering, t.slack_s, work_s)
        return usd + t.back_usd if t.job.remaining_s > away_s else usd
