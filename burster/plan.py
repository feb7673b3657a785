"""Decisions as values: a Plan is an ordered tuple of actions, each with a human-readable reason."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from burster.model import Offering


def request_id(*parts: object) -> str:
    """A deterministic idempotency key from the plan's inputs (ClientToken, requestId, VM name)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()
    return f"bst-{digest[:24]}"


@dataclass(frozen=True, slots=True)
class Launch:
    """Start ``count`` nodes of ``offering`` (all or none: a gang)."""

    offering: Offering
    count: int
    reason: str
    request_id: str
    job_id: str | None = None
    team: str = ""
    project: str = ""
    sprint: str = ""
    est_hours: float = 1.0  # how long the nodes are expected to run, for budget guards
    # the pool starts on these nodes only the job they were launched for, or a job a Hold gives them
    # (Slurm: the nodes join in a reservation the controller owns), never a queued job on its own
    exclusive: bool = False


@dataclass(frozen=True, slots=True)
class Terminate:
    """Give nodes back to the cloud (after drain, for idle nodes). ``never_joined``: they never
    came up or joined the pool in time, so their offering is blocked as after a capacity error
    (a broken image or bootstrap would otherwise cost a node every join timeout)."""

    node_ids: tuple[str, ...]
    reason: str
    request_id: str
    never_joined: bool = False


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Ask the job on a node to checkpoint before ``deadline``; then drain and terminate it.
    ``cordon``: the node takes no new work from the request on (it goes whatever its job does: a
    spot notice, a budget stop); else a job the pool starts there as this one leaves calls it off."""

    node_id: str
    job_id: str
    deadline: datetime
    reason: str
    cordon: bool = False


@dataclass(frozen=True, slots=True)
class Drain:
    """Stop scheduling new work onto a node."""

    node_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Hold:
    """Keep an on-prem node for a job from ``start_at``: before it, the pool starts there only jobs
    that end by then; from it, no job it is not held for, until that job starts on-prem or ends, or
    ``until`` passes (a Slurm reservation with a start time, which its backfill plans around). A
    node may be held for several jobs, one Hold each (jobs moving back that fit on it together):
    any of them may start there. On an idle exclusive cloud node (``Launch.exclusive``): the job
    starts there now (the times do not apply), and the node bills for ``est_hours`` more, charged
    to ``team`` (budget guards, as a Launch)."""

    node_id: str
    job_id: str
    start_at: datetime
    until: datetime
    reason: str
    team: str = ""
    est_hours: float = 0.0


@dataclass(frozen=True, slots=True)
class Preempt:
    """Ask an on-prem job to checkpoint before ``deadline``, then requeue it with its work saved, so
    that its GPUs go to a job held for them (Slurm: signal the job, then ``scontrol requeue``)."""

    job_id: str
    node_ids: tuple[str, ...]
    deadline: datetime
    reason: str


Action = Launch | Terminate | Checkpoint | Drain | Hold | Preempt


@dataclass(frozen=True, slots=True)
class Plan:
    """What a policy wants done this pass, what guards refused (with reasons), and the launches a
    rule held back for want of room under the node cap (``held_back``, with reasons: they wait for
    a node to end, an event, so unlike a refusal they leave an otherwise empty plan quiet).

    ``quiet_until``, for an empty plan only: the policy's word that, unless something happens (a job
    arrives or ends, a node or an offering changes), it will decide nothing before that instant.
    None means it cannot say; a simulation then decides again on the next tick.
    """

    actions: tuple[Action, ...] = ()
    refused: tuple[tuple[Action, str], ...] = field(default=())
    held_back: tuple[tuple[Launch, str], ...] = field(default=())
    quiet_until: datetime | None = None

    @property
    def launches(self) -> tuple[Launch, ...]:
        return tuple(a for a in self.actions if isinstance(a, Launch))

    @property
    def terminates(self) -> tuple[Terminate, ...]:
        return tuple(a for a in self.actions if isinstance(a, Terminate))

    @property
    def checkpoints(self) -> tuple[Checkpoint, ...]:
        return tuple(a for a in self.actions if isinstance(a, Checkpoint))

    def explain(self, listed: frozenset[str] = frozenset()) -> list[str]:
        """One line per action, refusal (why, then what was refused) and held-back launch, for ``--explain``
        and decision events; held-back launches whose request id is in ``listed`` (already logged) are left out."""
        lines = [f"{type(a).__name__.lower()}: {a.reason}" for a in self.actions]
        lines += [f"refused {type(a).__name__.lower()}: {why}; {a.reason}" for a, why in self.refused]
        lines += [f"held back launch: {a.reason}; {why}" for a, why in self.held_back if a.request_id not in listed]
        return lines


class DecisionLog:
    """The lines that successive plans add to a decision log (``--explain``, decision events):
    every action and refusal, and a held-back launch when it is first held back, not again at
    every pass while it waits for room (at a full node cap that was most of the log)."""

    def __init__(self) -> None:
        self._held: frozenset[str] = frozenset()

    def lines(self, plan: Plan) -> list[str]:
        lines = plan.explain(listed=self._held)
        self._held = frozenset(a.request_id for a, _ in plan.held_back)
        return lines

