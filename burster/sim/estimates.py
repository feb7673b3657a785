"""Runtime estimates that are wrong, as users' time limits and predictors are.

Traces give each job's true runtime; the controller only ever sees an estimate. With ``sigma`` > 0
each job's estimate is its runtime times exp(N(0, sigma)) (median exact; sigma 0.5: half the jobs
off by more than 40 %), drawn from a generator seeded by the simulation seed, at least 60 s. The
simulated pool runs jobs for their true runtimes; the policy, the reserved-queue projection and the
pool's backfill see the estimates.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace

from burster.errors import ConfigError
from burster.model import Demand

MAX_SIGMA = 3.0


def check_sigma(sigma: float) -> None:
    """Raise ConfigError, with the valid range, unless ``sigma`` is a usable estimate error."""
    if not 0.0 <= sigma <= MAX_SIGMA or math.isnan(sigma):
        raise ConfigError(f"estimate error must be a lognormal sigma in [0, {MAX_SIGMA:g}] (0: exact "
                          f"estimates, 0.5: typical of user time limits); got {sigma}")


def with_estimate_error(jobs: Sequence[Demand], sigma: float, seed: int) -> tuple[list[Demand], dict[str, float]]:
    """The jobs with noisy ``est_runtime_s``, and their true runtimes by job id (empty for sigma 0)."""
    check_sigma(sigma)
    if sigma == 0.0:
        return list(jobs), {}
    rng = random.Random(f"estimates:{seed}")
    out, true = [], {}
    for j in jobs:
        factor = math.exp(rng.gauss(0.0, sigma))
        out.append(replace(j, est_runtime_s=max(60.0, j.est_runtime_s * factor)))
        true[j.job_id] = j.est_runtime_s
    return out, true
