"""A controller restarted after dying inside a launch call: its intent is in the state, and a policy
that still wants the launch every pass (the job it is for is still waiting)."""

from __future__ import annotations

from dataclasses import dataclass

from burster.clock import FakeClock
from burster.interfaces import CloudProvider
from burster.model import Snapshot
from burster.plan import Launch, Plan
from burster.reconciler import Reconciler
from burster.state import MemoryState
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool


@dataclass
class Replay:
    """A policy that plans one launch every pass."""

    launch: Launch
    name: str = "replay"

    def decide(self, snapshot: Snapshot) -> Plan:
        return Plan(actions=(self.launch,))

    def budget_stop(self, snapshot: Snapshot) -> Plan:
        return Plan()


def restarted(cloud: str, provider: CloudProvider, launch: Launch, clock: FakeClock) -> tuple[Reconciler, MemoryState]:
    """A reconciler whose state holds ``launch``'s intent (written before the call; the node it made
    was never recorded), on an 8-GPU one-node pool, planning that launch again each pass."""
    state = MemoryState()
    state.put_intent(launch)
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    return Reconciler(providers={cloud: provider}, pool=pool, policy=Replay(launch), clock=clock, state=state), state
