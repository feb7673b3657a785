"""The decision log lists every action and refusal, and a held-back launch once per spell of waiting."""

from __future__ import annotations

from datetime import UTC, datetime

from burster.model import Market, Offering
from burster.plan import DecisionLog, Launch, Plan, Terminate

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)


def launch(job: str) -> Launch:
    return Launch(SPOT, 1, f"job {job} bursts", f"rq-{job}", job_id=job)


def held(*jobs: str, actions: tuple[Terminate, ...] = ()) -> Plan:
    return Plan(actions, held_back=tuple((launch(j), "max nodes 2 reached") for j in jobs))


def test_a_held_back_launch_is_logged_when_it_is_first_held_back_not_at_every_pass() -> None:
    log = DecisionLog()
    idle = Terminate(("n1",), "n1 idle 300s >= ttl 300s", "idle-n1")
    assert log.lines(held("a", "b")) == ["held back launch: job a bursts; max nodes 2 reached",
                                         "held back launch: job b bursts; max nodes 2 reached"]
    assert log.lines(held("a", "b", actions=(idle,))) == ["terminate: n1 idle 300s >= ttl 300s"]  # still waiting
    assert log.lines(held("a")) == []  # b went ahead
    assert log.lines(held("a", "b")) == ["held back launch: job b bursts; max nodes 2 reached"]  # b waits again
    assert log.lines(Plan()) == [] and log.lines(held("a")) == ["held back launch: job a bursts; max nodes 2 reached"]
    # a single plan's own explanation lists everything it holds back
    assert len(held("a", "b").explain()) == 2


def test_a_refusal_says_why_and_what_was_refused() -> None:
    """A refused launch names its job and offering, as the launch would have: "refused launch: launch
    rate limit 60/min reached" alone left a reader to guess whose burst waited."""
    refused = Plan(refused=((launch("a"), "launch rate limit 60/min reached"),))
    assert DecisionLog().lines(refused) == ["refused launch: launch rate limit 60/min reached; job a bursts"]
