"""A simulated cloud's API failing now and then, seeded, for the fuzzer (tests/sim/fuzz_oracle.py): the
controller sees the failures, the recorder behind them (``CloudTap``) sees what the cloud really did.

A launch can be refused before anything is made (no capacity, or a transient error) or made and its
reply lost; a listing can fail; a terminate can fail before anything is done, or be done and its
reply lost. Every failure is one the real adapters raise (burster.errors), and the same seed fails
the same calls.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from burster.errors import CapacityError, TransientError
from burster.model import Node, Offering


@dataclass(frozen=True)
class Faults:
    """The chance that each kind of call fails, and how."""

    launch_refused: float = 0.0  # no capacity (half of these) or a transient error; nothing made
    launch_reply_lost: float = 0.0  # the nodes are made; the reply is lost
    listing_failed: float = 0.0
    terminate_failed: float = 0.0  # nothing done
    terminate_reply_lost: float = 0.0  # done; the reply is lost

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


class FaultyCloud:
    """``inner`` (a cloud, or the recorder around one) behind an API that fails as ``faults`` says."""

    def __init__(self, inner: Any, faults: Faults, seed: int, now: Callable[[], datetime]) -> None:
        self._inner, self._faults, self._now = inner, faults, now
        self.name: str = inner.name
        self._rng = random.Random(f"faults-{seed}-{self.name}")
        self.failed: dict[str, int] = {}  # kind -> calls failed so far
        self.listed_at: list[datetime] = []  # when a listing went through, in order
        self.unanswered: set[str] = set()  # nodes made by a launch whose reply was lost
        self.refused: dict[str, list[datetime]] = {}  # node -> when a terminate naming it failed, doing nothing
        self.unreplied: dict[str, list[datetime]] = {}  # node -> when a terminate naming it went, its reply lost

    def offerings(self) -> Sequence[Offering]:
        return self._inner.offerings()  # type: ignore[no-any-return]

    def interruptions(self) -> Any:
        return self._inner.interruptions()

    def list_nodes(self) -> Sequence[Node]:
        self._maybe("listing_failed", f"{self.name}: listing instances timed out")
        nodes: Sequence[Node] = self._inner.list_nodes()
        self.listed_at.append(self._now())
        return nodes

    def launch(self, offering: Offering, count: int, *, request_id: str,
               labels: Mapping[str, str] | None = None) -> Sequence[Node]:
        if self._roll("launch_refused"):
            if self._rng.random() < 0.5:
                raise CapacityError(f"{self.name}: no capacity for {offering.key}", provider=self.name,
                                    offering_key=offering.key)
            raise TransientError(f"{self.name}: launch failed (503)", provider=self.name, offering_key=offering.key)
        nodes: Sequence[Node] = self._inner.launch(offering, count, request_id=request_id, labels=labels)
        try:
            self._maybe("launch_reply_lost", f"{self.name}: the reply to launch {request_id} was lost")
        except TransientError:
            self.unanswered.update(n.node_id for n in nodes)
            raise
        return nodes

    def terminate(self, node_ids: Sequence[str], *, request_id: str) -> None:
        if self._roll("terminate_failed"):
            for node_id in node_ids:
                self.refused.setdefault(node_id, []).append(self._now())
            raise TransientError(f"{self.name}: terminate failed (503)", provider=self.name)
        self._inner.terminate(node_ids, request_id=request_id)
        if self._roll("terminate_reply_lost"):
            for node_id in node_ids:
                self.unreplied.setdefault(node_id, []).append(self._now())
            raise TransientError(f"{self.name}: the reply to terminate {request_id} was lost", provider=self.name)

    def _roll(self, kind: str) -> bool:
        hit: bool = self._rng.random() < getattr(self._faults, kind)
        if hit:
            self.failed[kind] = self.failed.get(kind, 0) + 1
        return hit

    def _maybe(self, kind: str, message: str) -> None:
        if self._roll(kind):
            raise TransientError(message, provider=self.name)
