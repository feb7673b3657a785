"""What the policy learns from finished jobs about the runtime estimates it is given.

The pool reports true / estimated runtime for the jobs it finished last (``Snapshot.runtime_ratios``;
Slurm: elapsed / time limit). A systematic error is corrected in every estimate the policy reads
(``runtime_correction``, ``corrected``: time limits twice the runtimes make deadlines look out of
reach and costs twice what they are); the spread left decides how much of an estimate-based wait
budget a deferring job may use (``estimate_scale``) and how long a deadline job not running yet is
taken to run when its market is chosen (``runs_long``, ``taken_long``). Estimates are shortened
only as far as three jobs in four ran within: where some users set careful limits and others set
loose ones, shortening by the median would make the careful users' deadline jobs look safe when
they are not. A team with enough finished jobs of its own (``Snapshot.team_runtime_ratios``) has
its estimates corrected by its own ratios (``runtime_corrections``): careful and loose teams are
told apart, and the spread left is what is left once each team's error is taken out
(``Snapshot.runtime_ratio_teams``). A job still running past its estimate (on reserved or cloud
nodes) is believed to need what the finished jobs that outlived as much needed (their median;
``OVERRUN_STEP`` times it, then that again, until enough have), not to be ending at every instant
(``believe_overruns``, ``overrun_factor``); so is a requeued job an earlier attempt of which ran
past it (``Demand.reached_s``). A pending job that resumes saved work is taken to run its restart's
reload longer (``with_reloads``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from burster.model import Demand, JobClass, Placement, Snapshot

MIN_RATIOS = 20  # finished jobs needed before their runtime ratios are used (until then: trusted as given)
TEAM_RATIOS = 100  # a team's own finished jobs needed to correct its estimates apart (fewer: sampling noise)
TRUSTED_WITHIN = 1.25  # ratios within [1/1.25, 1.25] of the truth are noise in the sample: estimates stand
SHORTEN_QUANTILE = 0.75  # estimates are shortened only to what this share of finished jobs ran within
MIN_FACTOR = 0.05  # estimates are never corrected to less than this share of what they say
OVERRUN_SEEN = 10  # finished jobs that outlived a believed step, needed to learn the next one from them
OVERRUN_QUANTILE = 0.5  # of their true / estimated runtimes: the next step
OVERRUN_STEP = 1.5  # the next step where too few did: 1.5x the step before (1.5x, 2.25x, ... with none)


def runtime_correction(ratios: Sequence[float]) -> float:
    """The factor every estimate is multiplied by, to two decimals, from the true / estimated runtimes
    of recently finished jobs: their median where it is above ``TRUSTED_WITHIN`` (estimates run
    short), their ``SHORTEN_QUANTILE`` quantile where that is below 1 / ``TRUSTED_WITHIN`` (three
    jobs in four ran well under their estimates), else 1; 1 with fewer than ``MIN_RATIOS`` of them."""
    return 1.0 if len(ratios) < MIN_RATIOS else _correction(sorted_ratios(ratios))


def _correction(ordered: Sequence[float]) -> float:
    """``runtime_correction`` of sorted ratios, enough of them."""
    median, high = ordered[len(ordered) // 2], _quantile(ordered, SHORTEN_QUANTILE)
    if median > TRUSTED_WITHIN:
        return round(median, 2)
    # (jobs that ran almost nothing, a batch that failed at once, must not make every estimate zero)
    return max(round(high, 2), MIN_FACTOR) if high < 1 / TRUSTED_WITHIN else 1.0


Corrections = tuple[float, dict[str, float]]  # the factor for every estimate; the teams' own, where known
TeamRatios = tuple[tuple[str, tuple[float, ...]], ...]  # per team, its own last jobs' ratios


def runtime_corrections(ratios: Sequence[float], team_ratios: TeamRatios = ()) -> Corrections:
    """The factor for every estimate (``runtime_correction`` of ``ratios``) and, for each team with at
    least ``TEAM_RATIOS`` finished jobs of its own (``team_ratios``, ``Snapshot.team_runtime_ratios``),
    the factor of its own ratios."""
    if _CORRECTIONS and _CORRECTIONS[0][0] is ratios and _CORRECTIONS[0][1] is team_ratios:
        return _CORRECTIONS[0][2]  # the pool hands the same tuples until a job finishes
    by_team = {team: _correction_of(own) for team, own in team_ratios if team and len(own) >= TEAM_RATIOS}
    out = runtime_correction(ratios), by_team
    _CORRECTIONS[:] = [(ratios, team_ratios, out)]
    return out


_CORRECTIONS: list[tuple[Sequence[float], TeamRatios, Corrections]] = []
# a team's ratios (by id: the pool hands a team the same tuple until one of its jobs finishes) -> its factor
_TEAM_FACTORS: dict[int, tuple[tuple[float, ...], float]] = {}


def _correction_of(own: tuple[float, ...]) -> float:
    """``runtime_correction`` of one team's ratios, kept while the pool hands the same tuple."""
    hit = _TEAM_FACTORS.get(id(own))
    if hit is not None and hit[0] is own:
        return hit[1]
    if len(_TEAM_FACTORS) > 1024:
        _TEAM_FACTORS.clear()
    factor = _correction(sorted(own))
    _TEAM_FACTORS[id(own)] = (own, factor)
    return factor


# the corrected jobs and placements of the last call, by the original's id (the pool hands the same
# objects until they change): rebuilding them every pass was half the policy's time under biased estimates
_FIXED: list[tuple[Corrections, dict[int, tuple[object, object]]]] = []
_T = TypeVar("_T", Demand, Placement)
# and the whole queue and running set of the last call (most passes see both unchanged)
_WHOLE: list[tuple[Corrections, tuple[Demand, ...], tuple[Demand, ...], tuple[Placement, ...],
                   tuple[Placement, ...]]] = []


def corrected(snapshot: Snapshot, corrections: Corrections) -> Snapshot:
    """``snapshot`` with every pending and running job's estimate times its team's factor, or the
    factor for all (at least 60 s; running jobs' expected ends follow), and each ratio relative to
    the estimates corrected alike (the spread left)."""
    factor, by_team = corrections
    if factor == 1.0 and all(f == 1.0 for f in by_team.values()):
        return snapshot
    ratios = _residuals(snapshot.runtime_ratios, snapshot.runtime_ratio_teams, corrections)
    whole = _WHOLE[0] if _WHOLE and _WHOLE[0][0] == corrections else None
    if whole is not None and whole[1] is snapshot.pending and whole[3] is snapshot.running:
        return replace(snapshot, pending=whole[2], running=whole[4], runtime_ratios=ratios)
    last = _FIXED[0][1] if _FIXED and _FIXED[0][0] == corrections else {}
    memo: dict[int, tuple[object, object]] = {}  # the jobs and placements of the last call, fixed the same way

    def fix(job: Demand) -> Demand:
        f = by_team.get(job.team, factor)
        return job if f == 1.0 else job.with_estimate(max(60.0, job.est_runtime_s * f))

    def kept(item: _T, build: Callable[[_T], _T]) -> _T:
        hit = last.get(id(item))
        out = hit[1] if hit is not None and hit[0] is item else build(item)
        memo[id(item)] = (item, out)
        return out  # type: ignore[return-value]

    pending = tuple(kept(j, fix) for j in snapshot.pending)
    running = tuple(kept(p, lambda p: replace(p, job=fix(p.job))) for p in snapshot.running)
    _FIXED[:] = [(corrections, memo)]
    _WHOLE[:] = [(corrections, snapshot.pending, pending, snapshot.running, running)]
    return replace(snapshot, pending=pending, running=running, runtime_ratios=ratios)


def _residuals(ratios: tuple[float, ...], teams: tuple[str, ...], corrections: Corrections) -> tuple[float, ...]:
    """Each ratio over the factor its team's estimates are corrected by; the same tuple while the
    pool hands the same ratios (the belief chain and sorted ratios are kept per tuple)."""
    if _RESIDUALS and _RESIDUALS[0][0] is ratios and _RESIDUALS[0][1] is teams and _RESIDUALS[0][2] == corrections:
        return _RESIDUALS[0][3]
    factor, by_team = corrections
    if len(teams) == len(ratios):
        out = tuple(r / by_team.get(t, factor) for r, t in zip(ratios, teams, strict=True))
    else:
        out = tuple(r / factor for r in ratios)
    _RESIDUALS[:] = [(ratios, teams, corrections, out)]
    return out


_RESIDUALS: list[tuple[tuple[float, ...], tuple[str, ...], Corrections, tuple[float, ...]]] = []


_RELOADED: list[tuple[float, dict[int, tuple[Demand, Demand]]]] = []  # the last call's jobs, reloaded


def with_reloads(snapshot: Snapshot, reload_s: float) -> Snapshot:
    """``snapshot`` with each pending job that resumes saved work (some done, some left) taken to run
    ``reload_s`` longer: its restart reloads the checkpoint before it works on (``cost.
    restart_overhead_s``; a running job's ``Placement.reload_s`` says so of its run)."""
    if reload_s <= 0 or not any(j.resumes for j in snapshot.pending):
        return snapshot
    last = _RELOADED[0][1] if _RELOADED and _RELOADED[0][0] == reload_s else {}
    memo: dict[int, tuple[Demand, Demand]] = {}  # the same job object gets the same copy at every pass

    def reloaded(job: Demand) -> Demand:
        if not job.resumes:
            return job
        hit = last.get(id(job))
        out = hit[1] if hit is not None and hit[0] is job else job.with_estimate(job.est_runtime_s + reload_s)
        memo[id(job)] = (job, out)
        return out

    pending = tuple(reloaded(j) for j in snapshot.pending)
    _RELOADED[:] = [(reload_s, memo)]
    return replace(snapshot, pending=pending)


def estimate_scale(ratios: Sequence[float], quantile: float) -> float:
    """The share of an estimate-based wait budget a deferring job may use: the ``quantile`` of true /
    estimated runtime over recently finished jobs (``Snapshot.runtime_ratios``), at most 1; 1 until
    ``MIN_RATIOS`` jobs have finished. Exact estimates give 1; time limits twice the runtime, 0.5."""
    if len(ratios) < MIN_RATIOS:
        return 1.0
    return min(1.0, _quantile(sorted_ratios(ratios), quantile))


def runs_long(ratios: Sequence[float], quantile: float) -> float:
    """How many times its estimate a job is taken to run when a deadline job's market is chosen: the
    ``quantile`` of true / estimated runtime over recently finished jobs (``Snapshot.runtime_ratios``),
    at least 1; 1 until ``MIN_RATIOS`` jobs have finished, or with ``quantile`` 0 (off)."""
    if quantile <= 0.0 or len(ratios) < MIN_RATIOS:
        return 1.0
    return max(1.0, _quantile(sorted_ratios(ratios), quantile))


def taken_long(job: Demand, factor: float) -> Demand:
    """``job`` taken to run ``factor`` times its estimate, if it has a deadline to meet (a
    best-effort job's market does not depend on how long it runs). The work it has done stays: the
    spread is of whole runs, so a job requeued part-way is taken to overrun by as much as before."""
    if factor == 1.0 or job.deadline is None or job.job_class is JobClass.BEST_EFFORT:
        return job
    return job.with_estimate(job.est_runtime_s * factor)


def believe_overruns(snapshot: Snapshot) -> tuple[Snapshot, datetime | None]:
    """``snapshot`` with each running job that has run past its estimate believed to need the first
    step of the belief chain (``overrun_factor``) that ends at or after now, and each pending job
    an earlier attempt of which ran past it believed alike (``_believe_requeued``), as is each such
    job running again on the cloud (at least), and the instant just after the first belief changes:
    a job outlives its estimate or a believed step (None: nothing runs). Running again on-prem, such
    a job keeps its estimate (believed longer, it moved the projection's waits: +1.8 % cloud $ over
    84 runs); the preempt rule prices it as believed requeued when it weighs sending it away.

    Taken as ending now, an overrunning reserved job would make the projection promise its GPUs at
    every instant, and the pending jobs' expected waits would stop falling in step with their waits
    so far (``policies.quiet``: decide every tick); an overrunning cloud job would look done, so no
    deadline switch, move or budget would count its remaining work. The stepped belief holds
    between its steps, so a quiet policy names the next step as a wake; it is also the likelier
    future: a job that outran its estimate usually runs on for a while (a median 40 % past it under
    lognormal estimate error of sigma 0.5, 96 % under sigma 1), as the finished jobs show."""
    snapshot = _believe_requeued(snapshot)
    now_ts = snapshot.now.timestamp()
    first, overrun = math.inf, False
    for p in snapshot.running:
        if p.stopping_at is None:
            if p.ends_at_ts >= now_ts and not _overran_before(p):  # past its end, it is believed to run on
                first = min(first, p.ends_at_ts)
            else:
                overrun = True
    if not overrun:
        return snapshot, _just_after(first)
    running: list[Placement] = []
    ordered = sorted_ratios(snapshot.runtime_ratios)
    last = _BELIEVED[0] if _BELIEVED else {}
    _BELIEVED[:] = [{}]
    for p in snapshot.running:
        if (p.ends_at_ts >= now_ts and not _overran_before(p)) or p.stopping_at is not None:
            running.append(p)
            continue
        est = p.job.est_runtime_s
        needed = p.job.done_s + now_ts - p.working_since_ts  # work it has had, at least
        factor = overrun_factor(ordered, needed / est)
        if p.on_cloud:  # at least as believed requeued, if an earlier attempt ran past its estimate
            factor = max(factor, _requeued_step(p.job, ordered))
        hit = last.get(id(p))
        if hit is not None and hit[0] is p and hit[1] == factor and hit[2].ends_at_ts >= now_ts:
            q = hit[2]  # the same belief as at an earlier pass of this step (built the same way)
        else:
            step = factor
            q = replace(p, job=p.job.with_estimate(est * step))
            while q.ends_at_ts < now_ts:  # float rounding at a step's edge: the next step
                step = overrun_factor(ordered, step, beyond=True)
                q = replace(p, job=p.job.with_estimate(est * step))
        _BELIEVED[0][id(p)] = (p, factor, q)
        running.append(q)
        first = min(first, q.ends_at_ts)
    return replace(snapshot, running=tuple(running)), _just_after(first)


def _overran_before(p: Placement) -> bool:
    """Whether ``p`` runs on the cloud again after an earlier attempt ran past its estimate."""
    return p.on_cloud and p.job.reached_s > p.job.est_runtime_s


# the beliefs of the last call, by placement (the pool hands the same Placement while a run holds):
# rebuilding them every pass was a sixth of the policy's time under wrong estimates
_BELIEVED: list[dict[int, tuple[Placement, float, Placement]]] = []


def _believe_requeued(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with each pending job whose earlier attempt ran past its estimate believed as
    ``believed_requeued`` says; requeued, it would otherwise look as short as its estimate, or done.
    Constant until the job runs again (no wake)."""
    if not any(max(j.done_s, j.reached_s) > j.est_runtime_s for j in snapshot.pending):
        return snapshot
    ordered = sorted_ratios(snapshot.runtime_ratios)
    return replace(snapshot, pending=tuple(believed_requeued(job, ordered) for job in snapshot.pending))


def believed_requeued(job: Demand, ordered: Sequence[float]) -> Demand:
    """``job``, if its work so far (saved or lost: ``Demand.reached_s``, ``done_s``) ran past its
    estimate, believed to need the first step of the belief chain beyond that work (``ordered``:
    sorted ``Snapshot.runtime_ratios``), as it was believed while it ran; else ``job``."""
    step = _requeued_step(job, ordered)
    return job if step == 1.0 else job.with_estimate(job.est_runtime_s * step)


def _requeued_step(job: Demand, ordered: Sequence[float]) -> float:
    """The step of the belief chain ``believed_requeued`` believes ``job`` at (1: its estimate)."""
    need, est = max(job.done_s, job.reached_s), job.est_runtime_s
    if need <= est:
        return 1.0
    step = overrun_factor(ordered, need / est)  # at or past the ratio, which may round up to a step
    while est * step <= need:  # a step the work reached: the next one
        step = overrun_factor(ordered, step, beyond=True)
    return step


def overrun_factor(ordered: Sequence[float], reached: float, *, beyond: bool = False) -> float:
    """How many times its estimate a job that has run ``reached`` times it (``beyond``: more than
    that) is believed to need: the first step of the belief chain at or past it (``beyond``: past
    it). The chain starts at the estimate (1); each next step is the ``OVERRUN_QUANTILE`` of the
    true / estimated runtimes of the recently finished jobs (``ordered``: sorted
    ``Snapshot.runtime_ratios``) that outlived the step before, while at least ``OVERRUN_SEEN`` did,
    then ``OVERRUN_STEP`` times the step before. So a job's belief changes only when it outlives it
    (a wake the policy names) or when a job finishes (an event), never in between."""
    chain = _chain(ordered)
    while chain[-1] < reached or (beyond and chain[-1] == reached):
        chain.append(_next_step(ordered, chain[-1]))
    i = bisect.bisect_right(chain, reached) if beyond else bisect.bisect_left(chain, reached)
    return chain[i]


def _next_step(ordered: Sequence[float], step: float) -> float:
    """The belief chain's step after ``step`` (``overrun_factor``)."""
    outlived = len(ordered) - bisect.bisect_right(ordered, step)
    if outlived < OVERRUN_SEEN:
        return step * OVERRUN_STEP
    return ordered[len(ordered) - outlived + min(int(OVERRUN_QUANTILE * outlived), outlived - 1)]


_CHAIN: list[tuple[Sequence[float], list[float]]] = []


def _chain(ordered: Sequence[float]) -> list[float]:
    """The belief chain of ``ordered`` worked out so far (kept while the same sorted ratios are)."""
    if not _CHAIN or _CHAIN[0][0] is not ordered:
        _CHAIN[:] = [(ordered, [1.0])]
    return _CHAIN[0][1]


def _just_after(ts: float) -> datetime | None:
    """A wake for the instant a job is past ``ts``, its end (None for inf): ``ts`` rounded down to
    the microsecond, so never after the first tick past it (``fromtimestamp`` rounds to the
    nearest, which can land past it); a pass on a tick at ``ts`` itself decides nothing and wakes
    again."""
    return None if ts == math.inf else _EPOCH + timedelta(microseconds=math.floor(ts * 1_000_000))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values (the lower one, no interpolation)."""
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


_LAST: list[tuple[Sequence[float], list[float]]] = []


def sorted_ratios(ratios: Sequence[float]) -> list[float]:
    """``sorted(ratios)``, kept while the pool hands out the same tuple (until a job finishes); the
    list is shared: not to be changed."""
    if _LAST and _LAST[0][0] is ratios:
        return _LAST[0][1]
    ordered = sorted(ratios)
    _LAST[:] = [(ratios, ordered)]
    return ordered
