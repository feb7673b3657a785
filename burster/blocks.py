"""Which offerings a controller may not launch on for a while, and for how long (kept in the state).

An offering is blocked after a launch the cloud refused for good (no capacity, a quota, an invalid
request), after an interruption notice on one of its nodes, and after a node of it never joined the
pool: for ``block_s``, doubled for each such strike in a row (up to ``MAX_BLOCK_FACTOR`` times), so a
pool that stays dry is not retried at every expiry. A successful launch on it resets the count;
join-timeout strikes are counted apart (the launches went through: ``JOIN_STRIKES``) and reset once
a node of the offering runs a job.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from burster.model import Interruption, Node
from burster.state import MemoryState

log = logging.getLogger("burster.reconcile")

MAX_BLOCK_FACTOR = 8  # a dry offering is retried at most every 8 x block_s (80 min by default)
JOIN_STRIKES = "join-timeout:"  # block_strikes key prefix: join timeouts in a row on an offering


class OfferingBlocks:
    def __init__(self, state: MemoryState, block_s: float) -> None:
        self.state = state
        self.block_s = block_s

    def block(self, key: str, now: datetime, strikes_key: str | None = None) -> None:
        """Block offering ``key`` from ``now`` for its strikes in a row (``strikes_key``: counted elsewhere)."""
        strikes_key = strikes_key or key
        strikes = self.state.block_strikes.get(strikes_key, 0) + 1
        self.state.block_strikes[strikes_key] = strikes
        factor = min(2 ** (strikes - 1), MAX_BLOCK_FACTOR)
        until = now + timedelta(seconds=self.block_s * factor)
        self.state.blocked[key] = max(until, self.state.blocked.get(key, until))

    def noticed(self, notices: Iterable[Interruption]) -> None:
        """Block the offerings of nodes given their first interruption notice: the pool is being taken
        back, so a job it stops relaunches elsewhere. Only a node up when the notice came: live, or
        ended since (a notice read in the pass that lists its node gone), not one ended before it."""
        for n in notices:
            rec = self.state.nodes.get(n.node_id)
            if rec is not None and (
                self.state.is_live(n.node_id) or (rec.ended_at is not None and rec.ended_at >= n.notice_at)
            ):
                self.block(rec.offering.key, n.notice_at)

    def launched(self, key: str) -> None:
        """A launch on offering ``key`` went through: its strikes start again."""
        self.state.block_strikes.pop(key, None)

    def never_joined(self, node_ids: Sequence[str], now: datetime) -> None:
        """Block the offerings of nodes that never joined the pool, with strikes of their own."""
        keys = {self.state.nodes[i].offering.key for i in node_ids if i in self.state.nodes}
        for key in sorted(keys):
            log.warning("blocking %s: its node never came up or joined the pool in time", key)
            self.block(key, now, JOIN_STRIKES + key)

    def joined(self, cloud_nodes: Iterable[Node]) -> None:
        """Forget the join-timeout strikes of offerings whose nodes run jobs."""
        if not any(k.startswith(JOIN_STRIKES) for k in self.state.block_strikes):
            return
        for n in cloud_nodes:
            if n.busy:
                self.state.block_strikes.pop(JOIN_STRIKES + n.offering.key, None)
