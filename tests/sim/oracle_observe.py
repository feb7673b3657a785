"""What a simulation did, seen from outside: the clouds' API calls and the pool's runs, recorded as they
happen for ``oracle_checks`` to recompute the KPIs from.

The recorders pass every call through unchanged (they observe; nothing of the project is replaced):
``CloudTap`` wraps each cloud the reconciler talks to, ``RunLog`` is the pool's ``runs`` dict, noting
each job run as it starts and as it leaves (finished or stopped).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from burster.app import Simulation, build_simulation
from burster.config import BursterConfig
from burster.errors import PartialLaunchError, TransientError
from burster.lifecycle import NodeState
from burster.model import EXCLUSIVE_LABEL, Demand, Node, Offering, Snapshot, Spend
from burster.plan import Plan
from burster.reconciler import PassReport, Reconciler
from burster.sim.engine import run
from burster.sim.summary import summarize
from burster.state import MemoryState
from burster.traces import Trace
from tests.sim.oracle_faults import Faults, FaultyCloud

TICK_S = 10.0


@dataclass
class CloudNode:
    """One node as its cloud's API saw it: launched, then terminated by us or taken back by the cloud."""

    node_id: str
    offering: Offering
    team: str
    launched_at: datetime
    end: datetime | None = None
    taken_back: bool = False  # ended by its cloud (listed as terminated), not by our terminate call
    for_job: str = ""  # the job its launch named (label ``job``)
    exclusive: bool = False  # launched to run only its own job or one handed to it (label)
    project: str = ""  # labels, as team
    sprint: str = ""
    notice: tuple[datetime, datetime] | None = None  # the first spot-interruption notice given: (at, its end)


class CloudTap:
    """A cloud provider, every call passed through; records node launches and ends."""

    def __init__(self, inner: Any, now: Callable[[], datetime], book: dict[str, CloudNode]) -> None:
        self._inner, self._now, self._book = inner, now, book
        self.name: str = inner.name

    def offerings(self) -> Sequence[Offering]:
        return self._inner.offerings()  # type: ignore[no-any-return]

    def interruptions(self) -> Any:
        notices = self._inner.interruptions()
        for n in notices:
            node = self._book.get(n.node_id)
            if node is not None and n.kind == "spot-interruption" and node.notice is None:
                node.notice = (n.notice_at, n.terminate_at)
        return notices

    def list_nodes(self) -> Sequence[Node]:
        nodes: Sequence[Node] = self._inner.list_nodes()
        for n in nodes:
            seen = self._book.get(n.node_id)
            if seen is not None and n.state is NodeState.TERMINATED and n.ended_at is not None \
                    and (seen.end is None or n.ended_at <= seen.end):  # the simulated cloud lists only what it took
                seen.end, seen.taken_back = n.ended_at, True
        return nodes

    def launch(self, offering: Offering, count: int, *, request_id: str,
               labels: Mapping[str, str] | None = None) -> Sequence[Node]:
        try:
            nodes: Sequence[Node] = self._inner.launch(offering, count, request_id=request_id, labels=labels)
        except PartialLaunchError as err:
            self._note([n for n in err.nodes if isinstance(n, Node)], labels)
            raise
        self._note(nodes, labels)
        return nodes

    def terminate(self, node_ids: Sequence[str], *, request_id: str) -> None:
        self._inner.terminate(node_ids, request_id=request_id)
        for node_id in node_ids:
            seen = self._book.get(node_id)
            if seen is not None and seen.end is None:
                seen.end = self._now()

    def _note(self, nodes: Sequence[Node], labels: Mapping[str, str] | None) -> None:
        for n in nodes:
            if n.node_id not in self._book:
                got = labels or {}
                self._book[n.node_id] = CloudNode(n.node_id, n.offering, got.get("team", ""), n.launched_at,
                                                  for_job=got.get("job", ""),
                                                  exclusive=got.get(EXCLUSIVE_LABEL) == "true",
                                                  project=got.get("project", ""), sprint=got.get("sprint", ""))


@dataclass(frozen=True)
class PoolCall:
    """One call the controller made to the pool's actuator, at the controller's clock."""

    at: datetime
    kind: str  # hold, preempt, drain, checkpoint
    node_id: str = ""
    job_id: str = ""
    start_at: datetime | None = None  # a hold's start
    until: datetime | None = None  # a hold's end
    cordon: bool = False  # a checkpoint that cordons its node


class PoolTap:
    """The pool as the reconciler sees it, every call passed through; records the actuator's
    calls (``hold``, ``preempt``, ``drain``, ``checkpoint``) as they are made."""

    def __init__(self, inner: Any, now: Callable[[], datetime], calls: list[PoolCall],
                 outages: Sequence[tuple[datetime, datetime]] = ()) -> None:
        self._inner, self._now, self._calls, self._outages = inner, now, calls, outages

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def pending(self) -> Any:
        """The queue; unreadable within an outage (slurmctld down): the pass decides only the budgets."""
        now = self._now()
        if any(a <= now < b for a, b in self._outages):
            raise TransientError("pool: slurmctld not responding (a drawn outage)")
        return self._inner.pending()

    def hold(self, node_id: str, job_id: str, start_at: datetime, until: datetime) -> None:
        self._calls.append(PoolCall(self._now(), "hold", node_id, job_id, start_at, until))
        self._inner.hold(node_id, job_id, start_at, until)

    def preempt(self, job_id: str, deadline: datetime) -> None:
        self._calls.append(PoolCall(self._now(), "preempt", job_id=job_id))
        self._inner.preempt(job_id, deadline)

    def drain(self, node_id: str) -> None:
        self._calls.append(PoolCall(self._now(), "drain", node_id))
        self._inner.drain(node_id)

    def checkpoint(self, node_id: str, deadline: datetime, *, cordon: bool = False) -> Any:
        self._calls.append(PoolCall(self._now(), "checkpoint", node_id, cordon=cordon))
        return self._inner.checkpoint(node_id, deadline, cordon=cordon)


class PolicyTap:
    """The policy, every call passed through; records the budget spend each pass's snapshot gave it."""

    def __init__(self, inner: Any, spends: list[tuple[datetime, Spend]],
                 live: dict[datetime, frozenset[str]] | None = None,
                 runs_seen: set[tuple[str, datetime]] | None = None) -> None:
        self._inner, self._spends, self._live = inner, spends, live
        self._runs_seen = set() if runs_seen is None else runs_seen
        self.name: str = inner.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def decide(self, snapshot: Snapshot) -> Plan:
        self._spends.append((snapshot.now, snapshot.spend))
        self._runs_seen.update((p.job.job_id, p.started_at) for p in snapshot.running if p.on_cloud)
        if self._live is not None:
            self._live[snapshot.now] = frozenset(n.node_id for n in snapshot.cloud_nodes)
        return self._inner.decide(snapshot)  # type: ignore[no-any-return]


@dataclass
class Segment:
    """One run of a job: from its start to when it left its nodes (finished or stopped)."""

    job_id: str
    gpus: int
    start: datetime
    on_cloud: bool
    node_ids: tuple[str, ...]
    onprem_slots: tuple[tuple[int, int], ...]  # (reserved node index, GPUs)
    end: datetime | None = None


class RunLog(dict[str, Any]):
    """The pool's ``runs`` dict; each run set is a segment opened, each deleted one closed at the
    pool's time."""

    def __init__(self, now: Callable[[], datetime]) -> None:
        super().__init__()
        self._now = now
        self.segments: list[Segment] = []
        self._open: dict[str, Segment] = {}

    def __setitem__(self, job_id: str, value: Any) -> None:
        super().__setitem__(job_id, value)
        seg = Segment(job_id, value.job.gpus, value.started_at, value.on_cloud, tuple(value.node_ids),
                      tuple(value.onprem_slots))
        self.segments.append(seg)
        self._open[job_id] = seg

    def __delitem__(self, job_id: str) -> None:
        super().__delitem__(job_id)
        self._open.pop(job_id).end = self._now()


@dataclass
class Observed:
    """A finished simulation and everything recorded along the way."""

    sim: Simulation
    jobs: list[Demand]  # the window's jobs submitted by the stop, with their true runtimes (as the trace gives them)
    window_start: datetime
    window_end: datetime
    stop: datetime  # the last tick by the simulation's end: where the world and the books stop
    summary: dict[str, Any]
    nodes: dict[str, CloudNode]
    segments: list[Segment]
    checks_per_pass: list[str] = field(default_factory=list)  # discrepancies found while it ran
    passes: int = 0
    pool_calls: list[PoolCall] = field(default_factory=list)  # hold, preempt, drain, checkpoint calls
    spends: list[tuple[datetime, Spend]] = field(default_factory=list)  # each pass's Snapshot.spend
    checkpoint_s: float = 60.0  # how long a requested checkpoint takes (``cost.checkpoint_write_s``)
    restart_s: float = 0.0  # how long a restarted run reloads before it works (``cost.restart_overhead_s``)
    exact_estimates: bool = True  # the controller and the pool saw every job's true runtime
    tick_s: float = TICK_S  # seconds between passes (``controller.tick_s``)
    faulty: dict[str, FaultyCloud] = field(default_factory=dict)  # each cloud's failing API, if its calls failed
    live_seen: dict[datetime, frozenset[str]] = field(default_factory=dict)  # with faults: each pass's live records
    runs_seen: set[tuple[str, datetime]] = field(default_factory=set)  # (job, start) of cloud runs a pass saw
    known_at: Callable[[CloudNode, datetime], CloudNode | None] | None = None  # a node as the controller knew it


def observe_simulation(config: BursterConfig, trace: Trace, *, seed: int, days: float, start_day: float = 0.0,
                       estimate_error: float = 0.0, policy: str = "burster", hours: float | None = None,
                       per_pass: Callable[[Observed, PassReport], list[str]] | None = None,
                       faults: Faults | None = None, state: Callable[[], MemoryState] | None = None,
                       restarts: Sequence[datetime] = (), signals: Path | None = None,
                       pool_outages: Sequence[tuple[float, float]] = ()) -> Observed:
    """Build and run ``burster simulate``'s simulation, recording it; ``hours``: stop that long after
    the window opens (default: when ``build_simulation`` says, a week after the window); ``per_pass``
    checks each pass; ``faults``: each cloud's API fails so (``FaultyCloud``, before the recorder);
    ``state``: opens the controller's store (default: in memory); ``restarts``: after the pass at each
    of these instants the controller is thrown away and a new one (a fresh policy, ``state()`` opened
    again) goes on from the store alone, the clouds and the pool going on as they were; ``signals``: a
    signals file the controller sees (``burster simulate --signals``); ``pool_outages``: (start, end) hours
    after the window opens in which the pool's queue cannot be read."""
    if restarts and state is None:
        raise ValueError("a restart needs a store to go on from: pass state")

    def build(store: Callable[[], MemoryState] | None = None) -> Simulation:
        return build_simulation(config, trace, policy=policy, seed=seed, days=days, start_day=start_day,
                                estimate_error=estimate_error, state=store, signals=signals)

    sim = build(state)
    world: Any = sim.world
    book: dict[str, CloudNode] = {}
    faulty: dict[str, FaultyCloud] = {}
    rec = sim.reconciler
    for name in list(rec.providers):
        rec.providers[name] = CloudTap(rec.providers[name], sim.clock.now, book)
        if faults is not None:
            rec.providers[name] = faulty[name] = FaultyCloud(rec.providers[name], faults, seed, sim.clock.now)
    runs = RunLog(lambda: world.pool.metrics.now)
    world.pool.runs = runs
    calls: list[PoolCall] = []
    spends: list[tuple[datetime, Spend]] = []
    start = trace.day(start_day)
    outages = [(start + timedelta(hours=a), start + timedelta(hours=b)) for a, b in pool_outages]
    rec.pool = PoolTap(rec.pool, sim.clock.now, calls, outages)
    live_seen: dict[datetime, frozenset[str]] = {}
    runs_seen: set[tuple[str, datetime]] = set()
    rec.policy = PolicyTap(rec.policy, spends, live_seen if faults is not None else None, runs_seen)
    window_end = start + timedelta(days=days)
    tick_s = config.controller.tick_s
    step = timedelta(seconds=tick_s)
    end = sim.end if hours is None else start + timedelta(hours=hours)
    stop = start + ((end - start) // step) * step
    jobs = [j for j in trace.jobs if start <= j.submitted_at < window_end and j.submitted_at <= stop]
    seen = Observed(sim, jobs, start, window_end, stop, {}, book, runs.segments, pool_calls=calls, spends=spends,
                    checkpoint_s=config.cost.checkpoint_write_s, restart_s=config.cost.restart_overhead_s,
                    exact_estimates=estimate_error == 0 and not trace.estimates, tick_s=tick_s, faulty=faulty,
                    live_seen=live_seen, runs_seen=runs_seen)

    def on_pass(report: PassReport) -> None:
        if per_pass is not None:
            seen.checks_per_pass.extend(per_pass(seen, report))

    for at in (*sorted(t for t in restarts if t < end), end):
        seen.passes += run(world, rec, sim.clock, tick_s=tick_s, end=at, on_pass=on_pass, last=at == end)
        if at < end and state is not None:  # the controller goes away: a new one has only its store
            rec.state.close()
            fresh = PolicyTap(build().reconciler.policy, spends, live_seen if faults is not None else None, runs_seen)
            rec = sim.reconciler = Reconciler(providers=rec.providers, pool=rec.pool, policy=fresh, clock=sim.clock,
                                              state=state(),
                                              budget_period=config.budget.period, signals=rec.signal_sources)
    seen.summary = summarize(metrics=world.pool.metrics, ledger=rec.state.ledger,
                             launches=sum(c.launches for c in world.clouds.values()), passes=seen.passes,
                             policy=policy, trace=trace.name, pool_gpus=sim.pool_gpus, seed=seed, wall_s=0.0)
    return seen
