"""The Lagrangian value of the fluid model: a lower bound certified by weak duality, for any prices.

Price reserved GPU-hours at ``lam[B] >= 0`` USD in block B and drop the reserved capacity rows: each
group then independently fills its work into its cheapest options (in each slot of its window, the
cheaper of the cloud price there and ``lam``, at up to its rate cap), a fractional knapsack solved
exactly by sorting. For every ``lam``:

    L(lam) = sum over groups of that cost - sum over blocks of lam[B] * reserved GPU-hours of B

is <= the LP optimum (weak duality), and equals it at the LP's optimal duals (strong duality). So the
bound never depends on how accurately a solver found ``lam``.
"""

from __future__ import annotations

import numpy as np

from burster.eval.fluid import FloatArray
from burster.eval.pairs import Pairs, block_slots


def group_costs(p: Pairs, work: FloatArray, cap: FloatArray, lam: FloatArray) -> FloatArray:
    """Each group's cheapest cost with reserved GPU-hours priced at ``lam`` per block (inf: cannot finish)."""
    width = p.count.shape[1]
    lam_p = lam[p.block]
    levels = p.levels[p.shape[p.group]]  # (pairs, levels)
    price = np.minimum(levels, lam_p[:, None])
    amount = cap[p.group][:, None] * p.count
    covered = p.count.sum(axis=1)
    # slots with no cloud offering: only reserved, at lam
    item_group = np.concatenate([np.repeat(p.group, width), p.group])
    item_price = np.concatenate([price.reshape(-1), lam_p])
    item_amount = np.concatenate([amount.reshape(-1), cap[p.group] * (p.slots - covered)])
    keep = (item_amount > 0) & np.isfinite(item_price)
    g, pr, am = item_group[keep], item_price[keep], item_amount[keep]
    order = np.lexsort((pr, g))
    g, pr, am = g[order], pr[order], am[order]
    cum = np.cumsum(am)
    n_groups = len(work)
    total = np.bincount(g, weights=am, minlength=n_groups)
    before_group = np.concatenate(([0.0], np.cumsum(total)))[g]
    done_before = cum - am - before_group  # work filled by cheaper items of the same group
    used = np.clip(work[g] - done_before, 0.0, am)
    cost = np.bincount(g, weights=used * pr, minlength=n_groups)
    short = total < work * (1 - 1e-12)
    return np.where(short, np.inf, cost)


def lagrangian_usd(p: Pairs, work: FloatArray, cap: FloatArray, lam: FloatArray, reserved_gpu_h: float,
                   slots: int) -> float:
    """L(lam): a valid lower bound on the LP optimum for any ``lam`` >= 0 (one price per block)."""
    lam = np.maximum(lam, 0.0)
    costs = group_costs(p, work, cap, lam)
    return float(costs.sum() - reserved_gpu_h * float((lam * block_slots(p, slots)).sum()))
