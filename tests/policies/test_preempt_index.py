"""The preempt rule's index of reserved jobs chooses exactly as a plain scan of every candidate does.

``policies.preempt._Reserved`` groups candidates so that many urgent jobs over many reserved ones
cost far less than a scan each (``python -m bench.plan``: 100k jobs went from 9.7 s to 3 s). The
reference below is that scan, as the rule first had it: every fitting candidate's bound, sorted,
priced in order until no bound can beat the best. Ties abound on purpose (identical jobs without
deadlines, whose $ to send away is the same once they outlast the urgent job): the index prices
one of each such run, and must still hand the node to the sooner end, then the earlier index.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from burster.model import Demand, JobClass, Market, Offering, Placement, PoolNode, Snapshot
from policies.burst import BurstParams
from policies.cost import CostModel, CostParams
from policies.offers import offer_book
from policies.preempt import _Away, _Candidate, _Reserved
from policies.slack import slack_s

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
# spot where a 30 s notice is too short to save the work: a deadline job's risk there depends on its slack
OFFERINGS = (Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.92),
             Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06),
             Offering("gcp", "us-central1", "us-central1-a", "a2-highgpu-1g", "A100", 1, Market.SPOT, 1.1),
             Offering("gcp", "us-central1", "us-central1-a", "a2-highgpu-1g", "A100", 1, Market.ON_DEMAND, 3.67))
COST = CostModel(CostParams(spot_interruptions_per_hour=0.3))
PARAMS = BurstParams()


class _Scan:
    """The reference: a scan of every candidate per urgent job."""

    def __init__(self, candidates: list[_Candidate], away: _Away) -> None:
        self.candidates, self.away, self.taken = candidates, away, set[str]()

    def choose(self, job: Demand, launch_usd: float, rate: float) -> tuple[float, bool, Placement, str] | None:
        cost = self.away.cost
        fitting = [c for c in self.candidates if c.node.node_id not in self.taken
                   and (not job.gpu_model or job.gpu_model == c.node.gpu_model)
                   and c.node.free_gpus < job.gpus <= c.node.free_gpus + c.placement.job.gpus]
        wait_limit_s = min(cost.p.launch_latency_s, slack_s(job, self.away.now, cost) + cost.p.launch_latency_s)
        waits = [c for c in fitting if c.left_s <= wait_limit_s]
        if waits:
            c = min(waits, key=lambda c: (c.left_s, c.index))
            self.taken.add(c.node.node_id)
            return launch_usd, True, c.placement, c.node.node_id
        restart_s, urgent_s = cost.p.restart_overhead_s, job.remaining_s
        floors = []
        for c in fitting:
            t = self.away.target(c.placement)
            if t is None or t.per_gpu_usd >= rate:
                continue
            left_s = t.job.remaining_s
            away_s = left_s if left_s < urgent_s else urgent_s
            floor = t.pause_usd + t.hourly_usd * (away_s + restart_s) / 3600.0 + t.fixed_usd
            if left_s > away_s:
                floor += t.back_usd
            if floor < launch_usd:
                floors.append((floor, c.index, c))
        best: tuple[float, float, int, _Candidate] | None = None
        for floor, _, c in sorted(floors):
            if best is not None and launch_usd - floor < best[0] - 1e-9:
                break
            saving = launch_usd - self.away.usd(c.placement, job)
            if saving > 0 and (best is None or (saving, -c.left_s, -c.index) > best[:3]):
                best = (saving, -c.left_s, -c.index, c)
        if best is None:
            return None
        self.taken.add(best[3].node.node_id)
        return best[0], False, best[3].placement, best[3].node.node_id


reserved_jobs = st.lists(st.tuples(
    st.sampled_from([1, 2, 4, 8]),  # GPUs
    st.sampled_from([600.0, 3_000.0, 3_000.0, 7_200.0, 20_000.0]),  # seconds left: repeats make ties
    st.sampled_from([None, None, 0.6, 0.8, 4.0]),  # deadline slack in hours (None: no deadline)
    st.sampled_from(["V100", "V100", "A100"]),
    st.integers(0, 4),  # the node's free GPUs
), min_size=1, max_size=30)
urgent_jobs = st.lists(st.tuples(
    st.sampled_from([1, 2, 4, 8]), st.sampled_from([300.0, 1_800.0, 3_000.0, 9_000.0]),
    st.sampled_from(["V100", "A100", ""]), st.floats(5.0, 400.0), st.floats(0.5, 4.0),
), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(reserved_jobs, urgent_jobs)
def test_the_index_chooses_as_the_scan_does(reserved: list[tuple[int, float, float | None, str, int]],
                                            urgent: list[tuple[int, float, str, float, float]]) -> None:
    running, pool = [], []
    for i, (gpus, left_s, slack_h, model, free) in enumerate(reserved):
        deadline = None if slack_h is None else NOW + timedelta(seconds=left_s, hours=slack_h)
        job = Demand(f"r{i}", gpus, NOW - timedelta(hours=3), 3_600.0 + left_s, gpu_model=model, deadline=deadline,
                     job_class=JobClass.STRICT if deadline else JobClass.BEST_EFFORT)
        running.append(Placement(job, (f"n{i}",), NOW - timedelta(hours=1), False, Market.RESERVED))
        pool.append(PoolNode(f"n{i}", model, max(gpus, 8), min(free, max(gpus, 8) - gpus)))
    snap = Snapshot(NOW, (), tuple(running), tuple(pool), (), OFFERINGS)

    def away() -> _Away:
        return _Away(COST, PARAMS, offer_book(snap, COST), NOW)

    index = _Reserved(snap, frozenset(), away())
    scan = _Scan(sorted((c for g in index.by_fit.values() for c in g), key=lambda c: c.index), away())
    for k, (gpus, run_s, model, launch_usd, rate) in enumerate(urgent):
        job = Demand(f"u{k}", gpus, NOW, run_s, gpu_model=model, deadline=NOW + timedelta(seconds=run_s + 600),
                     job_class=JobClass.STRICT)
        assert index.choose(job, launch_usd, rate) == scan.choose(job, launch_usd, rate)
    assert index.taken == scan.taken


def test_a_run_of_identical_jobs_goes_to_the_one_that_ends_first() -> None:
    """Ten identical jobs without deadlines, all outlasting the urgent one: one price, many ends."""
    running = [Placement(Demand(f"r{i}", 8, NOW - timedelta(hours=3), 3_600.0 + 7_200.0 + 60 * ((i * 7) % 10),
                                gpu_model="V100"), (f"n{i}",), NOW - timedelta(hours=1), False, Market.RESERVED)
               for i in range(10)]
    pool = [PoolNode(f"n{i}", "V100", 8, 0) for i in range(10)]
    snap = Snapshot(NOW, (), tuple(running), tuple(pool), (), OFFERINGS)
    index = _Reserved(snap, frozenset(), _Away(COST, PARAMS, offer_book(snap, COST), NOW))
    job = Demand("u", 1, NOW, 1_800.0, gpu_model="V100", deadline=NOW + timedelta(hours=1), job_class=JobClass.STRICT)
    chosen = [index.choose(job, 50.0, 3.0) for _ in range(3)]
    # left 7,200 s + 60 x (i * 7 % 10): r0 + 0, r3 + 60, r6 + 120 are the three soonest ends
    assert [(c[1], c[2].job.job_id) for c in chosen if c is not None] == [(False, "r0"), (False, "r3"), (False, "r6")]
    assert len({c[0] for c in chosen if c is not None}) == 1  # one price for all of them


def test_only_the_groups_an_urgent_job_fits_are_priced() -> None:
    """Pricing a reserved job's target is most of the rule's time in a busy pool: a V100 job is not
    priced against the A100 jobs it cannot replace, nor against a node with room for it already."""
    def placed(i: int, model: str) -> Placement:
        return Placement(Demand(f"r{i}", 8, NOW - timedelta(hours=3), 3_600.0 + 7_200.0, gpu_model=model),
                         (f"n{i}",), NOW - timedelta(hours=1), False, Market.RESERVED)
    models = ["V100", "A100", "V100", "A100"]
    pool = [PoolNode(f"n{i}", model, 16 if i == 2 else 8, 8 if i == 2 else 0) for i, model in enumerate(models)]
    snap = Snapshot(NOW, (), tuple(placed(i, m) for i, m in enumerate(models)), tuple(pool), (), OFFERINGS)
    away = _Away(COST, PARAMS, offer_book(snap, COST), NOW)
    index = _Reserved(snap, frozenset(), away)
    job = Demand("u", 1, NOW, 1_800.0, gpu_model="V100", deadline=NOW + timedelta(hours=1), job_class=JobClass.STRICT)
    assert index.choose(job, 50.0, 3.0) is not None
    assert sorted(away._targets) == ["r0"]  # n2 has 8 GPUs free: the job fits there without a swap


def test_a_group_no_cheaper_on_the_cloud_than_the_urgent_job_is_not_priced() -> None:
    """An urgent job held back on the cheapest spot offering of its shape: reserved jobs of that
    shape cannot run cheaper per GPU anywhere, so none is sent away, and none is priced."""
    running = [Placement(Demand(f"r{i}", 1, NOW - timedelta(hours=3), 3_600.0 + 7_200.0, gpu_model="V100"),
                         (f"n{i}",), NOW - timedelta(hours=1), False, Market.RESERVED) for i in range(3)]
    pool = [PoolNode(f"n{i}", "V100", 1, 0) for i in range(3)]
    snap = Snapshot(NOW, (), tuple(running), tuple(pool), (), OFFERINGS)
    away = _Away(COST, PARAMS, offer_book(snap, COST), NOW)
    index = _Reserved(snap, frozenset(), away)
    job = Demand("u", 1, NOW, 1_800.0, gpu_model="V100", deadline=NOW + timedelta(hours=1), job_class=JobClass.STRICT)
    spot = OFFERINGS[0]
    assert index.choose(job, 50.0, COST.run_rate_usd_per_hour(job, spot)) is None
    assert not away._targets
    assert index.choose(job, 50.0, COST.run_rate_usd_per_hour(job, OFFERINGS[1])) is not None  # on-demand: priced
    assert away._targets
