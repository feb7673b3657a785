"""What the hard budgets (global, per team) and the soft threshold leave this pass's launches and
handed nodes (``guards.apply_guards``).

Spend must fit both of a hard budget's rules:
- committed spend (spent + what live nodes are expected to cost) plus the launch's expected cost;
- the budget stop's own test (``guards.enforce_budget``) at the next pass: spent plus the burn of
  every live, launched and in-flight node (``Snapshot.in_flight``) over a tick and the stop's
  horizon (a tick plus two checkpoint graces). A launch that passes the first but not the second
  is stopped at the next pass, its billing minimum paid for nothing, and near a budget that
  repeats every pass (launch, stop).
"""

from __future__ import annotations

from dataclasses import dataclass

from burster.lifecycle import LIVE_STATES
from burster.model import Market, Snapshot


def per_period(period: str) -> str:
    """How a budget's amount reads for its period: ``/month``, or nothing for ``all``."""
    return "" if period == "all" else f"/{period}"


def in_flight_burn(snapshot: Snapshot, team: str | None = None) -> float:
    """USD per hour the nodes of launches in flight burn (of ``team``'s only, if given)."""
    return sum(f.count * f.offering.price_per_hour_usd for f in snapshot.in_flight if team is None or f.team == team)


@dataclass(slots=True)
class _Account:
    """One budget's running figures: what is committed, spent, and burning per hour."""

    budget: float
    committed: float
    spent: float
    burn_per_h: float


class BudgetRoom:
    """Budgets as this pass's kept actions use them up (``take``), for ``refuse`` to check the next."""

    def __init__(self, snapshot: Snapshot, committed: float, committed_by_team: dict[str, float],
                 total_budget_usd: float | None, team_budget_usd: dict[str, float], soft_fraction: float,
                 stop_reach_s: float) -> None:
        self.soft_fraction = soft_fraction
        self.reach_h = stop_reach_s / 3600.0
        self.per = per_period(snapshot.spend.period)
        self.accounts: dict[str, _Account] = {}
        if total_budget_usd is None and not team_budget_usd:
            return
        live = [n for n in snapshot.cloud_nodes if n.state in LIVE_STATES]
        spent_by_team = dict(snapshot.spend.by_team_usd)
        if total_budget_usd is not None:
            self.accounts["global"] = _Account(total_budget_usd, committed, snapshot.spend.total_usd,
                                               sum(n.offering.price_per_hour_usd for n in live)
                                               + in_flight_burn(snapshot))
        for team, budget in team_budget_usd.items():
            self.accounts[f"team {team}"] = _Account(
                budget, committed_by_team.get(team, 0.0), spent_by_team.get(team, 0.0),
                sum(n.offering.price_per_hour_usd for n in live if n.team == team) + in_flight_burn(snapshot, team))

    def _of(self, team: str) -> list[tuple[str, _Account]]:
        names = ("global", f"team {team}")
        return [(name, self.accounts[name]) for name in names if name in self.accounts]

    def refuse(self, usd: float, burn_per_h: float, market: Market, team: str,
               moved_per_h: float = 0.0) -> str | None:
        """Why ``usd`` more committed spend burning ``burn_per_h`` more (a launch; 0 for an idle node
        handed a job, already burning) would break a budget, or None. ``moved_per_h``: burn that moves
        to ``team``'s budget from another team's (an idle node handed to its job is charged to the
        job's team from then, ``burster.node_bills``), not new to the global one."""
        for name, a in self._of(team):
            burn = burn_per_h + (moved_per_h if name != "global" else 0.0)
            if a.committed + usd > a.budget:
                return (f"{name} budget ${a.budget:,.2f}{self.per} would be exceeded: ${a.committed:,.2f} "
                        f"committed + ${usd:,.2f} for this burst")
            reach_usd = a.spent + (a.burn_per_h + burn) * self.reach_h
            if burn > 0 and reach_usd > a.budget:
                return (f"{name} budget ${a.budget:,.2f}{self.per} would stop it at the next pass: "
                        f"${a.spent:,.2f} spent + ${a.burn_per_h + burn:,.2f}/h for the stop's "
                        f"{self.reach_h * 3600.0:.0f}s reach")
            if market is Market.ON_DEMAND and a.committed + usd > self.soft_fraction * a.budget:
                return (f"{name} budget past its soft threshold ({self.soft_fraction:.0%} of "
                        f"${a.budget:,.2f}{self.per}): bursts restricted to spot")
        return None

    def take(self, usd: float, burn_per_h: float, team: str, moved_per_h: float = 0.0) -> None:
        """Count what a kept launch or handed node commits and burns (``moved_per_h``: as ``refuse``)."""
        for name, a in self._of(team):
            a.committed += usd
            a.burn_per_h += burn_per_h + (moved_per_h if name != "global" else 0.0)
