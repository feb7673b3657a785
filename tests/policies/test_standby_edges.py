"""Edges of the standby rules (policies/standby.py) a mutation audit found unpinned: which idle node a
job takes, the stock's boundaries and probe, a stock launch's count and id, and pre-warm's window and
costs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, Market, Node, Offering, Placement, PoolNode, Signal, Snapshot
from burster.plan import Launch
from policies.cost import CostModel, CostParams
from policies.offers import offer_book
from policies.queue import ReservedQueue
from policies.standby import Standby, StandbyParams, _most_within, free_nodes, prewarm, standby, stock_launches

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
HALF = replace(SPOT, zone="usw2-az2", price_per_hour_usd=0.5)  # binary-exact prices keep the ties exact
OD = replace(SPOT, market=Market.ON_DEMAND, price_per_hour_usd=3.06)
QUAD = Offering("aws", "us-west-2", "usw2-az1", "p3.8xlarge", "V100", 4, Market.SPOT, 3.6)
T4 = Offering("aws", "us-west-2", "usw2-az1", "g4dn.xlarge", "T4", 1, Market.SPOT, 0.5)
A100 = Offering("aws", "us-west-2", "usw2-az1", "p4d.24xlarge", "A100", 8, Market.SPOT, 9.0)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0, launch_latency_s=180, wait_value_usd_per_gpu_hour=2.5))
PARAMS = StandbyParams(window_s=900.0, min_starts=3)
FULL = Placement(Demand("hog", 8, NOW - timedelta(hours=1), 30 * 3600.0, gpu_model="V100"), ("onprem-0",),
                 NOW - timedelta(hours=1), False, Market.RESERVED)
POOL = (PoolNode("onprem-0", "V100", 8, 0),)


def node(node_id: str, offering: Offering = SPOT, state: NodeState = NodeState.READY, **kw: object) -> Node:
    return Node(node_id, offering, state, NOW - timedelta(hours=1), f"rq-{node_id}", exclusive=True, **kw)  # type: ignore[arg-type]


def launch_for(job: Demand) -> Launch:
    return Launch(SPOT, 1, f"job {job.job_id}", "rq", job_id=job.job_id, team="vision", est_hours=0.5)


# --- handing a free node out (``Standby.take``) ---------------------------------------------------------------

def test_take_refuses_a_gang_a_booting_node_and_a_node_fits_rejects() -> None:
    """Only a single-node job takes a free node, only one that is up, and only one ``fits`` allows."""
    one = Demand("one", 1, NOW, 1_800.0, gpu_model="V100")
    gang = Demand("gang", 2, NOW, 1_800.0, nodes=2, gpu_model="V100")
    assert not Standby(free=[node("a", QUAD)]).take(gang, lambda n: True, NOW, launch_for(gang))  # room for all
    assert not Standby(free=[node("a", state=NodeState.JOINING)]).take(one, lambda n: True, NOW, launch_for(one))
    assert not Standby(free=[node("a")]).take(one, lambda n: False, NOW, launch_for(one))


def test_take_hands_an_exact_fit_once_and_its_hold_bills_as_the_launch() -> None:
    """A 4-GPU job takes a 4-GPU node (exactly enough); a job naming no model takes any model; the node
    leaves ``free`` (a second job cannot take it); the hold carries the launch's team and hours."""
    four = Demand("four", 4, NOW, 1_800.0, gpu_model="V100")
    anyone = Demand("any", 1, NOW, 1_800.0)
    sb = Standby(free=[node("quad", QUAD), node("t4", T4)])
    assert sb.take(four, lambda n: True, NOW, launch_for(four))
    assert sb.take(anyone, lambda n: True, NOW, launch_for(anyone))
    assert sb.free == [] and not sb.take(anyone, lambda n: True, NOW, launch_for(anyone))
    assert [(h.node_id, h.job_id, h.team, h.est_hours) for h in sb.holds] == [("quad", "four", "vision", 0.5),
                                                                              ("t4", "any", "vision", 0.5)]


# --- free nodes and the batch count ---------------------------------------------------------------------------

def test_free_nodes_skip_busy_ones_and_those_of_a_live_job_and_break_price_ties_by_id() -> None:
    """A node running a job, or launched for one still pending, is not free; one whose job finished
    is. At equal prices the order is by node id whatever the input order."""
    nodes = [node("d", for_job="done"), node("c"), node("b", for_job="waiting"), node("a", job_id="x")]
    assert [n.node_id for n in free_nodes(nodes, frozenset({"waiting", "x"}), exclusive=True)] == ["c", "d"]


def test_starts_exactly_one_span_apart_fall_within_it() -> None:
    """The batch count includes both ends of the span: two starts exactly a boot apart are one batch."""
    assert _most_within([0.0, 180.0], 180.0) == 2
    assert _most_within([0.0, 180.5], 180.0) == 1
    assert _most_within([0.0, 10.0, 20.0, 500.0], 180.0) == 3


# --- the stock ------------------------------------------------------------------------------------------------

def world(ago_s: list[float], offering: Offering = SPOT, offerings: tuple[Offering, ...] = (SPOT,),
          extra: tuple[Node, ...] = ()) -> Snapshot:
    """Single-node cloud jobs of ``offering`` that started ``ago_s`` seconds ago; the pool full."""
    nodes, running = list(extra), [FULL]
    for i, ago in enumerate(ago_s):
        job = Demand(f"j{i}", offering.gpus_per_node, NOW - timedelta(seconds=ago + 200), 1_800.0, gpu_model="V100")
        nodes.append(node(f"n{i}", offering, job_id=job.job_id, for_job=job.job_id))
        running.append(Placement(job, (f"n{i}",), NOW - timedelta(seconds=ago), True, offering.market))
    return Snapshot(NOW, (), tuple(running), POOL, tuple(sorted(nodes, key=lambda n: n.node_id)), offerings)


def stock(s: Snapshot) -> dict[tuple[str, int], int]:
    return {shape: k for shape, (k, _) in standby(s, COST, PARAMS).stock.items()}


def test_a_start_exactly_a_window_ago_has_aged_out() -> None:
    """Three starts within a boot, the oldest exactly ``window_s`` ago: only two count, under
    ``min_starts``. 10 s later it would count (3 starts, a stock of one: 300 s idle at $0.9/h < $0.125)."""
    assert stock(world([900.0, 880.0, 860.0])) == {}
    assert stock(world([890.0, 880.0, 860.0])) == {("V100", 1): 1}


def test_gang_starts_are_not_counted() -> None:
    """Three 2-node gangs that started within a boot: no single-node starts, no stock."""
    s = world([60.0, 40.0, 20.0])
    extra = tuple(node(f"m{i}", job_id=p.job.job_id, for_job=p.job.job_id) for i, p in enumerate(s.running[1:]))
    gangs = tuple(replace(p, job=replace(p.job, gpus=2, nodes=2), node_ids=(*p.node_ids, f"m{i}"))
                  for i, p in enumerate(s.running[1:]))
    assert stock(replace(s, running=(FULL, *gangs), cloud_nodes=(*s.cloud_nodes, *extra))) == {}


def test_a_stock_whose_idle_cost_equals_the_boots_wait_is_one_smaller() -> None:
    """At $0.5/h, k of 3 starts idle k x 300 s: k = 3 costs $0.125, exactly a boot's wait (1 GPU x 180 s
    x $2.5/h), so it does not pay; k = 2 does."""
    assert stock(world([60.0, 40.0, 20.0], HALF, (HALF,))) == {("V100", 1): 2}


def test_the_stock_counts_starts_within_one_boot_not_within_the_window() -> None:
    """Three starts 300 s apart: no two within a 180 s boot, so a stock of one (within the 900 s window
    all three fall, and at $0.5/h two would pay)."""
    assert stock(world([700.0, 400.0, 100.0], HALF, (HALF,))) == {("V100", 1): 1}


def test_no_stock_when_not_even_one_node_pays_for_itself() -> None:
    """On-demand only ($3.06/h): one node idles 300 s, $0.255 > the $0.125 wait: no stock, no wake-up,
    no unowned nodes named."""
    sb = standby(world([60.0, 40.0, 20.0], OD, (OD,), extra=(node("spare", OD),)), COST, PARAMS)
    assert (sb.stock, sb.next_change, sb.unowned) == ({}, None, {})


def test_no_stock_where_the_best_offering_for_the_shape_is_another_shape() -> None:
    """1-GPU V100 starts, but only 4-GPU V100 nodes are on offer: the stock is for the shape seen."""
    assert stock(world([60.0, 40.0, 20.0], SPOT, (replace(QUAD, price_per_hour_usd=0.5),))) == {}


def test_the_stock_probe_asks_for_the_shapes_gpus_and_model() -> None:
    """4-GPU starts: a boot's wait is 4 GPUs' ($0.5), so one node idling 300 s at $3.2/h ($0.27) pays
    (a 1-GPU probe would neither pay nor pick this shape). A cheaper T4 on offer does not displace
    the V100 stock (the probe names the model)."""
    quad = replace(QUAD, price_per_hour_usd=3.2)  # cheaper than four 1-GPU nodes
    assert stock(world([60.0, 40.0, 20.0], quad, (SPOT, quad))) == {("V100", 4): 1}
    assert stock(world([60.0, 40.0, 20.0], SPOT, (T4, SPOT))) == {("V100", 1): 1}


def test_unowned_names_only_exclusive_nodes_of_a_stocked_shape() -> None:
    """An unowned exclusive A100 node (no stock of that shape) neither joins ``unowned`` nor so the id."""
    plain = world([60.0, 40.0, 20.0])
    other = world([60.0, 40.0, 20.0], extra=(node("a100", A100, job_id="t"),))
    assert standby(other, COST, PARAMS).unowned == {}
    assert [a.request_id for a in stock_launches(standby(other, COST, PARAMS), 180.0)] == \
        [a.request_id for a in stock_launches(standby(plain, COST, PARAMS), 180.0)]


def test_a_free_node_of_another_shape_does_not_fill_the_stock() -> None:
    (launch,) = stock_launches(Standby(stock={("V100", 1): (2, SPOT)}, free=[node("a100", A100)]), 180.0)
    assert launch.count == 2 and launch.exclusive


# --- pre-warm -------------------------------------------------------------------------------------------------

HALF_ONLY = (HALF,)


def warmed(gpu_hours: float, until_s: float, rate: float, *, free: int = 0, model: str = "V100",
           idle: tuple[Node, ...] = (), pool: tuple[PoolNode, ...] = (), hours: float = 1.0) -> int:
    """Nodes pre-warmed for ``gpu_hours`` over ``hours`` opening in ``until_s``: a 900 s boot, $0.5/h
    1-GPU V100 spot nodes, waiting worth ``rate`` $/GPU-h; the 8-GPU V100 pool has ``free`` GPUs."""
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.0, launch_latency_s=900,
                                wait_value_usd_per_gpu_hour=rate))
    opens = NOW + timedelta(seconds=until_s)
    sig = Signal("SPRINT-1", gpu_hours, opens, opens + timedelta(hours=hours), gpu_model=model)
    hog = replace(FULL, job=replace(FULL.job, gpus=8 - free))
    pool_nodes = (PoolNode("onprem-0", "V100", 8, free), *pool)
    s = Snapshot(NOW, (), (hog,), pool_nodes, (), HALF_ONLY, signals=(sig,))
    launches = prewarm(s, cost, offer_book(s, cost), ReservedQueue(NOW, pool_nodes, s.running), list(idle))
    assert all(a.offering == HALF and a.count > 0 for a in launches)  # never a launch of no nodes
    return sum(a.count for a in launches)


@pytest.mark.parametrize(("gpu_hours", "until_s", "rate", "count"), [
    (2.0, 900.0, 0.5, 0),  # wait 2 x 900 s x $0.5/h = $0.25 = 2 nodes idling 900 s at $0.5/h: no
    (2.0, 900.0, 1.0, 2),  # wait $0.5 > $0.25: two nodes
    (1.0, 450.0, 0.5, 0),  # opening in less than a boot: the idle still counts a whole boot ($0.125 = wait)
    (1.0, 1800.0, 0.9, 0),  # the wait is one boot's ($0.225), not the time until it opens: < idle $0.25
    (1.0, 1800.0, 1.1, 1),  # exactly two boots ahead: weighed, and $0.275 > $0.25
    (1.0, 1800.5, 100.0, 0),  # earlier than two boots ahead: not yet
    (1.0, 0.0, 100.0, 0),  # its window open: its jobs burst as any job does
])
def test_pre_warm_weighs_a_boots_wait_against_idling_until_the_window_opens(
        gpu_hours: float, until_s: float, rate: float, count: int) -> None:
    assert warmed(gpu_hours, until_s, rate) == count


def test_pre_warm_counts_spare_gpus_of_the_model_and_rounds_nodes_up() -> None:
    """Spare reserved GPUs and warm nodes of the signal's model cover part of its rate; warm nodes of
    another model none; a fractional excess takes a whole node."""
    assert warmed(2.0, 900.0, 10.0, free=1) == 1
    assert warmed(2.0, 900.0, 10.0, free=2) == 0  # no excess at all: nothing, not a launch of none
    assert warmed(2.0, 900.0, 10.0, idle=(node("t4", replace(T4, gpus_per_node=4)),)) == 2
    assert warmed(2.5, 900.0, 10.0) == 3


def test_pre_warm_of_a_signal_naming_no_model_is_for_the_pools_largest_model() -> None:
    """No model named: the pool's model with the most GPUs (V100, 8, not T4, 4) is the one warmed."""
    assert warmed(2.0, 900.0, 10.0, model="", pool=(PoolNode("onprem-1", "T4", 4, 0),)) == 2


def test_pre_warm_skips_a_signal_with_an_empty_window() -> None:
    assert warmed(2.0, 900.0, 10.0, hours=0.0) == 0


def test_two_teams_signals_of_one_source_and_window_pre_warm_under_two_request_ids() -> None:
    """A sprint's GPU work split between two teams: two demands. Under one request id (source, window,
    offering, count) the second launch was the first asked again, and only one set of nodes warmed."""
    opens = NOW + timedelta(seconds=900)
    sigs = tuple(Signal("SPRINT-1", 2.0, opens, opens + timedelta(hours=1), gpu_model="V100", team=team)
                 for team in ("vision", "speech"))
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.0, launch_latency_s=900, wait_value_usd_per_gpu_hour=10))
    s = Snapshot(NOW, (), (FULL,), POOL, (), HALF_ONLY, signals=sigs)
    launches = prewarm(s, cost, offer_book(s, cost), ReservedQueue(NOW, POOL, s.running), [])
    assert sorted((a.team, a.count) for a in launches) == [("speech", 2), ("vision", 2)]
    assert len({a.request_id for a in launches}) == 2
    flipped = replace(s, signals=sigs[::-1])
    assert prewarm(flipped, cost, offer_book(flipped, cost), ReservedQueue(NOW, POOL, s.running), []) == launches
