"""Hypothesis strategies for random but well-formed Snapshots."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from burster.lifecycle import NodeState
from burster.model import (
    Demand,
    Interruption,
    JobClass,
    Market,
    Node,
    Offering,
    Placement,
    PoolNode,
    Snapshot,
    Spend,
)
from policies.burst import BurstParams
from policies.cost import CostModel
from policies.rank import start_by

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
MODELS = ("V100", "A100")


@st.composite
def offerings(draw: st.DrawFn) -> tuple[Offering, ...]:
    n = draw(st.integers(1, 6))
    out = []
    for i in range(n):
        out.append(Offering(
            draw(st.sampled_from(("aws", "gcp", "azure"))), "r1", f"z{i}", f"type{i}",
            draw(st.sampled_from(MODELS)), draw(st.sampled_from((1, 4, 8))),
            draw(st.sampled_from((Market.SPOT, Market.ON_DEMAND))),
            draw(st.floats(0.2, 40.0)), draw(st.booleans() | st.just(True)),
        ))
    return tuple(out)


@st.composite
def demands(draw: st.DrawFn, prefix: str, count: int) -> tuple[Demand, ...]:
    out = []
    for i in range(count):
        nodes = draw(st.integers(1, 3))
        per = draw(st.sampled_from((1, 2, 4, 8)))
        klass = draw(st.sampled_from(list(JobClass)))
        runtime = draw(st.floats(60, 48 * 3600))
        submitted = NOW - timedelta(seconds=draw(st.floats(0, 7200)))
        deadline = submitted + timedelta(seconds=runtime * draw(st.floats(1.0, 3.0)))
        out.append(Demand(
            f"{prefix}{i}", gpus=nodes * per, nodes=nodes, submitted_at=submitted, est_runtime_s=runtime,
            gpu_model=draw(st.sampled_from(("", *MODELS))), priority=draw(st.integers(0, 2)),
            deadline=None if klass is JobClass.BEST_EFFORT else deadline, job_class=klass,
            team=draw(st.sampled_from(("a", "b"))),
        ))
    return tuple(out)


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    offs = draw(offerings())
    # a node may be held for a job (running, pending or gone)
    pool = tuple(PoolNode(f"onprem-{i}", "V100", 8, draw(st.integers(0, 8)),
                          draw(st.sampled_from([(), (), (), ("r0",), ("p1",), ("gone",), ("p1", "p2")])))
                 for i in range(draw(st.integers(0, 6))))
    pending = draw(demands("p", draw(st.integers(0, 12))))
    running_jobs = draw(demands("r", draw(st.integers(0, 6))))
    if draw(st.booleans()):  # a ranked pool (pool.order = "start_by") ranks every job it queued
        pending, running_jobs = (tuple(replace(j, start_by=start_by(j, CostModel(), BurstParams())) for j in jobs)
                                 for jobs in (pending, running_jobs))
    cloud_nodes: list[Node] = []
    running: list[Placement] = []
    for i, job in enumerate(running_jobs):
        on_cloud = draw(st.booleans()) and bool(offs)
        if on_cloud:
            o = draw(st.sampled_from(offs))
            ids = tuple(f"c{i}-{k}" for k in range(job.nodes))
            for node_id in ids:
                # a busy node may carry a stale idle_since (from before its job started; the node book
                # clears it, but the idle rule and the guards must spare a busy node on their own)
                stale = draw(st.none() | st.floats(0, 7200).map(lambda s: NOW - timedelta(seconds=s)))
                cloud_nodes.append(Node(node_id, o, NodeState.READY, NOW - timedelta(hours=1), "rq",
                                        job_id=job.job_id, team=job.team, protected=draw(st.booleans()),
                                        idle_since=stale))
            running.append(Placement(job, ids, NOW - timedelta(seconds=draw(st.floats(0, 3600))), True,
                                     o.market, o.price_per_hour_usd * len(ids)))
        else:
            running.append(Placement(job, ("onprem-0",), NOW - timedelta(minutes=5), False, Market.RESERVED))
    for i in range(draw(st.integers(0, 4))):
        if not offs:
            break
        o = draw(st.sampled_from(offs))
        idle_for = draw(st.floats(0, 7200))
        cloud_nodes.append(Node(f"idle{i}", o, draw(st.sampled_from((NodeState.READY, NodeState.LAUNCHING))),
                                NOW - timedelta(seconds=idle_for + draw(st.floats(0, 600))), "rq",
                                idle_since=NOW - timedelta(seconds=idle_for), protected=draw(st.booleans()),
                                exclusive=draw(st.booleans())))
    notices = tuple(Interruption(n.node_id, n.offering.provider, "spot-interruption", NOW,
                                 NOW + timedelta(seconds=120))
                    for n in cloud_nodes if draw(st.booleans()) and n.offering.market is Market.SPOT)
    spend = Spend(draw(st.floats(0, 2000)), (("a", draw(st.floats(0, 500))),),
                  draw(st.integers(0, 5)))
    # what finished jobs showed of the estimates: none yet, exact, or running long or short
    ratios = draw(st.one_of(st.just(()), st.just((1.0,) * 30),
                            st.lists(st.floats(0.05, 4.0), min_size=0, max_size=60).map(tuple)))
    return Snapshot(NOW, pending, tuple(running), pool, tuple(cloud_nodes), offs, interruptions=notices,
                    blocked_offerings=frozenset(o.key for o in offs if draw(st.booleans()) and False),
                    spend=spend, runtime_ratios=ratios)
