"""Launch actuation for the reconcile pass: a plan's Launch made under its request id, intent first.

- A launch the cloud refused for good (no capacity, a quota, an invalid request) blocks its offering
  and gives the next try a new request id; one that may have launched (throttled, timed out) keeps
  its intent and id, so the next pass's retry is the same call.
- A gang runs on all its nodes or none: the nodes of a partial gang launch are given back.
- A launch whose reply was lost and whose nodes listings show in part is made again under its id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from burster.blocks import OfferingBlocks
from burster.errors import ConfigError, PartialLaunchError, ProviderError, TransientError
from burster.model import Node, launch_labels
from burster.plan import Launch
from burster.reconcile_nodes import NodeBook, Providers
from burster.state import MemoryState


class Launches:
    """Makes launches; ``give_back(node_id, reason)`` drains and terminates a node, ``charge(node_id,
    end)`` bills one that ended (both the reconciler's)."""

    def __init__(self, *, providers: Providers, state: MemoryState, nodes: NodeBook, blocks: OfferingBlocks,
                 give_back: Callable[[str, str], None], charge: Callable[[str, datetime], None]) -> None:
        self.providers, self.state, self.nodes, self.blocks = providers, state, nodes, blocks
        self._terminate, self._charge = give_back, charge

    def launch(self, a: Launch, now: datetime) -> int:
        """Make ``a``; the number of live nodes it got. Raises the cloud's error (after giving back a
        partial gang, blocking a refused offering)."""
        provider = self.providers[a.offering.provider]
        base = a.request_id
        tries = self.state.failed_requests.get(base, 0)
        # clouds remember a request id (EC2 ClientToken): a new attempt after a failure, or after the
        # nodes of an earlier one ended before the job used them (preempted while booting), needs a new id
        while self.state.request_spent(f"{base}-r{tries}" if tries else base):
            tries += 1
            self.state.failed_requests[base] = tries
        if tries:
            a = replace(a, request_id=f"{a.request_id}-r{tries}")
        self.state.put_intent(a, sent_at=now)
        labels = launch_labels(a.team, a.project, a.sprint, a.job_id, a.exclusive)
        try:
            nodes = provider.launch(a.offering, a.count, request_id=a.request_id, labels=labels)
        except PartialLaunchError as err:
            got = [n for n in err.nodes if isinstance(n, Node)]
            self.blocks.block(a.offering.key, now)
            self.nodes.adopt(got, a, now)
            self.state.launch_times += [now] * len(got)  # launched, given back or not: the rate counts them
            if a.job_id is not None:  # a gang runs on all its nodes or none: give partial ones back
                self._give_back(got, f"partial gang launch for {a.job_id}", err)
            self.state.clear_intent(a.request_id)
            raise
        except (ProviderError, ConfigError) as err:
            if isinstance(err, ProviderError) and err.retryable:
                raise  # throttled, timed out: it may have launched; the intent stands, the next pass retries
            # refused (no capacity, a quota, an invalid or unsupported request, a setting): sent
            # again unchanged it fails again, so the offering is blocked and the next try gets a new id
            self.blocks.block(a.offering.key, now)
            self.state.clear_intent(a.request_id)
            self.state.failed_requests[base] = tries + 1
            raise
        live = self.nodes.adopt_launched(nodes, a, now, self._charge)
        self.state.clear_intent(a.request_id)
        self.state.launch_times += [now] * len(live)
        self.blocks.launched(a.offering.key)
        if len(live) < len(nodes):  # a replay answered with nodes that ended since: the next try gets a new id
            gone = TransientError(f"launch {a.request_id}: {len(nodes) - len(live)} of its {len(nodes)} nodes "
                                  "ended before this controller heard of them; launching again under a new "
                                  "request id", provider=a.offering.provider, offering_key=a.offering.key)
            if a.job_id is not None:  # a gang runs on all its nodes or none
                self._give_back(live, f"the rest of {a.job_id}'s gang ended before it started", gone)
            self.state.failed_requests[base] = tries + 1
            raise gone
        return len(live)

    def replay_partly_listed(self, now: datetime) -> list[str]:
        """Make again, under its request id, a launch whose reply was lost and whose nodes listings show in
        part (a gang's other node listed late): clouds answer it with all its nodes (EC2 ClientToken, GCE
        requestId, Azure's VM names). One whose listed nodes all ended since is forgotten instead: made
        again it would launch anew under a fresh id, past every guard; the policy launches the job
        again if it still needs it, and a node listed later is adopted untied. Returns the failures."""
        errors = []
        for a in self.nodes.partly_listed():
            if self.state.request_spent(a.request_id):
                self.state.clear_intent(a.request_id)
                continue
            try:
                self.launch(a, now)
            except (ProviderError, ConfigError) as err:
                errors.append(f"launch {a.request_id} made again failed: {err}")
        return errors

    def _give_back(self, nodes: Sequence[Node], reason: str, err: ProviderError) -> None:
        """Terminate each of ``nodes``; a terminate that fails is added to ``err``'s message (the
        node stays terminating, and is terminated again next pass) and the others still go."""
        for n in nodes:
            try:
                self._terminate(n.node_id, reason)
            except ProviderError as failed:
                err.args = (f"{err}; giving back {n.node_id} failed (tried again next pass): {failed}",)
