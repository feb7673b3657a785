"""A job running again after an earlier attempt ran past its estimate (``Demand.reached_s``) is believed
as it will be once requeued (``policies.estimates.believed_requeued``), not by its raw estimate: on the
cloud, by ``believe_overruns``; on a reserved node, where the preempt rule prices sending it away.

Priced on its estimate, such a job looked nearly done, so cheap to send away; requeued, the burst rule
believed it long, found it urgent, and it took a node back by preempting the next such job: two strict
jobs swapped one reserved node 21 times in 20 minutes on the Philly MIX1 trace (day 10, 46 nodes,
sigma 0.5, seed 4), and one missed its deadline.
"""

from __future__ import annotations

from datetime import timedelta

from burster.model import Demand, JobClass, Market, Placement, Snapshot
from policies.estimates import believe_overruns
from tests.policies.test_preempt_edges import NOW, reserved, snap, summary, swap, urgent


def again(reached_s: float, *, on_cloud: bool) -> Placement:
    """A job of a 3,600 s estimate, running again for 10 minutes with no work saved, an earlier attempt
    having reached ``reached_s``; on a spot node or a reserved one."""
    job = Demand("a", 1, NOW - timedelta(hours=3), 3_600.0, reached_s=reached_s, attempt=1)
    market = Market.SPOT if on_cloud else Market.RESERVED
    return Placement(job, ("n0",), NOW - timedelta(minutes=10), on_cloud, market)


def test_a_cloud_job_that_overran_before_is_believed_as_requeued_while_it_runs_again() -> None:
    """Reached 4,500 s (1.25x): believed at the first step past it, 1.5x (no finished jobs: 1.5x steps),
    so it ends 80 minutes from now, not 50, and the wake is then. Reached exactly its estimate, or on a
    reserved node (believed longer there, it moved the projection's waits), it keeps its estimate."""
    believed, wake = believe_overruns(Snapshot(NOW, (), (again(4_500.0, on_cloud=True),), (), (), ()))
    assert believed.running[0].job.est_runtime_s == 5_400.0 and wake == NOW + timedelta(minutes=80)
    for p in (again(3_600.0, on_cloud=True), again(4_500.0, on_cloud=False)):
        snapshot = Snapshot(NOW, (), (p,), (), (), ())
        assert believe_overruns(snapshot) == (snapshot, NOW + timedelta(minutes=50))


def restarted(reached_s: float, due_s: float | None) -> Placement:
    """Reserved job "r": a 4,200 s estimate, 3,600 s done (600 s left by it), an earlier attempt having
    reached ``reached_s``; strict and due ``due_s`` from now, or best-effort (None). Requeued after an
    overrun to 4,500 s, it is believed to need 1.5x its estimate (6,300 s): 2,700 s left."""
    if due_s is None:
        return reserved("r", 600.0, reached_s=reached_s)
    return reserved("r", 600.0, reached_s=reached_s, deadline=NOW + timedelta(seconds=due_s),
                    job_class=JobClass.STRICT)


def test_a_deadline_job_that_overran_before_is_not_sent_away_when_its_belief_leaves_no_slack() -> None:
    job = urgent()
    assert summary(swap(snap((restarted(0.0, 3600.0),), (job,)), job)[1]) == [("preempt", "r", "n0"),
                                                                           ("hold", "u", "n0")]
    assert swap(snap((restarted(4500.0, 3600.0),), (job,)), job)[1] == []


def test_a_job_that_overran_before_is_priced_for_its_believed_work_left() -> None:
    """Best-effort: still sent away, but for its believed 2,700 s left on the cloud, not 600 s, so the
    swap saves less."""
    job = urgent()
    fresh = swap(snap((restarted(0.0, None),), (job,)), job)[1][0].reason
    overran = swap(snap((restarted(4500.0, None),), (job,)), job)[1][0].reason
    assert fresh.endswith("saves $2.57") and overran.endswith("saves $2.01")
    assert "(1 GPU, 0.2 h left)" in fresh and "(1 GPU, 0.8 h left)" in overran
