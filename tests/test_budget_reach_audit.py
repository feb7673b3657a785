"""Rules that a mutation audit of the budget stop's reach, lost-launch replays, unconfigured providers
and the agent found no test pinned (helper-73): the reach counts every node of a gang and never an
idle node's burn twice, refuses (not holds) a held-back launch, and runs over the policy's own tick
(a baseline's too, which ticked at 10 s whatever controller.tick_s said); an unconfigured provider is
warned of again after it was configured a while; a lost launch made again that its adapter refuses
is reported; a host without NVML stops a repeating agent at once."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from burster.cli.agent import run_agent
from burster.errors import ConfigError
from burster.lifecycle import NodeState
from burster.model import Demand, Market, Node, Spend
from burster.plan import Hold, Plan
from policies.baselines import GreedySpotPolicy
from policies.burster import BursterParams, BursterPolicy
from policies.guards import GuardParams, apply_guards
from policies.reclaim import ReclaimParams
from providers.nvml import GpuUnavailableError
from tests.policies.test_budget_room import DEAR, GUARDS, _short, _snap
from tests.policies.test_guards import COST, NOW, PARAMS, no_reserved_room
from tests.test_reconcile_launch_failures import lost_gang_listed_in_part
from tests.test_reconciler import CHEAP, World
from tests.test_reconciler_edges import adopted


def test_every_node_of_a_kept_gang_burns_within_the_reach_of_the_next_launch() -> None:
    """Two nodes at $36/h kept first: 3.00 + 108 x 260 s = 10.80; counted once, 8.20 would have fit."""
    pair = replace(_short(), count=2, request_id="rq-pair", job_id="pair")
    plan = apply_guards(Plan((pair, _short())), _snap(spent=3.0), GUARDS, tick_s=10.0)
    assert plan.launches == (pair,) and "would stop it at the next pass" in plan.refused[0][1]


def test_a_gang_launch_burns_all_its_nodes_within_the_reach() -> None:
    """5.00 + 72 x 260 s = 10.20: one node's burn (7.60) would have let it go."""
    pair = replace(_short(), count=2)
    plan = apply_guards(Plan((pair,)), _snap(spent=5.0), GUARDS, tick_s=10.0)
    assert plan.launches == () and "would stop it at the next pass" in plan.refused[0][1]


def test_a_held_back_launch_the_stop_would_end_is_refused_not_held() -> None:
    """Were there room it would still not launch: a budget refuses it, so it is not held for room."""
    plan = apply_guards(Plan((), held_back=((_short(), "waiting for room"),)), _snap(spent=7.5), GUARDS, tick_s=10.0)
    assert plan.held_back == () and "would stop it at the next pass" in plan.refused[0][1]


def test_the_policies_weigh_a_launch_over_their_own_ticks_reach() -> None:
    """A 60 s tick: 9.93 + 0.90/h x 360 s = 10.02 is past $10 (at a 10 s tick, 260 s, it would fit)."""
    short = Demand("short", 1, NOW - timedelta(hours=2), 60, gpu_model="V100")
    snap = replace(no_reserved_room((short,), 0), spend=Spend(total_usd=9.93))
    guards = GuardParams(total_budget_usd=10.0, stop_grace_s=120.0)
    greedy = GreedySpotPolicy(COST, guards, tick_s=60.0)
    assert greedy.reclaim_params == ReclaimParams(idle_ttl_s=600.0, move_back=False, tick_s=60.0)
    for policy in (BursterPolicy(COST, BursterParams(burst=PARAMS, guards=guards, reclaim=ReclaimParams(tick_s=60.0))),
                   greedy):
        plan = policy.decide(snap)
        assert plan.launches == () and plan.refused[0][1].endswith("for the stop's 360s reach"), policy


def _idle_dear(node_id: str = "c1") -> Node:
    return Node(node_id, replace(DEAR, market=Market.SPOT), NodeState.READY, NOW - timedelta(hours=1), "rq-c1",
                idle_since=NOW)


def test_an_idle_node_handed_a_job_is_not_refused_by_the_stops_reach() -> None:
    """At a 60 s tick the reach is 360 s: 6.50 + 36 x 360 s = 10.10 is past $10 already, with or without
    the job (the node burns idle); its committed 6.50 + 3.00 TTL + 0.36 = 9.86 fits, so it goes."""
    hold = Hold("c1", "h", NOW, NOW, "hand c1 to h", est_hours=0.01)
    assert apply_guards(Plan((hold,)), _snap(_idle_dear(), spent=6.5), GUARDS, tick_s=60.0).actions == (hold,)


def test_an_idle_node_handed_a_job_adds_no_burn_for_a_later_launch() -> None:
    """4.00 + (36 idle + 36) x 260 s = 9.20 fits; the handed node's burn counted again, 11.80 would not."""
    hold = Hold("c1", "h", NOW, NOW, "hand c1 to h", est_hours=0.01)
    plan = apply_guards(Plan((hold, _short())), _snap(_idle_dear(), spent=4.0), GUARDS, tick_s=10.0)
    assert plan.actions == (hold, _short())


def test_an_unconfigured_provider_is_warned_of_again_after_it_was_configured_a_while(
        caplog: pytest.LogCaptureFixture) -> None:
    """Same node count as when last warned, but it went away and came back: a new situation to say."""
    w = World()
    adopted(w, CHEAP)
    with caplog.at_level("WARNING", logger="burster.reconcile"):
        w.rec.nodes.unconfigured(())
        w.rec.nodes.unconfigured(())
        w.rec.nodes.unconfigured(("fake",))
        w.rec.nodes.unconfigured(())
    assert sum(r.getMessage().startswith("provider fake is not configured") for r in caplog.records) == 2


def test_a_lost_launch_made_again_that_its_adapter_refuses_is_reported_and_the_pass_goes_on() -> None:
    """The config changed since (its zone left clouds.fake.zones): the adapter's ConfigError is one failed
    action that clears the intent, not an error escaping the pass (and every pass after: the intent stood)."""
    w, (_, second), _ = lost_gang_listed_in_part()
    error = ConfigError("fake: cannot launch it: its zone is not in clouds.fake.zones")
    real_launch = w.cloud.launch

    def refuse_once(*args: object, **kwargs: object) -> object:
        w.cloud.launch = real_launch  # type: ignore[method-assign]
        raise error
    w.cloud.launch = refuse_once  # type: ignore[method-assign,assignment]
    w.clock.advance(10)
    report = w.rec.run_once()
    assert report.errors == [f"launch {second.request_id} made again failed: {error}"]
    assert not w.rec.state.intents  # refused for good: not made again every pass


def test_a_host_without_nvml_stops_a_repeating_agent_at_once() -> None:
    """Unlike a failed read or send, no later report can do better: exit 3, not N warnings then exit 2."""
    reads: list[int] = []

    def no_nvml() -> tuple[object, ...]:
        reads.append(1)
        raise GpuUnavailableError("NVML cannot start: no NVIDIA driver")

    with pytest.raises(GpuUnavailableError):
        run_agent(no_nvml, lambda _: None, count=3, interval_s=1.0, sleep=lambda _: None)
    assert len(reads) == 1


@pytest.mark.parametrize("name", ["on-demand", "greedy-spot", "uniform-progress", "compute-wait"])
def test_a_baseline_ticks_at_the_controllers_tick(name: str) -> None:
    """Its idle reclaim and budget stop ticked at 10 s whatever controller.tick_s said (helper-73's note)."""
    from burster.app import build_policy
    from burster.config import parse_config

    policy: Any = build_policy(name, parse_config({"controller": {"tick_s": 60.0}}), COST)
    assert policy.reclaim_params.tick_s == 60.0
    assert type(policy).reclaim_params.tick_s == 10.0  # the class's own, unchanged for other instances
    assert policy.reclaim_params.idle_ttl_s == type(policy).reclaim_params.idle_ttl_s
