"""The fuzzing tool (tests/sim/fuzz_oracle.py): a seed's draw is fixed, a run of it passes every
oracle check, and a bad ``--seeds`` says what to give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from burster.app import DEMO_TRACE
from burster.traces import load_trace
from tests.sim.fuzz_oracle import draw, main

TEAMS = sorted({j.team for j in load_trace(DEMO_TRACE, "philly").jobs if j.team})


def test_a_seeds_draw_is_the_same_every_time_and_seeds_differ() -> None:
    assert draw(5, TEAMS) == draw(5, TEAMS)
    assert len({json.dumps(draw(s, TEAMS).raw, sort_keys=True) for s in range(20)}) == 20


def test_a_seed_with_global_and_team_budgets_passes_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    d = draw(5, TEAMS)  # a week's $60 and three teams' budgets, nodes the pool may give any job
    assert d.raw["budget"]["total_usd"] == 60.0 and len(d.raw["budget"]["team_usd"]) == 3
    assert main(["--seeds", "5:6", "--hours", "8", "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    got = json.loads(line)
    assert (got["seed"], got["ok"], got["findings"]) == (5, True, [])


@pytest.mark.parametrize("bad", ["3", "5:5", "a:b", "7:2"])
def test_bad_seeds_say_what_to_give(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--seeds", bad])
    assert f"--seeds {bad!r}: give FIRST:END, two whole numbers, FIRST below END" in capsys.readouterr().err


def test_a_trace_that_cannot_be_read_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.csv"
    with pytest.raises(SystemExit):
        main(["--seeds", "0:1", "--trace", str(missing)])
    err = capsys.readouterr().err
    assert "--trace: " in err and str(missing) in err


def test_a_seed_that_makes_the_clouds_fail_says_how(capsys: pytest.CaptureFixture[str]) -> None:
    d = draw(55, TEAMS)
    assert d.faults is not None and draw(5, TEAMS).faults is None
    assert main(["--seeds", "55:56", "--hours", "1", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["ok"] and got["faults"] == d.faults.as_dict() and set(got["faults"]) == {
        "launch_refused", "launch_reply_lost", "listing_failed", "terminate_failed", "terminate_reply_lost"}
