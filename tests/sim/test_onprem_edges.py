"""Rules of the simulated reserved nodes that a mutation audit found unpinned: a gang on the
lowest-index nodes, a gang's GPUs split as the job asks, and holds (the boundary of a hold's start,
a job's own held nodes, releasing one node)."""

from __future__ import annotations

from datetime import UTC, datetime

from burster.model import Demand
from providers.sim.onprem import OnPremNodes

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def job(name: str, gpus: int, run_s: float = 3600.0, nodes: int = 1) -> Demand:
    return Demand(name, gpus, T0, run_s, nodes=nodes, gpu_model="V100")


def nodes_with_free(*free: int) -> OnPremNodes:
    onprem = OnPremNodes(len(free), 8, "V100")
    onprem.take(tuple((i, 8 - f) for i, f in enumerate(free) if f < 8))
    return onprem


def test_of_nodes_that_fit_it_equally_a_job_takes_the_lowest_index() -> None:
    onprem = nodes_with_free(4, 8, 4, 8)
    assert onprem.fit(job("a", 4)) == ((0, 4),)
    assert onprem.fit(job("b", 8)) == ((1, 8),)
    gang = OnPremNodes(4, 8, "V100")
    assert gang.fit(job("g", 16, nodes=2)) == ((0, 8), (1, 8))


def test_a_gang_takes_only_the_gpus_it_asks_for() -> None:
    """3 GPUs on 2 nodes: 2 on one, 1 on the other (not 2 + 2)."""
    onprem = OnPremNodes(2, 8, "V100")
    slots = onprem.fit(job("g", 3, nodes=2))
    assert slots == ((0, 2), (1, 1))
    onprem.take(slots)
    assert onprem.free_total == 13


def test_a_job_ending_exactly_when_a_hold_starts_may_use_the_held_node() -> None:
    onprem = OnPremNodes(1, 8, "V100")
    onprem.hold(0, "h", 1000.0)
    assert onprem.fit(job("a", 8, run_s=1000.0), now_ts=0.0) == ((0, 8),)
    assert onprem.fit(job("b", 8, run_s=1000.5), now_ts=0.0) is None


def test_a_gang_may_use_its_own_held_node_with_free_ones() -> None:
    """One node held for gang g (from just after now), which needs two: fit takes its held node
    and a free one; another job that would run past the hold's start may not."""
    onprem = OnPremNodes(2, 8, "V100")
    onprem.hold(0, "g", 100.0)
    assert onprem.fit_held(job("g", 16, nodes=2)) is None  # one held node is not enough
    assert onprem.fit(job("g", 16, nodes=2), now_ts=0.0) == ((0, 8), (1, 8))
    assert onprem.fit(job("x", 16, nodes=2), now_ts=0.0) is None


def test_releasing_one_held_node_keeps_the_jobs_other_holds() -> None:
    onprem = OnPremNodes(3, 8, "V100")
    for i in (0, 1):
        onprem.hold(i, "a", 0.0)
    assert onprem.release("a", 0) == 1
    assert onprem.held == {1: {"a": 0.0}}
    assert [n.held_for for n in onprem.pool_nodes()] == [(), ("a",), ()]
