"""The Protocols through which the runtime sees adapters and policies.

Concrete classes are chosen by name in ``burster.app``; nothing in the runtime imports an adapter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from burster.model import (
    CheckpointTicket,
    Demand,
    Interruption,
    Node,
    Offering,
    Placement,
    PoolNode,
    RuntimeHistory,
    Signal,
    Snapshot,
)
from burster.plan import Plan


class CloudProvider(Protocol):
    """One cloud account (or simulated cloud).

    - ``offerings``: node shapes with current prices and availability.
    - ``list_nodes``: live nodes *this controller* tagged, whatever state they are in.
    - ``launch``: ``count`` nodes tagged with ``labels`` (team, project, sprint) plus the
      managed-by and request-id tags; a retry with the same ``request_id`` creates nothing new
      and returns the same nodes. Raises CapacityError / QuotaError / ThrottledError /
      AuthError; PartialLaunchError carries nodes that did come up.
    - ``terminate``: idempotent; unknown ids are ignored.
    - ``interruptions``: notices (spot reclaim, eviction) not yet returned by an earlier call.

    Adapters report cloud-level state: LAUNCHING (pending), READY (running), TERMINATING,
    TERMINATED or FAILED; the runtime adds CHECKPOINTING/DRAINING as it acts. READY means running,
    not joined to the pool: a node its job never starts on goes at the policy's join timeout.
    """

    name: str

    def offerings(self) -> Sequence[Offering]: ...

    def list_nodes(self) -> Sequence[Node]: ...

    def launch(
        self, offering: Offering, count: int, *, request_id: str,
        labels: Mapping[str, str] | None = None,
    ) -> Sequence[Node]: ...

    def terminate(self, node_ids: Sequence[str], *, request_id: str) -> None: ...

    def interruptions(self) -> Sequence[Interruption]: ...


class PoolReader(Protocol):
    """What the on-prem scheduler (Slurm, Kubernetes) reports; every pass reads all of it.

    - ``pending``: queued demand in the order the scheduler serves it (its head first: FIFO, or the
      ranked order of ``pool.order``).  ``running``: jobs and where they run, in no set order.
    - ``nodes``: on-prem nodes with free GPUs (cloud nodes are reported by their provider).
    - ``runtime_history``: how far off the runtime estimates run, from the jobs that finished
      most recently (``RuntimeHistory``; the simulated pool keeps 256 jobs, and 128 of each team).
    """

    def pending(self) -> Sequence[Demand]: ...

    def running(self) -> Sequence[Placement]: ...

    def nodes(self) -> Sequence[PoolNode]: ...

    def runtime_history(self) -> RuntimeHistory: ...


class PoolActuator(Protocol):
    """What the runtime asks of the on-prem scheduler.

    - ``bootstrap``: user-data that makes a new node of ``offering`` join this pool.
    - ``checkpoint``: ask the job on a node to checkpoint before ``deadline``; with ``cordon``, start
      no new work there from then on (Slurm: the node set DRAIN, its job runs on; Kubernetes:
      cordon); calling it again for the same node returns the ticket's current state (that is how
      it is polled; a poll leaves a cordon as it is).
    - ``drain``: stop new work landing on a node; its job requeues (keeping checkpointed work).
    - ``hold``: keep an on-prem node for a job from ``start_at`` until it starts on-prem or ends,
      or ``until`` passes, beside any jobs it is held for already; before ``start_at`` only jobs
      that end by then may use it (``Hold``); on
      an idle exclusive cloud node (``Launch.exclusive``), the job starts there at once.
    - ``preempt``: ask an on-prem job to checkpoint before ``deadline``, then requeue it keeping the
      checkpointed work (``Preempt``); until then its Placement carries ``stopping_at``.
    """

    def bootstrap(self, offering: Offering) -> str: ...

    def checkpoint(self, node_id: str, deadline: datetime, *, cordon: bool = False) -> CheckpointTicket: ...

    def drain(self, node_id: str) -> None: ...

    def hold(self, node_id: str, job_id: str, start_at: datetime, until: datetime) -> None: ...

    def preempt(self, job_id: str, deadline: datetime) -> None: ...


class Pool(PoolReader, PoolActuator, Protocol):
    """The on-prem scheduler that burst nodes join: an adapter (``providers/slurm``,
    ``providers/kubernetes``, ``providers/sim``) implements both halves."""


class SignalSource(Protocol):
    """Business signals of coming demand (Jira sprints)."""

    def signals(self, now: datetime) -> Sequence[Signal]: ...


class Policy(Protocol):
    """A pure function of a frozen Snapshot: no I/O, no clock reads, no unseeded randomness.

    A policy is built with its cost model and limits; ``decide`` must return the same Plan for
    the same Snapshot. An empty Plan may carry ``quiet_until`` (when it could next change with no
    event in between); the simulator uses it to skip passes that would decide nothing.
    """

    name: str

    def decide(self, snapshot: Snapshot) -> Plan: ...

    def budget_stop(self, snapshot: Snapshot) -> Plan:
        """For a pass whose pool could not be read (``snapshot`` has no pending, running or pool nodes):
        only what the hard budgets demand, as Terminates (no checkpoint can be asked); an empty
        Plan where a policy keeps no hard budget."""
        ...
