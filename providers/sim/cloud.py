"""A simulated cloud: catalog offerings, spot availability from a series, launch latency, preemption.

Launches are idempotent by request id. A spot launch while its series is at 0 fails with
CapacityError. A running spot node gets an interruption notice when its series falls to 0 and is
taken ``notice_s`` later (AWS 120 s, GCP and Azure 30 s).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from burster.billing import billing_rule, interrupted_spot_billed_s
from burster.errors import CapacityError, PartialLaunchError, ThrottledError
from burster.lifecycle import NodeState
from burster.model import Interruption, Market, Node, Offering, node_tags, tagged_exclusive
from burster.retry import call_with_backoff
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from providers.sim.spot import SpotSeries, series_for

NOTICE_S = {"aws": 120.0, "gcp": 30.0, "azure": 30.0}
BOOT_S = {"aws": 100.0, "gcp": 80.0, "azure": 140.0}  # median boot + join, from provider docs/ops lore


def median_boot_s(provider: str, join_s: float = 60.0) -> float:
    """A simulated node's median time from launch to joined (its boot varies by exp(N(0, 0.25)))."""
    return BOOT_S.get(provider, 120.0) + join_s


class SimCloudProvider:
    def __init__(self, name: str, offerings: Sequence[Offering], *, events: EventQueue, pool: SimPool,
                 now: Callable[[], datetime], start: datetime, series: Sequence[SpotSeries] = (),
                 seed: int = 0, join_s: float = 60.0) -> None:
        self.name = name
        self._offerings = [o for o in offerings if o.provider == name]
        self._events, self._pool, self._now, self._start = events, pool, now, start
        self._series: dict[str, SpotSeries | None] = {
            o.key: series_for(o, series) for o in self._offerings if o.market is Market.SPOT}
        self._unavailable = {k: replace(o, available=False) for o in self._offerings
                             if (k := o.key) in self._series}
        self._gaps = sorted({s.gap_s for s in self._series.values() if s is not None})
        self._distinct = list({id(s): s for s in self._series.values() if s is not None}.values())
        self._up: tuple[bool, ...] | None = None  # availability of each distinct series at the last tick
        self._tick: tuple[int, ...] | None = None
        self._current: list[Offering] = []
        self._rng = random.Random(f"{seed}:{name}")
        self._join_s = join_s
        self._nodes: dict[str, Node] = {}
        self._by_request: dict[str, tuple[str, ...]] = {}
        self._notices: list[Interruption] = []
        self._gone: dict[str, Node] = {}  # preempted nodes, reported once as TERMINATED
        self._ids = itertools.count(1)
        self._capacity: dict[str, int] = {}
        self._throttle = 0
        self.launches = 0
        self._flip_at: tuple[datetime, datetime] | None = None  # (asked at, next availability change)

    # --- CloudProvider -------------------------------------------------------------------------
    def offerings(self) -> Sequence[Offering]:
        """Catalog offerings with spot availability at the current instant (cached per trace tick;
        the same list object while no offering's availability changed)."""
        offset = self._offset(self._now())
        tick = tuple(int(offset // gap) for gap in self._gaps)
        if tick != self._tick:
            self._tick = tick
            up = tuple(s.available(offset) for s in self._distinct)
            if up != self._up:
                self._up = up
                is_up = dict(zip(map(id, self._distinct), up, strict=True))
                self._current = [o if (s := self._series.get(o.key)) is None or is_up[id(s)]
                                 else self._unavailable[o.key] for o in self._offerings]
        return self._current

    def list_nodes(self) -> Sequence[Node]:
        gone, self._gone = list(self._gone.values()), {}
        return [*self._nodes.values(), *gone]

    # --- capacity and API limits (tests and what-if runs) --------------------------------------
    def set_capacity(self, offering_key: str, nodes: int | None) -> None:
        """At most ``nodes`` more nodes of an offering can be had (None: unlimited)."""
        if nodes is None:
            self._capacity.pop(offering_key, None)
        else:
            self._capacity[offering_key] = nodes

    def throttle_next(self, calls: int) -> None:
        """The next ``calls`` API calls are refused as over the rate limit."""
        self._throttle = calls

    def launch(self, offering: Offering, count: int, *, request_id: str,
               labels: Mapping[str, str] | None = None) -> Sequence[Node]:
        return call_with_backoff(lambda: self._launch(offering, count, request_id, labels or {}),
                                 sleep=lambda s: None)

    def _launch(self, offering: Offering, count: int, request_id: str,
                labels: Mapping[str, str]) -> Sequence[Node]:
        if request_id in self._by_request:
            return [self._nodes[i] for i in self._by_request[request_id] if i in self._nodes]
        if self._throttle > 0:
            self._throttle -= 1
            raise ThrottledError(f"{self.name}: API rate limit exceeded", provider=self.name)
        now = self._now()
        s = self._series.get(offering.key)
        left = self._capacity.get(offering.key)
        if (s is not None and not s.available(self._offset(now))) or left == 0:
            raise CapacityError(f"{self.name}: no capacity for {offering.key}", provider=self.name,
                                offering_key=offering.key)
        made = count if left is None else min(count, left)
        if left is not None:
            self._capacity[offering.key] = left - made
        nodes = self._create(offering, made, request_id, labels, now, s)
        if made < count:
            raise PartialLaunchError(f"{self.name}: launched {made} of {count} nodes of {offering.key}",
                                     nodes=tuple(nodes), provider=self.name, offering_key=offering.key,
                                     cause=CapacityError(f"{self.name}: capacity exhausted", provider=self.name,
                                                         offering_key=offering.key))
        return nodes

    def _create(self, offering: Offering, count: int, request_id: str, labels: Mapping[str, str],
                now: datetime, s: SpotSeries | None) -> list[Node]:
        for_job = labels.get("job")
        exclusive = tagged_exclusive(labels)
        ready_at = now + timedelta(seconds=self._boot_s())  # a gang boots together
        nodes = []
        for _ in range(count):
            node = Node(f"{self.name}-{next(self._ids):06d}", offering, NodeState.LAUNCHING, now, request_id,
                        **node_tags(labels))
            self._nodes[node.node_id] = node
            self._pool.expect(node.node_id, offering, for_job, exclusive=exclusive)
            self._events.at(ready_at, self._ready_handler(node.node_id))
            drop = s.next_drop(self._offset(now)) if s is not None else math.inf
            if drop != math.inf:
                when = self._start + timedelta(seconds=drop)
                self._events.at(max(when, now), self._notice_handler(node.node_id))
            nodes.append(node)
        self._by_request[request_id] = tuple(n.node_id for n in nodes)
        self.launches += count
        return nodes

    def terminate(self, node_ids: Sequence[str], *, request_id: str) -> None:
        for node_id in node_ids:
            if self._nodes.pop(node_id, None) is not None:
                self._pool.leave(node_id, preempted=False)

    def interruptions(self) -> Sequence[Interruption]:
        out, self._notices = self._notices, []
        return out

    # --- simulated time ------------------------------------------------------------------------
    def next_availability_change(self, now: datetime) -> datetime | None:
        """When the spot availability of any of this cloud's offerings next changes (None: never)."""
        if self._flip_at is not None and self._flip_at[0] <= now < self._flip_at[1]:
            return self._flip_at[1]  # still before the change found last time
        offset = self._offset(now)
        unique = {id(s): s for s in self._series.values() if s is not None}.values()  # (names may repeat)
        nxt = min((s.next_flip(offset) for s in unique), default=math.inf)
        if nxt == math.inf:
            return None
        at = self._start + timedelta(seconds=nxt)
        self._flip_at = (now, at)
        return at

    def _offset(self, now: datetime) -> float:
        return (now - self._start).total_seconds()

    def _boot_s(self) -> float:
        base = BOOT_S.get(self.name, 120.0)
        return base * self._rng.lognormvariate(0.0, 0.25) + self._join_s

    def _ready_handler(self, node_id: str) -> Callable[[datetime], None]:
        return lambda t: self._ready(node_id)

    def _notice_handler(self, node_id: str) -> Callable[[datetime], None]:
        return lambda t: self._notice(node_id, t)

    def _ready(self, node_id: str) -> None:
        node = self._nodes.get(node_id)
        if node is not None and node.state is NodeState.LAUNCHING:
            self._nodes[node_id] = replace(node, state=NodeState.READY)
            self._pool.join(node_id)

    def _notice(self, node_id: str, now: datetime) -> None:
        if node_id not in self._nodes:
            return
        end = now + timedelta(seconds=NOTICE_S.get(self.name, 30.0))
        self._notices.append(Interruption(node_id, self.name, "spot-interruption", now, end))
        self._events.at(end, lambda t: self._preempt(node_id, t))

    def _preempt(self, node_id: str, now: datetime) -> None:
        node = self._nodes.pop(node_id, None)
        if node is not None:
            self._gone[node_id] = replace(node, state=NodeState.TERMINATED, ended_at=now, taken_back=True)
            run_s = (now - node.launched_at).total_seconds()
            if run_s > 0 and interrupted_spot_billed_s(self.name, run_s) == 0.0:
                list_s = billing_rule(self.name).billed_s(run_s)
                self._pool.metrics.waived_usd += node.offering.price_per_hour_usd * list_s / 3600.0
            self._pool.leave(node_id, preempted=True)
