"""The simulated pool's queue of jobs waiting for GPUs: FIFO, or ranked by a start-by rule.

FIFO serves jobs in arrival order; a stopped job goes back at its submission-time place or at the
back (``Requeue``). Given a ``ranker`` (``pool.order = "start_by"``), the queue is served by
priority, then the start-by time the ranker gives a job when it enters the queue (also when
requeued, whatever ``requeue`` says: the rank is the job's, like a priority a Slurm job_submit
plugin sets).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime

from burster.model import Demand, Requeue, queue_key

RankKey = tuple[int, float, float, str]  # a ranked queue's order (_rank_order)


class PoolQueue:
    """Queued jobs by id (insertion order = FIFO), and the order they are served in."""

    def __init__(self, requeue: Requeue = Requeue.SUBMISSION,
                 ranker: Callable[[Demand], datetime] | None = None) -> None:
        self.requeue = Requeue(requeue)
        self._ranker = ranker
        self._jobs: dict[str, Demand] = {}
        self._order: list[RankKey] = []  # a ranked queue's keys, kept sorted (empty when FIFO)
        self._served: tuple[Demand, ...] | None = None  # the serving order, until the queue changes

    def __len__(self) -> int:
        return len(self._jobs)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._jobs

    def __iter__(self) -> Iterator[str]:
        return iter(self._jobs)

    def __getitem__(self, job_id: str) -> Demand:
        return self._jobs[job_id]

    def values(self) -> Iterator[Demand]:
        return iter(self._jobs.values())

    def served(self) -> tuple[Demand, ...]:
        """The queue in the order it is served."""
        if self._served is None:
            if self._ranker is None:
                self._served = tuple(self._jobs.values())
            else:
                self._served = tuple(self._jobs[key[-1]] for key in self._order)
        return self._served

    def add(self, job: Demand) -> None:
        """A new job: at the back (a ranked queue: at its rank's place)."""
        self._enqueue(self._ranked(job))

    def put_back(self, job: Demand) -> None:
        """A stopped job: at the back, or at its place by submission time (a ranked queue ranks it
        again: its remaining work changed)."""
        job = self._ranked(job)
        if self.requeue is Requeue.BACK or self._ranker is not None:  # a ranked queue's order is its keys
            self._enqueue(job)
            return
        items = list(self._jobs.items())
        k = bisect.bisect_right([j.submitted_at for _, j in items], job.submitted_at)
        self._jobs = dict([*items[:k], (job.job_id, job), *items[k:]])
        self._served = None

    def remove(self, job_id: str) -> Demand:
        job = self._jobs.pop(job_id)
        if self._ranker is not None:
            del self._order[bisect.bisect_left(self._order, _rank_order(job))]
        self._served = None
        return job

    def _enqueue(self, job: Demand) -> None:
        self._jobs[job.job_id] = job
        if self._ranker is not None:
            bisect.insort(self._order, _rank_order(job))
        self._served = None

    def _ranked(self, job: Demand) -> Demand:
        return replace(job, start_by=self._ranker(job)) if self._ranker else job


def _rank_order(job: Demand) -> RankKey:
    """A ranked queue's order: ``queue_key`` (priority, then start-by: every job in it has one),
    ties by submission, then id."""
    return *queue_key(job), job.submitted_at.timestamp(), job.job_id
