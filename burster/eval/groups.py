"""Jobs merged for the LP: same slot window, price shape and reserved eligibility share variables.

Also the LP's size plan: past ``MAX_PAIRS`` (group, block) pairs the reserved capacity is enforced per
block of consecutive slots, and past that with groups widened to whole blocks (for the duals only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from burster.eval.fluid import FloatArray, Fluid, IntArray

MAX_PAIRS = 20_000  # (group, block) pairs in the LP: about 2-3 s of HiGHS on this 2-core machine
BLOCK_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 36, 48, 72, 96, 144, 288)


@dataclass(frozen=True)
class Groups:
    """Jobs merged by (first slot, last slot, price shape, eligibility): sums of work and rate caps."""

    first: IntArray
    last: IntArray
    shape: IntArray
    eligible: np.ndarray
    work_gpu_h: FloatArray
    cap_gpu_h: FloatArray

    def subset(self, which: np.ndarray) -> Groups:
        return Groups(self.first[which], self.last[which], self.shape[which], self.eligible[which],
                      self.work_gpu_h[which], self.cap_gpu_h[which])


def group_jobs(f: Fluid) -> Groups:
    if len(f.first) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Groups(empty, empty, empty, np.zeros(0, dtype=np.bool_), np.zeros(0), np.zeros(0))
    keys = np.stack([f.first, f.last, f.shape, f.eligible.astype(np.int64)], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n = len(uniq)
    return Groups(uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3].astype(np.bool_),
                  np.bincount(inverse, weights=f.work_gpu_h, minlength=n).astype(np.float64),
                  np.bincount(inverse, weights=f.cap_gpu_h, minlength=n).astype(np.float64))


def cloud_only_usd(f: Fluid, g: Groups, which: np.ndarray) -> tuple[float, bool]:
    """Cheapest cloud cost of the selected groups, each filling its cheapest slots (no reserved GPUs)."""
    total, feasible = 0.0, True
    for i in np.flatnonzero(which):
        prices = np.sort(f.price[g.shape[i], g.first[i]:g.last[i] + 1])
        cap, work = g.cap_gpu_h[i], g.work_gpu_h[i]
        full = int(work // cap) if cap > 0 else 0
        full = min(full, len(prices))
        rest = work - full * cap
        usd = cap * float(prices[:full].sum())
        if rest > 1e-12 * max(work, 1.0):
            if full >= len(prices) or not np.isfinite(prices[full]):
                feasible = False
                continue
            usd += rest * float(prices[full])
        if not np.isfinite(usd):
            feasible = False
            continue
        total += usd
    return total, feasible


def widened(g: Groups, k: int, slots: int) -> Groups:
    """Groups merged by (first block, last block, shape), windows widened to whole blocks (for prices only)."""
    first = (g.first // k) * k
    last = np.minimum((g.last // k) * k + k - 1, slots - 1)
    keys = np.stack([first, last, g.shape], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n = len(uniq)
    return Groups(uniq[:, 0], uniq[:, 1], uniq[:, 2], np.ones(n, dtype=np.bool_),
                  np.bincount(inverse, weights=g.work_gpu_h, minlength=n).astype(np.float64),
                  np.bincount(inverse, weights=g.cap_gpu_h, minlength=n).astype(np.float64))


def n_pairs(g: Groups, k: int) -> int:
    return int((g.last // k - g.first // k + 1).sum())


def plan_lp(g: Groups, slots: int, max_pairs: int | None = None) -> tuple[int, Groups]:
    """The finest block size whose LP stays under ``max_pairs`` pairs, with exact groups if they fit."""
    max_pairs = MAX_PAIRS if max_pairs is None else max_pairs
    for k in BLOCK_CHOICES:
        if n_pairs(g, k) <= max_pairs:
            return k, g
        coarse = widened(g, k, slots)
        if n_pairs(coarse, k) <= max_pairs:
            return k, coarse
    k = BLOCK_CHOICES[-1]
    return k, widened(g, k, slots)
