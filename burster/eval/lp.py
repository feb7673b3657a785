"""The LP of the groups that compete for reserved GPUs, built as sparse arrays and solved by HiGHS.

Per (group g, block B) pair (see ``pairs.py``): x = reserved GPU-hours, y_l = cloud GPU-hours at price
level l. Rows:
  sum over pairs of g of (x + sum_l y_l) = work_g            (all work done)
  x + sum_l y_l <= cap_g * slots of the pair                 (rate cap: the job's GPUs)
  y_l <= cap_g * slots of the pair at level l                (column bound)
  sum over g of x(g, B) <= reserved GPU-hours per slot * slots(B)
With k = 1 this is exactly the per-slot fluid model; k > 1 only merges capacity rows (a relaxation).
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass

import highspy
import numpy as np

from burster.eval.fluid import FloatArray
from burster.eval.pairs import Pairs, block_slots


@dataclass(frozen=True)
class LpResult:
    value: float
    status: str  # "optimal" or HiGHS's model status
    reserved_price: FloatArray  # per block: -dual of its capacity row (USD per reserved GPU-hour), >= 0


def solve_reserved_lp(p: Pairs, work: FloatArray, cap: FloatArray, reserved_gpu_h: float,
                      slots: int) -> LpResult:
    """Minimum cloud USD of these groups sharing the reserved pool, with the capacity rows' duals."""
    n_groups, n_pairs = len(work), len(p.group)
    grp, blk = p.group, p.block
    yp, yl = np.nonzero(p.count > 0)
    n_y = len(yp)
    shape_of_pair = p.shape[grp]
    cost = np.concatenate([np.zeros(n_pairs), p.levels[shape_of_pair[yp], yl]])
    upper = np.concatenate([cap[grp] * p.slots, cap[grp[yp]] * p.count[yp, yl]])
    x_rows = np.stack([grp, n_groups + np.arange(n_pairs), n_groups + n_pairs + blk], axis=1)
    y_rows = np.stack([grp[yp], n_groups + yp], axis=1)
    index = np.concatenate([x_rows.reshape(-1), y_rows.reshape(-1)])
    start = np.concatenate([np.arange(n_pairs + 1) * 3, 3 * n_pairs + np.arange(1, n_y + 1) * 2])
    row_upper = np.concatenate([work, cap[grp] * p.slots, reserved_gpu_h * block_slots(p, slots)])
    row_lower = np.concatenate([work, np.full(n_pairs + p.blocks, -np.inf)])
    h = _solve(cost, upper, row_lower, row_upper, start, index)
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        return LpResult(0.0, h.modelStatusToString(status).lower(), np.zeros(p.blocks))
    duals = np.asarray(h.getSolution().row_dual, dtype=np.float64)[n_groups + n_pairs:]
    return LpResult(float(h.getInfo().objective_function_value), "optimal", np.maximum(-duals, 0.0))


def _solve(cost: FloatArray, col_upper: FloatArray, row_lower: FloatArray, row_upper: FloatArray,
           start: np.ndarray, index: np.ndarray) -> highspy.Highs:
    lp = highspy.HighsLp()
    lp.num_col_ = len(cost)
    lp.num_row_ = len(row_lower)
    lp.col_cost_ = cost
    lp.col_lower_ = np.zeros(len(cost))
    lp.col_upper_ = col_upper
    lp.row_lower_ = row_lower
    lp.row_upper_ = row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start.astype(np.int32)
    lp.a_matrix_.index_ = index.astype(np.int32)
    lp.a_matrix_.value_ = np.ones(len(index))
    h = quiet_highs()
    h.passModel(lp)
    h.run()
    return h


def quiet_highs() -> highspy.Highs:
    """A HiGHS solver that prints nothing.

    The first ``Highs()`` of a process writes a banner to the C-level stdout before any option can
    be set, which would corrupt ``--json`` output; it is sent to the null device instead.
    """
    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        ctypes.CDLL(None).fflush(None)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
    h.setOptionValue("output_flag", False)
    return h
