"""Value types shared by every layer: offerings, nodes, demand, signals and the Snapshot.

Contract module: standard library only. Everything here is a frozen dataclass so a
Snapshot can be handed to a pure policy and hashed, compared and replayed.
Times are timezone-aware UTC datetimes; durations are seconds (``_s``); money is
float USD per hour (``_per_hour_usd``) inside the decision path.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import TypedDict

from burster.lifecycle import NodeState


class Market(enum.StrEnum):
    """How a cloud (or on-prem) GPU is paid for."""

    SPOT = "spot"
    ON_DEMAND = "on_demand"
    RESERVED = "reserved"


class JobClass(enum.StrEnum):
    """How hard a job's deadline is (Chronus's strict / soft / best-effort)."""

    STRICT = "strict"
    SOFT = "soft"
    BEST_EFFORT = "best"


class Requeue(enum.StrEnum):
    """Where the on-prem pool puts a stopped (checkpointed or preempted) job back in its queue."""

    SUBMISSION = "submission"  # at its place by submission time (LSF; Kueue's Creation timestamp)
    BACK = "back"  # at the back, like a new arrival (Slurm's default; Kueue's Eviction timestamp)


@dataclass(frozen=True, slots=True)
class Offering:
    """One purchasable node shape: a (cloud, region, zone, instance type, market) at a price."""

    provider: str
    region: str
    zone: str
    instance_type: str
    gpu_model: str
    gpus_per_node: int
    market: Market
    price_per_hour_usd: float
    available: bool = True
    # Stable identifier, used for blocking after capacity errors and in reports (derived).
    key: str = field(init=False, repr=False, compare=False, default="")

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.provider}/{self.zone}/{self.instance_type}/{self.market.value}")

    @property
    def price_per_gpu_hour_usd(self) -> float:
        return self.price_per_hour_usd / self.gpus_per_node


@dataclass(frozen=True, slots=True)
class Node:
    """A cloud node this controller launched, as last observed."""

    node_id: str
    offering: Offering
    state: NodeState
    launched_at: datetime
    request_id: str
    job_id: str | None = None  # the job it runs now, None when idle
    for_job: str | None = None  # the job it was launched for (from the launch intent)
    idle_since: datetime | None = None
    team: str = ""
    protected: bool = False
    ended_at: datetime | None = None  # when the cloud says it went (terminated/preempted)
    project: str = ""  # as its launch tagged it, with team (``node_tags``)
    sprint: str = ""
    exclusive: bool = False  # the pool starts there only its own job or one a Hold gives it (``Launch.exclusive``)
    taken_back: bool = False  # ended, and its cloud says it took this spot node back (not a terminate of ours)

    @property
    def busy(self) -> bool:
        return self.job_id is not None


@dataclass(frozen=True, slots=True)
class InFlight:
    """A launch sent to a cloud that neither its reply nor a listing has answered yet (the reply was
    lost, a timeout): its ``count`` nodes not listed may be up and billed since ``asked_at``.
    ``request_id`` is the id the policy planned it under (``Launch.request_id``): planned again, the
    same launch is the controller asking the cloud again, not a new one. ``exclusive``: its
    ``Launch.exclusive`` (with no job: a standby stock launch, ``policies.standby``)."""

    request_id: str
    offering: Offering
    count: int
    asked_at: datetime
    job_id: str | None = None
    team: str = ""
    exclusive: bool = False


@dataclass(frozen=True, slots=True)
class PoolNode:
    """An on-prem (reserved) node in the Slurm/Kubernetes pool."""

    node_id: str
    gpu_model: str
    gpus: int
    free_gpus: int
    held_for: tuple[str, ...] = ()  # the jobs this node is held for, if any (``burster.plan.Hold``)


@dataclass(frozen=True, slots=True)
class Demand:
    """A job that needs GPUs: pending, or running (then see ``Placement``).

    ``nodes`` > 1 means a gang: all ``nodes`` nodes of ``gpus / nodes`` GPUs each start together
    or not at all. ``gpu_model`` empty means any model.
    """

    job_id: str
    gpus: int
    submitted_at: datetime
    est_runtime_s: float
    nodes: int = 1
    gpu_model: str = ""
    priority: int = 0
    deadline: datetime | None = None
    job_class: JobClass = JobClass.BEST_EFFORT
    checkpoint_interval_s: float = 1800.0
    team: str = ""
    project: str = ""
    sprint: str = ""
    done_s: float = 0.0  # work already saved by checkpoints (a requeued job keeps it)
    # the most work an earlier attempt had reached when it stopped, saved or lost (Slurm: a requeued
    # job's elapsed time before): a job requeued after running past its estimate needs more than it
    reached_s: float = 0.0
    attempt: int = 0  # times the job was requeued (preempted, reclaimed); part of request ids
    queued_at: datetime | None = None  # when it last entered the queue (None: at submission)
    # in a pool that ranks its queue (pool.order = "start_by"), the time the pool serves it by:
    # priority first, then earliest start-by (policies/rank.py); None: a FIFO pool
    start_by: datetime | None = None
    # derived, computed once (policies read them in their hot loops)
    remaining_s: float = field(init=False, repr=False, compare=False, default=0.0)  # work left
    gpus_per_node: int = field(init=False, repr=False, compare=False, default=0)  # GPUs per gang member

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise ValueError(f"job {self.job_id}: nodes is {self.nodes}; a job needs at least one node")
        object.__setattr__(self, "remaining_s", max(self.est_runtime_s - self.done_s, 0.0))
        object.__setattr__(self, "gpus_per_node", -(-self.gpus // self.nodes))

    @property
    def resumes(self) -> bool:
        """Whether a run started now resumes saved work (some done, some left): it reloads it first."""
        return self.done_s > 0 and self.remaining_s > 0

    def held_by(self, offerings: Iterable[Offering]) -> bool:
        """Whether nodes of these offerings (one per node) hold all the gang: each member needs
        ceil(its GPUs / the offering's GPUs per node) nodes of one offering (``CostModel.nodes_for``),
        as the pool starts it."""
        count: dict[str, int] = {}
        per_member: dict[str, int] = {}
        for o in offerings:
            count[o.key] = count.get(o.key, 0) + 1
            per_member[o.key] = -(-self.gpus_per_node // o.gpus_per_node)
        return sum(k // per_member[key] for key, k in count.items()) >= self.nodes

    def with_done(self, done_s: float) -> Demand:
        """This job with ``done_s`` seconds of its work done: ``replace(self, done_s=done_s)`` without
        running ``__init__`` again (3x faster; the policies re-price every running job each pass)."""
        return _copy_with_work(self, self.est_runtime_s, done_s)

    def with_estimate(self, est_runtime_s: float) -> Demand:
        """This job believed to run ``est_runtime_s`` in all: ``replace(self, est_runtime_s=...)``, as
        fast as ``with_done`` (the policies take every running job long when they price it away)."""
        return _copy_with_work(self, est_runtime_s, self.done_s)


def _copier(cls: type) -> Callable[[Demand, float, float], Demand]:
    """A copy of a ``cls`` (a slotted Demand) with new ``est_runtime_s`` and ``done_s`` and its
    ``remaining_s`` derived again, written out field by field through the slot descriptors, as
    ``dataclasses`` writes ``__init__`` (three times faster than a loop of ``object.__setattr__``)."""
    names = [f.name for f in fields(cls) if f.name not in ("est_runtime_s", "done_s", "remaining_s")]
    env: dict[str, object] = {"new": object.__new__, "cls": cls, "max": max}
    env.update({f"set_{n}": getattr(cls, n).__set__ for n in [*names, "est_runtime_s", "done_s", "remaining_s"]})
    body = "".join(f"    set_{n}(d, job.{n})\n" for n in names)
    src = (f"def copy(job, est_runtime_s, done_s):\n    d = new(cls)\n{body}"
           "    set_est_runtime_s(d, est_runtime_s)\n    set_done_s(d, done_s)\n"
           "    set_remaining_s(d, max(est_runtime_s - done_s, 0.0))\n    return d\n")
    exec(src, env)  # generated from the dataclass's own field names, as dataclasses does
    return env["copy"]  # type: ignore[return-value]


_copy_with_work = _copier(Demand)


QueueKey = tuple[int, float]


EXCLUSIVE_LABEL = "exclusive"  # the launch label (cloud tag) of an exclusive node (``Launch.exclusive``)


def tagged_exclusive(tags: Mapping[str, object]) -> bool:
    """Whether a node's cloud tags / labels mark it exclusive (so a restarted controller knows)."""
    return str(tags.get(EXCLUSIVE_LABEL, "")).lower() == "true"


class NodeTags(TypedDict):
    """The ``Node`` fields a node's cloud tags / labels carry back (a launch's team, project, sprint and
    ``exclusive``), so a controller that adopts the node with no intent of its own attributes it alike."""

    team: str
    project: str
    sprint: str
    exclusive: bool


def launch_labels(team: str, project: str, sprint: str, job_id: str | None, exclusive: bool) -> dict[str, str]:
    """The labels (cloud tags) a launch gives its nodes, empty values left out; ``node_tags`` reads
    them back, so the two keep to one set of keys."""
    pairs = (("team", team), ("project", project), ("sprint", sprint), ("job", job_id or ""),
             (EXCLUSIVE_LABEL, "true" if exclusive else ""))
    return {k: v for k, v in pairs if v}


def node_tags(tags: Mapping[str, object]) -> NodeTags:
    """What ``tags`` (as ``launch_labels`` wrote them) say of a node's owners."""
    return NodeTags(team=str(tags.get("team", "")), project=str(tags.get("project", "")),
                    sprint=str(tags.get("sprint", "")), exclusive=tagged_exclusive(tags))


def queue_key(job: Demand) -> QueueKey:
    """Where a pool's queue serves ``job``, smallest first: by priority, then start-by, in a ranked
    pool (the job has a ``start_by``); by submission in a FIFO pool. The simulated pool and the
    policies' projection both read it, so the two cannot drift apart."""
    if job.start_by is not None:
        return -job.priority, job.start_by.timestamp()
    return 0, job.submitted_at.timestamp()


@dataclass(frozen=True, slots=True)
class Placement:
    """A running job and where it runs (on-prem node ids and/or cloud node ids)."""

    job: Demand
    node_ids: tuple[str, ...]
    started_at: datetime
    on_cloud: bool
    market: Market
    price_per_hour_usd: float = 0.0  # all its cloud nodes together; 0 on-prem
    # asked to checkpoint and requeue (``burster.plan.Preempt``): its GPUs free by this instant
    stopping_at: datetime | None = None
    # how long the run reloads its job's saved work before it works on (0: it started with none saved)
    reload_s: float = 0.0
    # when its GPUs are expected free, as a POSIX timestamp (derived: started_at + reload + remaining
    # work at start, or the stop if sooner)
    ends_at_ts: float = field(init=False, repr=False, compare=False, default=0.0)

    def __post_init__(self) -> None:
        ends = self.started_at.timestamp() + self.reload_s + self.job.remaining_s
        if self.stopping_at is not None:
            ends = min(ends, self.stopping_at.timestamp())
        object.__setattr__(self, "ends_at_ts", ends)

    @property
    def working_since_ts(self) -> float:
        """When its run started working (POSIX): the start, past a restart's reload."""
        return self.started_at.timestamp() + self.reload_s

    def done_s(self, now: datetime) -> float:
        return self.job.done_s + max((now - self.started_at).total_seconds() - self.reload_s, 0.0)

    def remaining_s(self, now: datetime) -> float:
        return max(self.ends_at_ts - now.timestamp(), 0.0)

    def job_now(self, now: datetime) -> Demand:
        """The running job as it stands at ``now``: the work done so far counted as done."""
        return self.job.with_done(min(self.done_s(now), self.job.est_runtime_s))


@dataclass(frozen=True, slots=True)
class Signal:
    """Expected GPU demand in a future window, e.g. a Jira sprint with GPU work."""

    source: str
    gpu_hours: float
    window_start: datetime
    window_end: datetime
    gpu_model: str = ""
    team: str = ""
    project: str = ""
    sprint: str = ""


@dataclass(frozen=True, slots=True)
class Interruption:
    """A provider's notice that a node will be taken away (spot reclaim, rebalance, eviction)."""

    node_id: str
    provider: str
    kind: str  # "spot-interruption", "rebalance", "preempted", "evicted"
    notice_at: datetime
    terminate_at: datetime


@dataclass(frozen=True, slots=True)
class Spend:
    """Money spent so far in the budget period (billed, including running nodes), in USD.
    ``period``: what the budgets count, ``month``, ``week``, ``day`` (UTC) or ``all``."""

    total_usd: float = 0.0
    by_team_usd: tuple[tuple[str, float], ...] = ()
    launches_last_minute: int = 0
    period: str = "all"

    def team_usd(self, team: str) -> float:
        for name, usd in self.by_team_usd:
            if name == team:
                return usd
        return 0.0


@dataclass(frozen=True, slots=True)
class RuntimeHistory:
    """How far off the runtime estimates a pool is given run, from the jobs it finished last.

    ``ratios``: true / estimated runtime of the last jobs to finish, oldest first (Slurm: elapsed /
    time limit, from sacct); ``teams``: the team of each ("" where none), or () where the pool does
    not say; ``by_team``: per team, by name, the ratios of its own last jobs (a longer history).
    """

    ratios: tuple[float, ...] = ()
    teams: tuple[str, ...] = ()
    by_team: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def __post_init__(self) -> None:
        every = (*self.ratios, *itertools.chain.from_iterable(own for _, own in self.by_team))
        if every and (min(every) < 0.0 or max(every) == math.inf or any(map(math.isnan, every))):
            raise ValueError("RuntimeHistory: every ratio must be a finite number >= 0 (true / estimated runtime)")
        if self.teams and len(self.teams) != len(self.ratios):
            raise ValueError(f"RuntimeHistory: {len(self.teams)} teams for {len(self.ratios)} ratios; "
                             "give one team per ratio, or none")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything a policy may look at, frozen at one instant.

    Its tuples hold what clouds and the pool list, in no order a policy may rely on (a cloud lists
    in none), ties broken by a stable key (an id, an offering key), so a plan does not flap as a
    listing's order changes (tests/policies/test_metamorphic.py). ``pending`` alone is ordered: the
    pool's queue as it serves it (``PoolReader.pending``)."""

    now: datetime
    pending: tuple[Demand, ...]
    running: tuple[Placement, ...]
    pool_nodes: tuple[PoolNode, ...]
    cloud_nodes: tuple[Node, ...]
    offerings: tuple[Offering, ...]
    signals: tuple[Signal, ...] = ()
    interruptions: tuple[Interruption, ...] = ()
    blocked_offerings: frozenset[str] = field(default_factory=frozenset)
    degraded_providers: frozenset[str] = field(default_factory=frozenset)
    spend: Spend = field(default_factory=Spend)
    # true / estimated runtime of the jobs the pool finished most recently, oldest first (how far off
    # the estimates it is given run; ``Pool.runtime_history``)
    runtime_ratios: tuple[float, ...] = ()
    # the team of each of those jobs (``Demand.team``; "" for none), or () where the pool does not say
    runtime_ratio_teams: tuple[str, ...] = ()
    # per team, by name, the same ratios of its own last jobs to finish (a longer history than the above)
    team_runtime_ratios: tuple[tuple[str, tuple[float, ...]], ...] = ()
    # launches sent that no reply or listing answered yet: the guards count their nodes as live
    in_flight: tuple[InFlight, ...] = ()


@dataclass(frozen=True, slots=True)
class CheckpointTicket:
    """A checkpoint request in flight: poll the pool until ``done`` (or ``deadline`` passes)."""

    node_id: str
    job_id: str
    deadline: datetime
    done: bool = False
    saved_s: float = 0.0  # work the checkpoint preserved
