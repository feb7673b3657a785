"""SenseTime Helios per-VC minute series (``{vc}_cluster_sequence_vc.csv[.gz]``) turned into job arrivals.

The series counts GPUs and jobs, not individual jobs, so jobs are inferred by a fixed, seeded rule
(docs/traces.md walks through it with an example):

1. Arrivals. Each minute and for each size class (``noless_8``: jobs of >= 8 GPUs, ``less_8``:
   jobs of < 8 GPUs), new demand = the rise of running + pending GPUs of that class over the previous
   minute (before the first row the VC counts as empty, so the first row's jobs all arrive then).
   A fall is jobs finishing; a job that ends in the same minute another starts is not seen, so
   arrivals are a lower bound and runtimes come out longer to compensate (step 3).
2. Sizes. The new GPUs are split into as many jobs as the class's running + pending job count rose
   (at least one; more where a job would be larger than the VC's ``total_gpu_num``). ``noless_8``
   jobs get whole 8-GPU nodes shared as evenly as possible; a remainder that is not a multiple of 8
   joins the last job (or is a job of its own where that job would outgrow the VC), and a rise below
   8 GPUs is one job of that size. ``less_8`` jobs get 1..7 GPUs each, shared as evenly as possible.
   Jobs above 8 GPUs are gangs of ceil(gpus / 8) nodes.
3. Runtimes, by Little's law per UTC day and class. A day's budget is its running GPU-minutes
   (``running_gpu_num`` summed, shared between the classes in the ratio of ``running_gpu_num_noless_8``
   to ``running_gpu_num_less_8``). A day's budget with no arrivals of its class goes to the nearest
   earlier day with arrivals (else the nearest later one; to the other class if this class has none);
   arrivals on a day left with no budget join the nearest later funded day (else earlier). Each job of
   a group draws a weight 0.25 + Exp(1) from ``random.Random(seed)`` and runtime = budget x weight /
   sum(gpus x weight), so the trace's GPU-hours equal sum(running_gpu_num) / 60 exactly (floating point).

Jobs are best-effort, priority 0, any GPU model, team = the VC name. ``helios_capacity`` gives the
VC's GPU pool (``total_gpu_num``), the on-prem pool size to simulate the trace against. A running or
pending GPU count above ``MAX_GPU_RATIO`` x that pool, or a pool above ``MAX_VC_GPUS``, is an error.
"""

from __future__ import annotations

import bisect
import logging
import math
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from burster.errors import InputError
from burster.model import Demand
from burster.traces.base import Row, Trace, csv_rows, gang_nodes, out_of_range, sorted_trace

log = logging.getLogger(__name__)

CLASSES = ("noless_8", "less_8")
SPLITS = tuple(f"{k}_{w}_num_{c}" for c in CLASSES for k in ("running", "pending") for w in ("gpu", "job"))
COUNTS = ("total_gpu_num", "running_gpu_num", "pending_gpu_num", *SPLITS)
COLUMNS = ("time", *COUNTS)
GPU_COUNTS = tuple(c for c in COUNTS if "gpu_num" in c and c != "total_gpu_num")
MAX_VC_GPUS = 100_000  # the largest total_gpu_num accepted (Helios VCs have at most a few hundred)
MAX_GPU_RATIO = 4  # a running or pending GPU count may reach 4 x the VC's GPUs (the Earth files reach 2 x)


@dataclass(frozen=True)
class _Minute:
    time: datetime
    counts: dict[str, int]
    line: int  # the CSV row, for error messages

    def demand(self, cls: str, what: str = "gpu") -> int:
        return self.counts[f"running_{what}_num_{cls}"] + self.counts[f"pending_{what}_num_{cls}"]


def _minutes(path: Path) -> tuple[list[_Minute], int]:
    """The series' rows and the VC's capacity (its largest total_gpu_num), which bounds every GPU count."""
    out: list[_Minute] = []
    for row in csv_rows(path, COLUMNS):
        when = row.time("time")
        if out and when <= out[-1].time:
            raise row.fail("time", f"{when:%Y-%m-%d %H:%M:%S} is not after the previous row's {out[-1].time}")
        counts = {column: _whole(row, column) for column in COUNTS}
        if (total := counts["total_gpu_num"]) > MAX_VC_GPUS:
            raise row.fail("total_gpu_num", f"{total} is above {MAX_VC_GPUS}, more GPUs than a VC has")
        out.append(_Minute(when, counts, row.line))
    if not out:
        raise InputError(f"{path}: the series holds no rows")
    capacity = max(m.counts["total_gpu_num"] for m in out)
    if capacity <= 0:
        raise InputError(f"{path}: column 'total_gpu_num' is never above 0, so the VC has no GPUs")
    for m in out:
        for column in GPU_COUNTS:
            if m.counts[column] > MAX_GPU_RATIO * capacity:
                raise InputError(f"{path}: row {m.line}, column {column!r}: {m.counts[column]} is above "
                                 f"{MAX_GPU_RATIO} x the VC's {capacity} GPUs (its largest total_gpu_num)")
    return out, capacity


def _whole(row: Row, column: str) -> int:
    value = row.number(column)
    if value != int(value):
        raise row.fail(column, f"{value:g} is not a whole number")
    return int(value)


def helios_capacity(path: Path) -> int:
    """The VC's GPU pool: the largest ``total_gpu_num`` in the series (constant in the Earth VCs)."""
    return _minutes(path)[1]


def job_sizes(cls: str, gpus: int, jobs: int, limit: int = 0) -> list[int]:
    """Split a rise of ``gpus`` GPUs in class ``cls`` among (about) ``jobs`` new jobs (rule step 2).

    With ``limit`` > 0 (the VC's capacity) more jobs are made where needed so none is larger than it.
    """
    if cls == "noless_8":
        if gpus < 8:
            return [gpus]
        most = max(limit // 8, 1) if limit else gpus
        n = min(max(jobs, math.ceil(gpus // 8 / most), 1), gpus // 8)
        base, extra = divmod(gpus // 8, n)
        sizes = [8 * (base + (k < extra)) for k in range(n)]
        if gpus % 8 and limit and sizes[-1] + gpus % 8 > limit:
            return [*sizes, gpus % 8]
        sizes[-1] += gpus % 8  # the last job is one of the smallest
        return sizes
    n = min(max(jobs, math.ceil(gpus / min(7, limit or 7)), 1), gpus)
    base, extra = divmod(gpus, n)
    return [base + (k < extra) for k in range(n)]


def load_helios(path: Path, *, seed: int = 0, checkpoint_interval_s: float = 1800.0) -> Trace:
    minutes, capacity = _minutes(path)
    vc = path.name.split("_cluster_sequence")[0]
    first_day = minutes[0].time.date()
    arrivals: dict[str, dict[int, list[tuple[int, int]]]] = {c: defaultdict(list) for c in CLASSES}
    budget: dict[str, dict[int, float]] = {c: defaultdict(float) for c in CLASSES}
    prev = {(c, w): 0 for c in CLASSES for w in ("gpu", "job")}
    for i, m in enumerate(minutes):
        day = (m.time.date() - first_day).days
        running = {c: m.counts[f"running_gpu_num_{c}"] for c in CLASSES}
        split = sum(running.values())
        for c in CLASSES:
            share = running[c] / split if split else float(c == "less_8")
            budget[c][day] += m.counts["running_gpu_num"] * share
            rise = {w: m.demand(c, w) - prev[c, w] for w in ("gpu", "job")}
            prev.update({(c, w): m.demand(c, w) for w in ("gpu", "job")})
            if rise["gpu"] > 0:
                arrivals[c][day].extend((i, g) for g in job_sizes(c, rise["gpu"], rise["job"], capacity))
    for c, other in zip(CLASSES, CLASSES[::-1], strict=True):
        if not any(arrivals[c].values()):  # no jobs of this class ever: its GPU-minutes go to the other
            for day, b in budget[c].items():
                budget[other][day] += b
            budget[c].clear()
    rng = random.Random(seed)
    jobs: list[Demand] = []
    unfunded = 0
    for c in CLASSES:
        for gpu_minutes, group in _groups(arrivals[c], budget[c]):
            if gpu_minutes <= 0:
                unfunded += len(group)
                continue
            weights = [0.25 + rng.expovariate(1.0) for _ in group]
            scale = gpu_minutes * 60.0 / sum(g * w for (_, g), w in zip(group, weights, strict=True))
            for (i, gpus), w in zip(group, weights, strict=True):
                jobs.append(Demand(
                    job_id=f"helios-{vc}-{i:05d}-{c}-{len(jobs)}", gpus=gpus, nodes=gang_nodes(gpus),
                    submitted_at=minutes[i].time, est_runtime_s=scale * w,
                    checkpoint_interval_s=checkpoint_interval_s, team=vc,
                ))
    longest = max((job.est_runtime_s for job in jobs), default=0.0)
    if problem := out_of_range(longest):
        raise InputError(f"{path}: an inferred runtime of {longest:.3g} s {problem}; running_gpu_num is far "
                         "above the per-class running_gpu_num columns for too long")
    log.info("%s: VC %s, capacity %d GPUs, %d jobs inferred (seed %d); %d skipped: their class never ran",
             path, vc, capacity, len(jobs), seed, unfunded)
    return sorted_trace(path.name, path, jobs)


def _groups(arrivals: dict[int, list[tuple[int, int]]],
            budget: dict[int, float]) -> list[tuple[float, list[tuple[int, int]]]]:
    """Pair each day's budget with arrivals (rule step 3): (GPU-minutes, [(minute, gpus)]) per group."""
    arrival_days = sorted(d for d, jobs in arrivals.items() if jobs)
    if not arrival_days:
        return []
    funds: dict[int, float] = defaultdict(float)
    for day, b in budget.items():
        funds[_nearest(arrival_days, day, earlier_first=True)] += b
    funded = sorted(d for d, b in funds.items() if b > 0)
    if not funded:
        return [(0.0, [job for d in arrival_days for job in arrivals[d]])]
    groups: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for day in arrival_days:
        groups[_nearest(funded, day, earlier_first=False)].extend(arrivals[day])
    return [(funds[d], groups[d]) for d in funded]


def _nearest(days: list[int], day: int, *, earlier_first: bool) -> int:
    """``day`` if listed, else the nearest earlier (or later, per ``earlier_first``) listed day."""
    at = bisect.bisect_left(days, day)
    if at < len(days) and days[at] == day:
        return day
    earlier = days[at - 1] if at > 0 else None
    later = days[at] if at < len(days) else None
    first, second = (earlier, later) if earlier_first else (later, earlier)
    chosen = first if first is not None else second
    assert chosen is not None  # days is not empty
    return chosen

