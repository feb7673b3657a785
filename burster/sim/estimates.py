"""Runtime estimates that are wrong, as users' time limits and predictors are.

Traces give each job's true runtime; the controller only ever sees an estimate. With ``sigma`` > 0
each job's estimate is its runtime times exp(N(0, sigma)) (median exact; sigma 0.5: half the jobs
off by more than 40 %), drawn from a generator seeded by the simulation seed, at least 60 s. The
simulated pool runs jobs for their true runtimes; the policy, the reserved-queue projection and the
pool's backfill see the estimates. A trace that records what was known before each job ran (Slurm
time limits in ``sacct`` output: ``Trace.estimates``) gives those estimates instead, with any noise on top;
a ``bias`` factor makes every estimate run long (or short) by that much, as time limits do, and a
``team_spread`` > 0 gives each team a factor of its own on top, exp(N(0, team_spread)), drawn from the
seed and the team's name (some teams set careful limits, others loose ones).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from burster.errors import ConfigError
from burster.model import Demand

MAX_SIGMA = 3.0
MAX_TEAM_SPREAD = 3.0
# the last jobs of a history, drawn from the stream they always were (``ratios_before``): the pool's
# RATIO_HISTORY (providers/sim/runtimes.py, which burster/ does not import)
RECENT = 256
BIAS_RANGE = (0.05, 20.0)


def check_sigma(sigma: float) -> None:
    """Raise ConfigError, with the valid range, unless ``sigma`` is a usable estimate error."""
    if not 0.0 <= sigma <= MAX_SIGMA or math.isnan(sigma):
        raise ConfigError(f"estimate error must be a lognormal sigma in [0, {MAX_SIGMA:g}] (0: exact "
                          f"estimates, 0.5: typical of user time limits); got {sigma}")


def check_bias(bias: float) -> None:
    """Raise ConfigError, with the valid range, unless ``bias`` is a usable estimate factor."""
    low, high = BIAS_RANGE
    if not low <= bias <= high or math.isnan(bias):
        raise ConfigError(f"estimate bias must be a factor in [{low:g}, {high:g}] (1: estimates centred on the "
                          f"runtimes, 2 to 4: typical of Slurm time limits); got {bias}")


def check_team_spread(spread: float) -> None:
    """Raise ConfigError, with the valid range, unless ``spread`` is a usable spread of team factors."""
    if not 0.0 <= spread <= MAX_TEAM_SPREAD or math.isnan(spread):
        raise ConfigError(f"estimate team spread must be a lognormal sigma in [0, {MAX_TEAM_SPREAD:g}] (0: every "
                          f"team's estimates alike, 1: teams' factors from about 0.4x to 2.7x); got {spread}")


def team_factor(team: str, spread: float, seed: int) -> float:
    """The factor ``team``'s estimates are off by, exp(N(0, ``spread``)): one draw per team and seed,
    so the history before a window and the window agree (1 for no team or no spread)."""
    if not spread or not team:
        return 1.0
    return math.exp(random.Random(f"team:{seed}:{team}").gauss(0.0, spread))


def with_estimate_error(jobs: Sequence[Demand], sigma: float, seed: int, told: Mapping[str, float] | None = None,
                        bias: float = 1.0, *, team_spread: float = 0.0,
                        stream: str = "estimates") -> tuple[list[Demand], dict[str, float]]:
    """The jobs with the ``est_runtime_s`` the controller sees, and their true runtimes by job id where
    those differ. ``told``: a trace's own estimates by job id (``Trace.estimates``, e.g. Slurm time
    limits), which replace the true runtime as each estimate's base; ``bias`` and the job's team
    factor (``team_factor``) multiply the base, and the noise multiplies that."""
    check_sigma(sigma)
    check_bias(bias)
    check_team_spread(team_spread)
    told = told or {}
    if sigma == 0.0 and not told and bias == 1.0 and team_spread == 0.0:
        return list(jobs), {}
    rng = random.Random(f"{stream}:{seed}")
    teams: dict[str, float] = {}
    out, true = [], {}
    for j in jobs:
        if j.team not in teams:
            teams[j.team] = team_factor(j.team, team_spread, seed)
        base = told.get(j.job_id, j.est_runtime_s) * bias * teams[j.team]
        est = max(60.0, base * math.exp(rng.gauss(0.0, sigma))) if sigma else base
        if est == j.est_runtime_s:
            out.append(j)
            continue
        out.append(replace(j, est_runtime_s=est))
        true[j.job_id] = j.est_runtime_s
    return out, true


def ratios_before(jobs: Sequence[Demand], start: datetime, sigma: float, seed: int,
                  told: Mapping[str, float] | None = None, bias: float = 1.0, keep: int = 2048, *,
                  team_spread: float = 0.0) -> list[tuple[float, str]]:
    """(True / estimated runtime, team) of the last ``keep`` jobs of the trace that were done before
    ``start`` (each counted from its submission), oldest first: what a controller already running
    when the window opens would have seen finish (the pool keeps the last 256, and each team's own
    last ones). Their estimates are drawn like the window's, from streams of their own (the teams'
    factors are the window's)."""
    done = sorted((j for j in jobs if j.submitted_at + timedelta(seconds=j.est_runtime_s) <= start),
                  key=lambda j: (j.submitted_at + timedelta(seconds=j.est_runtime_s), j.job_id))[-keep:]
    split = max(0, len(done) - RECENT)
    out: list[tuple[float, str]] = []
    for part, stream in ((done[:split], "history-older"), (done[split:], "history")):
        seen, true = with_estimate_error(part, sigma, seed, told, bias, team_spread=team_spread, stream=stream)
        out += [(true.get(j.job_id, j.est_runtime_s) / j.est_runtime_s, j.team) for j in seen]
    return out
