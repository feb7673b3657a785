"""Join-timeout strikes are keyed by the exact offering key, never matched by prefix: offerings
whose keys (or whose nodes' ids, 'node-1' and 'node-10') are prefixes of one another keep apart."""

from __future__ import annotations

from datetime import UTC, datetime

from burster.blocks import JOIN_STRIKES, OfferingBlocks
from burster.lifecycle import NodeState
from burster.model import Market, Node, Offering
from burster.state import MemoryState, NodeRecord

NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)
SHORT = Offering("fake", "r1", "r1a", "node-1", "V100", 1, Market.SPOT, 1.0)
LONG = Offering("fake", "r1", "r1a", "node-10", "V100", 1, Market.SPOT, 1.0)
NESTED = Offering("fake", "r1", "r1a", "node-1/spot/x", "V100", 1, Market.SPOT, 1.0)  # SHORT.key + "/x/spot"


def test_join_strikes_of_offerings_whose_keys_or_node_ids_are_prefixes_stay_apart() -> None:
    assert NESTED.key.startswith(SHORT.key)
    state = MemoryState()
    for node_id, o in (("node-1", SHORT), ("node-10", LONG), ("node-100", NESTED)):
        state.add_node(NodeRecord(node_id=node_id, provider="fake", offering=o, request_id=f"r-{node_id}",
                                  launched_at=NOW, state=NodeState.READY))
    blocks = OfferingBlocks(state, 600.0)
    blocks.never_joined(["node-10"], NOW)
    blocks.never_joined(["node-10", "node-100"], NOW)
    blocks.block(SHORT.key, NOW)  # a capacity strike: counted apart from join strikes
    assert state.block_strikes == {JOIN_STRIKES + LONG.key: 2, JOIN_STRIKES + NESTED.key: 1, SHORT.key: 1}
    busy = Node("node-1", SHORT, NodeState.READY, NOW, "r-node-1", job_id="j")
    blocks.joined([busy])  # runs a job: only SHORT's own join strikes (none) would go
    blocks.launched(SHORT.key)  # a launch went through: SHORT's capacity strikes go, nothing else
    assert state.block_strikes == {JOIN_STRIKES + LONG.key: 2, JOIN_STRIKES + NESTED.key: 1}
    blocks.joined([Node("node-100", NESTED, NodeState.READY, NOW, "r-node-100", job_id="k")])
    assert state.block_strikes == {JOIN_STRIKES + LONG.key: 2}
