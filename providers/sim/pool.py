"""A simulated on-prem pool: FIFO with EASY backfill on reserved nodes, plus joined burst nodes.

Burst nodes launched for a job are that job's (like Slurm's cloud nodes allocated before power-up):
the job starts when all of its gang's nodes have joined, if they are enough for it (one a node
of which ended while booting waits for the rest to go), unless reserved capacity took it first.
Idle burst nodes take queued single-node jobs that fit, except jobs waiting for nodes of their own
(those are allocated to them); an exclusive node (``Launch.exclusive``) takes only its own job or
one the controller holds it for (``hold``). Preemption loses the work since the last
periodic checkpoint; a requested checkpoint saves everything done up to the request (one that
cordons its node: no new job starts there from the request on). A job restarted with work saved
spends its first ``restart_s`` reloading it (no progress: lost work, like the cost model's restart
overhead). A stopped job
goes back in the queue at its submission-time place or at the back (``requeue``); a ranked queue
(``ranker``) is served by priority, then start-by (``providers.sim.queue``). Which queued jobs
start where is chosen in ``providers.sim.starts``; this module keeps runs, holds, stops and events.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from burster.model import CheckpointTicket, Demand, Market, Offering, Placement, PoolNode, Requeue, RuntimeHistory
from providers.sim.events import EventQueue
from providers.sim.metrics import PoolMetrics
from providers.sim.onprem import OnPremNodes
from providers.sim.queue import PoolQueue
from providers.sim.runtimes import TrueRuntimes
from providers.sim.starts import BurstNode, start_on_idle_burst, start_on_own_nodes, start_on_reserved


@dataclass
class _Run:
    job: Demand
    node_ids: tuple[str, ...]
    started_at: datetime
    on_cloud: bool
    onprem_slots: tuple[tuple[int, int], ...]  # (node index, gpus)
    checkpoint_at: datetime | None = None  # a requested checkpoint's instant
    checkpoint_done: bool = False
    ends_ts: float = 0.0  # expected end (POSIX): start + a restart's reload + remaining work at start
    placement: Placement | None = None  # the last one handed out, reused while market and price hold


class SimPool:
    def __init__(self, events: EventQueue, *, nodes: int, gpus_per_node: int, gpu_model: str,
                 checkpoint_s: float = 60.0, backfill_depth: int = 256, requeue: Requeue = Requeue.SUBMISSION,
                 restart_s: float = 0.0, runtimes: Mapping[str, float] | None = None,
                 ranker: Callable[[Demand], datetime] | None = None,
                 history: Sequence[tuple[float, str]] = ()) -> None:
        """``runtimes``: how long jobs really run, by id, where that differs from their estimate
        (``Demand.est_runtime_s``, what the controller and the pool's backfill see). ``ranker``: the
        start-by rule of a ranked queue (None: FIFO). ``history``: (true / estimated runtime, team) of
        jobs that finished before the simulation starts (``runtime_ratios`` begins with them).
        ``restart_s``: how long a job restarted with work saved reloads it before it makes progress."""
        self.events = events
        self.gpu_model = gpu_model
        self.onprem = OnPremNodes(nodes, gpus_per_node, gpu_model, restart_s=restart_s)
        self.checkpoint_s = checkpoint_s
        self.backfill_depth = backfill_depth
        self.queue = PoolQueue(requeue, ranker)
        self.runs: dict[str, _Run] = {}
        self.burst: dict[str, BurstNode] = {}
        self.metrics = PoolMetrics(nodes * gpus_per_node)
        self.truth = TrueRuntimes(runtimes, history)
        self._cache: dict[str, tuple[object, ...]] = {}
        self._ends: list[tuple[float, int, tuple[tuple[int, int], ...]]] = []  # on-prem runs' (ends_ts, gpus,
        # (node index, GPUs) slots), sorted: when and where reserved GPUs free up
        self._changed = True  # queue, runs or burst nodes changed since the last schedule()
        self._cloud_gpus = 0  # GPUs of cloud-running jobs the reserved nodes could run (stranded-capacity KPI)
        self._hold_until: dict[tuple[int, str], datetime] = {}  # (reserved node index, job) -> when the hold runs out

    # --- Pool protocol -------------------------------------------------------------------------
    def pending(self) -> Sequence[Demand]:
        """The queue in the order it is served."""
        return self.queue.served()

    def running(self) -> Sequence[Placement]:
        if "running" not in self._cache:
            self._cache["running"] = tuple(self._placement(r) for r in self.runs.values())
        return self._cache["running"]  # type: ignore[return-value]

    def nodes(self) -> Sequence[PoolNode]:
        if "nodes" not in self._cache:
            self._cache["nodes"] = self.onprem.pool_nodes()
        return self._cache["nodes"]  # type: ignore[return-value]

    def runtime_history(self) -> RuntimeHistory:
        """How far off the estimates the last jobs to finish ran (``TrueRuntimes.history``)."""
        return self.truth.history()

    def bootstrap(self, offering: Offering) -> str:
        return f"#cloud-config\n# join simulated pool as {offering.gpu_model} x{offering.gpus_per_node}\n"

    def checkpoint(self, node_id: str, deadline: datetime, *, cordon: bool = False) -> CheckpointTicket:
        b = self.burst.get(node_id)
        if b is not None and cordon:
            b.draining = True  # its job runs on, nothing new starts there
        run = self.runs.get(b.job_id) if b and b.job_id else None
        if run is None:
            return CheckpointTicket(node_id, "", deadline, done=True)
        now = self.metrics.now
        if run.checkpoint_at is None:
            run.checkpoint_at = now
            job_id, started = run.job.job_id, run.started_at
            self.events.at(now + timedelta(seconds=self.checkpoint_s),
                           lambda t: self._checkpoint_done(job_id, started))
        saved = self._done_s(run, run.checkpoint_at) if run.checkpoint_done else 0.0
        return CheckpointTicket(node_id, run.job.job_id, deadline, run.checkpoint_done, saved)

    def drain(self, node_id: str) -> None:
        b = self.burst.get(node_id)
        if b is None:
            return
        b.draining = True
        if b.job_id is not None:
            self._stop(b.job_id, preempted=False)
        self._dirty()

    def hold(self, node_id: str, job_id: str, start_at: datetime, until: datetime) -> None:
        """Keep reserved node ``node_id`` for ``job_id`` (beside the jobs it is held for already) from
        ``start_at`` (before, only jobs that end by then may use it) until the job starts on-prem or
        finishes, or ``until``; or give idle exclusive burst node ``node_id`` to queued ``job_id`` (it
        starts there at the next schedule)."""
        b = self.burst.get(node_id)
        if b is not None:
            if b.exclusive and b.job_id is None and not b.draining and job_id in self.queue:
                b.for_job = job_id
                self.metrics.idle_nodes_handed += 1
                self._changed = True
            return
        i = self.onprem.index.get(node_id)
        run = self.runs.get(job_id)
        if i is None or (job_id not in self.queue and (run is None or not run.on_cloud)):
            return  # not a reserved node, or the job is gone or already on-prem: nothing to hold for
        if job_id not in self.onprem.holders(i):
            self.metrics.node_holds += 1
        self.onprem.hold(i, job_id, start_at.timestamp())
        self._hold_until[i, job_id] = until
        self.events.at(until, lambda t: self._expire(job_id, i, until))
        self._dirty()

    def preempt(self, job_id: str, deadline: datetime) -> None:
        """Checkpoint an on-prem job, then requeue it with the work done up to the request saved (the
        simulated checkpoint always takes ``checkpoint_s``, well inside any ``deadline`` the policy sets)."""
        run = self.runs.get(job_id)
        if run is None or run.on_cloud or run.checkpoint_at is not None:
            return
        run.checkpoint_at = self.metrics.now
        run.placement = None  # it now carries the stop
        self.metrics.onprem_preemptions += 1
        self.events.at(self._stop_at(run), lambda t: self._requeue_checkpointed(job_id, run))
        self._dirty("running")

    def _requeue_checkpointed(self, job_id: str, run: _Run) -> None:
        if self.runs.get(job_id) is not run:
            return  # finished first
        assert run.checkpoint_at is not None
        now = self._stop_at(run)
        self.metrics.advance(now)
        run.checkpoint_done = True
        self._stop(job_id, preempted=False)
        self.schedule(now)

    def _stop_at(self, run: _Run) -> datetime:
        assert run.checkpoint_at is not None
        return run.checkpoint_at + timedelta(seconds=self.checkpoint_s)

    def _expire(self, job_id: str, i: int, until: datetime) -> None:
        if self._hold_until.get((i, job_id)) != until:
            return  # held again since, with another end
        del self._hold_until[i, job_id]
        if self.onprem.release(job_id, i):
            self.metrics.node_holds_expired += 1
            self._dirty()

    # --- arrivals and cloud node events (called by the simulated world/clouds) -------------------
    def submit(self, job: Demand, now: datetime) -> None:
        self.metrics.advance(now)
        self.queue.add(job)
        self.metrics.submitted(job)
        self._changed = True  # schedule() must look at it

    def expect(self, node_id: str, offering: Offering, for_job: str | None, *, exclusive: bool = False) -> None:
        self.burst[node_id] = BurstNode(node_id, offering, for_job, exclusive)
        self._dirty("running")

    def join(self, node_id: str) -> None:
        if node_id in self.burst:
            self.burst[node_id].joined = True
            self._changed = True  # no cached view changes, but schedule() may start its job

    def leave(self, node_id: str, *, preempted: bool) -> None:
        b = self.burst.pop(node_id, None)
        if b is not None and b.job_id is not None:
            self._stop(b.job_id, preempted=preempted)
        self._dirty()

    # --- scheduling ----------------------------------------------------------------------------
    def schedule(self, now: datetime) -> None:
        """Start what can start. A call with no change since the last one that started nothing is
        skipped: waiting longer only tightens the backfill test, so it would start nothing either."""
        self.metrics.advance(now)
        if not self.queue or not self._changed:
            return
        self._changed = False
        booting: set[str | None] = {b.for_job for b in self.burst.values() if b.for_job and not b.draining}
        start_on_own_nodes(self.queue, self.burst, booting, now, self._start)
        start_on_reserved(self.pending, self.onprem, self._ends, self.backfill_depth, booting, now, self._start)
        start_on_idle_burst(self.pending(), self.burst, self.queue, self.runs, booting, now, self._start)

    def _start(self, job: Demand, now: datetime, burst_ids: tuple[str, ...],
               slots: tuple[tuple[int, int], ...]) -> None:
        self.queue.remove(job.job_id)
        if slots and self.onprem.held:  # started on-prem: its holds are done (a cloud restart keeps them)
            self.metrics.node_holds_landed += sum(job.job_id in self.onprem.holders(i) for i, _ in slots)
            self.onprem.release(job.job_id)
        for node_id in burst_ids:
            self.burst[node_id].job_id = job.job_id
        self.onprem.take(slots)
        node_ids = burst_ids or tuple(self.onprem.node_id(i) for i, _ in slots)
        run = _Run(job, node_ids, now, bool(burst_ids), slots,
                   ends_ts=now.timestamp() + self.onprem.run_s(job))
        self.runs[job.job_id] = run
        if slots:
            bisect.insort(self._ends, (run.ends_ts, job.gpus, slots))
        elif burst_ids and self.onprem.can_ever_fit(job):
            self._cloud_gpus += job.gpus
        self.metrics.started(job, now, on_cloud=bool(burst_ids), runtime_s=self.truth.of(job))
        self.events.at(now + timedelta(seconds=self._left_s(job)), lambda t: self._finish(job.job_id, run))
        self._dirty()

    def _finish(self, job_id: str, run: _Run) -> None:
        if self.runs.get(job_id) is not run:
            return  # stopped and requeued since
        now = run.started_at + timedelta(seconds=self._left_s(run.job))
        self.metrics.advance(now)
        self._release(run)
        if self.onprem.held:
            self.onprem.release(job_id)
        self.metrics.finished(run.job, now, lost_s=self._reload_s(run.job))
        self.truth.finished(run.job)
        self.schedule(now)

    def _stop(self, job_id: str, *, preempted: bool) -> None:
        run = self.runs.get(job_id)
        if run is None:
            return
        now = self.metrics.now
        done = self._done_s(run, now)
        if run.checkpoint_done and run.checkpoint_at is not None:
            saved = self._done_s(run, run.checkpoint_at)
        else:
            ran = done - run.job.done_s
            interval = max(run.job.checkpoint_interval_s, 1.0)
            saved = run.job.done_s + math.floor(ran / interval) * interval
        self._release(run)
        reloading_s = min((now - run.started_at).total_seconds(), self._reload_s(run.job))
        self.metrics.stopped(run.job, lost_s=done - saved + reloading_s, preempted=preempted)
        again = replace(run.job, done_s=min(saved, self.truth.of(run.job)), attempt=run.job.attempt + 1,
                        queued_at=now, reached_s=max(run.job.reached_s, done))
        self.queue.put_back(again)

    def _release(self, run: _Run) -> None:
        del self.runs[run.job.job_id]
        if run.on_cloud:
            self.metrics.ran_on_cloud(run.job, (self.metrics.now - run.started_at).total_seconds())
            if self.onprem.can_ever_fit(run.job):
                self._cloud_gpus -= run.job.gpus
        self.onprem.give(run.onprem_slots)
        if run.onprem_slots:
            del self._ends[bisect.bisect_left(self._ends, (run.ends_ts, run.job.gpus, run.onprem_slots))]
        for node_id in run.node_ids:
            b = self.burst.get(node_id)
            if b is not None and b.job_id == run.job.job_id:
                b.job_id = None
                b.for_job = None
        self._dirty()

    def _checkpoint_done(self, job_id: str, started: datetime) -> None:
        run = self.runs.get(job_id)
        if run is not None and run.started_at == started:
            run.checkpoint_done = True

    # --- helpers -------------------------------------------------------------------------------
    def _done_s(self, run: _Run, at: datetime) -> float:
        working_s = max((at - run.started_at).total_seconds() - self._reload_s(run.job), 0.0)
        return min(run.job.done_s + working_s, self.truth.of(run.job))

    def _left_s(self, job: Demand) -> float:
        """How long a run of ``job`` started now lasts: its reload, then the work not saved."""
        return max(self.truth.of(job) - job.done_s, 0.0) + self._reload_s(job)

    def _reload_s(self, job: Demand) -> float:
        """How long a run of ``job`` reloads its saved work before it works on (none saved, or none
        left to do: none)."""
        return self.onprem.restart_s if 0 < job.done_s < self.truth.of(job) else 0.0

    def _busy_onprem(self) -> int:
        return self.onprem.capacity - self.onprem.free_total

    def _placement(self, run: _Run) -> Placement:
        p = run.placement
        if p is not None and not run.on_cloud:
            return p  # reserved, no cloud price: fixed until a preemption (which drops it)
        if not run.on_cloud and run.checkpoint_at is not None:
            p = run.placement = Placement(run.job, run.node_ids, run.started_at, False, Market.RESERVED, 0.0,
                                          stopping_at=self._stop_at(run), reload_s=self._reload_s(run.job))
            return p
        market, price = self._market(run), self._price(run)
        if p is None or p.market is not market or p.price_per_hour_usd != price \
                or type(p.price_per_hour_usd) is not type(price):
            p = run.placement = Placement(run.job, run.node_ids, run.started_at, run.on_cloud, market, price,
                                          reload_s=self._reload_s(run.job))
        return p

    def _market(self, run: _Run) -> Market:
        if not run.on_cloud:
            return Market.RESERVED
        b = self.burst.get(run.node_ids[0])
        return b.offering.market if b else Market.ON_DEMAND

    def _price(self, run: _Run) -> float:
        return sum(self.burst[n].offering.price_per_hour_usd for n in run.node_ids if n in self.burst)

    def _dirty(self, *views: str) -> None:
        """Something schedule() looks at changed; drop the cached ``views`` (when none named: those
        of runs and nodes; the queue keeps its own, ``PoolQueue.served``)."""
        self._changed = True
        for view in views or ("running", "nodes"):
            self._cache.pop(view, None)
        self.metrics.set_busy(self._busy_onprem(), self._cloud_gpus)

