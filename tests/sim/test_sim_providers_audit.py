"""Rules of the simulated providers that a mutation audit found unpinned: the spot model matches the
statistics it is calibrated to, offerings borrow series as documented, each cloud's notice and boot
latency, what a launch refuses and counts, a take-back as the cloud lists it, and the KPIs the pool
measures (per GPU, within the arrival window, deadlines of best-effort jobs)."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from burster.clock import FakeClock
from burster.errors import CapacityError, PartialLaunchError
from burster.model import Demand, JobClass, Market, Offering, Signal
from burster.shared_data import shared_data_dir
from burster.signalfile import AnnouncedSignal
from providers.sim.cloud import BOOT_S, SimCloudProvider
from providers.sim.events import EventQueue
from providers.sim.metrics import PoolMetrics
from providers.sim.onprem import OnPremNodes
from providers.sim.pool import SimPool
from providers.sim.runtimes import RATIO_HISTORY, TrueRuntimes
from providers.sim.signals import SimSignals
from providers.sim.spot import SpotSeries, calibrate, load_series, load_series_path, series_for, synthesize

T0 = datetime(2026, 1, 5, tzinfo=UTC)
ZONE = {"aws": ("us-west-2", "usw2-az1"), "gcp": ("us-central1", "us-central1-a"), "azure": ("eastus", "eastus-1")}


def offering(provider: str = "aws", market: Market = Market.SPOT, gpu: str = "V100") -> Offering:
    return Offering(provider, *ZONE[provider], f"{gpu.lower()}x8", gpu, 8, market, 7.3)


def cloud_of(
    provider: str = "aws", data: tuple[int, ...] = (1,), *, offerings: list[Offering] | None = None, seed: int = 0
) -> tuple[FakeClock, SimPool, SimCloudProvider]:
    clock = FakeClock(T0)
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    pool.events.before = pool.metrics.advance
    pool.metrics.advance(T0)
    offers = offerings or [offering(provider), offering(provider, Market.ON_DEMAND)]
    cloud = SimCloudProvider(
        provider,
        offers,
        events=pool.events,
        pool=pool,
        now=clock.now,
        start=T0,
        series=[SpotSeries("audit", provider, "V100", 600.0, data)],
        seed=seed,
    )
    return clock, pool, cloud


def entry(name: str = "e", *, up_s: float, down_s: float, availability: float, ticks: int = 20_000) -> dict:
    return {
        "name": name,
        "provider": "aws",
        "gpu_model": "V100",
        "gap_s": 60.0,
        "ticks": ticks,
        "availability": availability,
        "mean_up_s": up_s,
        "mean_down_s": down_s,
    }


# --- spot.py -----------------------------------------------------------------------------------
STAGED = shared_data_dir()
BUNDLED = Path(__file__).resolve().parents[2] / "burster" / "data" / "spot_model.json"


@pytest.mark.skipif(not (STAGED / "skypilot_spot_traces").is_dir(), reason="spot traces not staged")
def test_the_staged_traces_replay_as_their_readmes_describe_them() -> None:
    """Seconds per value as in the READMEs' tables, 1 = up; the 30-day V100 slice's mean availability
    from 0.16 (us-east-1a) to 0.88 (us-west-2b); and the bundled model is exactly their statistics."""
    series = load_series(STAGED)
    by_set = {(s.name.split("/")[0], s.provider, s.gpu_model, s.gap_s) for s in series}
    assert by_set == {
        ("aws-02-15-2023", "aws", "V100", 195.0),
        ("aws-10-26-2022", "aws", "V100", 600.0),
        ("aws-10-26-2022", "aws", "K80", 600.0),
        ("aws-08-27-2023", "aws", "V100", 300.0),
        ("GCP1", "gcp", "A100", 150.0),
    }
    assert sum(s.provider == "aws" and s.gpu_model == "V100" for s in series) == 16
    up = {s.name: sum(v > 0 for v in s.data) / len(s.data) for s in series if s.name.startswith("aws-02-15")}
    assert min(up, key=up.__getitem__).endswith("us-east-1a_v100_1") and round(min(up.values()), 2) == 0.16
    assert max(up, key=up.__getitem__).endswith("us-west-2b_v100_1") and round(max(up.values()), 2) == 0.88
    assert calibrate(series) == json.loads(BUNDLED.read_text())["series"]


def test_a_value_holds_for_its_whole_tick_and_only_a_fall_to_zero_nodes_is_a_drop() -> None:
    """A 16-node trace counts nodes: 16 -> 3 still has spot nodes; 3 -> 0 and 16 -> 0 are drops."""
    s = SpotSeries("16-node", "aws", "V100", 600.0, (16, 3, 0, 16, 0))
    assert s.available(599.9) and s.available(1199.0) and not s.available(1200.0)
    assert s.drops() == [1200.0, 2400.0]
    wraps = SpotSeries("wraps", "aws", "V100", 600.0, (0, 1))  # comes back up at each span's start
    assert wraps.next_flip(1199.0) == 1200.0 and wraps.next_flip(1200.0) == 1800.0


def test_calibrate_measures_every_whole_run_and_availability_to_four_places() -> None:
    s = SpotSeries("runs", "aws", "V100", 10.0, (1, 1, 0, 0, 0, 1, 1, 1, 0))  # up 2, 3; down 3, 1
    (stats,) = calibrate([s])
    assert stats == {
        "name": "runs",
        "provider": "aws",
        "gpu_model": "V100",
        "gap_s": 10.0,
        "ticks": 9,
        "availability": 0.5556,
        "mean_up_s": 25.0,
        "mean_down_s": 20.0,
    }


def test_the_model_series_has_the_run_lengths_it_was_calibrated_to() -> None:
    """Mean up 50 min, down 20 min: the Markov model gives them back (seeded; within 10 %)."""
    (made,) = synthesize([entry(up_s=3000.0, down_s=1200.0, availability=0.714)], seed=1)
    (back,) = calibrate([made])
    assert back["mean_up_s"] == pytest.approx(3000.0, rel=0.1)
    assert back["mean_down_s"] == pytest.approx(1200.0, rel=0.1)
    assert back["availability"] == pytest.approx(0.714, abs=0.05)


def test_a_zone_never_up_in_its_trace_starts_down_and_stays_nearly_so() -> None:
    """The bundled model has such a zone (SpotHedge us-east1-b: 770 ticks at 0)."""
    (made,) = synthesize([entry(up_s=0.0, down_s=115_500.0, availability=0.0, ticks=770)], seed=0)
    assert made.data[0] == 0 and sum(made.data) <= 5


def test_a_zone_never_down_in_its_trace_comes_straight_back_after_a_fall() -> None:
    (made,) = synthesize([entry(up_s=6000.0, down_s=0.0, availability=1.0)], seed=0)
    assert made.data[0] == 1 and sum(made.data) / len(made.data) > 0.98


def test_each_modelled_zone_draws_its_own_chances() -> None:
    a, b = synthesize(
        [
            entry("a", up_s=3000.0, down_s=1200.0, availability=0.7),
            entry("b", up_s=3000.0, down_s=1200.0, availability=0.7),
        ],
        seed=0,
    )
    assert a.data != b.data


def test_an_offering_borrows_its_clouds_gpu_series_then_the_gpus_then_any() -> None:
    aws_v100 = [SpotSeries(f"aws-v100-{k}", "aws", "V100", 600.0, (1,)) for k in range(3)]
    gcp_v100 = [SpotSeries(f"gcp-v100-{k}", "gcp", "V100", 600.0, (1,)) for k in range(3)]
    gcp_a100 = SpotSeries("gcp-a100", "gcp", "A100", 600.0, (1,))
    every = [*aws_v100, *gcp_v100, gcp_a100]
    zones = [replace(offering("aws"), zone=f"usw2-az{k}") for k in range(12)]
    assert {series_for(o, every).name for o in zones} == {s.name for s in aws_v100}  # type: ignore[union-attr]
    assert series_for(offering("azure"), every) in (*aws_v100, *gcp_v100)
    assert series_for(offering("aws", gpu="H100"), every) in every
    assert series_for(offering("aws"), []) is None


def test_words_above_the_folder_given_name_no_cloud(tmp_path: Path) -> None:
    mine = tmp_path / "gcp-work" / "mine"
    mine.mkdir(parents=True)
    (mine / "zone3.json").write_text(json.dumps({"metadata": {"gap_seconds": 60}, "data": [1, 0]}))
    ((name, provider, gpu),) = [(s.name, s.provider, s.gpu_model) for s in load_series_path(mine)]
    assert (name, provider, gpu) == ("mine/zone3", "", "")


# --- cloud.py ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("provider", "notice_s"), [("aws", 120), ("gcp", 30), ("azure", 30)])
def test_each_cloud_takes_a_spot_node_back_its_notice_after_the_drop(provider: str, notice_s: int) -> None:
    _, pool, cloud = cloud_of(provider, (1, 0))
    (node,) = cloud.launch(offering(provider), 1, request_id="r")
    pool.events.run_until(T0 + timedelta(seconds=600 + notice_s - 1))
    (notice,) = cloud.interruptions()
    assert (notice.notice_at, notice.terminate_at) == (
        T0 + timedelta(seconds=600),
        T0 + timedelta(seconds=600 + notice_s),
    )
    assert [n.state.name for n in cloud.list_nodes()] == ["READY"]  # still up until the notice runs out
    pool.events.run_until(notice.terminate_at)
    (gone,) = cloud.list_nodes()
    assert gone.node_id == node.node_id and gone.state.name == "TERMINATED" and gone.ended_at == notice.terminate_at


@pytest.mark.parametrize("provider", ["aws", "gcp", "azure"])
def test_each_clouds_median_boot_is_its_documented_one_plus_the_join(provider: str) -> None:
    _, pool, cloud = cloud_of(provider, seed=3)
    boots = []
    for k in range(301):
        cloud.launch(offering(provider, Market.ON_DEMAND), 1, request_id=f"r{k}")
    while (at := pool.events.next_time()) is not None:
        boots.append((at - T0).total_seconds())
        pool.events.run_until(at)
    assert statistics.median(boots) == pytest.approx(BOOT_S[provider] + 60.0, rel=0.05)
    assert {"aws": 100.0, "gcp": 80.0, "azure": 140.0}[provider] == BOOT_S[provider]
    assert max(boots) - min(boots) > 0.5 * BOOT_S[provider]  # a lognormal spread, not one latency


def test_a_cloud_offers_its_own_catalog_with_only_spot_tied_to_the_series() -> None:
    mine = [offering("aws"), offering("aws", Market.ON_DEMAND)]
    clock, _, cloud = cloud_of("aws", (0, 1), offerings=[*mine, offering("gcp"), offering("gcp", Market.ON_DEMAND)])
    assert [(o.key, o.available) for o in cloud.offerings()] == [(mine[0].key, False), (mine[1].key, True)]
    cloud.launch(mine[1], 1, request_id="od")  # on-demand launches while the spot series is at 0
    clock.advance(600)
    assert [o.available for o in cloud.offerings()] == [True, True]


def test_a_spot_launch_while_its_series_is_at_zero_is_refused_and_launches_nothing() -> None:
    clock, _, cloud = cloud_of("aws", (1, 0))
    clock.advance(600)
    with pytest.raises(CapacityError) as info:
        cloud.launch(offering("aws"), 2, request_id="r")
    assert info.value.offering_key == offering("aws").key
    assert cloud.list_nodes() == [] and cloud.launches == 0
    clock.advance(600)  # the series is up again (it repeats)
    assert len(cloud.launch(offering("aws"), 2, request_id="r")) == 2 and cloud.launches == 2


def test_a_capacity_of_three_nodes_is_used_up_across_launches() -> None:
    """``set_capacity``: at most that many more nodes; a launch beyond it is partial, then refused."""
    _, _, cloud = cloud_of()
    od = offering("aws", Market.ON_DEMAND)
    cloud.set_capacity(od.key, 3)
    assert len(cloud.launch(od, 2, request_id="a")) == 2
    with pytest.raises(PartialLaunchError) as info:
        cloud.launch(od, 2, request_id="b")
    assert len(info.value.nodes) == 1 and cloud.launches == 3
    with pytest.raises(CapacityError):
        cloud.launch(od, 1, request_id="c")
    cloud.set_capacity(od.key, None)
    assert len(cloud.launch(od, 5, request_id="d")) == 5


def test_a_launch_counts_each_node_and_ties_it_to_its_job_and_team() -> None:
    _, pool, cloud = cloud_of()
    nodes = cloud.launch(offering("aws", Market.ON_DEMAND), 3, request_id="g", labels={"job": "j", "team": "vision"})
    assert cloud.launches == 3
    assert {n.team for n in nodes} == {"vision"} and {n.team for n in cloud.list_nodes()} == {"vision"}
    assert {pool.burst[n.node_id].for_job for n in nodes} == {"j"}


def test_a_node_its_cloud_takes_back_stops_its_job_as_a_preemption() -> None:
    _, pool, cloud = cloud_of("aws", (1,) * 3 + (0,))
    pool.submit(Demand("a", 8, T0, 7200.0, gpu_model="V100"), T0)
    cloud.launch(offering("aws"), 1, request_id="r", labels={"job": "a"})
    pool.events.run_until(T0 + timedelta(seconds=1000))
    pool.schedule(T0 + timedelta(seconds=1000))
    assert [p.job.job_id for p in pool.running()] == ["a"]
    pool.events.run_until(T0 + timedelta(seconds=1800 + 120))
    assert (pool.metrics.preemptions, pool.metrics.reclaims) == (1, 0)
    assert [j.job_id for j in pool.pending()] == ["a"]


def test_the_next_availability_change_asked_before_an_earlier_ask_is_not_the_cached_one() -> None:
    _, _, cloud = cloud_of("aws", (1, 1, 0, 0, 1, 1))
    assert cloud.next_availability_change(T0 + timedelta(seconds=1300)) == T0 + timedelta(seconds=2400)
    assert cloud.next_availability_change(T0) == T0 + timedelta(seconds=1200)


# --- metrics.py --------------------------------------------------------------------------------
def job(name: str, gpus: int = 4, **kw: object) -> Demand:
    return Demand(name, gpus, T0, 3600.0, gpu_model="V100", **kw)  # type: ignore[arg-type]


def test_utilization_stops_at_the_arrival_window_and_stranded_hours_do_not() -> None:
    m = PoolMetrics(8, window_end=T0 + timedelta(hours=1))
    m.advance(T0)
    m.set_busy(2, cloud_gpus=8)  # 6 reserved GPUs idle, 8 GPUs of such jobs on the cloud: 6 stranded
    m.advance(T0 + timedelta(hours=2))
    m.advance(T0 + timedelta(hours=3))  # past the window's end already: no more (nor less) busy time
    assert (m.busy_gpu_s, m.elapsed_s, m.utilization) == (2 * 3600.0, 3600.0, 0.25)
    assert m.stranded_gpu_hours == 6 * 3.0
    m.advance(T0 + timedelta(hours=2))  # an earlier instant moves nothing back
    assert m.now == T0 + timedelta(hours=3) and m.elapsed_s == 3600.0
    assert PoolMetrics(8).utilization == 0.0


def test_gpu_hours_count_each_gpu_of_the_job() -> None:
    m = PoolMetrics(8)
    m.ran_on_cloud(job("a"), 1800.0)
    m.stopped(job("a"), lost_s=900.0, preempted=True)
    m.started(job("b"), T0, on_cloud=False)
    m.started(job("b", queued_at=T0 + timedelta(hours=1)), T0 + timedelta(hours=2), on_cloud=True)
    assert (m.cloud_gpu_hours, m.lost_gpu_hours, m.requeued_wait_gpu_hours) == (2.0, 1.0, 4.0)
    assert (m.preemptions, m.reclaims, m.waits_s, m.started_on_cloud) == (1, 0, [0.0], 0)


def test_the_wait_budget_is_a_quarter_of_the_true_runtime() -> None:
    m = PoolMetrics(8)
    m.started(job("long"), T0 + timedelta(seconds=1000), on_cloud=True, runtime_s=4000.0)
    m.started(job("short"), T0 + timedelta(seconds=1000), on_cloud=False, runtime_s=3000.0)
    assert (m.within_budget, m.started_on_cloud) == (1, 1)


def test_best_effort_jobs_miss_no_deadline_and_overdue_ones_count_by_class() -> None:
    m = PoolMetrics(8)
    dl = T0 + timedelta(hours=1)
    for name, cls in (
        ("be", JobClass.BEST_EFFORT),
        ("soft", JobClass.SOFT),
        ("hard", JobClass.STRICT),
        ("done", JobClass.STRICT),
    ):
        m.submitted(job(name, deadline=dl, job_class=cls))
    m.finished(job("done", deadline=dl, job_class=JobClass.STRICT), dl + timedelta(seconds=1))
    m.finished(job("be2", deadline=dl), dl + timedelta(hours=5))
    m.advance(T0)
    m.advance(dl)
    assert m.overdue() == (0, 0)  # at its deadline, not past it
    m.advance(dl + timedelta(seconds=1))
    assert m.overdue() == (2, 1) and (m.deadline_misses, m.hard_deadline_misses) == (1, 1)


# --- events.py, signals.py, runtimes.py, onprem.py ---------------------------------------------
def test_events_at_one_instant_run_in_order_each_after_the_clock_hook() -> None:
    seen: list[str] = []
    q = EventQueue(before=lambda t: seen.append(f"clock {(t - T0).seconds}"))
    for name in ("first", "second"):
        q.at(T0 + timedelta(seconds=5), lambda t, n=name: seen.append(n))  # type: ignore[misc]
    assert q.run_until(T0 + timedelta(seconds=5)) == 2
    assert seen == ["clock 5", "first", "clock 5", "second"]


def test_a_signal_is_gone_at_its_window_end_and_announced_only_after_now() -> None:
    sig = Signal("jira", 8.0, T0 + timedelta(hours=1), T0 + timedelta(hours=2))
    src = SimSignals([AnnouncedSignal(sig, T0)])
    assert src.seen(T0 + timedelta(hours=2) - timedelta(seconds=1)) and not src.seen(T0 + timedelta(hours=2))
    assert src.next_announcement(T0) is None and src.next_announcement(T0 - timedelta(seconds=1)) == T0


def test_the_runtime_ratio_is_true_over_estimated_and_each_finish_refreshes_the_history() -> None:
    truth = TrueRuntimes({"a": 7200.0, "z": 60.0})
    first = truth.history()
    truth.finished(job("a", team="vision"))
    truth.finished(Demand("z", 1, T0, 0.0))  # no estimate: no ratio
    assert first.ratios == () and truth.history().ratios == (2.0,)
    assert truth.history().by_team == (("vision", (2.0,)),)
    truth.finished(job("b", team="vision"))
    assert truth.history().by_team == (("vision", (2.0, 1.0)),)
    assert RATIO_HISTORY == 256


def test_a_reserved_node_fits_only_its_model_and_never_goes_past_its_gpus() -> None:
    onprem = OnPremNodes(2, 8, "V100")
    assert onprem.fit(Demand("any", 8, T0, 60.0)) == ((0, 8),)
    assert onprem.fit(Demand("a100", 8, T0, 60.0, gpu_model="A100")) is None
    with pytest.raises(ValueError, match="node 0 would have -1 free GPUs"):
        onprem.take(((0, 9),))
    with pytest.raises(ValueError, match="node 1 would have 9 free GPUs"):
        onprem.give(((1, 1),))
    onprem.hold(0, "h", 0.0)
    onprem.take(((0, 8),))
    assert onprem.pool_nodes()[0].held_for == ("h",) and onprem.pool_nodes()[0].free_gpus == 0


def test_a_node_held_for_two_jobs_is_lent_only_until_the_earlier_hold() -> None:
    onprem = OnPremNodes(1, 8, "V100")
    onprem.hold(0, "late", 7200.0)
    onprem.hold(0, "early", 3600.0)
    assert onprem.fit(Demand("x", 8, T0, 5000.0), now_ts=0.0) is None
    assert onprem.fit(Demand("y", 8, T0, 3600.0), now_ts=0.0) == ((0, 8),)
    assert onprem.fit_held(Demand("early", 8, T0, 60.0)) == ((0, 8),)  # exactly its GPUs free
