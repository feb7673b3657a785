"""An in-memory CloudProvider with fault injection: ``fail_next_launch``, ``throttle_next``, ``partial_next``,
``fail_next_list``, ``fail_next_terminate``, ``ignore_next_terminate``, ``lose_next_replies``, ``list_late``;
``list_ended`` lists ended nodes as EC2 does, and ``end`` ends a node from outside."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.errors import CapacityError, PartialLaunchError, ProviderError, ThrottledError, TransientError
from burster.lifecycle import NodeState
from burster.model import Interruption, Node, Offering, node_tags
from burster.retry import call_with_backoff


class FakeCloudProvider:
    """Keeps nodes in a dict. Idempotent by request id, like EC2 ClientToken."""

    def __init__(
        self,
        name: str,
        offerings: Sequence[Offering],
        *,
        now: Callable[[], datetime] = lambda: datetime(2026, 1, 1, tzinfo=UTC),
        sleep: Callable[[float], None] = lambda s: None,
    ) -> None:
        self.name = name
        self._offerings = list(offerings)
        self._now = now
        self._sleep = sleep
        self._nodes: dict[str, Node] = {}
        self._labels: dict[str, dict[str, str]] = {}
        self._by_request: dict[str, tuple[str, ...]] = {}
        self._ids = itertools.count(1)
        self._fail_next: list[ProviderError] = []
        self._throttle = 0
        self._partial: int | None = None
        self._interruptions: list[Interruption] = []
        self._fail_list: ProviderError | None = None
        self._unlisted: set[str] = set()
        self._fail_terminate: ProviderError | None = None
        self._ignore_terminate = False
        self._lose_terminate_reply = False
        self._lost_replies = 0
        self._list_ended = False
        self._boot_slowly = False
        self.api_calls = 0

    # --- fault knobs ---------------------------------------------------------------------
    def fail_next_launch(self, error: ProviderError) -> None:
        self._fail_next.append(error)

    def throttle_next(self, calls: int) -> None:
        self._throttle = calls

    def partial_next(self, nodes: int) -> None:
        self._partial = nodes

    def fail_next_list(self, error: ProviderError) -> None:
        self._fail_list = error

    def fail_next_terminate(self, error: ProviderError) -> None:
        self._fail_terminate = error

    def ignore_next_terminate(self) -> None:
        """The next terminate call succeeds but its nodes run on (listings keep showing them running,
        as a listing that lags a terminate does)."""
        self._ignore_terminate = True

    def lose_next_terminate_reply(self) -> None:
        """The next terminate call ends its nodes, but the caller sees a timeout."""
        self._lose_terminate_reply = True

    def lose_next_replies(self, calls: int) -> None:
        """The next ``calls`` launch calls do their work, but the caller sees a timeout (as when
        the reply is lost on the way back); five or more outlast the launch's retries."""
        self._lost_replies = calls

    def list_late(self, node_ids: Sequence[str]) -> None:
        """Leave these nodes out of listings until ``list_again`` (EC2 lists new instances late)."""
        self._unlisted.update(node_ids)

    def list_again(self) -> None:
        self._unlisted.clear()

    def list_ended(self, on: bool = True) -> None:
        """List ended nodes too, TERMINATED with their end time, as EC2 lists terminated instances
        for about an hour (``on=False``: they drop out of listings, as when EC2 forgets them)."""
        self._list_ended = on

    def boot_slowly(self, on: bool = True) -> None:
        """Nodes launched from now on are listed LAUNCHING (booting) until ``up``."""
        self._boot_slowly = on

    def up(self, node_id: str) -> None:
        self._nodes[node_id] = replace(self._nodes[node_id], state=NodeState.READY)

    def end(self, node_id: str, *, taken_back: bool = False) -> None:
        """The node ends now, whoever ended it (a terminate that lagged takes effect, or someone
        removed it outside the controller); ``taken_back``: its cloud took it back, and its listing says so."""
        self._nodes[node_id] = replace(self._nodes[node_id], state=NodeState.TERMINATED, ended_at=self._now(),
                                       taken_back=taken_back)

    def interrupt(self, node_id: str, kind: str = "spot-interruption", notice_s: float = 120) -> None:
        now = self._now()
        self._interruptions.append(
            Interruption(node_id, self.name, kind, now, now + timedelta(seconds=notice_s))
        )

    def labels_of(self, node_id: str) -> dict[str, str]:
        return dict(self._labels[node_id])

    # --- CloudProvider -------------------------------------------------------------------
    def offerings(self) -> Sequence[Offering]:
        return list(self._offerings)

    def list_nodes(self) -> Sequence[Node]:
        if self._fail_list is not None:
            err, self._fail_list = self._fail_list, None
            raise err
        return [n for n in self._nodes.values()
                if (self._list_ended or n.state is not NodeState.TERMINATED) and n.node_id not in self._unlisted]

    def launch(
        self, offering: Offering, count: int, *, request_id: str,
        labels: Mapping[str, str] | None = None,
    ) -> Sequence[Node]:
        return call_with_backoff(
            lambda: self._launch_once(offering, count, request_id, labels or {}), sleep=self._sleep
        )

    def _launch_once(
        self, offering: Offering, count: int, request_id: str, labels: Mapping[str, str]
    ) -> Sequence[Node]:
        self.api_calls += 1
        if request_id in self._by_request:
            self._lose_reply()
            return [self._nodes[i] for i in self._by_request[request_id]]
        if self._throttle > 0:
            self._throttle -= 1
            raise ThrottledError("fake: rate exceeded", provider=self.name)
        if self._fail_next:
            err = self._fail_next.pop(0)
            err.offering_key = err.offering_key or offering.key
            raise err
        made = count if self._partial is None else min(self._partial, count)
        nodes = [self._make(offering, request_id, labels) for _ in range(made)]
        self._by_request[request_id] = tuple(n.node_id for n in nodes)
        self._lose_reply()
        if made < count:
            self._partial = None
            cause = CapacityError("fake: insufficient capacity", provider=self.name,
                                  offering_key=offering.key)
            raise PartialLaunchError(
                f"{self.name}: launched {made} of {count} nodes of {offering.key}",
                nodes=tuple(nodes), cause=cause, provider=self.name, offering_key=offering.key,
            )
        return nodes

    def _lose_reply(self) -> None:
        if self._lost_replies > 0:
            self._lost_replies -= 1
            raise TransientError("fake: timed out waiting for the reply", provider=self.name)

    def _make(self, offering: Offering, request_id: str, labels: Mapping[str, str]) -> Node:
        node_id = f"{self.name}-{next(self._ids):06d}"
        state = NodeState.LAUNCHING if self._boot_slowly else NodeState.READY
        node = Node(node_id, offering, state, self._now(), request_id, **node_tags(labels))
        self._nodes[node_id] = node
        self._labels[node_id] = {"managed-by": "burster", "request-id": request_id, **labels}
        return node

    def terminate(self, node_ids: Sequence[str], *, request_id: str) -> None:
        self.api_calls += 1
        if self._fail_terminate is not None:
            err, self._fail_terminate = self._fail_terminate, None
            raise err
        if self._ignore_terminate:
            self._ignore_terminate = False
            return
        for node_id in node_ids:
            node = self._nodes.get(node_id)
            if node is not None and node.state is not NodeState.TERMINATED:
                self.end(node_id)
        if self._lose_terminate_reply:
            self._lose_terminate_reply = False
            raise TransientError("fake: timed out waiting for the reply to terminate", provider=self.name)

    def interruptions(self) -> Sequence[Interruption]:
        out, self._interruptions = self._interruptions, []
        return out

