"""What the simulated pool measures, at the edges a mutation audit found unpinned: the wait budget's
10-minute floor, a job finishing at its deadline, waits of jobs never started; and the runtime-ratio
history kept per team."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.model import Demand, JobClass
from providers.sim.metrics import PoolMetrics
from providers.sim.runtimes import TEAM_HISTORY, TrueRuntimes

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def job(name: str, gpus: int = 1, run_s: float = 3600.0, **kw: object) -> Demand:
    return Demand(name, gpus, T0, run_s, gpu_model="V100", **kw)  # type: ignore[arg-type]


def test_a_short_job_waiting_up_to_ten_minutes_is_within_budget() -> None:
    """Budget: max(600 s, a quarter of the runtime): a 1,000 s job may wait 600 s, not 601."""
    m = PoolMetrics(8)
    m.started(job("a", run_s=1000.0), T0 + timedelta(seconds=600), on_cloud=False)
    m.started(job("b", run_s=1000.0), T0 + timedelta(seconds=601), on_cloud=False)
    assert m.within_budget == 1


def test_a_job_finishing_at_its_deadline_does_not_miss_it() -> None:
    m = PoolMetrics(8)
    deadline = T0 + timedelta(hours=2)
    m.finished(job("a", deadline=deadline, job_class=JobClass.STRICT), deadline)
    assert (m.deadline_misses, m.hard_deadline_misses) == (0, 0)
    m.finished(job("b", deadline=deadline, job_class=JobClass.STRICT), deadline + timedelta(seconds=1))
    assert (m.deadline_misses, m.hard_deadline_misses) == (1, 1)


def test_only_jobs_never_started_report_their_wait_so_far() -> None:
    m = PoolMetrics(8)
    m.advance(T0)
    for name in ("ran", "waits"):
        m.submitted(job(name))
    m.started(job("ran"), T0 + timedelta(minutes=5), on_cloud=False)
    m.advance(T0 + timedelta(hours=1))
    assert m.unstarted_waits_s() == [3600.0]


def test_a_team_keeps_its_own_last_128_ratios() -> None:
    history = [(float(k), "vision") for k in range(TEAM_HISTORY + 2)]
    ((team, own),) = TrueRuntimes(history=history).history().by_team
    assert TEAM_HISTORY == 128 and team == "vision"
    assert own == tuple(float(k) for k in range(2, TEAM_HISTORY + 2))


def test_each_teams_ratios_are_listed_by_team_name() -> None:
    truth = TrueRuntimes(history=[(1.0, "speech"), (2.0, "audio"), (3.0, "")])
    assert truth.history().by_team == (("audio", (2.0,)), ("speech", (1.0,)))
