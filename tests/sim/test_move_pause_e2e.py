"""A cloud job on time by its estimate stays where a move back on-prem would cost it its deadline by
the spread of the finished jobs' runtimes (``policies.late.move_miss_usd``), end to end.

One 8-GPU reserved node, busy for 15 minutes. A strict 1-GPU job estimated at 3,000 s (really 4,100 s)
is due 4,500 s after it arrives: its wait would pass its budget, so it bursts onto on-demand. When the
node frees up its estimate leaves 1,320 s of slack after the move's pause (60 s checkpoint + 300 s
reload), over the pause and the 900 s margin, so the margin rule lets it move; but a third of the 30
finished jobs ran 1.35 x their estimates, within the pause below the 1.44 its deadline allows: $167 of
a $500 miss against about $2 saved. It stays and meets the deadline with about 4 minutes to spare.
Trusting its estimate (no history), it moves back, and the pause makes it miss.
"""

from __future__ import annotations

from providers.sim.world import SimWorld
from tests.sim.test_late_move_e2e import outcome
from tests.sim.test_late_move_e2e import simulate as simulate_strict_job

SPREAD = ((1.0, ""),) * 20 + ((1.35, ""),) * 10  # (true / estimated runtime, team) of the last jobs to finish


def simulate(history: tuple[tuple[float, str], ...]) -> tuple[SimWorld, list[str]]:
    return simulate_strict_job(history, est_s=3_000.0, true_s=4_100.0, due_s=4_500.0)


def test_a_job_on_time_by_its_estimate_stays_where_the_pause_would_likely_cost_its_deadline() -> None:
    world, decisions = simulate(SPREAD)
    assert outcome(world, decisions) == (2, 0, False)
    assert any("launch" in d and "job dl" in d for d in decisions)  # it did burst


def test_trusting_its_estimate_it_moves_back_and_the_pause_makes_it_miss() -> None:
    assert outcome(*simulate(())) == (2, 1, True)
