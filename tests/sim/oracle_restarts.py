"""A controller restarted from its store decides as one that never stopped, for any config the fuzzer
draws: the same simulation is run again with its state in SQLite, the controller thrown away after
a few passes (a new reconciler and policy, the store opened anew) while the clouds and the pool go
on; every pass must plan what the uninterrupted run planned, the ledger must be the same, and every
oracle check must still pass.

A restart is put only after a pass that the next tick's pass follows in the uninterrupted run: a
restarted run goes on from the next tick, and a pass there that the uninterrupted run skipped (it
would decide nothing) would still list the clouds, which, with their API failing by a seeded draw
per call, would shift every later failure.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from burster.reconciler import PassReport
from burster.sqlstate import SqlState
from tests.sim.oracle_observe import Observed
from tests.store.pg import fresh_database


class PassLog:
    """Each pass's time and planned actions (``Plan.explain``), as ``per_pass`` sees them."""

    def __init__(self, inner: Callable[[Observed, PassReport], list[str]] | None = None) -> None:
        self.inner = inner
        self.times: list[datetime] = []
        self.lines: list[str] = []

    def __call__(self, seen: Observed, report: PassReport) -> list[str]:
        self.times.append(report.now)
        self.lines.extend(f"{report.now:%Y-%m-%d %H:%M:%S} {line}" for line in report.plan.explain())
        return self.inner(seen, report) if self.inner is not None else []


def restart_times(times: Sequence[datetime], tick_s: float, count: int, seed: int) -> list[datetime]:
    """``count`` passes (seeded) that the next tick's pass follows, the last pass excluded."""
    step, at = timedelta(seconds=tick_s), set(times)
    fit = [t for t in times[:-1] if t + step in at]
    return sorted(random.Random(f"restart-{seed}").sample(fit, min(count, len(fit))))


def restart_findings(observe: Callable[..., Observed], reference: Observed, log: PassLog, *, count: int,
                     seed: int, checks: Callable[[Observed], list[str]],
                     per_pass: Callable[[Observed, PassReport], list[str]] | None = None,
                     store: str = "sqlite") -> list[str]:
    """Run ``observe`` (the reference's simulation, keyword arguments ``state``, ``restarts`` and
    ``per_pass`` left to this) again kept in a store (``store``: a SQLite file, or "postgres": a new
    PostgreSQL database, tests/store/pg.py) and restarted ``count`` times; what differs from the
    reference (``log``: its passes), and what ``checks`` find in the restarted run."""
    times = restart_times(log.times, reference.tick_s, count, seed)
    if not times:
        return []
    again = PassLog(per_pass)
    with _store(store) as url:
        seen = observe(state=lambda: SqlState.open(url), restarts=times, per_pass=again)
        seen.sim.reconciler.state.close()
    where = ", ".join(f"{t:%Y-%m-%d %H:%M:%S}" for t in times)
    out = [f"restarted after the passes at {where}: {f}" for f in _differences(log, again, reference, seen)]
    return out + [f"restarted after the passes at {where}: {f}" for f in checks(seen)]


@contextmanager
def _store(kind: str) -> Iterator[str]:
    if kind == "postgres":
        with fresh_database() as url:
            yield url
        return
    with tempfile.TemporaryDirectory() as tmp:
        yield f"sqlite:///{Path(tmp) / 'burster.db'}"


def _differences(log: PassLog, again: PassLog, reference: Observed, seen: Observed) -> list[str]:
    out: list[str] = []
    if again.lines != log.lines:
        i = next((k for k, (a, b) in enumerate(zip(log.lines, again.lines, strict=False)) if a != b),
                 min(len(log.lines), len(again.lines)))
        out.append(f"the plans differ first at action {i}: uninterrupted {_at(log.lines, i)!r}, "
                   f"restarted {_at(again.lines, i)!r}")
    want, got = reference.sim.reconciler.state.ledger, seen.sim.reconciler.state.ledger
    if list(want) != list(got):
        extra = [e for e in got if e not in want][:2]
        missing = [e for e in want if e not in got][:2]
        out.append(f"the ledger differs: {len(got)} entries, not {len(want)}; only restarted: {extra}; "
                   f"only uninterrupted: {missing}")
    return out


def _at(lines: Sequence[Any], i: int) -> Any:
    return lines[i] if i < len(lines) else "(none)"
