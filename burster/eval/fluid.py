"""The time-slotted fluid relaxation of an instance: per-job windows, rate caps and per-slot cloud prices.

Shared by the LP lower bound (``bound.py``) and the brute-force check (``brute.py``); the two solve it
independently. Units: work in GPU-hours, prices in USD per GPU-hour of the job's work. Every
simplification here can only lower the optimum (see docs/evaluation.md, "Lower bound"):

- a job may run in any slot that overlaps [arrival, arrival + wait budget + runtime), at up to its
  GPU count for the whole slot, preemptively, split between reserved GPUs and the cloud;
- on the cloud it pays, per GPU-hour of its work, the cheapest offering of its GPU model that is up at
  some instant of the slot (a spot offering also for ``notice_s`` after its series drops: a running node
  lives through the interruption notice); its node shape is respected (nodes x ceil(per-node GPUs /
  offering GPUs per node) whole nodes); billing is per second run (the 60 s minimum is not counted;
  the bracket's cost model never bills less than the time run, see ``cloudplan.billed_s``);
- reserved GPUs are free, ``reserved_gpus`` per slot, for jobs of the pool's model that fit the pool.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from burster.eval.instance import EvalJob, Instance
from burster.model import Market, Offering
from providers.sim.spot import SpotSeries

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Fluid:
    """Per job: slot window [first, last], work, rate cap per slot, reserved eligibility, price row."""

    slot_s: float
    slots: int
    reserved_gpu_h: float  # reserved GPU-hours per slot
    first: IntArray
    last: IntArray
    work_gpu_h: FloatArray
    cap_gpu_h: FloatArray  # most GPU-hours of work one job does in one slot
    eligible: BoolArray
    shape: IntArray  # row of ``price`` for each job
    price: FloatArray  # (shapes, slots): USD per GPU-hour of work, inf where no offering exists


def slot_up_mask(series: SpotSeries, slots: int, slot_s: float, notice_s: float) -> BoolArray:
    """Per slot t: is the series up at some instant of [t * slot_s - notice_s, (t + 1) * slot_s) (from 0)?"""
    gap, n = series.gap_s, len(series.data)
    last_tick = math.ceil(slots * slot_s / gap) + 1
    up = np.asarray(series.data, dtype=np.int64)[np.arange(last_tick + 1) % n] > 0
    cum = np.concatenate(([0], np.cumsum(up)))
    t = np.arange(slots, dtype=np.float64)
    lo = np.floor(np.maximum(t * slot_s - notice_s, 0.0) / gap).astype(np.int64)
    hi = np.ceil((t + 1) * slot_s / gap - 1e-9).astype(np.int64)
    hi = np.maximum(hi, lo + 1)
    return np.asarray(cum[hi] - cum[lo] > 0)


def nodes_for(job: EvalJob, offering: Offering) -> int:
    """Whole nodes of ``offering`` the job's gang needs (as ``CostModel.nodes_for``)."""
    return job.nodes * -(-job.gpus_per_node // offering.gpus_per_node)


def build_fluid(instance: Instance) -> Fluid:
    """The fluid relaxation of ``instance`` (see the module docstring for what it relaxes)."""
    s, slots = instance.slot_s, instance.slots
    jobs = instance.jobs
    models = {j.gpu_model for j in jobs}
    masks: dict[str, BoolArray] = {}
    for o in (o for o in instance.offerings if o.gpu_model in models):
        ser = instance.spot_series.get(o.key) if o.market is Market.SPOT else None
        masks[o.key] = (slot_up_mask(ser, slots, s, instance.notice_s) if ser is not None
                        else np.ones(slots, dtype=np.bool_))
    shapes: dict[tuple[str, int, int], int] = {}
    rows: list[FloatArray] = []
    shape = np.zeros(len(jobs), dtype=np.int64)
    for i, j in enumerate(jobs):
        key = (j.gpu_model, j.gpus, j.nodes)
        if key not in shapes:
            shapes[key] = len(rows)
            rows.append(_price_row(j, instance.offerings, masks, slots))
        shape[i] = shapes[key]
    arrival = np.array([j.arrival_s for j in jobs], dtype=np.float64)
    due = np.array([j.due_s for j in jobs], dtype=np.float64)
    gpus = np.array([j.gpus for j in jobs], dtype=np.float64)
    first = np.minimum(np.floor(arrival / s), slots - 1).astype(np.int64)
    last = np.clip(np.ceil(due / s - 1e-9).astype(np.int64) - 1, first, slots - 1)
    eligible = np.array([j.gpu_model == instance.reserved_model and j.gpus <= instance.reserved_gpus
                         for j in jobs], dtype=np.bool_)
    return Fluid(
        slot_s=s, slots=slots, reserved_gpu_h=instance.reserved_gpus * s / 3600.0,
        first=first, last=last, work_gpu_h=np.array([j.work_gpu_s / 3600.0 for j in jobs], dtype=np.float64),
        cap_gpu_h=gpus * s / 3600.0, eligible=eligible, shape=shape,
        price=np.vstack(rows) if rows else np.zeros((0, slots)),
    )


def _price_row(job: EvalJob, offerings: Sequence[Offering], masks: dict[str, BoolArray], slots: int) -> FloatArray:
    row = np.full(slots, np.inf)
    for o in offerings:
        if o.gpu_model != job.gpu_model:
            continue
        per_gpu_h = nodes_for(job, o) * o.price_per_hour_usd / job.gpus
        row = np.where(masks[o.key], np.minimum(row, per_gpu_h), row)
    return row
