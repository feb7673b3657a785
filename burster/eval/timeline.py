"""Where a clairvoyant runs one job shape on the cloud at every instant: a plan of offering segments.

For one shape (GPU model, GPUs, nodes) the plan walks the spot flips of all its offerings: it stays on
its offering while that is up unless another one, cheaper for the whole of its coming up-time, saves
more than a fresh node's boot; when its spot offering drops it moves to the cheapest offering
counting the boot (on-demand is always up). Knowing the future, a move never loses work: the next
node is booted ahead and the job is checkpointed within the interruption notice. Every segment is a
separate set of whole nodes billed by its cloud's rule for its length plus ``boot_s``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from burster.billing import billing_rule
from burster.eval.fluid import FloatArray, IntArray, nodes_for
from burster.eval.instance import EvalJob, Instance
from burster.model import Market, Offering


@dataclass(frozen=True)
class Timeline:
    offerings: tuple[Offering, ...]
    start: FloatArray  # segment starts (first is 0); a segment ends where the next starts (last: inf)
    which: IntArray  # offering index of each segment
    rate: FloatArray  # USD per hour of the job's nodes on that offering
    boot_s: float
    # [start, end) spans when none of the shape's offerings is up (spot-only catalogs): no run there
    gaps: FloatArray = field(default_factory=lambda: np.empty((0, 2)))

    def _in_gap(self, s: FloatArray, e: FloatArray) -> np.ndarray:
        """Whether each [s, e) overlaps a gap (the gaps are sorted and apart)."""
        if not len(self.gaps):
            return np.zeros(len(s), dtype=np.bool_)
        i = np.searchsorted(self.gaps[:, 1], s, side="right")
        hit: np.ndarray = (i < len(self.gaps)) & (self.gaps[np.minimum(i, len(self.gaps) - 1), 0] < e) & (e > s)
        return hit

    def billed_usd(self, seg: IntArray, run_s: FloatArray) -> FloatArray:
        """USD of running ``run_s`` seconds (plus boot) on segment ``seg``'s offering (``cloudplan.billed_s``)."""
        out = np.zeros(len(seg))
        x = run_s + self.boot_s
        which = self.which[seg]
        for i in np.unique(which):  # only the offerings these segments use
            m = which == i
            rule = billing_rule(self.offerings[int(i)].provider)
            units = x[m] / rule.increment_s
            whole = np.ceil(units - 1e-9) if rule.round_up else np.floor(units + 1e-9)
            billed = np.maximum(np.maximum(whole * rule.increment_s, rule.minimum_s), x[m])
            out[m] = billed * self.rate[seg[m]] / 3600.0
        return np.where(run_s > 0, out, 0.0)

    @cached_property
    def _ends(self) -> FloatArray:
        return np.append(self.start[1:], np.inf)

    @cached_property
    def _prefix(self) -> FloatArray:
        """USD of the whole segments before each segment (computed once per timeline)."""
        full = self.billed_usd(np.arange(len(self.start)), self._ends - self.start)
        return np.concatenate(([0.0], np.cumsum(np.where(np.isfinite(full), full, 0.0))))

    def cost(self, s: FloatArray, e: FloatArray) -> FloatArray:
        """USD of running over [s, e) for many (s, e) at once."""
        ends, prefix = self._ends, self._prefix
        i0 = np.searchsorted(self.start, s, side="right") - 1
        i1 = np.searchsorted(self.start, e, side="left") - 1
        same = i0 == i1
        head = self.billed_usd(i0, np.where(same, e, ends[i0]) - s)
        tail = self.billed_usd(i1, np.where(same, 0.0, e - self.start[i1]))
        middle = np.where(same, 0.0, prefix[i1] - prefix[np.minimum(i0 + 1, i1)])
        usd = np.where(e > s, head + middle + tail, 0.0)
        return np.asarray(np.where(self._in_gap(s, e), np.inf, usd), dtype=np.float64)

    def cost_one(self, s: float, e: float) -> float:
        """``cost`` for one (s, e), without the array overhead (the clairvoyant calls it per job)."""
        if e <= s:
            return 0.0
        if len(self.gaps) and self._in_gap(np.array([s]), np.array([e]))[0]:
            return math.inf
        i0 = int(np.searchsorted(self.start, s, side="right")) - 1
        i1 = int(np.searchsorted(self.start, e, side="left")) - 1
        if i0 == i1:
            return self._billed_one(i0, e - s)
        middle = float(self._prefix[i1] - self._prefix[min(i0 + 1, i1)])
        head = self._billed_one(i0, float(self._ends[i0]) - s)
        return head + middle + self._billed_one(i1, e - float(self.start[i1]))

    def _billed_one(self, seg: int, run_s: float) -> float:
        """``billed_usd`` for one segment."""
        if run_s <= 0:
            return 0.0
        x = run_s + self.boot_s
        rule = billing_rule(self.offerings[int(self.which[seg])].provider)
        units = x / rule.increment_s
        whole = math.ceil(units - 1e-9) if rule.round_up else math.floor(units + 1e-9)
        return max(whole * rule.increment_s, rule.minimum_s, x) * float(self.rate[seg]) / 3600.0

    def segments(self, s: float, e: float) -> list[tuple[float, float, Offering]]:
        """The plan over [s, e): (start, end, offering) pieces."""
        i = int(np.searchsorted(self.start, s, side="right") - 1)
        out = []
        while i < len(self.start) and self.start[i] < e:
            lo = max(s, float(self.start[i]))
            hi = min(e, float(self.start[i + 1]) if i + 1 < len(self.start) else math.inf)
            out.append((lo, hi, self.offerings[int(self.which[i])]))
            i += 1
        return out


def build_timeline(instance: Instance, job: EvalJob, horizon_s: float, boot_s: float) -> Timeline | None:
    """The plan for ``job``'s shape up to ``horizon_s`` (None when its GPU model has no offering)."""
    offers = tuple(o for o in instance.offerings if o.gpu_model == job.gpu_model)
    if not offers:
        return None
    rate = np.array([nodes_for(job, o) * o.price_per_hour_usd for o in offers])
    times, up = _availability(instance, offers, horizon_s)
    down_at = _next_down(up, times)
    starts, which = [], []
    gaps: list[list[float]] = []
    cur = -1
    for k, t in enumerate(times):
        if not up[k].any():  # nothing to run on until the next flip (the pick below is moot: costs are inf)
            until = float(times[k + 1]) if k + 1 < len(times) else math.inf
            if gaps and gaps[-1][1] == t:
                gaps[-1][1] = until
            else:
                gaps.append([float(t), until])
        ends = down_at[k]
        run = np.maximum(np.minimum(ends - t, 6 * 3600.0), 1e-9)
        per_run = np.where(up[k], rate * (run + boot_s) / run, np.inf)  # a fresh node's boot over its up-time
        best = int(np.argmin(per_run))
        if cur < 0 or not up[k, cur]:
            pick = best
        else:
            saving = (rate[cur] - rate[best]) * run[best] / 3600.0
            pick = best if saving > rate[best] * boot_s / 3600.0 else cur
        if pick != cur:
            starts.append(t)
            which.append(pick)
            cur = pick
    return Timeline(offers, np.array(starts, dtype=np.float64), np.array(which, dtype=np.int64),
                    rate[np.array(which, dtype=np.int64)], boot_s, np.array(gaps, dtype=np.float64).reshape(-1, 2))


def _availability(instance: Instance, offers: Sequence[Offering], horizon_s: float) -> tuple[FloatArray, np.ndarray]:
    """Instants where any offering flips (from 0), and which offerings are up from each until the next."""
    flips: list[FloatArray] = [np.zeros(1)]
    series = [instance.spot_series.get(o.key) if o.market is Market.SPOT else None for o in offers]
    for s in {id(s): s for s in series if s is not None}.values():
        d = np.asarray(s.data) > 0
        ticks = np.flatnonzero(d != np.roll(d, 1))
        cycles = np.arange(math.ceil(horizon_s / s.span_s) + 1)
        flips.append((ticks[None, :] * s.gap_s + cycles[:, None] * s.span_s).reshape(-1))
    times = np.unique(np.concatenate(flips))
    times = times[times < horizon_s]
    up = np.ones((len(times), len(offers)), dtype=np.bool_)
    for j, ser in enumerate(series):
        if ser is not None:
            up[:, j] = np.asarray(ser.data)[(times // ser.gap_s).astype(np.int64) % len(ser.data)] > 0
    return times, up


def _next_down(up: np.ndarray, times: FloatArray) -> FloatArray:
    """[k, o]: when offering o is next down at or after times[k] (inf if never within the timeline)."""
    down = np.where(up, np.inf, times[:, None])
    return np.asarray(np.minimum.accumulate(down[::-1], axis=0)[::-1], dtype=np.float64)
