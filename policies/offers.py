"""Choosing the cheapest *effective* cloud offering for a job shape, cached per decision."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable

from burster.model import Demand, InFlight, Market, Offering, Snapshot
from policies.cost import CostModel, cost_floor_usd

ShapeKey = tuple[str, int, int, float, frozenset[Market], bool]
_Ranked = tuple[Offering, int, float, float]  # a spot offering for a shape: nodes, rework fraction, rate
ANY = frozenset({Market.SPOT, Market.ON_DEMAND})
SPOT_ONLY = frozenset({Market.SPOT})
ON_DEMAND_ONLY = frozenset({Market.ON_DEMAND})


_MEMO: dict[int, tuple[tuple[Offering, ...], frozenset[str], frozenset[str], OfferBook]] = {}


def offer_book(snapshot: Snapshot, cost: CostModel) -> OfferBook:
    """The OfferBook of a snapshot, reused while offerings (same tuple), blocks and degradations
    are unchanged: a memo of a pure function, so decide() stays deterministic."""
    memo = _MEMO.get(id(cost))
    if memo is not None and memo[0] is snapshot.offerings and memo[1] == snapshot.blocked_offerings \
            and memo[2] == snapshot.degraded_providers:
        return memo[3]
    book = OfferBook(snapshot, cost)
    _MEMO.clear()
    _MEMO[id(cost)] = (snapshot.offerings, snapshot.blocked_offerings, snapshot.degraded_providers, book)
    return book


def flights_by_job(snapshot: Snapshot) -> dict[str, list[InFlight]]:
    """The launches in flight (``Snapshot.in_flight``) made for a job, by its id."""
    flights: dict[str, list[InFlight]] = {}
    for f in snapshot.in_flight:
        if f.job_id is not None:
            flights.setdefault(f.job_id, []).append(f)
    return flights


def kept_in_flight(flights: Iterable[InFlight], book: OfferBook,
                   planned_id: Callable[[Offering], str]) -> Offering | None:
    """The offering of a launch among ``flights`` while it is launchable (not blocked after a capacity
    error, withdrawn, its cloud degraded) and the launch planned there (``planned_id``: its request id)
    is that launch: launched there again it is asked again, where a fresh choice (prices moved) would
    be a second launch beside it. At this book's price."""
    for f in flights:
        o = book.launchable(f.offering.key)
        if o is not None and planned_id(o) == f.request_id:
            return o
    return None


class OfferBook:
    """Launchable offerings of one Snapshot: available, not blocked, provider not degraded."""

    def __init__(self, snapshot: Snapshot, cost: CostModel) -> None:
        self.cost = cost
        self.offerings = tuple(
            o for o in snapshot.offerings
            if o.available and o.market is not Market.RESERVED
            and o.key not in snapshot.blocked_offerings
            and o.provider not in snapshot.degraded_providers
        )
        self._by_model: dict[str, list[Offering]] = {}
        for o in self.offerings:
            self._by_model.setdefault(o.gpu_model, []).append(o)
        self._best: dict[ShapeKey, Offering | None] = {}
        self._spot_ranks: dict[ShapeKey, tuple[list[_Ranked], list[float]]] = {}
        self._spot_fractions: dict[ShapeKey, list[float]] = {}
        # (running job id, attempt, estimate, burst params) -> where it would be launched now, for the
        # jobs whose choice stays while this book does (``consolidate._target_holds``)
        self.targets: dict[tuple[str, int, float, object], Offering | None] = {}
        self.bounds: dict[tuple[object, ...], tuple[float, float]] = {}  # consolidation's saving bound lines
        self._by_key: dict[str, Offering] | None = None

    def launchable(self, key: str) -> Offering | None:
        """The offering ``key`` names, as this book holds it (today's price), if it is launchable."""
        if self._by_key is None:
            self._by_key = {o.key: o for o in self.offerings}
        return self._by_key.get(key)

    def _candidates(self, gpu_model: str) -> Iterable[Offering]:
        return self._by_model.get(gpu_model, ()) if gpu_model else self.offerings

    def best(self, job: Demand, markets: frozenset[Market] = ANY, *, by_price: bool = False) -> Offering | None:
        """The offering in ``markets`` with the lowest expected hourly cost for the job's gang shape
        (``by_price``: the lowest listed price, rework ignored, as a price-greedy scheduler picks)."""
        key = (job.gpu_model, job.nodes, job.gpus_per_node, job.checkpoint_interval_s, markets, by_price)
        if key in self._best:
            return self._best[key]
        best: Offering | None = None
        best_rate = 0.0
        for o in self._candidates(job.gpu_model):
            if o.market not in markets:
                continue
            rate = self.cost.nodes_for(job, o) * o.price_per_hour_usd if by_price else self.rate(job, o)
            if best is None or rate < best_rate or (rate == best_rate and o.key < best.key):
                best, best_rate = o, rate
        self._best[key] = best
        return best

    def best_for_deadline(self, job: Demand, markets: frozenset[Market], max_rework: float,
                          slack_s: float, risk: Callable[[Offering], float] | None = None) -> Offering | None:
        """Like ``best``, for a job with ``slack_s`` of deadline slack. A spot offering qualifies only
        if its expected rework fraction is at most ``max_rework``, and competes at its expected job
        cost plus its deadline risk (``CostModel.deadline_risk_usd``, or ``risk`` of it where given)
        against on-demand's job cost. With no on-demand allowed and no spot qualifying, the cheapest
        spot is still returned."""
        if (max_rework == math.inf and risk is None) or Market.SPOT not in markets:
            return self.best(job, markets)
        best = self.best(job, markets - {Market.SPOT}) if Market.ON_DEMAND in markets else None
        best_usd = self.cost.job_cost_usd(job, best) if best is not None else math.inf
        ranked, neg_min = self._spot_rank(job)
        start = bisect.bisect_left(neg_min, -max_rework)  # the first offering whose rework is within the limit
        work = job.remaining_s
        for o, nodes, rework, rate in ranked[start:]:
            if rework > max_rework:
                continue
            if cost_floor_usd(rate, work) >= best_usd:  # (``CostModel.job_cost_floor_usd``)
                break  # ranked by rate, so by this floor: no later offering costs less, before its risk
            usd = self.cost.run_cost_usd(o, nodes, work, rework)  # (``CostModel.job_cost_usd``)
            if usd >= best_usd:
                continue  # (its boot or its cloud's billing may cost more than a later one's)
            usd += self.cost.deadline_risk_usd(job, o, slack_s) if risk is None else risk(o)
            if usd < best_usd:
                best, best_usd = o, usd
        if best is None:
            return self.best(job, markets)
        return best

    def _spot_rank(self, job: Demand) -> tuple[list[_Ranked], list[float]]:
        """Spot offerings for the job's shape by effective rate, each with its node count, rework
        fraction and rate, and minus the running minimum of their rework fractions (non-decreasing,
        so it can be bisected)."""
        key = (job.gpu_model, job.nodes, job.gpus_per_node, job.checkpoint_interval_s, SPOT_ONLY, False)
        hit = self._spot_ranks.get(key)
        if hit is None:
            cost, ckpt = self.cost, job.checkpoint_interval_s
            spots = [(o, n, cost.rework_fraction(o, ckpt, n), self.rate(job, o))
                     for o in self._candidates(job.gpu_model) if o.market is Market.SPOT
                     for n in (cost.nodes_for(job, o),)]
            spots.sort(key=lambda s: (s[3], s[0].key))
            neg_min: list[float] = []
            low = math.inf
            for s in spots:
                low = min(low, s[2])
                neg_min.append(-low)
            hit = self._spot_ranks[key] = (spots, neg_min)
        return hit

    def spot_fractions(self, job: Demand) -> list[float]:
        """The rework fractions of the spot offerings for the job's shape, ascending."""
        key = (job.gpu_model, job.nodes, job.gpus_per_node, job.checkpoint_interval_s, SPOT_ONLY, False)
        hit = self._spot_fractions.get(key)
        if hit is None:
            hit = self._spot_fractions[key] = sorted(
                self.cost.rework_fraction(o, job.checkpoint_interval_s, self.cost.nodes_for(job, o))
                for o in self._candidates(job.gpu_model) if o.market is Market.SPOT)
        return hit

    def rate(self, job: Demand, o: Offering) -> float:
        """Expected $ per hour of useful run of ``job``'s gang on ``o`` (price plus spot rework)."""
        return self.cost.run_rate_usd_per_hour(job, o)
