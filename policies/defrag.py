"""Make room on-prem: hold reserved nodes for a cloud job that no node has room for yet.

Small jobs finish at scattered times, so the pool can have many free GPUs and still no node with
the eight a gang member needs: the cloud job stays on the cloud while reserved GPUs idle. When
the nodes that empty first would free enough for it, soon enough, the rule holds them for the job,
starting when they will have room (a Slurm reservation with a start time; before it, only jobs
that end by then may use them), and once they have room the job moves back (``held_moves``:
checkpoint, then the pool starts it on the held nodes whatever its queue's head).

A hold pays when the cloud hours it saves (the job's price over its remaining run after the nodes
empty, net of the restart) exceed the value of the GPUs the hold keeps idle until then, priced at
the job's own per-GPU rate (what work displaced from them would pay on the cloud).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import cached_property

from burster.model import Demand, Placement, Requeue, Snapshot
from burster.plan import Checkpoint, Hold
from policies.cost import CostModel
from policies.estimates import TRUSTED_WITHIN, runs_long
from policies.late import move_miss_usd
from policies.queue import ReservedQueue, held_by_job, room_at_s, running_ends_by_node
from policies.reclaim import (
    Claims,
    NodeRoom,
    claims_of,
    movable_cloud,
    move_checkpoints,
    move_paying_usd,
    reserved_room,
    tight,
)

GRACE_S = 900.0  # a hold outlives the expected emptying by this much (estimates run late)


def held_moves(snapshot: Snapshot, cost: CostModel, margin_s: float,
               protected: frozenset[str] = frozenset(), wakes: list[datetime] | None = None) -> list[Checkpoint]:
    """Move back every cloud job whose held nodes now have room for all of its gang (none on a
    protected node: ``movable_cloud``); ``wakes`` (if given) receives the deadline of each too tight
    to move, where it may (``reclaim.tight``)."""
    held = held_by_job(snapshot.pool_nodes)
    if not held:
        return []
    out: list[Checkpoint] = []
    for p in movable_cloud(snapshot, protected):
        nodes = held.get(p.job.job_id)
        if not nodes or sum(n.free_gpus >= p.job.gpus_per_node for n in nodes) < p.job.nodes:
            continue
        if tight(p, snapshot.now, cost, margin_s, wakes) or move_paying_usd(p, cost, snapshot) <= 0:
            continue
        out += move_checkpoints(p, cost, snapshot.now,
                                f"reserved nodes held for job {p.job.job_id} have room: move it back on-prem")
    return out


def hold_nodes(snapshot: Snapshot, cost: CostModel, queue: ReservedQueue, requeue: Requeue, margin_s: float,
               wakes: list[datetime], room: NodeRoom | None = None,
               protected: frozenset[str] = frozenset()) -> list[Hold]:
    """Holds on the reserved nodes that empty first, for cloud jobs (most expensive first) that the
    pool has free GPUs for, beyond what the jobs ahead of them are owed, but no node with room;
    ``room``: the nodes' free GPUs once the jobs leaving the cloud land (``reclaim.reserved_room``),
    which takes the holds made; ``wakes`` gets the instant a declined hold would start to pay; no
    job on a protected node is held for (``movable_cloud``)."""
    now = snapshot.now
    nodes = _FreeNodes(snapshot, queue, requeue, room or reserved_room(snapshot, queue))
    out: list[Hold] = []
    if not any(nodes.spare(m) > 0 for m in queue.total):
        return out  # no free reserved GPUs: nothing is fragmented
    for p in sorted(movable_cloud(snapshot, protected), key=lambda p: (-p.price_per_hour_usd, p.job.job_id)):
        model = queue.model_for(p.job)
        if model is None or p.job.job_id in nodes.holders:
            continue
        emptying = nodes.emptying_first(p.job, model)
        if emptying is None or tight(p, now, cost, margin_s, wakes):
            continue
        wait_s = emptying[-1][0]
        saving, idle, pays_at = _hold_value(p, emptying, nodes, cost, now)
        if saving <= idle:
            if pays_at is not None:
                wakes.append(pays_at)
            continue
        start_at = now + timedelta(seconds=wait_s)
        for _, node in emptying:
            nodes.room.withhold(node)
            out.append(Hold(node, p.job.job_id, start_at, start_at + timedelta(seconds=GRACE_S), reason=(
                f"hold {node} for cloud job {p.job.job_id} (${p.price_per_hour_usd:.2f}/h, "
                f"{p.remaining_s(now) / 3600.0:.1f} h left): its running work ends in {wait_s / 60.0:.0f} min, "
                f"then the job moves back, saving ${saving:.2f} for ${idle:.2f} of held GPUs")))
    return out


class _FreeNodes:
    """The reserved nodes not held (``room``, which takes this pass's holds), running work's ends,
    and who is owed what."""

    def __init__(self, snapshot: Snapshot, queue: ReservedQueue, requeue: Requeue, room: NodeRoom) -> None:
        self.snapshot, self.queue, self.requeue, self.room = snapshot, queue, requeue, room
        self.holders = {j for n in snapshot.pool_nodes for j in n.held_for}
        self._rooms: dict[tuple[str, int], list[tuple[float, str]]] = {}

    @cached_property
    def ends(self) -> dict[str, list[tuple[float, int]]]:
        return running_ends_by_node(self.snapshot.running, self.snapshot.now.timestamp())

    @cached_property
    def claims(self) -> Claims:
        return claims_of(self.snapshot, self.queue, self.requeue)

    def spare(self, model: str) -> int:
        """Free GPUs of ``model`` on nodes not held."""
        return self.queue.free_gpus(model) - self.room.withheld[model]

    @cached_property
    def trusted(self) -> bool:
        """Finished jobs ran close to their estimates (at the 90th percentile): ends can be planned on."""
        return runs_long(self.snapshot.runtime_ratios, 0.9) <= TRUSTED_WITHIN

    def emptying_first(self, job: Demand, model: str) -> list[tuple[float, str]] | None:
        """(seconds until it has room, node) for the gang's nodes that have room soonest; None if
        the job fits now (move-back's call), the free GPUs are owed to jobs ahead of it (not
        fragmentation), or too few nodes ever have room. Fewer free GPUs than the job needs yet
        (a gang on a busy pool rarely sees them all free at once) still plan a hold when no
        pending job is owed the GPUs as they free and runtime estimates can be trusted."""
        if self.room.with_room(model, job.gpus_per_node) >= job.nodes:
            return None
        spare, ahead = self.spare(model), self.claims.ahead_of(job, model)
        if spare >= job.gpus:
            if spare - ahead < job.gpus:
                return None
        elif ahead > 0 or not self.trusted:
            return None
        key = (model, job.gpus_per_node)
        room = self.room
        if key not in self._rooms:
            self._rooms[key] = sorted((room_at_s(f, self.ends.get(node, ()), job.gpus_per_node), node)
                                      for node, f in room.free.items()
                                      if room.model_of[node] == model and node not in room.held)
        chosen = list(itertools.islice((r for r in self._rooms[key] if r[1] not in room.held), job.nodes))
        if len(chosen) < job.nodes or chosen[-1][0] == math.inf:
            return None
        return chosen


def _hold_value(p: Placement, emptying: list[tuple[float, str]], nodes: _FreeNodes, cost: CostModel,
                now: datetime) -> tuple[float, float, datetime | None]:
    """What holding these nodes saves (the cloud hours after they have room, net of the restart and
    of the misses the move's pause adds by the spread of estimates, ``policies.late.move_miss_usd``),
    what it costs (their GPUs kept idle until then, at the job's per-GPU rate), and, when it does
    not pay yet, the instant it would (the idle cost shrinks as the clock nears the first end)."""
    wait_s = emptying[-1][0]
    restart_s = cost.p.restart_overhead_s
    saving = (p.price_per_hour_usd * (p.remaining_s(now) - wait_s - restart_s) / 3600.0
              - cost.wait_cost_usd(p.job_now(now), restart_s, now)
              - move_miss_usd(p, cost.pause_s, nodes.snapshot.runtime_ratios, cost))
    per_gpu_s = p.price_per_hour_usd / p.job.gpus / 3600.0
    idle = per_gpu_s * sum(_idle_gpu_s(nodes.room.free[n], nodes.ends.get(n, ()), wait_s) for _, n in emptying)
    if saving > idle or saving <= 0:
        return saving, idle, None
    gpus_now = sum(nodes.room.free[n] for _, n in emptying)
    first_end = min(_first_end_s(nodes.ends.get(n, ())) for _, n in emptying)
    pays_in = (idle - saving) / (gpus_now * per_gpu_s) if gpus_now else math.inf
    return saving, idle, now + timedelta(seconds=pays_in) if pays_in < first_end else None


def _idle_gpu_s(free: int, ends: Sequence[tuple[float, int]], until_s: float) -> float:
    """GPU-seconds a held node keeps idle until ``until_s``: its free GPUs, growing as jobs end."""
    total, t0 = 0.0, 0.0
    for t, gpus in ends:
        if t >= until_s:
            break
        total += free * (t - t0)
        free, t0 = free + gpus, t
    return total + free * (until_s - t0)


def _first_end_s(ends: Sequence[tuple[float, int]]) -> float:
    return ends[0][0] if ends else math.inf
