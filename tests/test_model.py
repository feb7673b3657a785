"""Contract-module helpers that the policies' hot loops lean on."""

from __future__ import annotations

import math
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from burster.model import Demand, Market, Placement, RuntimeHistory, launch_labels, node_tags
from tests.policies.strategies import demands


@given(demands("j", 3), st.floats(-3600.0, 60 * 3600.0))
def test_with_done_is_replace_of_done_s(jobs: tuple[Demand, ...], done_s: float) -> None:
    """Every field, the derived ones included, equals what ``dataclasses.replace`` builds."""
    for job in jobs:
        fast, slow = job.with_done(done_s), replace(job, done_s=done_s)
        assert type(fast) is Demand
        assert all(getattr(fast, f.name) == getattr(slow, f.name) for f in fields(Demand))
        assert fast == slow and hash(fast) == hash(slow) and fast.remaining_s == slow.remaining_s
        assert job.done_s == 0.0  # the original is untouched


@given(demands("j", 3), st.floats(0.0, 60 * 3600.0), st.floats(1.0, 120 * 3600.0))
def test_with_estimate_is_replace_of_est_runtime_s(jobs: tuple[Demand, ...], done_s: float, est_s: float) -> None:
    """Alike for a new estimate, on a job part-way through its work (its remaining work follows)."""
    for job in jobs:
        job = job.with_done(done_s)
        fast, slow = job.with_estimate(est_s), replace(job, est_runtime_s=est_s)
        assert all(getattr(fast, f.name) == getattr(slow, f.name) for f in fields(Demand))
        assert fast == slow and hash(fast) == hash(slow) and fast.remaining_s == slow.remaining_s


def test_a_runtime_history_gives_one_team_per_ratio_or_none() -> None:
    assert RuntimeHistory((1.0, 2.0), ("a", "")).teams == ("a", "")
    assert RuntimeHistory((1.0, 2.0)).teams == ()  # a pool that does not say whose jobs they were
    with pytest.raises(ValueError, match="1 teams for 2 ratios; give one team per ratio, or none"):
        RuntimeHistory((1.0, 2.0), ("a",))


@pytest.mark.parametrize("bad", [-0.5, math.inf, -math.inf, math.nan])
def test_a_runtime_history_holds_finite_ratios(bad: float) -> None:
    for ratios in ((1.0, bad), (bad, 1.0), (bad,)):  # (a NaN first or last throws min and max off alike)
        with pytest.raises(ValueError, match="every ratio must be a finite number >= 0"):
            RuntimeHistory(ratios)
    with pytest.raises(ValueError, match="every ratio must be a finite number >= 0"):
        RuntimeHistory((1.0,), (), (("a", (bad,)),))


_label_text = st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=12)


@given(_label_text, _label_text, _label_text, st.none() | _label_text, st.booleans())
def test_node_tags_read_back_what_launch_labels_wrote(team: str, project: str, sprint: str, job: str | None,
                                                      exclusive: bool) -> None:
    """A node adopted from its labels alone has the owners its launch gave it; no label is empty."""
    labels = launch_labels(team, project, sprint, job, exclusive)
    assert node_tags(labels) == {"team": team, "project": project, "sprint": sprint, "exclusive": exclusive}
    assert labels.get("job") == (job or None) and all(labels.values())


def test_a_restarted_placement_ends_and_works_after_its_reload() -> None:
    """``Placement.reload_s``: the run makes no progress for that long, then works its remaining."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    job = Demand("a", 1, start, 3600.0, gpu_model="V100", done_s=600.0, attempt=1)
    first = Placement(job, ("n1",), start, True, Market.SPOT, 1.0)
    again = Placement(job, ("n1",), start, True, Market.SPOT, 1.0, reload_s=300.0)
    assert again.ends_at_ts == first.ends_at_ts + 300.0 == start.timestamp() + 3300.0
    assert again.working_since_ts == start.timestamp() + 300.0
    assert again.done_s(start + timedelta(seconds=200)) == 600.0  # reloading: nothing new done
    assert again.done_s(start + timedelta(seconds=500)) == 800.0 == first.done_s(start + timedelta(seconds=200))
    assert again.remaining_s(start + timedelta(seconds=500)) == 2800.0
    stopping = Placement(job, ("n1",), start, True, Market.SPOT, 1.0, start + timedelta(seconds=120), 300.0)
    assert stopping.ends_at_ts == start.timestamp() + 120.0  # a stop sooner still ends it
