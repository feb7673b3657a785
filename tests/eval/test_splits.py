"""The reserved-run bound when p jobs may split their run (``splits.py``), by hand; the entry an arm is
held to (``BoundResult.lower_for``); and ``run_bound`` carrying the bound by preemptions to the records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from burster.eval import splits
from burster.eval.bound import LowerBound
from burster.eval.compare import BoundResult, Setting, Sources, Window, run_bound
from burster.eval.runs import RunJobs
from burster.eval.splits import split_gains
from tests.eval.bench_trace import write_trace

SETTING = Setting("t", Window("t.csv", None, 0.0, 1.0), 1, 0)


def test_split_gains_by_hand() -> None:
    """Slots of 100 s at prices lam = (0.1, 0.05, 0, 0.5, -0.1) per GPU-second. A split job pays g x its
    runtime in the cheapest seconds of its window's slots, each at min(lam, its cloud price), lam
    clipped to [0, top cloud price 0.3]; its gap is min_s f_j less that, never below 0.

    A: 2 GPUs, 150 s in slots 0-1 (due at 200 s: slot 2 is out), price 0.3: 2 x (100 x 0.05 + 50 x 0.1)
       = 20; min f 50: gap 30.
    B: 1 GPU, 100 s in slot 3, price 0.2 (below lam 0.5 there): 20; min f 25: gap 5.
    C: as B at price 0.25: 25; min f 10: gap 0 (not -15).
    D: two identical jobs, 100 s in slot 4 (lam -0.1 clipped to 0): 0; min f 4: gap 4 each.
    The running sums of the gaps, largest first: 0, 30, 35, 39, 43, 43."""
    j = RunJobs(arrival=np.array([0.0, 300.0, 300.0, 400.0]), budget=np.array([50.0, 0.0, 0.0, 0.0]),
                runtime=np.array([150.0, 100.0, 100.0, 100.0]), gpus=np.array([2.0, 1.0, 1.0, 1.0]),
                price=np.array([0.3, 0.2, 0.25, 0.3]), count=np.array([1.0, 1.0, 1.0, 2.0]))
    lam = np.array([0.1, 0.05, 0.0, 0.5, -0.1])
    gains = split_gains(j, lam, 100.0, np.array([50.0, 25.0, 10.0, 4.0]))
    assert gains == pytest.approx((0.0, 30.0, 35.0, 39.0, 43.0, 43.0))


def test_an_arm_is_held_to_the_entry_for_its_preemptions() -> None:
    """Entry p for p preemptions, the last one for more; the bracket's own bound for none, or when
    no bound by preemptions was computed."""
    b = BoundResult(SETTING, 100.0, 150.0, "optimal", lower_by_preemptions=(100.0, 70.0, 55.0, 50.0))
    assert [b.lower_for({"onprem_preemptions": p}) for p in (0, 1, 2, 3, 9)] == [100.0, 70.0, 55.0, 50.0, 50.0]
    assert b.lower_for({}) == 100.0
    assert BoundResult(SETTING, 100.0, 150.0, "optimal").lower_for({"onprem_preemptions": 3}) == 100.0
    assert BoundResult(SETTING, None, None, "failed").lower_for({"onprem_preemptions": 3}) is None


def test_run_bound_keeps_the_bound_by_preemptions(tmp_path: Path) -> None:
    """The bracket's bound by preemptions reaches the bench's BoundResult (entry 0: its own bound)."""
    trace = write_trace(tmp_path)
    setting = Setting(trace.name, Window(str(trace), "philly", 0.0, 0.25), 1, 0)
    got = run_bound(setting, Sources())
    assert got.lower_usd is not None and got.lower_by_preemptions
    assert got.lower_by_preemptions[0] == got.lower_usd


def test_past_max_splits_the_last_entry_is_the_fluid_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two jobs' gaps, sums kept for one: the last gain is unbounded, so an arm with more preemptions
    than the sums kept is held to the fluid bound, not to the run bound less the first gap."""
    monkeypatch.setattr(splits, "MAX_SPLITS", 1)
    j = RunJobs(arrival=np.array([0.0, 100.0]), budget=np.zeros(2), runtime=np.array([100.0, 100.0]),
                gpus=np.ones(2), price=np.array([0.3, 0.3]), count=np.ones(2))
    gains = split_gains(j, np.zeros(2), 100.0, np.array([5.0, 3.0]))
    assert gains == (0.0, 5.0, float("inf"))
    low = LowerBound(10.0, "optimal", 1, None, fluid_usd=2.0, runs_usd=10.0, split_gain_usd=gains)
    assert low.with_preemptions() == (10.0, 5.0, 2.0)
