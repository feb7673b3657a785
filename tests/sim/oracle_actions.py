"""The oracle's view of what the controller asked of the pool (``PoolTap``'s calls): node holds,
hand-offs of idle exclusive cloud nodes, on-prem preemptions, cordoning checkpoints. Each outcome is recomputed from the
calls and the runs alone, by the pool's rules as docs/simulation.md states them: whether the pool
could take a call then, what it must have done after, and the counts the summary reports.

Ordering within one instant: the world's events and the pool's scheduling at ``t`` come before
the pass at ``t`` (``SimWorld.advance_to``, then ``run_once``), so a run that starts or ends at
``t`` precedes a call made at ``t``, and one that starts later follows it.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from datetime import datetime, timedelta

from burster.model import Market
from burster.reconcile_nodes import TAKE_BACK_GRACE_S
from tests.sim.oracle_observe import CloudNode, Observed, PoolCall, Segment

ONPREM = "onprem-"  # the simulated pool's reserved node ids: onprem-0000, ...


def _runs(seen: Observed) -> dict[str, list[Segment]]:
    out: dict[str, list[Segment]] = defaultdict(list)
    for g in seen.segments:
        out[g.job_id].append(g)
    return out


class _Jobs:
    """Where each job stood at an instant, from its runs: running (on-prem or on the cloud),
    queued, finished or not yet submitted."""

    def __init__(self, seen: Observed) -> None:
        self.runs = _runs(seen)
        self.submitted = {j.job_id: j.submitted_at for j in seen.jobs}
        pool = seen.sim.world.pool  # (the pool itself: the controller's view of it may be down)
        unfinished = {d.job_id for d in pool.pending()} | {p.job.job_id for p in pool.running()}
        self.finished_at = {k: segs[-1].end for k, segs in self.runs.items() if k not in unfinished}

    def running(self, job_id: str, at: datetime) -> Segment | None:
        """The run open just after the world reached ``at`` (one ending at ``at`` has left)."""
        return next((g for g in self.runs.get(job_id, ()) if g.start <= at and (g.end is None or g.end > at)), None)

    def queued(self, job_id: str, at: datetime) -> bool:
        done = self.finished_at.get(job_id)
        return self.submitted[job_id] <= at and self.running(job_id, at) is None and (done is None or done > at)

    def next_run(self, job_id: str, after: datetime) -> Segment | None:
        return next((g for g in self.runs.get(job_id, ()) if g.start > after), None)


def handed_nodes(seen: Observed) -> list[PoolCall]:
    """The holds on cloud nodes the pool took as hand-offs: an exclusive node, live, not draining,
    with no job on it, given a queued job."""
    jobs, drained = _Jobs(seen), {c.node_id: c.at for c in reversed(seen.pool_calls) if c.kind == "drain"}
    busy: dict[str, list[Segment]] = defaultdict(list)
    for g in seen.segments:
        for i in g.node_ids if g.on_cloud else ():
            busy[i].append(g)
    out = []
    for c in seen.pool_calls:
        n = seen.nodes.get(c.node_id)
        if c.kind != "hold" or n is None or not n.exclusive or (n.end is not None and n.end <= c.at):
            continue
        if c.node_id in drained and drained[c.node_id] <= c.at:
            continue
        if any(g.start <= c.at and (g.end is None or g.end > c.at) for g in busy[c.node_id]):
            continue
        if jobs.queued(c.job_id, c.at):
            out.append(c)
    return out


def check_handoffs(seen: Observed) -> list[str]:
    """Every hand-off the pool took is counted (``idle_nodes_handed``) and its job runs next on that
    node (unless the node ends first); an exclusive node runs only the job it was launched for or
    one handed to it since its last run."""
    out: list[str] = []
    jobs, handed = _Jobs(seen), handed_nodes(seen)
    if seen.summary["idle_nodes_handed"] != len(handed):
        out.append(f"idle_nodes_handed {seen.summary['idle_nodes_handed']} != hand-offs the pool could take "
                   f"{len(handed)}")
    for c in handed:
        nxt, n = jobs.next_run(c.job_id, c.at), seen.nodes[c.node_id]
        if nxt is not None and nxt.node_ids != (c.node_id,) and (n.end is None or n.end > nxt.start):
            out.append(f"{c.node_id} handed to job {c.job_id} at {c.at}, which next ran on {nxt.node_ids} "
                       f"at {nxt.start}")
    given: dict[str, list[PoolCall]] = defaultdict(list)
    for c in handed:
        given[c.node_id].append(c)
    last_end: dict[str, datetime] = {}
    for g in sorted((g for g in seen.segments if g.on_cloud), key=lambda g: g.start):
        for i in g.node_ids:
            n = seen.nodes[i]
            since = last_end.get(i, n.launched_at)
            if n.exclusive and g.job_id != n.for_job and not any(
                    c.job_id == g.job_id and since <= c.at < g.start for c in given[i]):
                out.append(f"exclusive {i} (launched for {n.for_job or 'no job'}) ran job {g.job_id} at {g.start}, "
                           f"not handed to it")
            last_end[i] = g.end or seen.stop
    return out


def handed_usd_by_team(seen: Observed, upto: datetime) -> dict[str, float]:
    """What the clouds billed so far, by team, with each handed node's hours running the job handed
    to it charged to that job's team (docs/policy.md, Guards: "charged the job's hours there ... to
    the job's team") and the rest of the node's bill to the team it was launched for."""
    team = {j.job_id: j.team for j in seen.jobs}
    handed = {(c.node_id, c.job_id) for c in handed_nodes(seen) if c.at <= upto}
    out: dict[str, float] = defaultdict(float)
    from tests.sim.oracle_checks import node_usd  # (oracle_checks imports this module's checks)
    for n in seen.nodes.values():
        if n.launched_at <= upto:
            out[n.team] += node_usd(n, upto)
    for g in seen.segments:
        if g.on_cloud and g.start < upto and (g.node_ids[0], g.job_id) in handed:
            n = seen.nodes[g.node_ids[0]]
            usd = n.offering.price_per_hour_usd * ((min(g.end or upto, upto) - g.start).total_seconds()) / 3600
            out[n.team] -= usd
            out[team[g.job_id]] += usd
    return out


def pool_slips_usd(seen: Observed, now: datetime, period: str, tick_s: float) -> dict[str, float]:
    """By team, in the budget period, the bill of each run the pool itself started for the team's job on
    a node serving another team (not handed by the controller: no Hold) up to the node's end, where that
    came within a pass (``tick_s``), or later only as each pass's terminate of it was refused: what a team
    at its hard budget may run past it, the stop ending such a run at the first pass after it, no
    checkpoint written (docs/policy.md, Guards)."""
    from tests.sim.oracle_checks import _in_period, node_parts, period_began, runs_on_nodes

    since, handed = period_began(period, now), {(c.node_id, c.job_id) for c in handed_nodes(seen) if c.at <= now}
    runs, jobs = runs_on_nodes(seen), {j.job_id: j for j in seen.jobs}
    out: dict[str, float] = defaultdict(float)
    for n in seen.nodes.values():
        on = runs.get(n.node_id, ())
        started = {(g.start, jobs[g.job_id].team): g.job_id for g in on}
        for team, start, end, usd in node_parts(n, now, on, jobs)[1:] if n.launched_at <= now else ():
            job = started.get((start, team))
            if job is not None and (n.node_id, job) not in handed and _stopped_in_time(seen, n, start, end, tick_s):
                out[team] += _in_period(usd, start, end, since)
    return out


def _stopped_in_time(seen: Observed, n: CloudNode, start: datetime, end: datetime, tick_s: float) -> bool:
    """The part ended within a pass of its start, or (its cloud's API failing) every pass since tried
    to terminate its node, refused, until one went through (its reply lost or not) a pass or less
    before the end (``seen`` as the controller could know its nodes: a lost reply's node ends where a
    pass found it gone)."""
    cloud = seen.faulty.get(n.offering.provider)
    if cloud is None:
        return (end - start).total_seconds() <= tick_s
    tries = [*cloud.refused.get(n.node_id, []), *cloud.unreplied.get(n.node_id, [])]
    t = start
    for tried in sorted(r for r in tries if start < r <= end):
        if (tried - t).total_seconds() > tick_s:
            return False
        t = tried
    return (end - t).total_seconds() <= tick_s


def left_to_cloud(n: CloudNode, now: datetime) -> bool:
    """Whether at ``now`` the controller may leave ``n`` to its cloud (``NodeBook.left_to_cloud``): a
    spot-interruption notice of it given by then, ``n`` up, and its take-back at the notice's time
    free, until ``TAKE_BACK_GRACE_S`` past that time."""
    from tests.sim.oracle_checks import billed_s

    if n.notice is None or n.notice[0] > now or (n.end is not None and n.end <= now):
        return False
    until = n.notice[1]
    run_s = (until - n.launched_at).total_seconds()
    free = billed_s(n.offering.provider, run_s, taken_back=True, spot=n.offering.market is Market.SPOT) == 0
    return free and now <= until + timedelta(seconds=TAKE_BACK_GRACE_S)


def check_announced_take_backs(seen: Observed) -> list[str]:
    """Each node the budgets counted at nothing while left to its cloud (``left_to_cloud``) was taken
    back free, as announced (or was still up at the stop)."""
    from tests.sim.oracle_checks import node_usd

    return [f"{n.node_id}: left to its cloud from its notice at {n.notice[0]}, ended "
            f"{'taken back' if n.taken_back else 'by us'} at {n.end} billed ${node_usd(n, n.end):.4f}, not free"
            for n in seen.nodes.values() if n.notice is not None and n.end is not None
            and left_to_cloud(n, n.notice[0]) and not (n.taken_back and node_usd(n, n.end) == 0)]


def check_cordons(seen: Observed) -> list[str]:
    """No run starts on a cloud node after a checkpoint cordoned it (``Pool.checkpoint(cordon=True)``:
    a spot notice's, a budget stop's)."""
    since: dict[str, datetime] = {}
    for c in seen.pool_calls:
        if c.kind == "checkpoint" and c.cordon:
            since.setdefault(c.node_id, c.at)
    return [f"{s.job_id} started on {n} at {s.start}, cordoned by a checkpoint since {since[n]}"
            for s in seen.segments if s.on_cloud for n in s.node_ids if n in since and s.start > since[n]]


def check_reserved_holds(seen: Observed, *, exact_estimates: bool) -> list[str]:
    """Holds of reserved nodes, replayed: the pool takes one for a queued job or one running on the
    cloud; it lasts until the job starts on-prem (landed, on each held node it starts on) or finishes,
    or its ``until`` passes (expired; a job starting on it at that very instant may be either, as the
    pool schedules the arrivals of an instant before its events, and one starting on another reserved
    node then may be expired or neither). ``node_holds``, ``node_holds_landed``
    and ``node_holds_expired`` must match; a held node starts no other job unless that job ends by the
    holds' earliest start (checked by its true end, so only where the controller's estimates are exact)."""
    jobs, out = _Jobs(seen), []
    held: dict[str, dict[str, tuple[datetime, datetime]]] = defaultdict(dict)  # node -> job -> (start, until)
    count = landed = expired = ties = elsewhere = 0
    starts = {(f"{ONPREM}{i:04d}", g.job_id, g.start) for g in seen.segments for i, _ in g.onprem_slots}
    onprem_starts = {(job, at) for _, job, at in starts}
    # (instant, order within it, tie-break, what): runs finish, holds expire, runs start, the pass's calls
    events: list[tuple[datetime, int, int, object]] = [
        (c.at, 3, k, c) for k, c in enumerate(seen.pool_calls) if c.kind == "hold" and c.node_id.startswith(ONPREM)]
    for k, g in enumerate(seen.segments):
        events.append((g.start, 2, k, g))
        if g.end is not None and jobs.finished_at.get(g.job_id) == g.end:
            events.append((g.end, 0, k, g.job_id))  # the job finished: its holds are released
    heapq.heapify(events)
    seq = len(seen.pool_calls) + len(seen.segments)
    while events:
        at, order, _, what = heapq.heappop(events)
        if at > seen.stop:
            break  # the world stops there: a hold running out later has not run out
        if isinstance(what, str):  # a finish, or (with order 1) an expiry "node\0job\0until"
            if order == 1:
                node, job, until = what.split("\0")
                if node in held and job in held[node] and held[node][job][1].isoformat() == until:
                    if (node, job, at) in starts:  # it starts there at this very instant: landed or expired,
                        ties += 1  # as the pool's arrivals at it are scheduled before or after its events
                        continue
                    if (job, at) in onprem_starts:  # it starts on another reserved node then: expired, or
                        elsewhere += 1  # released by the start first (neither)
                        continue
                    del held[node][job]
                    expired += 1
                continue
            for node in held:
                held[node].pop(what, None)
        elif isinstance(what, Segment):
            mine = {f"{ONPREM}{i:04d}" for i, _ in what.onprem_slots}
            for node in mine:
                others = {k: v for k, v in held[node].items() if k != what.job_id}
                if others and what.job_id not in held[node] and exact_estimates and \
                        (what.end or seen.stop) > min(s for s, _ in others.values()):
                    out.append(f"job {what.job_id} started on {node} at {what.start}, held for {sorted(others)} "
                               f"from {min(s for s, _ in others.values())}, and ran to {what.end}")
            if mine:
                landed += sum(what.job_id in held[node] for node in mine)
                for node in held:
                    held[node].pop(what.job_id, None)
        else:
            assert isinstance(what, PoolCall) and what.start_at is not None and what.until is not None
            run = jobs.running(what.job_id, at)
            if not (jobs.queued(what.job_id, at) or (run is not None and run.on_cloud)):
                continue
            count += what.job_id not in held[what.node_id]
            held[what.node_id][what.job_id] = (what.start_at, what.until)
            seq += 1
            heapq.heappush(events, (what.until, 1, seq, f"{what.node_id}\0{what.job_id}\0{what.until.isoformat()}"))
    s = seen.summary
    got = (s["node_holds"], s["node_holds_landed"], s["node_holds_expired"])
    if got not in [(count, landed - k, expired + k + m) for k in range(ties + 1) for m in range(elsewhere + 1)]:
        out.append(f"node holds (taken, landed, expired) {got} != replayed {(count, landed, expired)}"
                   + (f" ({ties} landing at its hold's end, or expiring)" if ties else "")
                   + (f" ({elsewhere} starting elsewhere at its hold's end, or expiring)" if elsewhere else ""))
    return out


def check_preemptions(seen: Observed) -> list[str]:
    """On-prem preemptions, replayed: the pool takes one for a job running on-prem with no checkpoint
    in flight (``onprem_preemptions`` counts them); the job leaves its nodes ``checkpoint_s`` later
    (or finishes first) and is requeued keeping the work done up to the request, so a job stopped
    only so runs, over all its runs, its true runtime plus the checkpoint writes and the reload of
    each restart with work saved (``restart_s``: no work) and no more."""
    jobs, out = _Jobs(seen), []
    write = timedelta(seconds=seen.checkpoint_s)
    asked: dict[int, datetime] = {}  # id of the run -> when its preemption was taken
    for c in seen.pool_calls:
        run = jobs.running(c.job_id, c.at) if c.kind == "preempt" else None
        if run is not None and not run.on_cloud and id(run) not in asked:
            asked[id(run)] = c.at
    if seen.summary["onprem_preemptions"] != len(asked):
        out.append(f"onprem_preemptions {seen.summary['onprem_preemptions']} != preemptions the pool could "
                   f"take {len(asked)}")
    truth = {j.job_id: j.est_runtime_s for j in seen.jobs}
    for job_id, segs in jobs.runs.items():
        for g in segs:
            at = asked.get(id(g))
            if at is None:
                continue
            end, finished = g.end or seen.stop, g is segs[-1] and (g.end is None or job_id in jobs.finished_at)
            if end != at + write and not (end < at + write and finished):
                out.append(f"job {job_id} preempted at {at} left its nodes at {g.end}, not {at + write}")
        if job_id in jobs.finished_at and len(segs) > 1 and all(id(g) in asked for g in segs[:-1]):
            ran = 0.0  # work done: each run's time less its reload (a run resuming saved work has one)
            for g in segs:
                reload_s = seen.restart_s if ran > 0 else 0.0
                ran += max(((asked[id(g)] if g is not segs[-1] else g.end or seen.stop) - g.start).total_seconds()
                           - reload_s, 0.0)
            if abs(ran - truth[job_id]) > 1e-5:
                out.append(f"job {job_id}, preempted on-prem {len(segs) - 1} time(s), did {ran:.3f} s of work "
                           f"with the checkpoints kept; its true runtime is {truth[job_id]} s")
    return out


def check_protected(seen: Observed, protected: frozenset[str]) -> list[str]:
    """Protected nodes are never stopped (``guards.protected_node_ids``): none is terminated (one ends
    only taken back by its cloud, or is up at the stop), drained or checkpointed (policies/guards.py;
    an idle one may be handed a job, a hold)."""
    out = [f"protected {i} was terminated at {n.end}" for i, n in sorted(seen.nodes.items())
           if i in protected and n.end is not None and not n.taken_back]
    out += [f"protected {c.node_id}: the controller asked the pool to {c.kind} it at {c.at}"
            for c in seen.pool_calls if c.node_id in protected and c.kind in ("drain", "checkpoint")]
    return out
