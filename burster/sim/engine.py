"""The simulation loop: advance the world, run the real reconcile pass, repeat.

The controller ticks every ``tick_s`` like the live service. When nothing is queued and no burst
node is alive (``quiet``), a pass would decide nothing, so the loop skips ahead to the next tick at
which something happens: this is what makes a week simulate in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from burster.clock import FakeClock
from burster.reconciler import PassReport, Reconciler


class World(Protocol):
    def next_time(self) -> datetime | None: ...

    def advance_to(self, until: datetime) -> None: ...

    @property
    def quiet(self) -> bool: ...

    @property
    def finished(self) -> bool: ...


def run(world: World, reconciler: Reconciler, clock: FakeClock, *, tick_s: float, end: datetime,
        on_pass: Callable[[PassReport], None] | None = None,
        on_progress: Callable[[datetime], None] | None = None) -> int:
    """Run until ``end`` or until all work is done; returns the number of reconcile passes."""
    start = clock.now()
    t = start
    passes = 0
    step = timedelta(seconds=tick_s)
    while t <= end:
        world.advance_to(t)
        idle = world.quiet and not reconciler.state.live()
        if not idle:
            report = reconciler.run_once()
            passes += 1
            if on_pass is not None:
                on_pass(report)
        if on_progress is not None:
            on_progress(t)
        if world.finished and not reconciler.state.live():
            break
        t_next = t + step
        if world.quiet and not reconciler.state.live():
            nxt = world.next_time()
            if nxt is None:
                break
            if nxt > t_next:  # jump to the first tick at or after the next event
                ticks = math.ceil((nxt - start).total_seconds() / tick_s)
                t_next = start + timedelta(seconds=ticks * tick_s)
        t = t_next
        clock.set(t)
    return passes
