"""The simulated world: one event queue driving the pool, the clouds and the job arrivals."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from burster.clock import FakeClock
from burster.model import Demand, Offering, Requeue
from providers.sim.cloud import SimCloudProvider
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from providers.sim.signals import SimSignals
from providers.sim.spot import SpotSeries


class SimWorld:
    """Owns simulated time: ``advance_to`` runs every event due, then lets the pool schedule."""

    def __init__(self, *, clock: FakeClock, jobs: Sequence[Demand], offerings: Sequence[Offering],
                 providers: Sequence[str], pool_nodes: int, gpus_per_node: int, gpu_model: str,
                 series: Sequence[SpotSeries] = (), seed: int = 0, checkpoint_s: float = 60.0,
                 requeue: Requeue = Requeue.SUBMISSION, restart_s: float = 0.0,
                 runtimes: Mapping[str, float] | None = None,
                 ranker: Callable[[Demand], datetime] | None = None,
                 history: Sequence[tuple[float, str]] = (), signals: SimSignals | None = None) -> None:
        self.clock = clock
        self.start = clock.now()
        self.pool = SimPool(EventQueue(), nodes=pool_nodes, gpus_per_node=gpus_per_node,
                            gpu_model=gpu_model, checkpoint_s=checkpoint_s, requeue=requeue, restart_s=restart_s,
                            runtimes=runtimes, ranker=ranker, history=history)
        self.events = self.pool.events
        self.events.before = self.pool.metrics.advance
        self.clouds = {name: SimCloudProvider(name, offerings, events=self.events, pool=self.pool,
                                              now=clock.now, start=self.start, series=series, seed=seed)
                       for name in providers}
        self._jobs = list(jobs)
        self._next = 0
        self.signals = signals  # (the reconciler reads them; a signal seen keeps the world awake)
        self.pool.metrics.advance(self.start)

    def next_time(self) -> datetime | None:
        """The next instant something happens by itself (an arrival or a queued event)."""
        t_event = self.events.next_time()
        t_job = self._jobs[self._next].submitted_at if self._next < len(self._jobs) else None
        if t_event is None:
            return t_job
        return t_event if t_job is None else min(t_event, t_job)

    def next_change(self, now: datetime, *, spot: bool) -> datetime | None:
        """The next instant the world changes: an event, an arrival, a signal first seen, or (``spot``) a
        spot availability flip."""
        times = [self.next_time(), self.signals.next_announcement(now) if self.signals else None]
        if spot:
            times += [c.next_availability_change(now) for c in self.clouds.values()]
        return min((t for t in times if t is not None), default=None)

    def advance_to(self, until: datetime) -> None:
        jobs, pool = self._jobs, self.pool
        while True:
            t_job = jobs[self._next].submitted_at if self._next < len(jobs) else None
            t_event = self.events.next_time()
            if t_job is not None and t_job <= until and (t_event is None or t_job <= t_event):
                while self._next < len(jobs) and jobs[self._next].submitted_at == t_job:
                    pool.submit(jobs[self._next], t_job)
                    self._next += 1
                pool.schedule(t_job)
            elif t_event is not None and t_event <= until:
                self.events.run_until(t_event)
                pool.schedule(t_event)
            else:
                break
        pool.metrics.advance(until)
        pool.schedule(until)

    @property
    def quiet(self) -> bool:
        """Nothing for a controller to decide: no queue, no burst nodes, no notices, no signal seen."""
        seen = self.signals is not None and self.signals.seen(self.clock.now())
        return not self.pool.queue and not self.pool.burst and not seen

    @property
    def finished(self) -> bool:
        return self._next >= len(self._jobs) and not self.pool.queue and not self.pool.runs \
            and not self.pool.burst
