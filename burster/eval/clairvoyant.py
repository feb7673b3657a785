"""A clairvoyant feasible schedule: the upper bound of the bracket.

Every job gets a cloud plan first (``cloudplan.py``: moving between offerings before spot drops, or
one unbroken run). Then jobs are considered in one order (arrival; most cloud USD first; most cloud
USD per GPU-hour first; or, guided by an LP of this model (``lpguide.py``), most LP reserved share x
cloud USD first) and each runs on reserved GPUs when they are free for its whole runtime from some
start within its wait budget (the LP's start when the LP guides and the pool is free there, else the
earliest such start, on a ``grid_s`` capacity profile where a run occupies every cell it touches),
else by its cloud plan. With moves allowed, a job that finds no reserved start may instead run on the
cloud (from its plan's start or from its budget's end, whichever costs less, or as the LP's tail says)
until the pool is free to its due end, and finish there ("moved"). The cheapest order's schedule wins.
Every job starts within its wait budget, runs without a pause and never over-commits the reserved pool
(``verify.py`` checks all of it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from burster.eval.cloudplan import CloudPlan, Shape, hopping_plans, shape_of, single_run_plans
from burster.eval.instance import EvalJob, Instance
from burster.eval.lpguide import Guide, lp_guide
from burster.eval.timeline import Timeline

RESERVED = "reserved"
Nodes = tuple[int, ...]  # reserved node indices (one per gang member; (0,) when the pool is one GPU count)
ORDERS = ("arrival", "cost", "lp")  # also "value": most cloud USD per GPU-hour first


@dataclass(frozen=True)
class Assignment:
    """Where and when one job runs: on reserved GPUs, or on cloud ``segments`` (start, end, offering key)."""

    job_id: str
    start_s: float
    end_s: float
    gpus: int
    where: str  # "reserved", "cloud", "moved" (cloud segments, then reserved from moved_at_s to the end),
    # or "" when it fits nowhere (infinite cost)
    segments: tuple[tuple[float, float, str], ...] = ()
    usd: float = 0.0
    moved_at_s: float = math.nan
    pool_nodes: Nodes = ()  # the reserved nodes of its reserved part (indices; see ``Instance.node_gpus``)


class _Profile:
    """Reserved GPUs in use per grid cell: per node when the instance has ``node_gpus`` (a gang member
    needs its GPUs on one node, each member on its own), else one count for the whole pool."""

    def __init__(self, instance: Instance, grid_s: float) -> None:
        self.grid_s = grid_s
        self.by_node = instance.node_gpus > 0
        n = instance.reserved_gpus // instance.node_gpus if self.by_node else 1
        self.capacity = instance.node_gpus if self.by_node else instance.reserved_gpus
        self.used = np.zeros((n, math.ceil(instance.horizon_s / grid_s) + 2), dtype=np.int64)

    def _demand(self, job: EvalJob) -> tuple[int, int]:
        """(GPUs per node, nodes) the job needs: its gang's shape, or its GPUs on the one pool count."""
        return (job.gpus_per_node, job.nodes) if self.by_node else (job.gpus, 1)

    def _cells(self, start_s: float, end_s: float) -> tuple[int, int]:
        c0 = int(start_s // self.grid_s)
        c1 = max(c0 + 1, math.ceil(end_s / self.grid_s - 1e-9))
        self._grow(c1)
        return c0, c1

    def free(self, job: EvalJob, start_s: float, end_s: float) -> Nodes | None:
        """Nodes with the job's GPUs free in every cell [start_s, end_s) touches (fullest first), or None."""
        per, need = self._demand(job)
        if per > self.capacity or need > len(self.used):
            return None
        c0, c1 = self._cells(start_s, end_s)
        return self._fitting(self.used[:, c0:c1], per, need)

    def tail_start(self, job: EvalJob, start_s: float) -> tuple[float, Nodes] | None:
        """For a run [start_s, start_s + runtime): the earliest cell boundary after ``start_s`` from which
        enough nodes are free to the run's end, and those nodes (None: not before the end)."""
        per, need = self._demand(job)
        g = self.grid_s
        end = start_s + job.runtime_s
        c0 = int(start_s // g) + 1
        c1 = math.ceil(end / g - 1e-9)
        if c1 <= c0 or per > self.capacity or need > len(self.used):
            return None
        self._grow(c1)
        if int((self.used[:, c1 - 1] <= self.capacity - per).sum()) < need:
            return None  # the last cell is taken: no tail (a cheap test that settles most calls)
        blocked = self.used[:, c0:c1] > self.capacity - per
        width = c1 - c0
        # per node: the first cell after its last blocked one (0 when none is blocked)
        last = np.where(blocked.any(axis=1), width - np.argmax(blocked[:, ::-1], axis=1), 0)
        order = np.argsort(last, kind="stable")[:need]
        s = (c0 + int(last[order[-1]])) * g
        if s >= end:
            return None
        nodes = self._fitting(self.used[:, int(s // g):c1], per, need)
        return None if nodes is None else (s, nodes)

    def earliest(self, job: EvalJob) -> tuple[float, Nodes] | None:
        """Earliest start in [arrival, arrival + budget] (arrival + whole grid steps) with the job's GPUs free
        throughout on enough nodes, and those nodes."""
        per, need = self._demand(job)
        if per > self.capacity or need > len(self.used):
            return None
        g = self.grid_s
        c0 = int(job.arrival_s // g)
        steps = int(job.wait_budget_s // g)
        width = math.ceil((job.arrival_s - c0 * g + job.runtime_s) / g - 1e-9) or 1
        self._grow(c0 + steps + width)
        blocked = self.used[:, c0:c0 + steps + width] > self.capacity - per
        cs: np.ndarray = np.zeros((len(blocked), blocked.shape[1] + 1), dtype=np.int64)
        np.cumsum(blocked, axis=1, out=cs[:, 1:])
        fits = cs[:, width:width + steps + 1] - cs[:, :steps + 1] == 0  # node x start step
        k = np.flatnonzero(fits.sum(axis=0) >= need)
        if len(k) == 0:
            return None
        first = int(k[0])
        window = self.used[:, c0 + first:c0 + first + width]
        nodes = self._pick(np.flatnonzero(fits[:, first]), window, need)
        return None if nodes is None else (job.arrival_s + first * g, nodes)

    def take(self, start_s: float, end_s: float, job: EvalJob, nodes: Nodes) -> None:
        c0, c1 = self._cells(start_s, end_s)
        per, _ = self._demand(job)
        self.used[list(nodes), c0:c1] += per

    def _fitting(self, window: np.ndarray, per: int, need: int) -> Nodes | None:
        """``need`` nodes with ``per`` GPUs free in every cell of ``window`` (node x cell), or None."""
        return self._pick(np.flatnonzero(~(window > self.capacity - per).any(axis=1)), window, need)

    @staticmethod
    def _pick(ok: np.ndarray, window: np.ndarray, need: int) -> Nodes | None:
        """``need`` of the fitting nodes ``ok``, the fullest over ``window`` first (packs, keeps whole nodes
        free for gangs), ties by index."""
        if len(ok) < need:
            return None
        if need == len(ok):
            return tuple(int(i) for i in ok)
        load = window[ok].sum(axis=1)
        order = np.lexsort((ok, -load))[:need]
        return tuple(sorted(int(ok[i]) for i in order))

    def _grow(self, cells: int) -> None:
        if cells > self.used.shape[1]:
            extra = np.zeros((len(self.used), cells - self.used.shape[1]), dtype=np.int64)
            self.used = np.concatenate([self.used, extra], axis=1)


def schedule(instance: Instance, *, grid_s: float = 60.0, boot_s: float = 0.0, migrate: bool = True,
             orders: Sequence[str] = ORDERS) -> list[Assignment]:
    """The cheapest of the clairvoyant schedules built in each of ``orders``; with ``migrate``, a job that
    finds no reserved start may run on the cloud until the pool is free to its end and finish there.

    ``migrate``: cloud jobs may move between offerings before spot drops and back to the pool (else one
    unbroken run each); ``boot_s``: seconds every cloud segment is billed beyond its run (0: the model's
    billing only).
    """
    timelines: dict[Shape, Timeline] = {}
    if migrate:
        plans, timelines = hopping_plans(instance, boot_s)
    else:
        plans = single_run_plans(instance, boot_s)
    guide = None
    if "lp" in orders:
        guide = lp_guide(instance, [p.usd for p in plans], move_back=migrate)
    best: list[Assignment] = []
    best_usd = math.inf
    for order in orders:
        if order == "lp" and guide is None:
            continue  # the LP is over its size cap (or failed): the other orders only
        out = _place(instance, plans, timelines, order, grid_s, guide, move_back=migrate)
        usd = sum(a.usd for a in out)
        if not best or usd < best_usd:
            best, best_usd = out, usd
    return [_with_segments(a, instance.jobs[i], plans[i], timelines) for i, a in enumerate(best)]


def _order(instance: Instance, plans: list[CloudPlan], order: str, guide: Guide | None) -> list[int]:
    jobs = instance.jobs
    if order == "lp" and guide is not None:
        return sorted(range(len(jobs)), key=lambda i: (-guide.share[i] * plans[i].usd, -plans[i].usd, jobs[i].job_id))
    if order == "arrival":
        return sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival_s, jobs[i].job_id))
    if order == "value":
        return sorted(range(len(jobs)), key=lambda i: (-plans[i].usd / max(jobs[i].work_gpu_s, 1e-9), jobs[i].job_id))
    if order == "cost":
        return sorted(range(len(jobs)), key=lambda i: (-plans[i].usd, jobs[i].job_id))
    raise ValueError(f"unknown order {order!r}; valid: arrival, value, cost, lp")


def _place(instance: Instance, plans: list[CloudPlan], timelines: dict[Shape, Timeline],
           order: str, grid_s: float, guide: Guide | None = None, move_back: bool = False) -> list[Assignment]:
    jobs = instance.jobs
    profile = _Profile(instance, grid_s)
    out: dict[int, Assignment] = {}
    for i in _order(instance, plans, order, guide):
        job = jobs[i]
        start = at = None
        nodes: Nodes = ()
        if job.gpu_model == instance.reserved_model:
            hint, hint_end = (guide.start_s[i], guide.end_s[i]) if guide and order == "lp" else (math.nan, math.nan)
            whole = abs(hint_end - hint - job.runtime_s) < 1e-6
            if not math.isnan(hint) and (hinted := profile.free(job, hint, hint_end)) is not None:
                start, at, nodes = (hint, None, hinted) if whole else (None, hint, hinted)
            if start is None and at is None and (first := profile.earliest(job)) is not None:
                start, nodes = first
        if start is not None:
            profile.take(start, start + job.runtime_s, job, nodes)
            out[i] = Assignment(job.job_id, start, start + job.runtime_s, job.gpus, RESERVED, pool_nodes=nodes)
            continue
        out[i] = _cloud(job, plans[i])
        if (move_back or at is not None) and job.gpu_model == instance.reserved_model and not plans[i].offering:
            # from the LP's tail: cloud from its start; else the plan's start or the latest one, the cheaper
            latest = job.arrival_s + job.wait_budget_s
            starts = [hint_end - job.runtime_s] if at is not None else [plans[i].start_s, latest]
            tail = None if at is None else (at, nodes)
            for c in starts:
                moved = _moved(job, c, out[i].usd, timelines, profile, tail)
                if moved is not None:
                    out[i] = moved
            if out[i].where == "moved":
                profile.take(out[i].moved_at_s, out[i].end_s, job, out[i].pool_nodes)
    return [out[i] for i in range(len(jobs))]


def _moved(job: EvalJob, start_s: float, beat_usd: float, timelines: dict[Shape, Timeline], profile: _Profile,
           tail: tuple[float, Nodes] | None = None) -> Assignment | None:
    """The job on the cloud from ``start_s`` until ``tail``'s instant (default: when enough of the pool is
    free to its end), then on the pool (``tail``'s nodes); None unless that costs less than ``beat_usd``
    (or the pool is never free)."""
    tl = timelines.get(shape_of(job))
    if tail is None and tl is not None and math.isfinite(beat_usd):
        tail = profile.tail_start(job, start_s)
    if tl is None or tail is None:
        return None
    at, nodes = tail
    usd = tl.cost_one(start_s, at)
    return Assignment(job.job_id, start_s, start_s + job.runtime_s, job.gpus, "moved", (), usd, at, nodes) \
        if usd < beat_usd else None


def _cloud(job: EvalJob, plan: CloudPlan) -> Assignment:
    """The job by its cloud plan (segments are filled in by ``_with_segments`` for the winning schedule)."""
    end = plan.start_s + job.runtime_s
    if not math.isfinite(plan.usd):
        return Assignment(job.job_id, plan.start_s, end, job.gpus, "", (), math.inf)
    return Assignment(job.job_id, plan.start_s, end, job.gpus, "cloud", (), plan.usd)


def _with_segments(a: Assignment, job: EvalJob, plan: CloudPlan, timelines: dict[Shape, Timeline]) -> Assignment:
    """``a`` with its cloud segments: the plan's one offering, or its shape's timeline up to the move."""
    if a.where not in ("cloud", "moved"):
        return a
    if plan.offering and a.where == "cloud":
        return replace(a, segments=((a.start_s, a.end_s, plan.offering),))
    end = a.moved_at_s if a.where == "moved" else a.end_s
    segs = timelines[shape_of(job)].segments(a.start_s, end)
    return replace(a, segments=tuple((s, e, o.key) for s, e, o in segs))


def cloud_gpu_hours(instance: Instance, plan: Sequence[Assignment]) -> float:
    """GPU-hours a schedule runs on the cloud (a moved job's part before its move included)."""
    return sum(job.gpus * sum(e - s for s, e, _ in a.segments)
               for job, a in zip(instance.jobs, plan, strict=True)) / 3600.0


def clairvoyant_usd(instance: Instance, *, grid_s: float = 60.0, boot_s: float = 0.0, migrate: bool = True) -> float:
    """Total cloud USD of the clairvoyant schedule (inf when some job fits nowhere)."""
    return sum(a.usd for a in schedule(instance, grid_s=grid_s, boot_s=boot_s, migrate=migrate))
