"""Rules of a replayed spot series that a mutation audit found unpinned: where it drops (each fall
to 0, once), the next drop or flip asked at one, the longest gap a trace may have."""

from __future__ import annotations

import json
from pathlib import Path

from providers.sim.spot import MAX_GAP_S, SpotSeries, read_series

# up, down, down, up, down, up: drops at 600 and 2400 s, flips at 600, 1800, 2400 and 3000 s; span 3600 s
S = SpotSeries("edges", "aws", "V100", 600.0, (1, 0, 0, 1, 0, 1))


def test_a_drop_is_each_fall_to_zero_not_each_tick_at_zero() -> None:
    """The app's interruption rate counts these: a 20-minute outage is one interruption."""
    assert S.drops() == [600.0, 2400.0]
    wraps = SpotSeries("wraps", "aws", "V100", 60.0, (0, 0, 1, 1))  # down at the start: a drop across the wrap
    assert wraps.drops() == [0.0]


def test_the_next_drop_may_be_now_and_the_next_flip_is_after_now() -> None:
    assert S.next_drop(600.0) == 600.0  # the first offset >= the one asked
    assert S.next_drop(601.0) == 2400.0
    assert S.next_flip(600.0) == 1800.0  # the first offset > the one asked
    assert S.next_flip(599.0) == 600.0


def test_a_trace_of_one_value_a_day_is_read(tmp_path: Path) -> None:
    """(0, 86400]: a gap of a whole day is the longest accepted."""
    path = tmp_path / "daily.json"
    path.write_text(json.dumps({"metadata": {"gap_seconds": MAX_GAP_S}, "data": [1, 0]}))
    assert read_series(path, "aws", "V100").gap_s == 86_400.0
