"""What only the simulation knows: how long jobs really run, and how far off their estimates were.

The controller and the pool's backfill see each job's estimate (``Demand.est_runtime_s``); a job runs
for its true runtime. The pool reports the true / estimated runtime of the jobs that finished last
(``Pool.runtime_ratios``), as a Slurm adapter would read elapsed / time limit from sacct.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from burster.model import Demand

RATIO_HISTORY = 256  # finished jobs whose runtime ratios the pool reports


class TrueRuntimes:
    """True runtimes by job id (where they differ from the estimates), and the ratio history."""

    def __init__(self, runtimes: Mapping[str, float] | None = None, ratios: Sequence[float] = ()) -> None:
        self._by_id = dict(runtimes or {})
        self._ratios: deque[float] = deque(ratios, maxlen=RATIO_HISTORY)
        self._view: tuple[float, ...] | None = None

    def of(self, job: Demand) -> float:
        """How long ``job`` really runs (its estimate unless told otherwise)."""
        return self._by_id.get(job.job_id, job.est_runtime_s)

    def finished(self, job: Demand) -> None:
        """Record a finished job's true / estimated runtime."""
        if job.est_runtime_s > 0:
            self._ratios.append(self.of(job) / job.est_runtime_s)
            self._view = None

    def ratios(self) -> tuple[float, ...]:
        """The last ``RATIO_HISTORY`` ratios, oldest first: the same tuple until a job finishes."""
        if self._view is None:
            self._view = tuple(self._ratios)
        return self._view
