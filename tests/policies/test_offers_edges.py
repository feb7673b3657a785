"""Edges of the offer book (policies/offers.py) a mutation audit found unpinned: the filters and
their memo, cache keys, ties, price-greedy ranking per gang, the rework limit and spot ranking."""

from __future__ import annotations

from dataclasses import replace

from burster.model import Market, Offering
from policies.burst import burst
from policies.cost import CostModel
from policies.offers import ANY, ON_DEMAND_ONLY, SPOT_ONLY, OfferBook, offer_book
from tests.policies.test_burst_edges import COST, OD, PARAMS, QUAD, SPOT, busy_pool, dl, job


def test_a_spot_pool_whose_rework_is_exactly_the_limit_qualifies() -> None:
    """1 interruption/h, AWS saves on notice: 300 s restart + 60 s write = 0.1 of the run; slack 1740 s
    leaves (1740 - 300 - 180 - 900) / 3600 = 0.1 for rework: spot still qualifies."""
    cost = CostModel(replace(COST.p, interruption_rates={SPOT.key: 1.0}))
    (launch,) = burst(busy_pool(dl(1_740)), cost, PARAMS)
    assert launch.offering == SPOT
    (launch,) = burst(busy_pool(dl(1_739)), cost, PARAMS)
    assert launch.offering == OD


def test_equal_offerings_tie_on_the_smaller_key_whatever_their_order() -> None:
    b_zone = replace(SPOT, zone="usw2-az2")
    for offerings in ((SPOT, b_zone, OD), (b_zone, SPOT, OD)):
        (launch,) = burst(busy_pool(job(), offerings=offerings), COST, PARAMS)
        assert launch.offering == SPOT  # "aws/usw2-az1/..." < "aws/usw2-az2/..."
        (launch,) = burst(busy_pool(dl(50_000), offerings=offerings), COST, PARAMS)  # ranked for a deadline
        assert launch.offering == SPOT


def test_price_greedy_ranking_compares_the_whole_gangs_price() -> None:
    """An 8-GPU job: eight 1-GPU nodes at $0.90 ($7.20/h) or two 4-GPU nodes at $3.00 ($6.00/h)."""
    quad = replace(QUAD, price_per_hour_usd=3.0)
    book = OfferBook(busy_pool(offerings=(SPOT, quad, OD)), COST)
    assert book.best(job(gpus=8), by_price=True) == quad


def test_unavailable_blocked_and_degraded_offerings_are_not_launched() -> None:
    cheap = replace(SPOT, zone="usw2-az0", price_per_hour_usd=0.5)
    gcp = Offering("gcp", "us-central1", "us-central1-a", "n1-v100-1", "V100", 1, Market.SPOT, 0.4)
    base = busy_pool(job(), offerings=(SPOT, replace(cheap, available=False), OD))
    assert burst(base, COST, PARAMS)[0].offering == SPOT
    for snap in (replace(base, offerings=(SPOT, cheap, OD), blocked_offerings=frozenset({cheap.key})),
                 replace(base, offerings=(SPOT, gcp, OD), degraded_providers=frozenset({"gcp"}))):
        assert burst(snap, COST, PARAMS)[0].offering == SPOT


def test_the_offer_book_memo_follows_blocks_and_degradations() -> None:
    """The same offerings tuple with a block or a degradation added is a new book."""
    snap = busy_pool(job(), offerings=(SPOT, OD))
    assert offer_book(snap, COST).best(job()) == SPOT
    assert offer_book(replace(snap, blocked_offerings=frozenset({SPOT.key})), COST).best(job()) == OD
    assert offer_book(replace(snap, degraded_providers=frozenset({"aws"})), COST).best(job()) is None
    assert offer_book(snap, COST).best(job()) == SPOT


def test_best_is_cached_per_market_set_and_checkpoint_interval() -> None:
    """Azure's 30 s notice does not cover the write: an interruption loses half an interval. At
    2/h, 1 min checkpoints cost 0.18 of rework ($0.47/h, under $0.80); 10 h ones 10.2 ($4.47/h)."""
    risky = Offering("azure", "eastus", "eastus", "NC6s_v3", "V100", 1, Market.SPOT, 0.4)
    safe = replace(SPOT, price_per_hour_usd=0.8)
    cost = CostModel(replace(COST.p, interruption_rates={risky.key: 2.0}))
    book = OfferBook(busy_pool(offerings=(risky, safe, OD)), cost)
    assert book.best(job(checkpoint_interval_s=60)) == risky
    assert book.best(job(checkpoint_interval_s=36_000)) == safe
    assert book.best(job(), ON_DEMAND_ONLY) == OD and book.best(job(), SPOT_ONLY) == risky


def test_a_spot_pool_dearer_than_on_demand_does_not_hide_a_cheap_one() -> None:
    """Ranked by rate, the cheap pool is looked at first; a pool dearer than on-demand ends the search."""
    dear = replace(SPOT, zone="usw2-az9", price_per_hour_usd=5.0)
    (launch,) = burst(busy_pool(dl(50_000), offerings=(dear, SPOT, OD)), COST, PARAMS)
    assert launch.offering == SPOT


def test_a_spot_ranking_is_per_gang_size() -> None:
    """``x``: $0.50/h, 4 interruptions/h x 360 s: rework 0.4 a node, 0.8 for a 2-node gang; ``y`` $0.80 with
    none; on-demand $0.85. One node: x ($0.73 for the hour) beats on-demand ($0.89). A gang: x's $1.85 is
    over on-demand's $1.79, y's $1.68 under it: ranked for the gang, y comes before x."""
    x, y = replace(SPOT, zone="usw2-az7", price_per_hour_usd=0.5), replace(SPOT, price_per_hour_usd=0.8)
    od = replace(OD, price_per_hour_usd=0.85)
    book = OfferBook(busy_pool(offerings=(x, y, od)), CostModel(replace(COST.p, interruption_rates={x.key: 4.0})))
    single, gang = dl(50_000), replace(dl(50_000, gpus=2), nodes=2)
    assert book.best_for_deadline(single, ANY, 10.0, 50_000) == x
    assert book.best_for_deadline(gang, ANY, 10.0, 50_000) == y


def test_spot_fractions_are_ascending() -> None:
    """Rework at 1/h: 0.1 (AWS writes on notice) and 1.5/h x (300 + 900) s = 0.5 (GCP's 30 s does not)."""
    gcp = Offering("gcp", "us-central1", "us-central1-a", "n1-v100-1", "V100", 1, Market.SPOT, 0.4)
    cost = CostModel(replace(COST.p, spot_interruptions_per_hour=1.0, interruption_rates={gcp.key: 1.5}))
    book = OfferBook(busy_pool(offerings=(gcp, SPOT, OD)), cost)
    assert book.spot_fractions(job()) == [0.1, 0.5]


