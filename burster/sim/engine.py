"""The simulation loop: advance the world, run the real reconcile pass, repeat.

The controller ticks every ``tick_s`` like the live service. A pass that decides nothing is
repeated only when something could change its answer: the loop jumps to the first tick at or after
the next world change (an event, an arrival, a spot availability flip while work is queued or cloud nodes live), the
expiry of a blocked offering, the deadline of a checkpoint in flight, the instant a node its cloud's
listing leaves out is taken for gone (``NodeBook.missing``), or the instant the policy itself names
(``PassReport.quiet_until``, e.g. an idle node reaching its TTL). Every pass it skips would have
returned an empty plan, so the result is the same as ticking through; ``skip=False`` ticks through
to prove it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from burster.clock import FakeClock
from burster.reconciler import PassReport, Reconciler


class World(Protocol):
    def next_change(self, now: datetime, *, spot: bool) -> datetime | None: ...

    def advance_to(self, until: datetime) -> None: ...

    @property
    def quiet(self) -> bool: ...

    @property
    def finished(self) -> bool: ...


def run(world: World, reconciler: Reconciler, clock: FakeClock, *, tick_s: float, end: datetime,
        on_pass: Callable[[PassReport], None] | None = None,
        on_progress: Callable[[datetime], None] | None = None, skip: bool = True, last: bool = True) -> int:
    """Run until ``end`` or until all work is done; returns the number of reconcile passes.
    ``last``: the simulation stops here (nodes still up are charged to the stop); False for a
    stretch that another ``run`` goes on from."""
    start = clock.now()
    t = start
    passes = 0
    step = timedelta(seconds=tick_s)
    reached = start  # the last tick the world was advanced to
    done = False  # all work ended (ticking through stops there too)
    while t <= end:
        world.advance_to(t)
        reached = t
        report: PassReport | None = None
        if not (world.quiet and not reconciler.state.has_live()):
            report = reconciler.run_once()
            passes += 1
            if on_pass is not None:
                on_pass(report)
        if on_progress is not None:
            on_progress(t)
        if world.finished and not reconciler.state.has_live():
            done = True
            break  # (the world still goes on to the end: the idle rest of the window counts)
        t_next = t + step
        wake = _wake(world, reconciler, report, t) if skip else None
        if wake is _NEVER:
            break
        if isinstance(wake, datetime) and wake > t_next:  # jump to the first tick at or after it
            wake = min(wake, end + step)
            t_next = start - ((start - wake) // step) * step  # in whole microseconds, as ticking adds up
        t = t_next
        clock.set(t)
    # ticking through ends on the last tick by ``end``: bring the world there too (nothing happens
    # on the way, or the loop would have woken), so the waits of jobs never started count as long,
    # and so does the reserved pool's idle time when all the work ended early
    final = start + ((end - start) // step) * step
    if reached < final:
        world.advance_to(final)
        if on_progress is not None and not done:  # the ticks jumped over, which ticking through visits
            on_progress(final)
    if last:
        reconciler.close_books(max(reached, final))  # nodes still up at the stop are paid to it
    return passes


_NEVER = object()


def _wake(world: World, reconciler: Reconciler, report: PassReport | None, now: datetime) -> object:
    """When the next pass could decide something (None: next tick; _NEVER: nothing ever will)."""
    state = reconciler.state
    busy = report is not None and (report.quiet_until is None or report.errors or state.intents)
    if busy:
        return None
    # a spot pool coming back can make a queued job burst, or a running one move to it
    times = [world.next_change(now, spot=not world.quiet or state.has_live())]
    if report is not None:
        times.append(report.quiet_until)
        times += [until for until in state.blocked.values() if until > now]
        times += [t.deadline for t in state.tickets.values()]  # a checkpoint that times out
        times += reconciler.nodes.missing.values()  # a node gone from its listing is taken for gone
    found = [t for t in times if t is not None]
    if not found:
        return _NEVER if report is None else None
    return min(found)
