"""Edges of the bracket the other tests leave open: the reserved-run bound's minimum over starts and the
split gains against direct computations, the bound by preemptions against an exhaustive search of real
schedules, and the verifier on schedules it must reject (and on a float end it must not)."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from burster.eval.bound import lower_bound
from burster.eval.clairvoyant import Assignment, schedule
from burster.eval.fluid import nodes_for
from burster.eval.instance import Instance, with_budgets
from burster.eval.runs import RunJobs, job_minima, lagrangian_usd
from burster.eval.splits import split_gains
from burster.eval.verify import problems
from burster.model import Market
from tests.eval.helpers import instance, job, offering, series

OD = offering(Market.ON_DEMAND, 2.0)
SPOT = offering(Market.SPOT, 0.5)


def _random_run_jobs(rng: np.random.Generator, n: int) -> RunJobs:
    """Whole-second jobs (slots of 60 s below): every break of f_j is at a whole second."""
    price = rng.choice([0.004, 0.01, 0.02, np.inf], size=n)
    return RunJobs(arrival=rng.integers(0, 400, n).astype(float), budget=rng.choice([0, 30, 90, 200], n).astype(float),
                   runtime=rng.integers(1, 300, n).astype(float), gpus=rng.integers(1, 4, n).astype(float),
                   price=price, count=rng.integers(1, 3, n).astype(float))


def _scan_minima(j: RunJobs, lam: np.ndarray, slot_s: int) -> np.ndarray:
    """min over every whole-second start s in [a, D] of f_j(s), straight from its definition."""
    finite = j.price[np.isfinite(j.price)]
    lam_s = np.repeat(np.clip(lam, 0.0, finite.max()), slot_s)  # per second
    out = []
    for a, b, r, g, p in zip(j.arrival, j.budget, j.runtime, j.gpus, j.price, strict=True):
        d = int(a + b + r)
        prefix = np.concatenate(([0.0], np.cumsum(np.minimum(lam_s, p))))
        best = math.inf
        for s in range(int(a), d + 1):
            cloud = s - a - b
            if cloud > 0 and not math.isfinite(p):
                continue
            best = min(best, g * ((p * cloud if cloud > 0 else 0.0) + prefix[min(int(s + r), d)] - prefix[s]))
        out.append(best)
    return np.array(out)


def test_run_bound_minimum_over_starts_is_exact() -> None:
    """min over s of f_j is taken at its breaks (a, a + b, D, slot boundaries, boundaries - r), not
    sampled: it equals a second-by-second scan; L(lam) counts merged jobs ``count`` times and charges the
    pool at lam clipped to the dearest cloud price (above it a price changes no job's choice)."""
    rng = np.random.default_rng(7)
    for _ in range(30):
        j = _random_run_jobs(rng, 6)
        slots = math.ceil(float(j.due.max()) / 60)
        lam = rng.choice([0.0, 0.003, 0.008, 0.015, 0.05], size=slots)
        minima = _scan_minima(j, lam, 60)
        assert job_minima(j, lam, 60.0) == pytest.approx(minima, rel=1e-9, abs=1e-9)
        top = float(j.price[np.isfinite(j.price)].max())
        want = float((j.count * minima).sum()) - 3 * 60 * float(np.clip(lam, 0.0, top).sum())
        assert lagrangian_usd(j, lam, 60.0, 3) == pytest.approx(want, rel=1e-9, abs=1e-9)


def test_split_gains_match_a_direct_fill() -> None:
    """A split job's cost: its runtime in the cheapest seconds of its window's slots (at most a slot
    each) at min(lam, its price); the gains are the gaps to min f_j, largest first, counted per job."""
    rng = np.random.default_rng(11)
    for _ in range(30):
        j = _random_run_jobs(rng, 5)
        slots = math.ceil(float(j.due.max()) / 60)
        lam = rng.choice([0.0, 0.003, 0.008, 0.015, 0.05], size=slots)
        minima = job_minima(j, lam, 60.0)
        top = float(j.price[np.isfinite(j.price)].max())
        gaps = []
        for i in range(len(j.arrival)):
            first, last = int(j.arrival[i] // 60), math.ceil(j.due[i] / 60) - 1
            per_s = np.sort(np.repeat(np.minimum(np.clip(lam[first:last + 1], 0.0, top), min(j.price[i], top)), 60))
            split = j.gpus[i] * per_s[:int(j.runtime[i])].sum()
            gaps += [max(minima[i] - split, 0.0)] * int(j.count[i])
        want = np.concatenate(([0.0], np.cumsum(sorted(gaps, reverse=True))))
        assert split_gains(j, lam, 60.0, minima) == pytest.approx(want, rel=1e-9, abs=1e-9)


def _grid_optimum(inst: Instance, cell: float, p: int) -> float:
    """Cheapest real schedule on a ``cell`` grid in which at most p jobs do not end in one unpaused
    reserved run: each cell a job idles, runs on the cheapest offering up for the whole cell, or on
    reserved GPUs; all its work within [arrival, due)."""
    jobs = inst.jobs
    elig = [j.gpu_model == inst.reserved_model and j.gpus <= inst.reserved_gpus for j in jobs]
    cells = math.ceil(max(j.due_s for j in jobs) / cell - 1e-9)
    price = [[min((nodes_for(j, o) * o.price_per_hour_usd * cell / 3600 for o in inst.offerings
                   if inst.up_throughout(o, t * cell, (t + 1) * cell)), default=math.inf)
              for t in range(cells)] for j in jobs]
    lo = [round(j.arrival_s / cell) for j in jobs]
    hi = [math.floor(j.due_s / cell + 1e-9) for j in jobs]
    # per job (cells of work left, 0: no reserved run yet / 1: in its final run / 2: split)
    best = {tuple((round(j.runtime_s / cell), 0) for j in jobs): 0.0}
    for t in range(cells):
        nxt: dict[tuple[tuple[int, int], ...], float] = {}
        for state, usd in best.items():
            opts = []
            for i, (left, st) in enumerate(state):
                if left == 0 or not lo[i] <= t < hi[i]:
                    opts.append([(0, 0, 0.0, st)])
                    continue
                o = [] if st == 1 else [(0, 0, 0.0, st), (1, 0, price[i][t], st)]
                if st == 1:  # leaving the run early splits it
                    o += [(0, 0, 0.0, 2), (1, 0, price[i][t], 2)]
                if elig[i]:
                    o += [(1, jobs[i].gpus, 0.0, 2 if st == 2 else 1)]
                    o += [(1, jobs[i].gpus, 0.0, 2)] if st == 0 else []
                opts.append([x for x in o if math.isfinite(x[2])])
            for combo in itertools.product(*opts):
                new = tuple((state[i][0] - c[0], c[3]) for i, c in enumerate(combo))
                if sum(c[1] for c in combo) > inst.reserved_gpus or sum(s == 2 for _, s in new) > p \
                        or any(new[i][0] > 0 and t + 1 >= hi[i] for i in range(len(jobs))):
                    continue
                cost = usd + sum(c[2] for c in combo)
                if cost < nxt.get(new, math.inf):
                    nxt[new] = cost
        best = nxt
    return min((u for s, u in best.items() if all(left == 0 for left, _ in s)), default=math.inf)


def _random_instance(rng: random.Random) -> tuple[Instance, float]:
    cell = rng.choice([150.0, 300.0])
    demands = [job(f"j{i}", cell * rng.randint(0, 2), rng.choice([1, 1, 2]), cell * rng.randint(1, 5))
               for i in range(rng.randint(2, 3))]
    data = [rng.randint(0, 1) for _ in range(rng.randint(2, 8))]
    inst = instance(demands, [OD, SPOT], pool_gpus=rng.randint(1, 2), spot=[series(data, rng.choice([cell, 2 * cell]))],
                    slot_s=rng.choice([cell, 300.0, 600.0]))
    return with_budgets(inst, {d.job_id: cell * rng.choice([0, 1, 2]) for d in demands}), cell


def test_bound_by_preemptions_is_below_every_schedule_with_that_many_split_runs() -> None:
    """On small random instances: entry p of ``with_preemptions`` <= the cheapest grid schedule with at
    most p split reserved runs (p = 0: the reserved-run rule; p = 3: any, the fluid bound's model); the
    entries never rise with p; the clairvoyant schedule passes the verifier and is >= the bound. The
    seeds include cases where the run bound is tight and where one split lowers the optimum."""
    rng = random.Random(4)
    tight = split = 0
    for _ in range(60):
        inst, cell = _random_instance(rng)
        low = lower_bound(inst)
        by_p = low.with_preemptions()
        assert all(x >= y - 1e-12 for x, y in itertools.pairwise(by_p))
        opt = [_grid_optimum(inst, cell, p) for p in (0, 1, 3)]
        for p, o in zip((0, 1, 3), opt, strict=True):
            assert by_p[min(p, len(by_p) - 1)] <= o + 1e-9 * max(1.0, o)
        plan = schedule(inst)
        assert problems(inst, plan) == []
        assert low.usd <= sum(a.usd for a in plan) + 1e-9
        tight += low.runs_usd is not None and low.runs_usd > low.fluid_usd + 1e-9 and low.usd == pytest.approx(opt[0])
        split += opt[1] < opt[0] - 1e-9
    assert tight >= 3 and split >= 3


def test_verifier_accepts_an_end_a_float_rounding_past_the_next_start() -> None:
    """0 + 1.1 x 3600 s is 3960.0000000000005: the clairvoyant's capacity grid (a run occupies the cells it
    touches, to 1e-9 of a cell) lets b start on the freed GPU at 3960; the verifier used to report the
    pool over-committed for that 5e-13 s (bug: the upper bound failed its own check)."""
    r = 1.1 * 3600
    assert r > 3960
    inst = instance([job("a", 0, 1, r), job("b", 3960, 1, 600)], [OD], pool_gpus=1, budget_s=0)
    plan = schedule(inst)
    assert [a.where for a in plan] == ["reserved", "reserved"] and sum(a.usd for a in plan) == 0.0
    assert problems(inst, plan) == []
    late = [plan[0], Assignment("b", 3959.99, 4559.99, 1, "reserved", pool_nodes=(0,))]
    inst_late = instance([job("a", 0, 1, r), job("b", 3959.99, 1, 600)], [OD], pool_gpus=1, budget_s=0)
    assert any("over-committed" in p for p in problems(inst_late, late))


def test_verifier_rejects_what_a_real_schedule_cannot_do() -> None:
    """Spot across a drop, a start past the budget, a bill that is not its segments', segments that do not
    follow each other or stop short, a move back outside the run, two gang members on one node."""
    spot = series([1, 1, 0, 1])  # 300 s ticks: down over [600, 900)
    inst = instance([job("a", 0, 1, 1200)], [OD, SPOT], spot=[spot], budget_s=600)
    bill = 0.5 * 1200 / 3600

    def check(a: Assignment, what: str) -> None:
        assert any(what in p for p in problems(inst, [a])), (what, problems(inst, [a]))

    good = Assignment("a", 0.0, 1200.0, 1, "cloud", ((0.0, 600.0, SPOT.key), (600.0, 1200.0, OD.key)),
                      0.5 * 600 / 3600 + 2.0 * 600 / 3600)
    assert problems(inst, [good]) == []
    check(Assignment("a", 0.0, 1200.0, 1, "cloud", ((0.0, 1200.0, SPOT.key),), bill), "goes down")
    check(Assignment("a", 700.0, 1900.0, 1, "cloud", ((700.0, 1900.0, OD.key),), 2.0 / 3), "outside")
    check(Assignment("a", 0.0, 1200.0, 1, "cloud", ((0.0, 1200.0, OD.key),), 0.1), "charged")
    check(Assignment("a", 0.0, 1200.0, 1, "cloud", ((0.0, 500.0, SPOT.key), (600.0, 1200.0, OD.key)),
                     0.5 * 500 / 3600 + 2.0 * 600 / 3600), "does not follow")
    check(Assignment("a", 0.0, 1200.0, 1, "cloud", ((0.0, 600.0, SPOT.key),), 0.5 * 600 / 3600), "end at")
    pool = instance([job("a", 0, 1, 1200)], [OD], pool_gpus=1, budget_s=600)
    moved = Assignment("a", 0.0, 1200.0, 1, "moved", ((0.0, 1200.0, OD.key),), 2.0 / 3, 1200.0)
    assert any("moves to the pool" in p for p in problems(pool, [moved]))
    gang = instance([job("g", 0, 2, 600, nodes=2)], [OD], pool_gpus=2, budget_s=0, node_gpus=1)
    assert problems(gang, [Assignment("g", 0.0, 600.0, 2, "reserved", pool_nodes=(0, 1))]) == []
    assert any("distinct" in p for p in problems(gang, [Assignment("g", 0.0, 600.0, 2, "reserved",
                                                                   pool_nodes=(0, 0))]))


def test_run_bound_prices_a_job_at_its_windows_cheapest_slot_and_adds_the_jobs_off_the_pool() -> None:
    """One reserved GPU. a: 1 h from 0, budget 0, holds it; b: 30 min from 0, budget 30 min, spot
    ($0.50) down for the first 10 min only: $0.25 on spot later (not $1 at the first slot's on-demand
    price). With the hand case of ``test_reserved_run_cut_by_hand`` (run bound $5/3 above the fluid's
    $1), a 2-GPU job the pool cannot hold adds its own cloud price to the run bound."""
    spot = series([0, 0] + [1] * 11)
    inst = with_budgets(instance([job("a", 0, 1, 3600), job("b", 0, 1, 1800)], [OD, SPOT], pool_gpus=1,
                                 spot=[spot]), {"a": 0.0, "b": 1800.0})
    assert lower_bound(inst).usd == pytest.approx(0.25) and sum(a.usd for a in schedule(inst)) == pytest.approx(0.25)
    cut = with_budgets(instance([job("a", 0, 1, 7200), job("b", 3600, 1, 3600), job("c", 0, 2, 1800)], [OD],
                                pool_gpus=1), {"a": 1800, "b": 600, "c": 0})
    low = lower_bound(cut)
    assert "reserved-run" in low.status and low.usd == pytest.approx(5 / 3 + 2 * 2.0 * 0.5)


def test_window_ends_with_the_slot_of_its_due_time() -> None:
    """A 5 min job with no budget lives in slot 0 only: spot is down there and up in slot 1, which is out
    of its window, so it pays on-demand's $2/12 in both bounds; b, in slot 1, pays spot's $0.5/12."""
    inst = instance([job("a", 0, 1, 300), job("b", 300, 1, 300)], [OD, SPOT], spot=[series([0, 1, 1])], budget_s=0)
    assert lower_bound(inst).usd == pytest.approx(2.5 / 12)
    assert sum(a.usd for a in schedule(inst)) == pytest.approx(2.5 / 12)


def test_a_gang_pays_whole_nodes_per_member_and_slots_without_offerings_go_to_the_pool() -> None:
    """A 2 x 1-GPU gang on 2-GPU nodes ($8/h) takes one node per member: $16 for the hour, both bounds.
    With spot alone (down throughout), a job of the pool is $0 there and the bound stays optimal."""
    node = offering(Market.ON_DEMAND, 8.0, gpus=2, itype="p3.4xlarge")
    gang = instance([job("g", 0, 2, 3600, nodes=2)], [node], budget_s=0)
    assert lower_bound(gang).usd == pytest.approx(16.0) and sum(a.usd for a in schedule(gang)) == pytest.approx(16.0)
    only_spot = instance([job("a", 0, 1, 1200)], [SPOT], pool_gpus=1, spot=[series([0])], budget_s=0)
    low = lower_bound(only_spot)
    assert (low.usd, low.status) == (0.0, "optimal")
