"""The cost model: what a GPU-hour costs on each market, with rework, billing rules and waiting.

- On-prem reserved GPUs cost their amortized rate whether used or not, so their *marginal* cost is 0.
- On-demand costs its price for the billed duration.
- Spot costs its price for the billed duration of the work *plus the expected rework*:
  interruptions/h x runtime_h x (work lost + restart_overhead), where a gang of k nodes is
  interrupted k times as often as one node (any member's interruption stops it). The work lost is
  checkpoint_interval/2 on average, or nothing where the cloud's interruption notice is long
  enough for the checkpoint handshake (AWS's two-minute warning against a 60 s checkpoint write;
  not GCP's or Azure's 30 s).
- Billing granularity per cloud: see ``burster.billing`` (AWS and GCP per second with a 60 s
  minimum; Azure per full minute, with the source cited there).
- Waiting has a cost: GPUs x hours waited x the value of a GPU-hour x (1 + priority), plus a
  penalty when waiting makes a job miss its deadline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from burster.billing import BILLING, DEFAULT_BILLING, BillingRule, billing_rule
from burster.model import Demand, JobClass, Market, Offering

__all__ = ["BILLING", "DEFAULT_BILLING", "BillingRule", "CostModel", "CostParams", "amortized_usd_per_gpu_hour"]


def amortized_usd_per_gpu_hour(capex_usd: float, lifetime_years: float, opex_usd_per_year: float,
                               gpus: int) -> float:
    """Reserved on-prem cost of one GPU-hour: (capex / lifetime + yearly opex) / GPU-hours per year."""
    if lifetime_years <= 0 or gpus <= 0:
        raise ValueError("lifetime_years and gpus must be positive")
    per_year = capex_usd / lifetime_years + opex_usd_per_year
    return per_year / (gpus * 365 * 24)


@dataclass(frozen=True, slots=True)
class CostParams:
    """Inputs of the cost model (from the ``[cost]`` config section)."""

    onprem_usd_per_gpu_hour: float = 1.20
    restart_overhead_s: float = 300.0
    wait_value_usd_per_gpu_hour: float = 2.5
    deadline_miss_usd: float = 500.0
    spot_interruptions_per_hour: float = 0.05
    launch_latency_s: float = 180.0
    # spread of boot + join times: the log-normal sigma around launch_latency_s (0: every boot takes exactly that)
    launch_latency_sigma: float = 0.25
    # interruptions per hour by offering key or zone, e.g. measured from spot traces
    interruption_rates: Mapping[str, float] = field(default_factory=dict)
    # seconds a job needs to write a checkpoint when signalled
    checkpoint_write_s: float = 60.0
    # seconds of warning before a spot node is reclaimed, per provider (AWS: the two-minute spot
    # interruption notice; GCP: 30 s preemption notice; Azure: Scheduled Events Preempt, 30 s)
    interruption_notice_s: Mapping[str, float] = field(
        default_factory=lambda: {"aws": 120.0, "gcp": 30.0, "azure": 30.0})


# the most a forecast bill can fall below its run (``BillingRule.expected_billed_s``: half an increment
# where a cloud rounds down)
MAX_ROUND_DOWN_S = max((r.increment_s / 2 for r in (*BILLING.values(), DEFAULT_BILLING) if not r.round_up),
                       default=0.0)


def checkpoint_due_s(write_s: float) -> float:
    """Seconds a checkpoint of ``write_s`` expected seconds is given to finish: as long again, at least
    a minute, of margin (``CostModel.checkpoint_deadline``; the grace of a budget stop)."""
    return write_s + max(write_s, 60.0)


class CostModel:
    """Prices work on offerings and the cost of waiting; pure arithmetic, no I/O."""

    def __init__(self, params: CostParams | None = None) -> None:
        self.p = params or CostParams()
        self._run_rates: dict[tuple[int, int, float, str, float], float] = {}
        self._rework: dict[tuple[str, float, int], float] = {}  # rework_fraction memo
        self._gang: dict[tuple[str, float, int], tuple[float, float, bool]] = {}  # _gang_terms memo

    # --- rates ---------------------------------------------------------------------------------
    def interruption_rate(self, offering: Offering) -> float:
        """Expected interruptions per node-hour; 0 for on-demand and reserved."""
        if offering.market is not Market.SPOT:
            return 0.0
        rates = self.p.interruption_rates
        return rates.get(offering.key, rates.get(offering.zone, self.p.spot_interruptions_per_hour))

    def checkpoint_deadline(self, now: datetime) -> datetime:
        """When a checkpoint asked for at ``now`` is given up on (its node drained without it, the work
        since the job's last checkpoint lost): its expected write (``checkpoint_write_s``) plus as long
        again, at least a minute, of margin. One rule for every voluntary checkpoint (move back,
        consolidation, deadline switch, preemption); an interruption's is its notice's end."""
        return now + timedelta(seconds=checkpoint_due_s(self.p.checkpoint_write_s))

    @property
    def pause_s(self) -> float:
        """How long a job stopped for a move makes no progress: the checkpoint write and the restart
        (its new nodes, if any, boot while it still runs)."""
        return self.p.checkpoint_write_s + self.p.restart_overhead_s

    def saves_on_notice(self, offering: Offering) -> bool:
        """Whether an interruption notice leaves time to write a checkpoint (no work is lost)."""
        return self.p.interruption_notice_s.get(offering.provider, 0.0) >= self.p.checkpoint_write_s

    def notice_loss_s(self, offering: Offering, checkpoint_interval_s: float) -> float:
        """Run time one interruption on ``offering`` takes from a job checkpointing every
        ``checkpoint_interval_s``, before its restart: the checkpoint written on notice where the notice
        leaves time for it (the job saves the work done at the notice, then writes), else half an
        interval of unsaved work."""
        if self.saves_on_notice(offering):
            return self.p.checkpoint_write_s
        return checkpoint_interval_s / 2

    def interruption_loss_s(self, offering: Offering, checkpoint_interval_s: float) -> float:
        """What one interruption on spot ``offering`` costs a job in time: a restart and a relaunch plus
        the write on notice or the unsaved work (``notice_loss_s``)."""
        return self.p.restart_overhead_s + self.p.launch_latency_s + self.notice_loss_s(offering, checkpoint_interval_s)

    def rework_fraction(self, offering: Offering, checkpoint_interval_s: float, nodes: int = 1) -> float:
        """Expected extra run time per unit of useful run time, from interruptions.

        A gang of ``nodes`` spot nodes stops whenever any one of them is interrupted: ``nodes`` times
        the node rate. Memoized: the parameters never change.
        """
        key = (offering.key, checkpoint_interval_s, nodes)
        fraction = self._rework.get(key)
        if fraction is None:
            lost_s = self.p.restart_overhead_s + self.notice_loss_s(offering, checkpoint_interval_s)
            fraction = self._rework[key] = nodes * self.interruption_rate(offering) * lost_s / 3600.0
        return fraction

    def run_rate_usd_per_hour(self, job: Demand, offering: Offering) -> float:
        """Expected $ per hour of useful run of ``job``'s gang on ``offering``: its nodes' price plus
        spot rework. Memoized per job shape and offering (the parameters never change)."""
        key = (job.nodes, job.gpus_per_node, job.checkpoint_interval_s, offering.key, offering.price_per_hour_usd)
        rate = self._run_rates.get(key)
        if rate is None:
            nodes = self.nodes_for(job, offering)
            rate = nodes * offering.price_per_hour_usd * (
                1 + self.rework_fraction(offering, job.checkpoint_interval_s, nodes))
            self._run_rates[key] = rate
        return rate

    def effective_price_per_gpu_hour(self, offering: Offering,
                                     checkpoint_interval_s: float = 1800.0) -> float:
        """$ per *useful* GPU-hour: price plus expected spot rework."""
        if offering.market is Market.RESERVED:
            return 0.0
        return offering.price_per_gpu_hour_usd * (1 + self.rework_fraction(offering, checkpoint_interval_s))

    # --- a job on an offering ------------------------------------------------------------------
    def nodes_for(self, job: Demand, offering: Offering) -> int:
        """Nodes of ``offering`` a job needs (its gang shape, at least one node per member)."""
        per_member = -(-job.gpus_per_node // offering.gpus_per_node)
        return job.nodes * per_member

    def billed_hours(self, provider: str, run_s: float) -> float:
        """Hours a future run of ``run_s`` seconds is expected to bill (``BillingRule.expected_billed_s``)."""
        return billing_rule(provider).expected_billed_s(run_s) / 3600.0

    def job_cost_usd(self, job: Demand, offering: Offering, work_s: float | None = None) -> float:
        """Expected $ to finish ``job`` on ``offering``: nodes x price x billed (work + rework); the
        work is its remaining run, or ``work_s`` seconds of it."""
        if offering.market is Market.RESERVED:
            return 0.0
        nodes = self.nodes_for(job, offering)
        work = job.remaining_s if work_s is None else work_s
        rework = self.rework_fraction(offering, job.checkpoint_interval_s, nodes)
        return self.run_cost_usd(offering, nodes, work, rework)

    def run_cost_usd(self, offering: Offering, nodes: int, work_s: float, rework: float, *,
                     booted: bool = False) -> float:
        """Expected $ of ``nodes`` nodes of ``offering`` booting (``booted``: up already, the boot spent),
        then running ``work_s`` seconds of work plus ``rework`` (a fraction of it, ``rework_fraction``):
        ``job_cost_usd`` with its terms known."""
        run_s = work_s * (1 + rework)
        if not booted:
            run_s += self.p.launch_latency_s  # nodes bill while they boot and join
        hours = self.billed_hours(offering.provider, run_s)
        return nodes * offering.price_per_hour_usd * hours

    def job_cost_floor_usd(self, job: Demand, offering: Offering) -> float:
        """A lower bound of ``job_cost_usd`` that orders offerings as ``run_rate_usd_per_hour`` does: the
        remaining work at its rate, less the most any bill rounds down (``MAX_ROUND_DOWN_S``). The boot
        and each cloud's billing make the job costs of two offerings order otherwise than their rates."""
        return cost_floor_usd(self.run_rate_usd_per_hour(job, offering), job.remaining_s)

    def deadline_risk_usd(self, job: Demand, offering: Offering, slack_s: float, work_s: float | None = None) -> float:
        """Expected deadline-miss $ of running ``job`` (its remaining run, or ``work_s`` seconds of it) on
        spot ``offering`` from now, ``slack_s`` ahead.

        An interruption costs a changeover (restart + relaunch) plus the checkpoint written on notice,
        or where the notice is too short for one the work since the job's last periodic checkpoint;
        it causes a miss when that exceeds the slack. Over the run, the job is exposed wherever its
        loss would be above the slack; P(miss) = 1 - exp(-gang rate x exposed hours) for the first
        interruption. Where the slack covers one interruption's average loss (changeover plus the write
        on notice or half an interval), several may still outlast it: P(miss) is at least the chance of
        more than slack / loss of them over the run (Poisson at the gang rate). 0 for on-demand or jobs
        without a hard/soft deadline.
        """
        if job.deadline is None or job.job_class is JobClass.BEST_EFFORT or offering.market is not Market.SPOT:
            return 0.0
        rate, loss_s, saves = self._gang_terms(offering, job.checkpoint_interval_s, self.nodes_for(job, offering))
        room = slack_s - self.p.restart_overhead_s - self.p.launch_latency_s
        work = job.remaining_s if work_s is None else work_s
        if saves:
            exposed = work if room < self.p.checkpoint_write_s else 0.0
        else:
            exposed = exposed_s(work, job.checkpoint_interval_s, room)
        p_miss = 1.0 - math.exp(-rate * exposed / 3600.0)
        if loss_s > 0 and slack_s >= loss_s:
            p_miss = max(p_miss, poisson_tail(rate * work / 3600.0, int(slack_s // loss_s) + 1))
        return p_miss * self.miss_usd(job)

    def _gang_terms(self, offering: Offering, checkpoint_interval_s: float, nodes: int) -> tuple[float, float, bool]:
        """A gang of ``nodes`` on spot ``offering``: its interruptions per hour, one interruption's loss
        (``interruption_loss_s``) and whether the notice leaves time to write a checkpoint. Memoized:
        the parameters never change."""
        key = (offering.key, checkpoint_interval_s, nodes)
        terms = self._gang.get(key)
        if terms is None:
            terms = self._gang[key] = (nodes * self.interruption_rate(offering),
                                       self.interruption_loss_s(offering, checkpoint_interval_s),
                                       self.saves_on_notice(offering))
        return terms

    def boot_miss_usd(self, job: Demand, now: datetime) -> float:
        """Expected deadline-miss $ of starting ``job`` on a node launched now: the chance that the boot
        and join (log-normal around ``launch_latency_s``, sigma ``launch_latency_sigma``) outlast the
        time its deadline leaves before it must start. 0 without a hard/soft deadline, or when even an
        immediate start would be late (the launch does not cause that miss)."""
        if job.deadline is None or job.job_class is JobClass.BEST_EFFORT:
            return 0.0
        start_by_s = (job.deadline - now).total_seconds() - job.remaining_s
        latency, sigma = self.p.launch_latency_s, self.p.launch_latency_sigma
        if start_by_s <= 0.0 or latency <= 0.0:
            return 0.0
        if sigma <= 0.0:
            p_late = 1.0 if latency > start_by_s else 0.0
        else:
            p_late = 0.5 * math.erfc(math.log(start_by_s / latency) / (sigma * math.sqrt(2.0)))
        return p_late * self.miss_usd(job)

    def miss_usd(self, job: Demand) -> float:
        """What missing ``job``'s deadline costs: ``deadline_miss_usd`` for a strict one, a quarter of it for
        a soft one (callers check that the job has a deadline to miss)."""
        return self.p.deadline_miss_usd * (1.0 if job.job_class is JobClass.STRICT else 0.25)

    # --- waiting -------------------------------------------------------------------------------
    def wait_cost_usd(self, job: Demand, wait_s: float, now: datetime, *, deadline: bool = True) -> float:
        """$ cost of making ``job`` wait ``wait_s`` more seconds before it starts (without the
        deadline-miss term when ``deadline`` is False: a lower bound that needs no remaining work)."""
        if wait_s <= 0:
            return 0.0
        value = job.gpus * (wait_s / 3600.0) * self.p.wait_value_usd_per_gpu_hour * (1 + job.priority)
        if deadline and job.deadline is not None and job.job_class is not JobClass.BEST_EFFORT:
            late_now_s = (now - job.deadline).total_seconds() + job.remaining_s
            if late_now_s <= 0 < late_now_s + wait_s:  # the wait, not the past, makes it miss
                value += self.miss_usd(job)
        return value

    def idle_cost_usd(self, offering: Offering, idle_s: float) -> float:
        """$ of keeping one node of ``offering`` idle for ``idle_s`` seconds."""
        return offering.price_per_hour_usd * idle_s / 3600.0


def cost_floor_usd(rate_usd_per_hour: float, work_s: float) -> float:
    """``work_s`` of work at ``rate_usd_per_hour``, less the most any bill rounds down: the floor of
    ``CostModel.job_cost_floor_usd`` with the rate known."""
    return rate_usd_per_hour * max(work_s - MAX_ROUND_DOWN_S, 0.0) / 3600.0


def poisson_tail(mean: float, k: int) -> float:
    """P(N >= k) for N ~ Poisson(``mean``); 0 where that is below 1e-6 (and wherever k > 3 mean + 10)."""
    if k <= 0:
        return 1.0
    if mean <= 0.0 or k > 3.0 * mean + 10.0:
        return 0.0
    term = total = math.exp(-mean)
    for i in range(1, k):
        term *= mean / i
        total += term
    tail = 1.0 - total
    return tail if tail > 1e-6 else 0.0


def exposed_s(run_s: float, checkpoint_interval_s: float, room_s: float) -> float:
    """Seconds of a ``run_s`` run, checkpointing every ``checkpoint_interval_s``, during which the
    unsaved work exceeds ``room_s`` (an interruption there costs more than the room)."""
    if room_s < 0:
        return run_s
    interval = checkpoint_interval_s if checkpoint_interval_s > 0 else run_s
    if interval <= 0:
        return 0.0
    full, last = divmod(run_s, interval)
    return full * max(0.0, interval - room_s) + max(0.0, last - room_s)
