"""What only the simulation knows: how long jobs really run, and how far off their estimates were.

The controller and the pool's backfill see each job's estimate (``Demand.est_runtime_s``); a job runs
for its true runtime. The pool reports the true / estimated runtime of the jobs that finished last
(``Pool.runtime_history``), as a Slurm adapter would read elapsed / time limit from sacct.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from burster.model import Demand, RuntimeHistory

RATIO_HISTORY = 256  # finished jobs whose runtime ratios the pool reports
TEAM_HISTORY = 128  # and of each team, its own last jobs' ratios


class TrueRuntimes:
    """True runtimes by job id (where they differ from the estimates), and the ratio history."""

    def __init__(self, runtimes: Mapping[str, float] | None = None,
                 history: Sequence[tuple[float, str]] = ()) -> None:
        """``history``: (true / estimated runtime, team) of jobs that finished before, oldest first."""
        self._by_id = dict(runtimes or {})
        self._ratios: deque[float] = deque(maxlen=RATIO_HISTORY)
        self._teams: deque[str] = deque(maxlen=RATIO_HISTORY)
        self._own: dict[str, deque[float]] = {}
        self._own_tuples: dict[str, tuple[float, ...]] = {}  # each team's view, until one of its jobs finishes
        for ratio, team in history:
            self._record(ratio, team)
        self._view: RuntimeHistory | None = None

    def of(self, job: Demand) -> float:
        """How long ``job`` really runs (its estimate unless told otherwise)."""
        return self._by_id.get(job.job_id, job.est_runtime_s)

    def finished(self, job: Demand) -> None:
        """Record a finished job's true / estimated runtime, and its team."""
        if job.est_runtime_s > 0:
            self._record(self.of(job) / job.est_runtime_s, job.team)
            self._view = None

    def _record(self, ratio: float, team: str) -> None:
        self._ratios.append(ratio)
        self._teams.append(team)
        if team:
            self._own.setdefault(team, deque(maxlen=TEAM_HISTORY)).append(ratio)
            self._own_tuples.pop(team, None)

    def history(self) -> RuntimeHistory:
        """The last ``RATIO_HISTORY`` ratios and their teams, and each team's own last
        ``TEAM_HISTORY``, oldest first: the same value until a job finishes (and a team's own
        tuple, until one of its jobs does)."""
        if self._view is None:
            for t, q in self._own.items():
                if t not in self._own_tuples:
                    self._own_tuples[t] = tuple(q)
            self._view = RuntimeHistory(tuple(self._ratios), tuple(self._teams),
                                        tuple(sorted(self._own_tuples.items())))
        return self._view
