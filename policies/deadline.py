"""Running jobs under notice or falling behind: interruption handshakes and spot -> on-demand switches.

- A spot interruption notice on a busy node asks the job to checkpoint before the node goes; the
  job requeues with its saved work and is relaunched on the next pass. An idle node under notice
  is simply terminated.
- Uniform Progress (Can't Be Late, NSDI'24): a deadline job on spot stays there while its slack
  covers a changeover (restart + relaunch) plus a margin; once it does not, it checkpoints and
  moves to on-demand, where it cannot be preempted again.
"""

from __future__ import annotations

from datetime import timedelta

from burster.lifecycle import NodeState
from burster.model import JobClass, Market, Snapshot
from burster.plan import Action, Checkpoint, Terminate, request_id
from policies.cost import CostModel


def handle_interruptions(snapshot: Snapshot) -> list[Action]:
    nodes = {n.node_id: n for n in snapshot.cloud_nodes}
    out: list[Action] = []
    for notice in sorted(snapshot.interruptions, key=lambda i: (i.terminate_at, i.node_id)):
        node = nodes.get(notice.node_id)
        if node is None or node.state is not NodeState.READY:
            continue  # gone, or already being checkpointed / drained
        if node.busy and node.job_id is not None:
            out.append(Checkpoint(
                node.node_id, node.job_id, notice.terminate_at,
                reason=(f"{notice.kind} notice for {node.node_id} ({node.offering.key}): checkpoint job "
                        f"{node.job_id} before {notice.terminate_at:%H:%M:%S}, then requeue it"),
            ))
        else:
            out.append(Terminate((node.node_id,), request_id=request_id("interrupted", node.node_id),
                                 reason=f"{notice.kind} notice for idle node {node.node_id}"))
    return out


def switch_behind_schedule(snapshot: Snapshot, cost: CostModel, margin_s: float) -> list[Action]:
    noticed = {i.node_id for i in snapshot.interruptions}
    noticed |= {n.node_id for n in snapshot.cloud_nodes if n.state is not NodeState.READY}
    changeover = cost.p.restart_overhead_s + cost.p.launch_latency_s
    out: list[Action] = []
    for p in sorted(snapshot.running, key=lambda p: p.job.job_id):
        job = p.job
        if not p.on_cloud or p.market is not Market.SPOT or job.deadline is None:
            continue
        if job.job_class is JobClass.BEST_EFFORT or any(n in noticed for n in p.node_ids):
            continue
        slack = (job.deadline - snapshot.now).total_seconds() - p.remaining_s(snapshot.now)
        if slack >= changeover + margin_s or p.remaining_s(snapshot.now) <= changeover:
            continue
        deadline = snapshot.now + timedelta(seconds=min(cost.p.restart_overhead_s, 300.0))
        for node_id in p.node_ids:
            out.append(Checkpoint(
                node_id, job.job_id, deadline,
                reason=(f"job {job.job_id} on spot has {slack:.0f}s slack < changeover {changeover:.0f}s "
                        f"+ margin {margin_s:.0f}s: checkpoint and move to on-demand"),
            ))
    return out
