"""Config validation: every bad value names its key and the allowed range."""

from __future__ import annotations

from pathlib import Path

import pytest

from burster.app import DEMO_TRACE, build_policy, build_simulation, cost_model
from burster.config import BursterConfig, load_config, parse_config
from burster.errors import ConfigError
from burster.model import Requeue
from burster.traces import load_trace
from policies.burster import BursterPolicy


def test_empty_config_gives_defaults() -> None:
    assert parse_config({}) == BursterConfig()


def test_out_of_range_value_names_key_and_range() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"budget": {"soft_fraction": 1.5}, "pool": {"nodes": -1}})
    msg = str(info.value)
    assert "budget.soft_fraction" in msg and "less than or equal to 1" in msg and "1.5" in msg
    assert "pool.nodes" in msg and "greater than or equal to 0" in msg


def test_unknown_key_is_an_error_not_ignored() -> None:
    with pytest.raises(ConfigError, match=r"policy\.idle_tll_s: unknown key"):
        parse_config({"policy": {"idle_tll_s": 10}})


def test_bad_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "b.toml"
    bad.write_text("[pool\nnodes = 3")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml")


def test_toml_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[pool]\nnodes = 4\n[budget]\ntotal_usd = 100.0\nteam_usd = {vision = 20.0}\n')
    cfg = load_config(path)
    assert cfg.pool.nodes == 4 and cfg.budget.team_usd == {"vision": 20.0}


def test_an_unknown_requeue_order_lists_the_valid_ones() -> None:
    assert parse_config({"pool": {"requeue": "back"}}).pool.requeue is Requeue.BACK
    with pytest.raises(ConfigError) as info:
        parse_config({"pool": {"requeue": "front"}})
    assert "pool.requeue" in str(info.value) and "'submission' or 'back'" in str(info.value)


def test_an_unknown_queue_order_lists_the_valid_ones() -> None:
    assert parse_config({}).pool.order == "start_by"
    assert parse_config({"pool": {"order": "submission"}}).pool.order == "submission"
    with pytest.raises(ConfigError) as info:
        parse_config({"pool": {"order": "fifo"}})
    assert "pool.order" in str(info.value) and "'start_by' or 'submission'" in str(info.value)


@pytest.mark.parametrize("hold", [True, False])
def test_policy_switches_reach_the_policy(hold: bool) -> None:
    cfg = parse_config({"policy": {"hold_nodes": hold, "consolidate": not hold, "preempt_onprem": hold,
                                   "defer_to_budget": not hold}})
    policy = build_policy("burster", cfg, cost_model(cfg))
    assert isinstance(policy, BursterPolicy)
    assert (policy.params.reclaim.hold_nodes, policy.params.reclaim.consolidate) == (hold, not hold)
    assert policy.params.preempt_onprem is hold
    assert policy.params.burst.defer_to_budget is not hold
    assert parse_config({}).policy.defer_to_budget and BursterPolicy().params.burst.defer_to_budget  # on by default


def test_the_defer_margin_reaches_the_policy_and_is_range_checked() -> None:
    cfg = parse_config({"policy": {"defer_margin_s": 600}})
    policy = build_policy("burster", cfg, cost_model(cfg))
    assert isinstance(policy, BursterPolicy) and policy.params.burst.defer_margin_s == 600
    with pytest.raises(ConfigError) as info:
        parse_config({"policy": {"defer_margin_s": -1}})
    assert "policy.defer_margin_s" in str(info.value) and "greater than or equal to 0" in str(info.value)


def test_correcting_estimates_is_on_by_default_and_can_be_turned_off() -> None:
    on = build_policy("burster", parse_config({}), cost_model(parse_config({})))
    cfg = parse_config({"policy": {"correct_estimates": False}})
    off = build_policy("burster", cfg, cost_model(cfg))
    assert isinstance(on, BursterPolicy) and on.params.correct_estimates
    assert isinstance(off, BursterPolicy) and not off.params.correct_estimates


@pytest.mark.parametrize(("key", "value", "default", "bad", "why"), [
    ("defer_quantile", 0.2, 0.05, 1.5, "less than or equal to 1"),
    ("market_quantile", 0.75, 0.9, -0.1, "greater than or equal to 0"),
])
def test_a_quantile_reaches_the_burst_rule_defaults_as_the_policy_does_and_is_range_checked(
        key: str, value: float, default: float, bad: float, why: str) -> None:
    cfg = parse_config({"policy": {key: value}})
    policy = build_policy("burster", cfg, cost_model(cfg))
    assert isinstance(policy, BursterPolicy) and getattr(policy.params.burst, key) == value
    assert getattr(parse_config({}).policy, key) == getattr(BursterPolicy().params.burst, key) == default
    with pytest.raises(ConfigError) as info:
        parse_config({"policy": {key: bad}})
    assert f"policy.{key}" in str(info.value) and why in str(info.value)


def test_exclusive_nodes_on_and_standby_off_by_default_reach_the_policy_and_are_range_checked() -> None:
    default = build_policy("burster", parse_config({}), cost_model(parse_config({})))
    assert isinstance(default, BursterPolicy)
    assert default.params.exclusive_nodes and not default.params.standby.enabled
    assert (BursterPolicy().params.exclusive_nodes, BursterPolicy().params.standby.enabled) == (True, False)
    assert default.params.risk_switch and BursterPolicy().params.risk_switch
    off = parse_config({"policy": {"risk_switch": False}})
    no_risk = build_policy("burster", off, cost_model(off))
    assert isinstance(no_risk, BursterPolicy) and not no_risk.params.risk_switch
    cfg = parse_config({"policy": {"exclusive_nodes": False, "standby": True, "standby_window_s": 1800}})
    policy = build_policy("burster", cfg, cost_model(cfg))
    assert isinstance(policy, BursterPolicy) and not policy.params.exclusive_nodes
    assert policy.params.standby.enabled and policy.params.standby.window_s == 1800
    with pytest.raises(ConfigError) as info:
        parse_config({"policy": {"standby_window_s": 30}})
    assert "policy.standby_window_s" in str(info.value) and "greater than or equal to 60" in str(info.value)


def test_boot_spread_reaches_the_cost_model_and_is_range_checked() -> None:
    assert cost_model(parse_config({})).p.launch_latency_sigma == 0.25
    assert cost_model(parse_config({"cost": {"launch_latency_sigma": 0}})).p.launch_latency_sigma == 0.0
    with pytest.raises(ConfigError) as info:
        parse_config({"cost": {"launch_latency_sigma": 3}})
    assert "cost.launch_latency_sigma" in str(info.value) and "less than or equal to 2" in str(info.value)


def test_the_budget_period_is_monthly_by_default_reaches_the_reconciler_and_lists_the_valid_ones() -> None:
    assert parse_config({}).budget.period == "month"
    trace = load_trace(DEMO_TRACE, "philly")
    sim = build_simulation(parse_config({"budget": {"period": "week"}}), trace, policy="burster", seed=0, days=0.1)
    assert sim.reconciler.budget_period == "week"
    with pytest.raises(ConfigError) as info:
        parse_config({"budget": {"period": "year"}})
    assert "budget.period" in str(info.value) and "'month', 'week', 'day' or 'all'" in str(info.value)


def test_the_join_timeout_reaches_the_policy_and_is_range_checked() -> None:
    assert parse_config({}).policy.join_timeout_s == 1200.0
    config = parse_config({"policy": {"join_timeout_s": 900}})
    policy = build_policy("burster", config, cost_model(config))
    assert isinstance(policy, BursterPolicy) and policy.params.reclaim.join_timeout_s == 900.0
    with pytest.raises(ConfigError) as info:
        parse_config({"policy": {"join_timeout_s": 30}})
    assert "policy.join_timeout_s" in str(info.value) and "greater than or equal to 60" in str(info.value)


@pytest.mark.parametrize(("join_s", "boot_s"), [(60, 180), (600, 600), (1200, 1800)])
def test_a_join_timeout_no_longer_than_the_boot_is_refused_naming_both_keys(
        tmp_path: Path, join_s: int, boot_s: int) -> None:
    path = _written(tmp_path / "burster.toml", join_s, boot_s)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).splitlines() == [
        f"invalid configuration in {path}:",
        f"  policy.join_timeout_s: {join_s} s is not longer than cost.launch_latency_s ({boot_s} s, a node's "
        "modelled boot and join): every burst node would be terminated before it joined; raise the timeout "
        "above the boot"]
    ok = load_config(_written(tmp_path / "ok.toml", join_s, join_s - 1))  # a second under the timeout
    assert (ok.policy.join_timeout_s, ok.cost.launch_latency_s) == (join_s, join_s - 1)


def _written(path: Path, join_s: int, boot_s: int) -> Path:
    path.write_text(f"[policy]\njoin_timeout_s = {join_s}\n[cost]\nlaunch_latency_s = {boot_s}\n")
    return path


def test_an_unknown_policy_in_a_file_names_the_file_and_key(tmp_path: Path) -> None:
    """It used to pass the config and fail later, after the trace loaded, naming neither."""
    path = tmp_path / "c.toml"
    path.write_text('[policy]\nname = "foo"\n')
    with pytest.raises(ConfigError, match=r"invalid configuration in .*c\.toml:\n  policy\.name: unknown policy; "
                       r"valid: burster, reserved-only, on-demand, greedy-spot, uniform-progress, compute-wait"):
        load_config(path)


def test_the_policy_names_the_config_accepts_are_the_ones_the_app_builds() -> None:
    from burster.app import POLICIES
    from burster.config import POLICY_NAMES

    assert tuple(POLICIES) == POLICY_NAMES


def test_a_notice_table_naming_one_provider_keeps_the_others_defaults() -> None:
    """`interruption_notice_s = {aws = 90}` used to leave GCP and Azure at 0 s of notice."""
    config = parse_config({"cost": {"interruption_notice_s": {"aws": 90}}})
    assert config.cost.interruption_notice_s == {"aws": 90.0, "gcp": 30.0, "azure": 30.0}
    assert cost_model(config).p.interruption_notice_s == {"aws": 90.0, "gcp": 30.0, "azure": 30.0}
