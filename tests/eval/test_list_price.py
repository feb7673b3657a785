"""Cloud $ at list price (billed + what AWS waived) against the bound, billed $ against the reference
arms: per setting, summed over settings, and in the records' captured savings."""

from __future__ import annotations

from typing import Any

import pytest

from burster.eval.compare import (
    RECORD_KEYS,
    SUMMARY_EXTRAS,
    ArmResult,
    BoundResult,
    Setting,
    SuiteResult,
    Window,
    records,
)
from burster.eval.targets import BOUND, OVERALL, VS_GREEDY, VS_ON_DEMAND, evaluate


def _rec(seed: int, policy: str, usd: float, waived: float = 0.0, lower: float = 100.0) -> dict[str, Any]:
    return {"trace": "t", "window": "w", "pool_gpus": 8, "seed": seed, "policy": policy, "cloud_usd": usd,
            "cloud_usd_waived": waived, "hard_deadline_misses": 0, "wait_p50_s": 0.0,
            "wait_share_within_budget": 1.0, "lower_bound_usd": lower}


def test_overall_bound_check_adds_every_settings_waived_dollars_once() -> None:
    """Two settings, Burster billed $80 + $90 with $8 + $12 waived, bounds $100 each: the overall
    bound check is (170 + 20) / 200; the savings checks compare billed $ (what was paid)."""
    recs = [_rec(0, "burster", 80.0, 8.0), _rec(0, "on-demand", 200.0), _rec(0, "greedy-spot", 100.0),
            _rec(1, "burster", 90.0, 12.0), _rec(1, "on-demand", 200.0), _rec(1, "greedy-spot", 100.0)]
    checks = {(c["setting"], c["target"]): c["value"] for c in evaluate(recs)}
    assert checks["t, w, 8 GPUs, seed 0", BOUND] == pytest.approx(0.88)
    assert checks[OVERALL, BOUND] == pytest.approx(190 / 200, abs=1e-4)
    assert checks["t, w, 8 GPUs, seed 0", VS_ON_DEMAND] == pytest.approx(0.6)  # 1 - 80 / 200, not 88 / 200
    assert checks[OVERALL, VS_ON_DEMAND] == pytest.approx(1 - 170 / 400, abs=1e-4)
    assert checks[OVERALL, VS_GREEDY] == pytest.approx(1 - 170 / 200, abs=1e-4)


def _arm(setting: Setting, policy: str, usd: float, waived: float, preempted: int) -> ArmResult:
    summary: dict[str, Any] = {k: 0 for k in (*RECORD_KEYS, *SUMMARY_EXTRAS)}
    summary |= {"trace": "t", "pool_gpus": 8, "seed": 0, "policy": policy, "cloud_usd": usd,
                "cloud_usd_waived": waived, "onprem_preemptions": preempted}
    return ArmResult(setting, policy, summary, {}, {})


def test_captured_savings_use_the_arms_own_bound_and_list_price() -> None:
    """Burster billed $80 with $8 waived after 2 preemptions (bound $55 with two split runs);
    all-on-demand $200: captured savings (200 - 88) / (200 - 55)."""
    setting = Setting("t", Window("t.csv", None, 0.0, 1.0), 1, 0)
    bound = BoundResult(setting, 100.0, 150.0, "optimal", lower_by_preemptions=(100.0, 70.0, 55.0))
    result = SuiteResult(arms=[_arm(setting, "burster", 80.0, 8.0, 2), _arm(setting, "on-demand", 200.0, 0.0, 0)],
                         bounds={setting: bound})
    burster, on_demand = records(result)
    assert burster["captured_savings"] == pytest.approx(112 / 145, abs=1e-4)
    assert on_demand["captured_savings"] == 0.0 and on_demand["lower_bound_usd"] == 100.0
