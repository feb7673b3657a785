"""The LP of the groups that compete for reserved GPUs, built as sparse arrays and solved by HiGHS.

Per (group g, block B of k slots) pair: x = reserved GPU-hours, y_l = cloud GPU-hours at price level l
(the slots of B in g's window whose cheapest offering costs level l). Rows:
  sum over pairs of g of (x + sum_l y_l) = work_g            (all work done)
  x + sum_l y_l <= cap_g * slots(B in window)               (rate cap: the job's GPUs)
  y_l <= cap_g * slots at level l (column bound)
  sum over g of x(g, B) <= reserved GPU-hours per slot * slots(B)
With k = 1 this is exactly the per-slot fluid model; k > 1 only merges capacity rows (a relaxation).
"""

from __future__ import annotations

import highspy
import numpy as np

from burster.eval.fluid import FloatArray, Fluid, IntArray


def price_levels(price: FloatArray) -> tuple[FloatArray, np.ndarray]:
    """Per shape, its distinct finite prices (padded with inf) and cumulative slot counts per level.

    Returns (levels (K, L), cum (K, L, S + 1)) where cum[k, l, t] = slots before t at level l.
    """
    shapes, slots = price.shape
    uniq = [np.unique(row[np.isfinite(row)]) for row in price]
    width = max((len(u) for u in uniq), default=0) or 1
    levels = np.full((shapes, width), np.inf)
    cum = np.zeros((shapes, width, slots + 1), dtype=np.int32)
    for k, u in enumerate(uniq):
        levels[k, :len(u)] = u
        if len(u) == 0:
            continue
        idx = np.searchsorted(u, price[k])
        for li in range(len(u)):
            cum[k, li, 1:] = np.cumsum(idx == li, dtype=np.int32)
    return levels, cum


def solve_reserved_lp(f: Fluid, first: IntArray, last: IntArray, shape: IntArray, work: FloatArray,
                      cap: FloatArray, k: int) -> tuple[float, str]:
    """Minimum cloud USD of these groups sharing the reserved pool; (value, status)."""
    n_groups = len(first)
    # (group, block) pairs and the slot range [lo, hi] of each
    b0, b1 = first // k, last // k
    counts = b1 - b0 + 1
    grp = np.repeat(np.arange(n_groups), counts)
    offs = np.arange(len(grp)) - np.repeat(np.cumsum(counts) - counts, counts)
    blk = b0[grp] + offs
    lo = np.maximum(first[grp], blk * k)
    hi = np.minimum(last[grp], blk * k + k - 1)
    n_pairs = len(grp)
    levels, cum = price_levels(f.price)
    width = levels.shape[1]
    li = np.arange(width)[None, :]
    sh = shape[grp][:, None]
    per_level = cum[sh, li, (hi + 1)[:, None]] - cum[sh, li, lo[:, None]]  # (pairs, levels)
    yp, yl = np.nonzero(per_level > 0)
    n_y = len(yp)
    n_blocks = int(blk.max()) + 1 if n_pairs else 0
    # columns: x (one per pair), then y (one per (pair, level) with slots)
    cost = np.concatenate([np.zeros(n_pairs), levels[shape[grp[yp]], yl]])
    upper = np.concatenate([cap[grp] * (hi - lo + 1), cap[grp[yp]] * per_level[yp, yl]])
    # rows: groups, then pairs, then blocks
    x_rows = np.stack([grp, n_groups + np.arange(n_pairs), n_groups + n_pairs + blk], axis=1)
    y_rows = np.stack([grp[yp], n_groups + yp], axis=1)
    index = np.concatenate([x_rows.reshape(-1), y_rows.reshape(-1)])
    start = np.concatenate([np.arange(n_pairs + 1) * 3, 3 * n_pairs + np.arange(1, n_y + 1) * 2])
    block_slots = np.minimum((np.arange(n_blocks) + 1) * k, f.slots) - np.arange(n_blocks) * k
    row_upper = np.concatenate([work, cap[grp] * (hi - lo + 1), f.reserved_gpu_h * block_slots])
    row_lower = np.concatenate([work, np.full(n_pairs + n_blocks, -np.inf)])
    return _solve(cost, np.zeros(len(cost)), upper, row_lower, row_upper, start, index)


def _solve(cost: FloatArray, col_lower: FloatArray, col_upper: FloatArray, row_lower: FloatArray,
           row_upper: FloatArray, start: IntArray, index: IntArray) -> tuple[float, str]:
    lp = highspy.HighsLp()
    lp.num_col_ = len(cost)
    lp.num_row_ = len(row_lower)
    lp.col_cost_ = cost
    lp.col_lower_ = col_lower
    lp.col_upper_ = col_upper
    lp.row_lower_ = row_lower
    lp.row_upper_ = row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start.astype(np.int32)
    lp.a_matrix_.index_ = index.astype(np.int32)
    lp.a_matrix_.value_ = np.ones(len(index))
    h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        return 0.0, h.modelStatusToString(status).lower()
    return float(h.getInfo().objective_function_value), "optimal"
