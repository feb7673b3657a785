"""(group, block) pairs of the fluid model and the cloud price levels of the slots each pair covers.

A block is ``k`` consecutive slots; a group's window [first, last] meets blocks first // k .. last // k.
A pair's slots are the window's slots inside its block. ``levels[s]`` are shape s's distinct finite
cloud prices; ``count[p, l]`` the pair's slots whose cheapest offering costs ``levels[shape, l]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from burster.eval.fluid import FloatArray, IntArray


@dataclass(frozen=True)
class Pairs:
    k: int
    shape: IntArray  # price shape of each group
    group: IntArray  # group of each pair
    block: IntArray
    slots: IntArray  # slots of the pair (window inside block)
    count: IntArray  # (pairs, levels) slots at each price level
    levels: FloatArray  # (shapes, levels), padded with inf
    blocks: int  # number of blocks covering the horizon


def price_levels(price: FloatArray) -> tuple[FloatArray, IntArray]:
    """Per shape its distinct finite prices (inf-padded) and cum[s, l, t] = slots before t at level l."""
    shapes, slots = price.shape
    uniq = [np.unique(row[np.isfinite(row)]) for row in price]
    width = max((len(u) for u in uniq), default=0) or 1
    levels = np.full((shapes, width), np.inf)
    cum = np.zeros((shapes, width, slots + 1), dtype=np.int64)
    for s, u in enumerate(uniq):
        levels[s, :len(u)] = u
        idx = np.searchsorted(u, price[s])
        for li in range(len(u)):
            cum[s, li, 1:] = np.cumsum(idx == li)
    return levels, cum


def make_pairs(first: IntArray, last: IntArray, shape: IntArray, price: FloatArray, k: int) -> Pairs:
    """Every (group, block) pair of groups with windows [first, last] and price rows ``price[shape]``."""
    slots = price.shape[1]
    b0, b1 = first // k, last // k
    n = b1 - b0 + 1
    grp = np.repeat(np.arange(len(first)), n)
    offs = np.arange(len(grp)) - np.repeat(np.cumsum(n) - n, n)
    blk = b0[grp] + offs
    lo = np.maximum(first[grp], blk * k)
    hi = np.minimum(last[grp], blk * k + k - 1)
    levels, cum = price_levels(price)
    li = np.arange(levels.shape[1])[None, :]
    sh = shape[grp][:, None]
    count = cum[sh, li, (hi + 1)[:, None]] - cum[sh, li, lo[:, None]]
    return Pairs(k, shape, grp, blk, hi - lo + 1, count, levels, -(-slots // k))


def block_slots(pairs: Pairs, slots: int) -> IntArray:
    """Slots in each block (the last one may be short)."""
    b = np.arange(pairs.blocks)
    return np.asarray(np.minimum((b + 1) * pairs.k, slots) - b * pairs.k, dtype=np.int64)
