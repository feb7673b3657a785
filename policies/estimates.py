"""What the policy learns from finished jobs about the runtime estimates it is given.

The pool reports true / estimated runtime for the jobs it finished last (``Snapshot.runtime_ratios``;
Slurm: elapsed / time limit). Two uses: a systematic error is corrected in every estimate the
policy reads (``runtime_correction``, ``corrected``: time limits twice the runtimes make deadlines
look out of reach and costs twice what they are), and the rest of the spread decides how much of an
estimate-based wait budget a deferring job may use (``estimate_scale``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from burster.model import Demand, Snapshot

MIN_RATIOS = 20  # finished jobs needed before their runtime ratios are used (until then: trusted as given)
TRUSTED_WITHIN = 1.25  # a median ratio in [1/1.25, 1.25] is noise in the sample: estimates stand as given


def runtime_correction(ratios: Sequence[float]) -> float:
    """The factor every estimate is multiplied by: the median true / estimated runtime of recently
    finished jobs, to two decimals; 1 with fewer than ``MIN_RATIOS`` of them or within ``TRUSTED_WITHIN``."""
    if len(ratios) < MIN_RATIOS:
        return 1.0
    ordered = _sorted(ratios)
    median = ordered[len(ordered) // 2]
    return 1.0 if 1 / TRUSTED_WITHIN <= median <= TRUSTED_WITHIN else round(median, 2)


def corrected(snapshot: Snapshot, factor: float) -> Snapshot:
    """``snapshot`` with every pending and running job's estimate times ``factor`` (at least 60 s;
    running jobs' expected ends follow), and the ratios relative to the corrected estimates."""
    if factor == 1.0:
        return snapshot

    def fix(job: Demand) -> Demand:
        return replace(job, est_runtime_s=max(60.0, job.est_runtime_s * factor))

    return replace(snapshot, pending=tuple(fix(j) for j in snapshot.pending),
                   running=tuple(replace(p, job=fix(p.job)) for p in snapshot.running),
                   runtime_ratios=tuple(r / factor for r in snapshot.runtime_ratios))


def estimate_scale(ratios: Sequence[float], quantile: float) -> float:
    """The share of an estimate-based wait budget a deferring job may use: the ``quantile`` of true /
    estimated runtime over recently finished jobs (``Snapshot.runtime_ratios``), at most 1; 1 until
    ``MIN_RATIOS`` jobs have finished. Exact estimates give 1; time limits twice the runtime, 0.5."""
    if len(ratios) < MIN_RATIOS:
        return 1.0
    ordered = _sorted(ratios)
    return min(1.0, ordered[min(int(quantile * len(ordered)), len(ordered) - 1)])


_LAST: list[tuple[Sequence[float], list[float]]] = []


def _sorted(ratios: Sequence[float]) -> list[float]:
    """``sorted(ratios)``, kept while the pool hands out the same tuple (until a job finishes)."""
    if _LAST and _LAST[0][0] is ratios:
        return _LAST[0][1]
    ordered = sorted(ratios)
    _LAST[:] = [(ratios, ordered)]
    return ordered
