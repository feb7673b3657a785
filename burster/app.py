"""The one wiring module: configuration -> policies, cost model, adapters, reconciler, simulation."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from burster.catalog import load_catalog
from burster.clock import FakeClock
from burster.config import PROVIDERS, BursterConfig
from burster.errors import ConfigError
from burster.interfaces import Policy
from burster.model import Demand, Market, Offering
from burster.reconciler import Reconciler
from burster.shared_data import shared_data_dir as shared_data_dir  # re-exported for callers of app
from burster.signalfile import AnnouncedSignal, load_signals
from burster.state import MemoryState
from burster.traces import Trace
from policies.baselines import (
    BaselinePolicy,
    ComputeWaitPolicy,
    GreedySpotPolicy,
    OnDemandPolicy,
    ReservedOnlyPolicy,
    UniformProgressPolicy,
)
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams, checkpoint_due_s
from policies.guards import GuardParams
from policies.rank import start_by
from policies.reclaim import ReclaimParams
from policies.standby import StandbyParams
from providers.sim.spot import SpotSeries, load_series, load_series_path, series_for, synthesize

BUNDLED = Path(__file__).parent / "data"
DEMO_TRACE = BUNDLED / "traces" / "philly_mix1_week_sample.csv.gz"
_log = logging.getLogger("burster.traces")  # shown as the trace loader's summaries are (``burster.cli``)


def cost_model(config: BursterConfig, rates: dict[str, float] | None = None) -> CostModel:
    c = config.cost
    return CostModel(CostParams(
        onprem_usd_per_gpu_hour=c.onprem_usd_per_gpu_hour, restart_overhead_s=c.restart_overhead_s,
        wait_value_usd_per_gpu_hour=c.wait_value_usd_per_gpu_hour, deadline_miss_usd=c.deadline_miss_usd,
        spot_interruptions_per_hour=c.spot_interruptions_per_hour, launch_latency_s=c.launch_latency_s,
        launch_latency_sigma=c.launch_latency_sigma,
        interruption_rates=rates or {}, checkpoint_write_s=c.checkpoint_write_s,
        interruption_notice_s=dict(c.interruption_notice_s),
    ))


def guard_params(config: BursterConfig) -> GuardParams:
    b, g = config.budget, config.guards
    return GuardParams(
        total_budget_usd=b.total_usd, team_budget_usd=dict(b.team_usd), soft_fraction=b.soft_fraction,
        max_nodes=g.max_nodes, max_launches_per_minute=g.max_launches_per_minute,
        protected_node_ids=frozenset(g.protected_node_ids), idle_ttl_s=config.policy.idle_ttl_s,
        boot_s=config.cost.launch_latency_s, stop_grace_s=checkpoint_due_s(config.cost.checkpoint_write_s),
        checkpoint_write_s=config.cost.checkpoint_write_s,
    )


def burst_params(config: BursterConfig) -> BurstParams:
    """Burster's burst parameters from the ``[policy]`` section (also the ranked queue's rule)."""
    p = config.policy
    return BurstParams(max_wait_s=p.max_wait_s, deadline_margin_s=p.deadline_margin_s, prewarm=p.prewarm,
                       defer_to_budget=p.defer_to_budget, defer_margin_s=p.defer_margin_s,
                       defer_quantile=p.defer_quantile, market_quantile=p.market_quantile,
                       price_late=p.price_late)


def _burster(config: BursterConfig, cost: CostModel) -> Policy:
    p = config.policy
    return BursterPolicy(cost, BursterParams(
        burst=burst_params(config),
        reclaim=ReclaimParams(idle_ttl_s=p.idle_ttl_s, tick_s=config.controller.tick_s,
                              join_timeout_s=p.join_timeout_s,
                              move_back=p.reclaim_to_onprem, hold_nodes=p.hold_nodes, consolidate=p.consolidate,
                              requeue=config.pool.requeue),
        guards=guard_params(config),
        preempt_onprem=p.preempt_onprem,
        correct_estimates=p.correct_estimates,
        exclusive_nodes=p.exclusive_nodes,
        risk_switch=p.risk_switch,
        standby=StandbyParams(enabled=p.standby, window_s=p.standby_window_s),
    ))


def _baseline(cls: type[BaselinePolicy]) -> Callable[[BursterConfig, CostModel], Policy]:
    """A baseline with the config's guards, its idle reclaim and budget stop ticking at
    ``controller.tick_s`` (the class's own reclaim rule ticked at 10 s whatever the config said)."""
    return lambda config, cost: cls(cost, guard_params(config), tick_s=config.controller.tick_s)


POLICIES: dict[str, Callable[[BursterConfig, CostModel], Policy]] = {
    "burster": _burster,
    "reserved-only": lambda config, cost: ReservedOnlyPolicy(cost, guard_params(config)),
    "on-demand": _baseline(OnDemandPolicy),
    "greedy-spot": _baseline(GreedySpotPolicy),
    "uniform-progress": _baseline(UniformProgressPolicy),
    "compute-wait": _baseline(ComputeWaitPolicy),
}


def build_policy(name: str, config: BursterConfig, cost: CostModel) -> Policy:
    if name not in POLICIES:
        raise ConfigError(f"unknown policy {name!r}; valid: {', '.join(POLICIES)}")
    return POLICIES[name](config, cost)


def spot_series(seed: int, spot_dir: Path | None = None) -> tuple[list[SpotSeries], str]:
    """Real spot traces when present, else the bundled calibrated model. Returns (series, source)."""
    import json

    if spot_dir is not None:
        return load_series_path(spot_dir), f"traces in {spot_dir}"
    root = shared_data_dir()
    real = load_series(root)
    if real:
        return real, f"traces in {root}"
    stats = json.loads((BUNDLED / "spot_model.json").read_text())["series"]
    return synthesize(stats, seed), "bundled model calibrated to the public spot traces"


def interruption_rates(offerings: Sequence[Offering], series: Sequence[SpotSeries]) -> dict[str, float]:
    """Observed interruptions per hour of each spot offering's series (drops per available hour)."""
    rates: dict[str, float] = {}
    per_series: dict[int, float] = {}  # by the series itself: two files may share a name
    for o in offerings:
        if o.market is not Market.SPOT:
            continue
        s = series_for(o, series)
        if s is None:
            continue
        if id(s) not in per_series:
            up_h = sum(v > 0 for v in s.data) * s.gap_s / 3600.0
            per_series[id(s)] = len(s.drops()) / up_h if up_h else 10.0
        rates[o.key] = per_series[id(s)]
    return rates


MAX_WINDOW_DAYS = 365.0


def check_window(days: float | None, start_day: float) -> None:
    """A replay window the simulator can run: (0, 365] days long, starting within 3650 days."""
    if days is not None and not (0 < days <= MAX_WINDOW_DAYS):
        raise ConfigError(f"--days must be in (0, {MAX_WINDOW_DAYS:g}]; got {days:g}")
    if not (0 <= start_day <= 10 * MAX_WINDOW_DAYS):
        raise ConfigError(f"--start-day must be in [0, {10 * MAX_WINDOW_DAYS:g}] days from the trace start; "
                          f"got {start_day:g}")


def check_models(jobs: Sequence[Demand], offerings: Sequence[Offering], pool_model: str | None,
                  providers: Sequence[str]) -> None:
    """Every job can run somewhere: on the pool (its GPU model) or on an offering of its model."""
    if not offerings:
        raise ConfigError(f"the price catalog has no offerings on {', '.join(providers)}; check --prices "
                          "and --providers")
    known = _known_models(offerings, pool_model)
    stranded = sorted({j.gpu_model for j in jobs if j.gpu_model not in known})
    if stranded:
        count = sum(j.gpu_model in stranded for j in jobs)
        raise ConfigError(f"{count} job(s) need GPU model(s) {', '.join(stranded)} that neither the pool "
                          f"{_nobody_offers(offerings, pool_model)}: fix the trace's gpu_model or pool.gpu_model)")


def check_signal_models(announced: Sequence[AnnouncedSignal], offerings: Sequence[Offering],
                        pool_model: str | None) -> None:
    """Every signal's GPU model is one the pool or the catalog has (else pre-warm finds nothing)."""
    known = _known_models(offerings, pool_model)
    for a in announced:
        if a.signal.gpu_model and a.signal.gpu_model not in known:
            raise ConfigError(f"signal {a.signal.source!r} needs GPU model {a.signal.gpu_model!r}, which neither "
                              f"the pool {_nobody_offers(offerings, pool_model)})")


def _known_models(offerings: Sequence[Offering], pool_model: str | None) -> set[str]:
    return {o.gpu_model for o in offerings} | ({pool_model} if pool_model else set())


def _nobody_offers(offerings: Sequence[Offering], pool_model: str | None) -> str:
    """The end of a "neither the pool ... nor the catalog offers" error: what each has."""
    return (f"({pool_model or 'no nodes'}) nor the catalog offers; catalog models: "
            f"{', '.join(sorted({o.gpu_model for o in offerings}))} (names are case-sensitive")


@dataclass
class Simulation:
    world: object
    reconciler: Reconciler
    clock: FakeClock
    end: datetime
    pool_gpus: int
    spot_source: str


def queue_ranker(config: BursterConfig, cost: CostModel) -> Callable[[Demand], datetime] | None:
    """The start-by rule of a ranked pool queue (``pool.order = "start_by"``), from the policy's wait
    budget and deadline margin; None for a FIFO pool."""
    if config.pool.order != "start_by":
        return None
    return functools.partial(start_by, cost=cost, params=burst_params(config))


def build_simulation(config: BursterConfig, trace: Trace, *, policy: str, seed: int,
                     prices: Path | None = None, spot_dir: Path | None = None,
                     providers: Sequence[str] = PROVIDERS, days: float | None = None,
                     start_day: float = 0.0, estimate_error: float = 0.0, estimate_bias: float = 1.0,
                     estimate_team_spread: float = 0.0, signals: Path | None = None,
                     state: Callable[[], MemoryState] | None = None) -> Simulation:
    """A simulated world and a reconciler over it; ``estimate_error``: lognormal sigma of the runtime
    estimates the controller sees (0: exact; ``burster.sim.estimates``), ``estimate_bias`` their factor,
    ``estimate_team_spread`` the lognormal sigma of each team's own factor; ``signals``: a signals
    file (``burster.signalfile``) the controller sees as Jira sprints; ``state``: opens where the
    controller keeps its state, once every input is checked (default: in memory;
    ``burster.sqlstate.SqlState.open``: a database)."""
    from burster.sim.estimates import ratios_before, with_estimate_error
    from providers.sim.signals import SimSignals
    from providers.sim.world import SimWorld

    unknown = [p for p in providers if p not in PROVIDERS]
    if unknown:
        raise ConfigError(f"unknown provider(s) {', '.join(unknown)}; valid: {', '.join(PROVIDERS)}")
    check_window(days, start_day)
    start, end = trace.window(start_day, days)
    if days is not None and start < end < start + timedelta(days=days):
        _log.warning("%s: day %g + %g d runs past the trace's last day (%d); replayed to its end (day %g + %g d)",
                     trace.name, start_day, days, trace.last_day, start_day, (end - start) / timedelta(days=1))
    model = config.pool.gpu_model
    jobs = [j if j.gpu_model else replace(j, gpu_model=model) for j in trace.jobs if start <= j.submitted_at < end]
    if not jobs:
        span = (trace.end - trace.day(0)).total_seconds() / 86400
        length = "to the end" if days is None else f"+ {days:g} d"
        # rounded down: a window starting by the day given reaches the last arrival
        raise ConfigError(f"no jobs submitted in day {start_day:g} {length} of {trace.name}; its arrivals span "
                          f"days 0 to {math.floor(span * 100) / 100:.2f} (check --start-day and --days)")
    jobs, runtimes = with_estimate_error(jobs, estimate_error, seed, trace.estimates, estimate_bias,
                                         team_spread=estimate_team_spread)
    history = ratios_before(trace.jobs, start, estimate_error, seed, trace.estimates, estimate_bias,
                            team_spread=estimate_team_spread)
    offerings = load_catalog(prices, providers) if prices else load_catalog(providers=providers)
    check_models(jobs, offerings, model if config.pool.nodes > 0 else None, providers)
    announced = load_signals(signals) if signals is not None else ()
    check_signal_models(announced, offerings, model if config.pool.nodes > 0 else None)
    series, source = spot_series(seed, spot_dir)
    cost = cost_model(config, interruption_rates(offerings, series))
    clock = FakeClock(start)
    world = SimWorld(clock=clock, jobs=jobs, offerings=offerings, providers=providers,
                     pool_nodes=config.pool.nodes, gpus_per_node=config.pool.gpus_per_node,
                     gpu_model=model, series=series, seed=seed, checkpoint_s=config.cost.checkpoint_write_s,
                     restart_s=config.cost.restart_overhead_s, requeue=config.pool.requeue, runtimes=runtimes,
                     ranker=queue_ranker(config, cost),
                     history=history, signals=SimSignals(announced) if announced else None)
    world.pool.metrics.window_end = end
    reconciler = Reconciler(providers=world.clouds, pool=world.pool, policy=build_policy(policy, config, cost),
                            clock=clock, state=state() if state is not None else None,
                            budget_period=config.budget.period, signals=[world.signals] if world.signals else ())
    drain_end = end + timedelta(days=7)  # let the last jobs finish
    return Simulation(world, reconciler, clock, drain_end, config.pool.nodes * config.pool.gpus_per_node,
                      source)

