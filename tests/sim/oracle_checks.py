"""An accounting oracle: the simulator's KPIs and conservation laws recomputed from what
``oracle_observe`` recorded, by code of its own (the billing rules as docs/architecture.md and
burster/billing.py's docstring state them, not by calling them). Each check returns the
discrepancies it found, as sentences with the numbers; none is a pass.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from burster.model import JobClass, Market
from burster.reconciler import PassReport
from tests.sim.oracle_actions import (
    check_announced_take_backs,
    check_cordons,
    check_handoffs,
    check_preemptions,
    check_reserved_holds,
    left_to_cloud,
    pool_slips_usd,
)
from tests.sim.oracle_observe import CloudNode, Observed, Segment
from tests.sim.oracle_stranded import check_stranded

USD_TOL = 1e-6  # per ledger entry (quantized to micro-dollars)
S_TOL = 1e-5  # seconds (datetimes hold microseconds)


def billed_s(provider: str, run_s: float, *, taken_back: bool, spot: bool) -> float:
    """AWS and GCP: per second, rounded up, 60 s minimum; Azure: whole minutes run, extra seconds
    free; an AWS spot node its cloud takes back within its first hour: nothing."""
    if run_s <= 0:
        return 0.0
    if provider == "aws" and taken_back and spot and run_s < 3600:
        return 0.0
    if provider == "azure":
        return 60.0 * math.floor(run_s / 60.0 + 1e-9)
    return max(float(math.ceil(run_s - 1e-9)), 60.0)


def node_usd(node: CloudNode, upto: datetime) -> float:
    """What ``node`` cost from its launch to its end, or to ``upto`` if that comes first."""
    end = upto if node.end is None or node.end > upto else node.end
    taken = node.taken_back and end == node.end
    secs = billed_s(node.offering.provider, (end - node.launched_at).total_seconds(), taken_back=taken,
                    spot=node.offering.market is Market.SPOT)
    return node.offering.price_per_hour_usd * secs / 3600.0


def check_ledger(seen: Observed) -> list[str]:
    """Every node launched is charged once, inside its life, for what its cloud bills; the totals
    the summary reports are the ledger's (and what AWS waived for spot it took back), the launches
    its nodes."""
    out: list[str] = []
    ledger = seen.sim.reconciler.state.ledger
    entries: dict[str, list[Any]] = defaultdict(list)
    for e in ledger:
        entries[e.node_id].append(e)
    if set(entries) != set(seen.nodes):
        unbilled, unknown = sorted(set(seen.nodes) - set(entries)), sorted(set(entries) - set(seen.nodes))
        out.append(f"ledger nodes {len(entries)} != nodes launched {len(seen.nodes)}: "
                   f"unbilled {unbilled[:5]}, unknown {unknown[:5]}")
    if seen.summary["launches"] != len(seen.nodes):
        out.append(f"launches {seen.summary['launches']} != nodes seen launched {len(seen.nodes)}")
    by_market: dict[str, float] = defaultdict(float)
    by_provider: dict[str, float] = defaultdict(float)
    for node_id, node in seen.nodes.items():
        end = node.end or seen.stop
        want = node_usd(node, seen.stop)
        by_market[node.offering.market.value] += want
        by_provider[node.offering.provider] += want
        got = entries.get(node_id, [])
        charged = sum(float(e.usd) for e in got)
        if abs(charged - want) > USD_TOL * max(len(got), 1):
            out.append(f"{node_id} ({node.offering.key}, {(end - node.launched_at).total_seconds():.0f} s, "
                       f"{'taken back' if node.taken_back else 'ended by us' if node.end else 'up at the stop'}): "
                       f"charged ${charged:.6f}, its cloud bills ${want:.6f}")
        if got and (min(e.start for e in got), max(e.end for e in got)) != (node.launched_at, end):
            out.append(f"{node_id}: charged for {min(e.start for e in got)}..{max(e.end for e in got)}, "
                       f"its life {node.launched_at}..{end}")
        rec = seen.sim.reconciler.state.nodes.get(node_id)
        if rec is None or (rec.launched_at, rec.ended_at) != (node.launched_at, end):
            out.append(f"{node_id}: recorded as {rec and (rec.launched_at, rec.ended_at)}, "
                       f"its life {node.launched_at}..{end}")
        for e in got:
            if e.start < node.launched_at or e.end > end:
                out.append(f"{node_id}: entry {e.start}..{e.end} outside its life {node.launched_at}..{end}")
            usd = node.offering.price_per_hour_usd * e.billed_s / 3600.0
            if abs(float(e.usd) - usd) > USD_TOL:
                out.append(f"{node_id}: entry ${e.usd} != {e.billed_s} s x ${node.offering.price_per_hour_usd}/h")
    s = seen.summary
    waived = sum(n.offering.price_per_hour_usd / 3600.0 * billed_s(
        n.offering.provider, (n.end - n.launched_at).total_seconds(), taken_back=False, spot=True)
        for n in seen.nodes.values() if n.taken_back and n.end is not None and node_usd(n, n.end) == 0)
    for key, want_usd in (("cloud_usd", sum(by_market.values())), ("cloud_usd_spot", by_market["spot"]),
                          ("cloud_usd_on_demand", by_market["on_demand"]), ("cloud_usd_waived", waived)):
        if abs(s[key] - want_usd) > 0.0051 + USD_TOL * len(ledger):
            out.append(f"{key} {s[key]} != recomputed {want_usd:.4f}")
    for p, usd in by_provider.items():
        if abs(s["cloud_usd_by_provider"].get(p, 0.0) - usd) > 0.0051 + USD_TOL * len(ledger):
            out.append(f"cloud_usd_by_provider[{p}] {s['cloud_usd_by_provider'].get(p)} != recomputed {usd:.4f}")
    return out


def nearest_rank(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(len(ordered), max(1, math.ceil(q / 100 * len(ordered)))) - 1])


def _overlap_s(a: datetime, b: datetime, lo: datetime, hi: datetime) -> float:
    return max((min(b, hi) - max(a, lo)).total_seconds(), 0.0)


def check_jobs(seen: Observed) -> list[str]:
    """Job counts add up; finished jobs ran at least their true runtime; waits, utilization, lost and
    cloud GPU-hours, deadline misses, preemptions and reclaims recomputed from the runs."""
    out: list[str] = []
    s, pool = seen.summary, seen.sim.world.pool  # (the pool itself: the controller's view of it may be down)
    runs: dict[str, list[Segment]] = defaultdict(list)
    for seg in seen.segments:
        runs[seg.job_id].append(seg)
    queued = {d.job_id: d for d in pool.pending()}
    running = {p.job.job_id: p for p in pool.running()}
    ids = {j.job_id for j in seen.jobs}
    if set(runs) - ids or set(queued) - ids or set(running) - ids:
        out.append(f"runs of jobs outside the window: {sorted((set(runs) | set(queued) | set(running)) - ids)[:5]}")
    finished = [j for j in seen.jobs if j.job_id in runs and j.job_id not in queued and j.job_id not in running]
    done = {j.job_id for j in finished}
    never = [j for j in seen.jobs if j.job_id not in runs]
    counts = {"jobs": len(seen.jobs), "jobs_finished": len(finished), "jobs_never_started": len(never),
              "jobs_started_on_cloud": sum(runs[j.job_id][0].on_cloud for j in seen.jobs if j.job_id in runs)}
    out += [f"{k} {s[k]} != recomputed {v}" for k, v in counts.items() if s[k] != v]
    if len(finished) + len(never) + len(running) + len(set(queued) & set(runs)) != len(seen.jobs):
        out.append(f"{len(finished)} finished + {len(never)} never started + {len(running)} running + "
                   f"{len(set(queued) & set(runs))} requeued != {len(seen.jobs)} jobs")
    lost_s = cloud_s = requeued_s = 0.0
    preemptions = reclaims = 0
    for j in seen.jobs:
        segs = runs.get(j.job_id, [])
        closed = [g for g in segs if g.end is not None]
        ran = sum((g.end - g.start).total_seconds() for g in closed if g.end is not None)
        cloud_s += j.gpus * sum((g.end - g.start).total_seconds() for g in closed if g.on_cloud and g.end)
        requeued_s += j.gpus * sum((b.start - a.end).total_seconds() for a, b in itertools.pairwise(segs) if a.end)
        stops = closed if j.job_id in queued or j.job_id in running else closed[:-1]
        for g in stops:
            taken = any((n := seen.nodes.get(i)) is not None and n.taken_back and n.end == g.end for i in g.node_ids)
            preemptions += g.on_cloud and taken
            reclaims += not (g.on_cloud and taken)
        if j.job_id in done:
            saved = j.est_runtime_s
            if ran < j.est_runtime_s - S_TOL or (len(segs) == 1 and abs(ran - j.est_runtime_s) > S_TOL):
                out.append(f"job {j.job_id} ran {ran:.3f} s in {len(segs)} run(s); true runtime {j.est_runtime_s} s")
        else:
            saved = queued[j.job_id].done_s if j.job_id in queued else \
                running[j.job_id].job.done_s if j.job_id in running else 0.0
        lost_s += j.gpus * (ran - saved)
    for key, got, want in (("lost_gpu_hours", s["lost_gpu_hours"], lost_s / 3600),
                           ("cloud_gpu_hours", s["cloud_gpu_hours"], cloud_s / 3600),
                           ("requeued_wait_gpu_hours", s["requeued_wait_gpu_hours"], requeued_s / 3600)):
        if abs(got - want) > 0.0051:
            out.append(f"{key} {got} != recomputed {want:.4f}")
    if (s["preemptions"], s["reclaims"]) != (preemptions, reclaims):
        out.append(f"preemptions, reclaims {s['preemptions']}, {s['reclaims']} != recomputed {preemptions}, {reclaims}")
    waits = [((runs[j.job_id][0].start if j.job_id in runs else seen.stop) - j.submitted_at).total_seconds()
             for j in seen.jobs]
    for q in (50, 95, 99):
        if abs(s[f"wait_p{q}_s"] - nearest_rank(waits, q)) > S_TOL:
            out.append(f"wait_p{q}_s {s[f'wait_p{q}_s']} != recomputed {nearest_rank(waits, q)}")
    out += _check_utilization(seen, s["onprem_utilization"])
    out += _check_deadlines(seen, finished, runs)
    return out


def _check_utilization(seen: Observed, reported: float) -> list[str]:
    upto = min(seen.stop, seen.window_end)
    busy = sum(g.gpus * _overlap_s(g.start, g.end or seen.stop, seen.window_start, upto)
               for g in seen.segments if not g.on_cloud)
    denom = seen.sim.pool_gpus * (upto - seen.window_start).total_seconds()
    want = busy / denom if denom else 0.0
    return [] if abs(reported - want) <= 0.00006 else [f"onprem_utilization {reported} != recomputed {want:.6f}"]


def _check_deadlines(seen: Observed, finished: Sequence[Any], runs: dict[str, list[Segment]]) -> list[str]:
    done = {j.job_id for j in finished}
    misses = hard = 0
    for j in seen.jobs:
        if j.deadline is None or j.job_class is JobClass.BEST_EFFORT:
            continue
        at = runs[j.job_id][-1].end if j.job_id in done else seen.stop
        if at is not None and at > j.deadline:
            misses += 1
            hard += j.job_class is JobClass.STRICT
    s = seen.summary
    if (s["deadline_misses"], s["hard_deadline_misses"]) != (misses, hard):
        return [f"deadline misses (all, hard) {s['deadline_misses']}, {s['hard_deadline_misses']} != "
                f"recomputed {misses}, {hard}"]
    return []


def period_began(period: str, now: datetime) -> datetime | None:
    """The start of the UTC calendar budget period holding ``now`` (docs/policy.md, Guards): the
    day, the week from Monday, the month; None for ``all``."""
    if period == "all":
        return None
    utc = now.astimezone(UTC)
    day = datetime(utc.year, utc.month, utc.day, tzinfo=UTC)
    return {"day": day, "week": day - timedelta(days=day.weekday()), "month": day.replace(day=1)}[period]


def _in_period(usd: float, start: datetime, end: datetime, since: datetime | None) -> float:
    """The share of ``usd``, spent evenly over start..end, at or after ``since`` (docs/policy.md)."""
    if since is None or start >= since:
        return usd
    return usd * _overlap_s(start, end, since, end) / (end - start).total_seconds() if end > start else 0.0


def node_parts(node: CloudNode, upto: datetime, runs: Sequence[Segment],
               jobs: dict[str, Any]) -> list[tuple[str, datetime, datetime, float]]:
    """(team, start, end, USD) of each part of ``node``'s bill up to ``upto`` (docs/policy.md, Guards):
    it serves the team (project, sprint) it was launched for until a job of another starts on it, then
    that job's, and so on (idle time after a job included); each part is what its cloud bills for the
    run to the part's end less to its start, the last part by its own end (taken back or not; taken
    back free, every part is free).
    ``runs``: the runs on the node, by start; ``jobs``: the trace's jobs by id."""
    holder, start = (node.team, node.project, node.sprint), node.launched_at
    end = upto if node.end is None or node.end > upto else node.end
    spot = node.offering.market is Market.SPOT
    price, out = node.offering.price_per_hour_usd, []
    billed_before = 0.0
    for g in runs:
        j = jobs[g.job_id]
        if g.start >= end or (j.team, j.project, j.sprint) == holder:
            continue
        upto_s = billed_s(node.offering.provider, (g.start - node.launched_at).total_seconds(), taken_back=False,
                          spot=spot)
        out.append((holder[0], start, g.start, price * (upto_s - billed_before) / 3600.0))
        holder, start, billed_before = (j.team, j.project, j.sprint), g.start, upto_s
    total = node_usd(node, upto)
    if total == 0.0:  # taken back free (AWS spot, its first hour): no part of it is billed
        return [(team, a, b, 0.0) for team, a, b, _ in out] + [(holder[0], start, end, 0.0)]
    out.append((holder[0], start, end, total - price * billed_before / 3600.0))
    return out


def runs_on_nodes(seen: Observed, *, seen_by_a_pass: bool = False) -> dict[str, list[Segment]]:
    """The runs on each cloud node so far, by start; with ``seen_by_a_pass``, only those a pass saw
    running (the pool reports running jobs only: a run that started and left between two passes,
    on a node that then ended, is seen by no controller and its part billed to whom the node served)."""
    out: dict[str, list[Segment]] = defaultdict(list)
    for g in sorted((g for g in seen.segments if g.on_cloud), key=lambda g: g.start):
        if seen_by_a_pass and g.end is not None and (g.job_id, g.start) not in seen.runs_seen:
            continue
        for node_id in g.node_ids:
            out[node_id].append(g)
    return out


def billed_in_period(seen: Observed, now: datetime, period: str, *, announced_free: bool = False) -> dict[str, float]:
    """What the clouds billed by ``now`` that fell in the budget period holding it, by the team each
    part of a node's run served (``node_parts``): the part of each in the period pro rata by time.
    ``announced_free``: a node left to its cloud to take back free, as a notice announced
    (``oracle_actions.left_to_cloud``), counts nothing (terminated it would be billed:
    docs/architecture.md); ``oracle_actions.check_announced_take_backs`` checks it went so."""
    since = period_began(period, now)
    billed: dict[str, float] = defaultdict(float)
    runs, jobs = runs_on_nodes(seen, seen_by_a_pass=True), {j.job_id: j for j in seen.jobs}
    for node in seen.nodes.values():
        if announced_free and left_to_cloud(node, now):
            continue
        n = seen.known_at(node, now) if seen.known_at else node
        if n is not None and n.launched_at <= now and (since is None or n.end is None or n.end > since):
            for team, start, end, usd in node_parts(n, now, runs.get(n.node_id, ()), jobs):
                billed[team] += _in_period(usd, start, end, since)
    return billed


def budget_per_pass(total_usd: float | None, team_usd: dict[str, float], period: str = "all") -> Any:
    """A ``per_pass`` check: at every pass neither the ledger nor what the clouds billed so far
    (nodes still up included; one its cloud took back free as announced: nothing once announced)
    passes the hard budgets in the budget period; a team's, less the runs
    the pool started for it on other teams' nodes that the stop ended within a pass, or as soon as
    a failing cloud API let it (``pool_slips_usd``; the ledger's, its nodes as the controller could
    know them: tests/sim/oracle_fault_view.py)."""

    def check(seen: Observed, report: PassReport) -> list[str]:
        now = report.now
        since = period_began(period, now)
        charged: dict[str, float] = defaultdict(float)
        entries: dict[str, int] = defaultdict(int)  # each rounded to a micro-dollar: the ledger's tolerance
        for e in seen.sim.reconciler.state.ledger:
            charged[e.team] += _in_period(float(e.usd), e.start, e.end, since)
            entries[e.team] += 1
        billed = billed_in_period(seen, now, period, announced_free=True)
        slips: dict[str, dict[str, float]] = {"ledger": {}, "cloud bill": {}}
        if any(spent[t] > b + 1e-6 for spent in (charged, billed) for t, b in team_usd.items()):
            from tests.sim.oracle_fault_view import as_knowable  # (it imports this module)

            # only then: it reads every node's runs; the ledger as the controller could know the nodes
            slips = {"ledger": pool_slips_usd(as_knowable(seen), now, period, seen.tick_s),
                     "cloud bill": pool_slips_usd(seen, now, period, seen.tick_s)}
        out = []
        for what, spent in (("ledger", charged), ("cloud bill", billed)):
            slipped, n = slips[what], entries if what == "ledger" else defaultdict(int)
            if total_usd is not None and sum(spent.values()) > total_usd + USD_TOL * (sum(n.values()) + 1):
                out.append(f"{now}: {what} ${sum(spent.values()):.2f} past the hard budget ${total_usd:.2f}")
            out += [f"{now}: team {t}'s {what} ${spent[t]:.2f} past its budget ${b:.2f}"
                    + (f" (${slipped[t]:.2f} of it runs the pool started, ended within a pass)" if t in slipped else "")
                    for t, b in team_usd.items() if spent[t] - slipped.get(t, 0.0) > b + USD_TOL * (n[t] + 1)]
        return out
    return check


def check_spend_seen(seen: Observed, period: str) -> list[str]:
    """The spend each pass gave the policy (``Snapshot.spend``, what the hard budgets are held to)
    is what the clouds had billed in the period by then, in all and by team (each node's bill so far
    by its cloud's rule, the part in the period pro rata by time; a node ended in the pass's own
    actions counted as still up then, as it was)."""
    out: list[str] = []
    tol = USD_TOL * (len(seen.nodes) + 1)
    for now, spend in seen.spends:
        if spend.period != period:
            out.append(f"{now}: spend for period {spend.period!r}, configured {period!r}")
        billed = billed_in_period(seen, now, period)
        got = dict(spend.by_team_usd)
        total = sum(billed.values())
        if abs(spend.total_usd - total) > tol:
            out.append(f"{now}: spend seen ${spend.total_usd:.6f} != billed in the {period} ${total:.6f}")
        out += [f"{now}: team {t!r}'s spend seen ${got.get(t, 0.0):.6f} != billed in the {period} ${billed[t]:.6f}"
                for t in sorted(set(got) | set(billed)) if abs(got.get(t, 0.0) - billed[t]) > tol]
        if len(out) > 20:
            break
    return out


def check_placements(seen: Observed, gpus_per_node: int) -> list[str]:
    """No job starts before it is submitted; a cloud run lies within the life of each of its nodes,
    one run at a time on a node; reserved nodes never hold more GPUs than they have."""
    out: list[str] = []
    submitted = {j.job_id: j.submitted_at for j in seen.jobs}
    on_node: dict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
    events: list[tuple[datetime, int, int]] = []  # (instant, +/- GPUs, reserved node index)
    for g in seen.segments:
        end = g.end or seen.stop
        if g.start < submitted[g.job_id]:
            out.append(f"job {g.job_id} started at {g.start}, before its submission {submitted[g.job_id]}")
        if g.on_cloud:
            for i in g.node_ids:
                n = seen.nodes[i]
                if g.start < n.launched_at or end > (n.end or seen.stop):
                    out.append(f"job {g.job_id} ran on {i} {g.start}..{end}, outside its life {n.launched_at}..{n.end}")
                on_node[i].append((g.start, end))
        elif sum(gpus for _, gpus in g.onprem_slots) != g.gpus:
            out.append(f"job {g.job_id} of {g.gpus} GPUs placed on reserved slots {g.onprem_slots}")
        for i, gpus in g.onprem_slots:
            events += [(g.start, gpus, i), (end, -gpus, i)]
    for i, spans in on_node.items():
        spans.sort()
        out += [f"{i} ran two jobs at once: {a} and {b}" for a, b in itertools.pairwise(spans) if b[0] < a[1]]
    used: dict[int, int] = defaultdict(int)
    for at, gpus, i in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts at one instant
        used[i] += gpus
        if used[i] > gpus_per_node:
            out.append(f"reserved node {i} held {used[i]} GPUs at {at} (it has {gpus_per_node})")
    return out


def all_checks(seen: Observed, billed_as: Observed | None = None) -> list[str]:
    """Every check above and oracle_actions', and what the per-pass check found while the simulation ran;
    the ledger and the spend held to ``billed_as`` (the nodes as the controller could know them, when
    its clouds' API failed: tests/sim/oracle_fault_view.py), by default ``seen``."""
    sizes = {n.gpus for n in seen.sim.reconciler.pool.nodes()}
    gpus_per_node = max(sizes, default=0)
    billed = billed_as or seen
    return [*check_ledger(billed), *check_jobs(seen), *check_placements(seen, gpus_per_node), *check_stranded(seen),
            *check_spend_seen(billed, seen.sim.reconciler.budget_period), *check_handoffs(seen),
            *check_reserved_holds(seen, exact_estimates=seen.exact_estimates), *check_preemptions(seen),
            *check_announced_take_backs(seen), *check_cordons(seen),
            *seen.checks_per_pass]
