"""Checks that a clairvoyant schedule is a real one, and recomputes its cost from first principles."""

from __future__ import annotations

import math
from collections.abc import Sequence

from burster.eval.clairvoyant import RESERVED, Assignment
from burster.eval.cloudplan import run_usd
from burster.eval.instance import EvalJob, Instance

TOL_S = 1e-6


def problems(instance: Instance, schedule: Sequence[Assignment], boot_s: float = 0.0) -> list[str]:
    """Everything wrong with ``schedule`` (empty: every job starts within its wait budget, runs its whole
    runtime without a pause, reserved GPUs are never over-committed, spot segments never see a drop, and
    each cloud job's USD is the sum of its segments' bills)."""
    out: list[str] = []
    by_id = {a.job_id: a for a in schedule}
    offers = {o.key: o for o in instance.offerings}
    events: list[tuple[float, int]] = []
    per_node: dict[int, list[tuple[float, int]]] = {}  # with ``instance.node_gpus``: each node's own events
    for job in instance.jobs:
        a = by_id.get(job.job_id)
        if a is None:
            out.append(f"{job.job_id}: not scheduled")
            continue
        if not job.arrival_s - TOL_S <= a.start_s <= job.arrival_s + job.wait_budget_s + TOL_S:
            out.append(f"{job.job_id}: starts at {a.start_s}, outside [{job.arrival_s}, "
                       f"{job.arrival_s + job.wait_budget_s}]")
        if abs(a.end_s - a.start_s - job.runtime_s) > TOL_S:
            out.append(f"{job.job_id}: runs {a.end_s - a.start_s} s, not its runtime {job.runtime_s} s")
        if a.where == RESERVED:
            if job.gpu_model != instance.reserved_model:
                out.append(f"{job.job_id}: {job.gpu_model} job on the {instance.reserved_model} pool")
            events += [(a.start_s, job.gpus), (a.end_s, -job.gpus)]
            out += _on_nodes(instance, job, a, a.start_s, per_node)
            continue
        if a.where not in ("cloud", "moved"):
            out.append(f"{job.job_id}: placed nowhere")
            continue
        cloud_end = a.end_s
        if a.where == "moved":
            cloud_end = a.moved_at_s
            if job.gpu_model != instance.reserved_model or not a.start_s < cloud_end < a.end_s:
                out.append(f"{job.job_id}: moves to the pool at {cloud_end}, outside ({a.start_s}, {a.end_s}) "
                           "or with a model the pool does not have")
            events += [(cloud_end, job.gpus), (a.end_s, -job.gpus)]
            out += _on_nodes(instance, job, a, cloud_end, per_node)
        t, usd = a.start_s, 0.0
        for s, e, key in a.segments:
            o = offers.get(key)
            if o is None or o.gpu_model != job.gpu_model:
                out.append(f"{job.job_id}: segment on {key}, not an offering of {job.gpu_model}")
                continue
            if abs(s - t) > TOL_S or e <= s:
                out.append(f"{job.job_id}: segment [{s}, {e}) does not follow {t}")
            if not instance.up_throughout(o, s, e):
                out.append(f"{job.job_id}: {key} goes down during [{s}, {e})")
            usd += run_usd(job, o, e - s, boot_s)
            t = e
        if abs(t - cloud_end) > TOL_S:
            out.append(f"{job.job_id}: cloud segments end at {t}, not {cloud_end}")
        if not math.isclose(usd, a.usd, rel_tol=1e-9, abs_tol=1e-9):
            out.append(f"{job.job_id}: charged {a.usd} USD, its segments bill {usd}")
    out += _overcommit("reserved pool", events, instance.reserved_gpus)
    for node, node_events in sorted(per_node.items()):
        out += _overcommit(f"reserved node {node}", node_events, instance.node_gpus)
    return out


def _overcommit(what: str, events: list[tuple[float, int]], capacity: int) -> list[str]:
    """The first instant the (start, +GPUs) / (end, -GPUs) ``events`` use more than ``capacity``, if any."""
    used = 0
    # ends before starts at the same instant, within TOL_S: a run's end is its start plus a runtime in
    # floating point (0 + 1.1 x 3600 ends at 3960.0000000000005, when a run that starts at 3960 may follow)
    for when, delta in sorted(events, key=lambda e: (e[0] - TOL_S if e[1] < 0 else e[0], e[1])):
        used += delta
        if used > capacity:
            return [f"{what} over-committed at {when}: {used} > {capacity} GPUs"]
    return []


def _on_nodes(instance: Instance, job: EvalJob, a: Assignment, from_s: float,
              per_node: dict[int, list[tuple[float, int]]]) -> list[str]:
    """With per-node capacity: the reserved part [from_s, end) on one distinct node per gang member,
    recorded in ``per_node``; the problems found."""
    if instance.node_gpus <= 0:
        return []
    nodes = instance.reserved_gpus // instance.node_gpus
    if len(a.pool_nodes) != job.nodes or len(set(a.pool_nodes)) != job.nodes \
            or any(not 0 <= n < nodes for n in a.pool_nodes):
        return [f"{job.job_id}: on reserved nodes {a.pool_nodes}, not {job.nodes} distinct of the pool's {nodes}"]
    for n in a.pool_nodes:
        per_node.setdefault(n, []).extend([(from_s, job.gpus_per_node), (a.end_s, -job.gpus_per_node)])
    return []
