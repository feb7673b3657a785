"""The reserved-run bound with p jobs allowed to split their reserved run (an on-prem preemption).

Burster's preempt rule (``policies/preempt.py``) stops a reserved job for an urgent one, so in an arm
that preempted p times at most p jobs have more than one reserved run. Relax those jobs to the fluid
model at the run bound's prices: a split job j does its r seconds of work in the cheapest seconds of
its window's slots, each at min(lam_t, p_j) per GPU-second (a cloud second costs at least p_j there,
a reserved one is charged lam_t), at most ``slot_s`` seconds a slot. That costs g x the sum of the
cheapest, split_j <= min_s f_j(s) (every f_j(s) is one such allocation). With mu >= 0 charged per
split job, for every schedule with at most p split jobs and every lam, mu >= 0,

    cloud $ >= sum over jobs of min(min_s f_j(s), split_j + mu) - mu p - lam x pool GPU-seconds,

and the best mu drops the p largest gaps min_s f_j - split_j: L_p(lam) = L(lam) - (the p largest
gaps, identical jobs counted ``count`` times). ``split_gains`` returns their running sums.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from burster.eval.fluid import FloatArray

if TYPE_CHECKING:
    from burster.eval.runs import RunJobs

MAX_SPLITS = 10_000  # running sums kept; past them the gain is unbounded (the bound falls to the fluid's)


def split_gains(j: RunJobs, lam: FloatArray, slot_s: float, minima: FloatArray) -> tuple[float, ...]:
    """(0, g_1, g_1 + g_2, ...): the largest gaps min_s f_j - split_j summed, one job at a time; cut
    at ``MAX_SPLITS`` with a last entry of inf (more splits: no more than the fluid bound is known)."""
    slots = len(lam)
    finite = j.price[np.isfinite(j.price)]
    top = float(finite.max()) if len(finite) else 0.0
    lam = np.clip(lam, 0.0, top)  # as ``runs._lagrangian`` clips it
    first = np.minimum(np.floor(j.arrival / slot_s), slots - 1).astype(np.int64)
    last = np.clip(np.ceil(j.due / slot_s - 1e-9).astype(np.int64) - 1, first, slots - 1)
    gaps = np.empty(len(j.arrival))
    for i in range(len(j.arrival)):
        price = np.sort(np.minimum(lam[first[i]:last[i] + 1], min(j.price[i], top)))
        full = int(j.runtime[i] // slot_s)
        cost = price[:full].sum() * slot_s
        if full < len(price):
            cost += price[full] * (j.runtime[i] - full * slot_s)
        gaps[i] = max(float(minima[i]) - j.gpus[i] * cost, 0.0)
    order = np.argsort(-gaps, kind="stable")
    each = np.repeat(gaps[order], j.count[order].astype(np.int64))
    sums = np.cumsum(each[:MAX_SPLITS]).tolist()
    return (0.0, *sums, *((math.inf,) if len(each) > MAX_SPLITS else ()))
