"""A node's bill charged to the team of the job it serves (burster/node_bills.py) across a restart: the
hand-over's part and the node's new team are kept in the same commit, so a controller that takes over
mid-run charges the rest once, to the job's team, and the part before not again."""

from __future__ import annotations

from datetime import timedelta

import pytest

from burster.model import Demand, Node
from burster.sqlstate import SqlState
from tests.store.test_reconciler_store import _on_store
from tests.test_reconciler import CHEAP, World, join_and_start


def _standby_running_vision(w: World, store_url: str) -> tuple[SqlState, Node]:
    """A standby node (no team) adopted by a controller over ``store_url``, running team vision's job v
    from 60 s on; the store and the node."""
    first = _on_store(w, store_url)
    (node,) = w.cloud.launch(CHEAP, 1, request_id="standby-1")
    w.rec.run_once()  # adopted, for no team
    w.clock.advance(60)
    w.pool.submit(Demand("v", 8, w.clock.now(), 3600.0, gpu_model="V100", team="vision"), w.clock.now())
    assert join_and_start(w.pool, node, "v", w.clock.now()) == ["v"]
    return first, node


def test_a_hand_over_survives_a_restart_and_no_part_is_charged_twice(store_url: str) -> None:
    w = World()
    first, node = _standby_running_vision(w, store_url)
    w.clock.advance(60)
    w.rec.run_once()  # handed over at 60 s
    first.close()
    second = _on_store(w, store_url)  # the controller that takes over, mid-run
    kept_rec = second.nodes[node.node_id]
    assert node.launched_at is not None
    assert (kept_rec.team, kept_rec.charged_from) == ("vision", node.launched_at + timedelta(seconds=60))
    for _ in range(3):
        w.clock.advance(60)
        w.rec.run_once()
    assert [(e.team, e.billed_s) for e in second.ledger] == [("", 60.0)]  # the part before, once
    w.rec.nodes.ended(node.node_id, w.clock.now(), w.rec._charge)
    second.commit()
    second.close()
    kept = SqlState.read(store_url)
    assert [(e.team, e.billed_s) for e in kept.ledger] == [("", 60.0), ("vision", 240.0)]
    assert kept.spent_by_team == pytest.approx({"": float(kept.ledger[0].usd), "vision": float(kept.ledger[1].usd)})


def test_a_node_handed_over_in_the_pass_that_ends_it_is_kept_so(store_url: str) -> None:
    """The pool's new job and the node's end seen in one pass (tests/test_node_bills_ends.py): the
    ended record, now the job's team's, and both parts are written in that pass's commit."""
    w = World()
    first, node = _standby_running_vision(w, store_url)
    w.clock.advance(540)
    w.cloud.end(node.node_id)  # gone from listings before a pass saw the job
    w.rec.run_once()
    first.close()
    kept = SqlState.read(store_url)
    assert [(e.team, e.billed_s) for e in kept.ledger] == [("", 60.0), ("vision", 540.0)]
    assert (kept.nodes[node.node_id].team, kept.is_live(node.node_id)) == ("vision", False)
