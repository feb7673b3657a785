"""The issue's targets for Burster's policy, checked per setting and over the whole suite.

Each check is ``{target, value, threshold, met, setting}``. Savings are fractions (0.5 = 50 % below).
Overall: dollars are summed over settings, hard misses summed, p50 is the worst setting's and the
within-budget share the mean of the settings'. A target whose reference arm (on-demand, greedy-spot)
was not run is not checked. The bound check sets the cloud $ at list price (``list_usd``: what AWS
waived for spot it took back in the first hour added back) beside the bound valid for Burster's arm.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from burster.eval.compare import list_usd, ratio_to_bound

BOUND = "cloud $ <= 1.10 x lower bound"
VS_ON_DEMAND = "cloud $ >= 50 % below on-demand"
VS_GREEDY = "cloud $ >= 20 % below greedy-spot"
HARD_MISSES = "0 hard-deadline misses"
P50 = "wait p50 <= 60 s"
WITHIN_BUDGET = "share of jobs waiting <= max(600 s, 0.25 x runtime) >= 95 %"
SHORT = {BOUND: "<=1.10x bound", VS_ON_DEMAND: ">=50% below on-demand", VS_GREEDY: ">=20% below greedy",
         HARD_MISSES: "0 hard misses", P50: "p50 <= 60 s", WITHIN_BUDGET: ">=95% within budget"}
# how the report prints each value: "ratio" x, "share" %, "count", "seconds"
KINDS = {BOUND: "ratio", VS_ON_DEMAND: "share", VS_GREEDY: "share", HARD_MISSES: "count", P50: "seconds",
         WITHIN_BUDGET: "share"}
OVERALL = "overall"


def setting_key(r: dict[str, Any]) -> str:
    return f"{r['trace']}, {r['window']}, {r['pool_gpus']} GPUs, seed {r['seed']}"


def _check(target: str, value: float | None, threshold: float, setting: str, note: str = "") -> dict[str, Any]:
    """One check; an undefined value (no bound, a $0 reference) counts as missed and says why in ``note``."""
    if value is None:
        met = False
    elif target in (BOUND, HARD_MISSES, P50):
        met = value <= threshold
    else:
        met = value >= threshold
    out = {"target": target, "value": value, "threshold": threshold, "met": met, "setting": setting}
    return out | ({"note": note} if note and value is None else {})


def savings(cost: float, reference: float) -> float | None:
    """1 - cost / reference; 0 when both are 0; None (undefined, so missed) when only the reference is 0."""
    if reference <= 0:
        return 0.0 if cost <= 0 else None
    return round(1.0 - cost / reference, 4)


def _checks(setting: str, b: dict[str, Any], refs: dict[str, float], lower: float | None) -> list[dict[str, Any]]:
    cost = float(b["cloud_usd"])
    why = "no lower bound (see its status)" if lower is None else "the lower bound is $0, so any spend is above it"
    out = [_check(BOUND, ratio_to_bound(list_usd(b), lower), 1.10, setting, why)]
    if "on-demand" in refs:
        out.append(_check(VS_ON_DEMAND, savings(cost, refs["on-demand"]), 0.50, setting, "on-demand spent $0"))
    if "greedy-spot" in refs:
        out.append(_check(VS_GREEDY, savings(cost, refs["greedy-spot"]), 0.20, setting, "greedy-spot spent $0"))
    out.append(_check(HARD_MISSES, float(b["hard_deadline_misses"]), 0.0, setting))
    out.append(_check(P50, float(b["wait_p50_s"]), 60.0, setting))
    out.append(_check(WITHIN_BUDGET, float(b["wait_share_within_budget"]), 0.95, setting))
    return out


def evaluate(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Checks for every setting that ran Burster's policy, then the overall ones (when there are any)."""
    by_setting: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in records:
        by_setting[setting_key(r)][r["policy"]] = r
    out: list[dict[str, Any]] = []
    total: dict[str, float] = defaultdict(float)
    p50s, shares, lowers = [], [], []
    for setting, arms in by_setting.items():
        b = arms.get("burster")
        if b is None:
            continue
        refs: dict[str, float] = {p: float(arms[p]["cloud_usd"]) for p in ("on-demand", "greedy-spot") if p in arms}
        out += _checks(setting, b, refs, b["lower_bound_usd"])
        total["burster"] += float(b["cloud_usd"])
        total["waived"] += float(b.get("cloud_usd_waived", 0.0))
        total["hard"] += float(b["hard_deadline_misses"])
        for p, usd in refs.items():
            total[p] += usd
        p50s.append(float(b["wait_p50_s"]))
        shares.append(float(b["wait_share_within_budget"]))
        lowers.append(b["lower_bound_usd"])
    if not p50s:
        return out
    n = len(p50s)
    overall = {"cloud_usd": total["burster"], "cloud_usd_waived": total["waived"],
               "hard_deadline_misses": total["hard"], "wait_p50_s": max(p50s),
               "wait_share_within_budget": round(sum(shares) / n, 4)}
    refs = {p: total[p] for p in ("on-demand", "greedy-spot")
            if sum(1 for arms in by_setting.values() if "burster" in arms and p in arms) == n}
    lower = None if any(x is None for x in lowers) else sum(lowers)
    return out + _checks(OVERALL, overall, refs, lower)


def missed(checks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in checks if not c["met"]]
