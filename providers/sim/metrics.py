"""What the simulated pool measures: waits, deadline misses, preemptions, lost work, utilization."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from burster.model import Demand, JobClass


@dataclass
class PoolMetrics:
    capacity_gpus: int
    now: datetime = datetime(1970, 1, 1, tzinfo=UTC)
    jobs: int = 0
    finished_jobs: int = 0
    waits_s: list[float] = field(default_factory=list)
    within_budget: int = 0  # jobs whose first wait <= max(600 s, 0.25 x runtime)
    first_start: dict[str, datetime] = field(default_factory=dict)
    started_on_cloud: int = 0
    deadline_misses: int = 0
    hard_deadline_misses: int = 0
    preemptions: int = 0
    reclaims: int = 0
    node_holds: int = 0  # holds of a reserved node for a job (``Hold``; a node held for two jobs counts twice)
    node_holds_landed: int = 0  # ... released because that job started on-prem
    node_holds_expired: int = 0  # ... that ran out before the job came
    idle_nodes_handed: int = 0  # idle exclusive burst nodes the controller gave a job (``Hold``)
    onprem_preemptions: int = 0  # on-prem jobs checkpointed and requeued for another job (``Preempt``)
    lost_gpu_hours: float = 0.0
    waived_usd: float = 0.0  # list price of spot nodes their cloud took back unbilled (AWS: in the first hour)
    cloud_gpu_hours: float = 0.0  # GPU-hours jobs ran on burst nodes (lost work included)
    requeued_wait_gpu_hours: float = 0.0  # GPU-hours started jobs spent back in the queue after a stop
    stranded_gpu_s: float = 0.0  # reserved GPU-seconds idle while jobs that could use them ran on the cloud
    busy_gpu_s: float = 0.0
    elapsed_s: float = 0.0
    window_end: datetime | None = None  # utilization counts only up to here (the arrival window)
    _open: dict[str, Demand] = field(default_factory=dict)  # submitted and not finished
    _started: datetime | None = None
    _busy: int = 0
    _cloud: int = 0  # GPUs of cloud-running jobs the reserved pool could run

    def advance(self, now: datetime) -> None:
        """Integrate on-prem busy GPU-seconds up to ``now`` at the current busy level."""
        if self._started is None:
            self._started = now
        elif now > self.now:
            upto = now if self.window_end is None else min(now, self.window_end)
            dt = max((upto - self.now).total_seconds(), 0.0)
            self.busy_gpu_s += self._busy * dt
            self.elapsed_s += dt
            if self._cloud:  # the whole run, like cloud $: not only the arrival window
                idle = self.capacity_gpus - self._busy
                self.stranded_gpu_s += min(idle, self._cloud) * (now - self.now).total_seconds()
        if now > self.now:
            self.now = now

    def set_busy(self, busy_gpus: int, cloud_gpus: int = 0) -> None:
        """Levels from now on: reserved GPUs busy, and GPUs of cloud-running jobs the pool could run."""
        self._busy = busy_gpus
        self._cloud = cloud_gpus

    def submitted(self, job: Demand) -> None:
        self.jobs += 1
        self._open[job.job_id] = job

    def started(self, job: Demand, now: datetime, *, on_cloud: bool, runtime_s: float | None = None) -> None:
        """``runtime_s``: how long the job really runs, when that is not its estimate."""
        if job.job_id not in self.first_start:
            self.first_start[job.job_id] = now
            wait_s = (now - job.submitted_at).total_seconds()
            self.waits_s.append(wait_s)
            runtime = job.est_runtime_s if runtime_s is None else runtime_s
            self.within_budget += wait_s <= max(600.0, 0.25 * runtime)
            self.started_on_cloud += on_cloud
        elif job.queued_at is not None:  # a restart: the first-wait metrics do not see this pause
            self.requeued_wait_gpu_hours += job.gpus * max((now - job.queued_at).total_seconds(), 0.0) / 3600.0

    def finished(self, job: Demand, now: datetime, *, lost_s: float = 0.0) -> None:
        """``lost_s``: seconds of the last run that made no progress (a restart's reload)."""
        self.finished_jobs += 1
        self.lost_gpu_hours += job.gpus * lost_s / 3600.0
        self._open.pop(job.job_id, None)
        if job.deadline is not None and job.job_class is not JobClass.BEST_EFFORT and now > job.deadline:
            self.deadline_misses += 1
            self.hard_deadline_misses += job.job_class is JobClass.STRICT

    def unstarted_waits_s(self) -> list[float]:
        """How long each job that never started had waited when the run ended (a lower bound of its wait)."""
        return [(self.now - j.submitted_at).total_seconds() for j in self._open.values()
                if j.job_id not in self.first_start]

    def overdue(self) -> tuple[int, int]:
        """Deadline misses (all, strict) among jobs unfinished when the run ended, past their deadline."""
        late = [j for j in self._open.values()
                if j.deadline is not None and j.job_class is not JobClass.BEST_EFFORT and self.now > j.deadline]
        return len(late), sum(j.job_class is JobClass.STRICT for j in late)

    def ran_on_cloud(self, job: Demand, run_s: float) -> None:
        self.cloud_gpu_hours += job.gpus * run_s / 3600.0

    def stopped(self, job: Demand, *, lost_s: float, preempted: bool) -> None:
        if preempted:
            self.preemptions += 1
        else:
            self.reclaims += 1
        self.lost_gpu_hours += job.gpus * lost_s / 3600.0

    @property
    def stranded_gpu_hours(self) -> float:
        """Reserved GPU-hours left idle while jobs that could use them ran on the cloud: at most
        min(idle reserved GPUs, such jobs' GPUs) at each instant (an upper bound on what moving work
        back could have used; fragmentation can make part of it unusable)."""
        return self.stranded_gpu_s / 3600.0

    @property
    def utilization(self) -> float:
        denom = self.capacity_gpus * self.elapsed_s
        return self.busy_gpu_s / denom if denom else 0.0
