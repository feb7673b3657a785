"""A node's bill as ledger entries: charged to the team (project, sprint) of the job it serves.

A node's run is billed as one run by its cloud's rule (``burster.billing``), from its launch. It is
charged in parts: when a job of another team starts on it (a standby node handed to a job, an idle
node the pool gives a queued job), the part so far goes to the team it served until then
(``handed_over``), and the rest, from that instant, to the job's team, which it serves until
handed over again (idle time after a job included). Each part is the run's bill at its end less the
bill at its start, so the parts add up to the one run's bill, its minimum charged once; a spot
node its cloud takes back free in its first hour ends with a credit of each part, to its team.
A node a listing ends is billed once the pass has read the pool's placements (``EndsToBill``), so
a job of another team they show started there before its end takes it over first (``hand_over``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from decimal import Decimal

from burster.billing import billing_rule, interrupted_spot_billed_s
from burster.budget_period import share_since
from burster.model import Demand, Placement
from burster.state import LedgerEntry, MemoryState, NodeRecord

log = logging.getLogger("burster.reconcile")


def billed_s(rec: NodeRecord, end: datetime) -> float:
    """Seconds its cloud bills for the run from its launch to ``end``."""
    return billing_rule(rec.provider).billed_s(max((end - rec.launched_at).total_seconds(), 0.0))


def charged_from(rec: NodeRecord) -> datetime:
    """Where the part of its run not charged yet starts (its launch, or its last hand-over)."""
    return rec.charged_from or rec.launched_at


def charged_s(rec: NodeRecord) -> float:
    """Seconds of its run charged already: its bill up to its last hand-over (none before one)."""
    return billed_s(rec, rec.charged_from) if rec.charged_from else 0.0


def entry(rec: NodeRecord, start: datetime, end: datetime, billed: float, reason: str) -> LedgerEntry:
    """A ledger entry for ``billed`` seconds of ``rec`` between ``start`` and ``end``, to its team."""
    usd = Decimal(str(rec.offering.price_per_hour_usd)) * Decimal(billed) / Decimal(3600)
    o = rec.offering
    return LedgerEntry(rec.node_id, rec.provider, o.market.value, o.instance_type, o.region, rec.team,
                       rec.project, rec.sprint, reason, start, end, billed, usd.quantize(Decimal("0.000001")))


def final_entries(rec: NodeRecord, end: datetime, taken_back: bool,
                  charged: Callable[[], Iterable[LedgerEntry]]) -> list[LedgerEntry]:
    """The last part of its run, ending at ``end``: by its cloud's plain rule, or taken back by its
    cloud (``interrupted_spot_billed_s``). Taken back free (in its first hour on AWS), each part
    ``charged`` at a hand-over before is credited to the team it was charged to."""
    start, before = charged_from(rec), charged_s(rec)
    if not taken_back:
        return [entry(rec, start, end, billed_s(rec, end) - before, rec.reason)]
    run_s = max((end - rec.launched_at).total_seconds(), 0.0)
    billed = interrupted_spot_billed_s(rec.provider, run_s)
    why = "; taken back by its cloud" + (" in its first hour: not billed" if not billed and run_s else "")
    if billed or not rec.charged_from:
        return [entry(rec, start, end, billed - before, rec.reason + why)]
    credits = [replace(e, reason=f"{e.reason}; credited: taken back by its cloud in its first hour, not billed",
                       billed_s=-e.billed_s, usd=-e.usd) for e in charged() if e.node_id == rec.node_id]
    return [*credits, entry(rec, start, end, 0.0, rec.reason + why)]


def accrued_usd(rec: NodeRecord, now: datetime, since: datetime | None) -> float:
    """USD its uncharged part has run up by ``now``, the share of it at or after ``since``."""
    start = rec.charged_from
    if start is None:  # the common case, every pass for every live node: one rule lookup
        part_s = billing_rule(rec.provider).billed_s(max((now - rec.launched_at).total_seconds(), 0.0))
        start = rec.launched_at
    else:
        part_s = billed_s(rec, now) - charged_s(rec)
    return share_since(rec.offering.price_per_hour_usd * part_s / 3600.0, start, now, since)


def serves_another(rec: NodeRecord, job: Demand) -> bool:
    """Whether ``job`` running on the node is charged to another team, project or sprint than it."""
    return (rec.team, rec.project, rec.sprint) != (job.team, job.project, job.sprint)


def handed_over(rec: NodeRecord, job: Demand, at: datetime) -> tuple[LedgerEntry | None, NodeRecord]:
    """``job`` started on the node at ``at``: the entry charging its run so far to whom it served
    (None if nothing was billed), and the record charging the rest to the job's team."""
    at = max(at, charged_from(rec))
    part = entry(rec, charged_from(rec), at, billed_s(rec, at) - charged_s(rec),
                 f"{rec.reason}; until job {job.job_id} started there")
    kept = replace(rec, team=job.team, project=job.project, sprint=job.sprint, charged_from=at)
    return (part if part.billed_s > 0 else None), kept


def hand_over(state: MemoryState, node_id: str, run: Placement | None, end: datetime | None = None) -> NodeRecord:
    """The node's record, handed over if ``run``'s job is of another team (project, sprint) and started
    there (before the node's ``end``): its run so far charged to whom it served, the rest to be the job's."""
    rec = state.nodes[node_id]
    if run is None or not serves_another(rec, run.job) or (end is not None and run.started_at >= end):
        return rec
    part, kept = handed_over(rec, run.job, run.started_at)
    log.info("node %s runs job %s of team %r from %s: charged to it from then, to team %r before",
             node_id, run.job.job_id, kept.team, kept.charged_from, rec.team)
    if part is not None:
        state.charge(part)
    state.update(node_id, team=kept.team, project=kept.project, sprint=kept.sprint, charged_from=kept.charged_from)
    return state.nodes[node_id]


Charge = Callable[[str, datetime], None]


class EndsToBill:
    """Ends of nodes charged only once the pass has read the pool's placements: a job of another
    team the pool started on a node before its end (the pool notices a node gone late) takes it over
    first. ``taken_back``: the book's nodes, ending now, that their cloud took back."""

    def __init__(self, taken_back: set[str]) -> None:
        self._taken_back = taken_back
        self._ends: list[tuple[str, datetime, bool, Charge]] = []

    def later(self, charge: Charge) -> Charge:
        """``charge``, put off until ``bill`` (taken back or not as at the node's end)."""
        def put_off(node_id: str, end: datetime) -> None:
            self._ends.append((node_id, end, node_id in self._taken_back, charge))
        return put_off

    def bill(self, first: Callable[[str, datetime], object]) -> None:
        """Make the charges put off, in order, each after ``first(node_id, end)`` (a hand-over)."""
        ends, self._ends = self._ends, []
        for node_id, end, taken_back, charge in ends:
            first(node_id, end)
            if taken_back:
                self._taken_back.add(node_id)
            charge(node_id, end)
            self._taken_back.discard(node_id)
