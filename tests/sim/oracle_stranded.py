"""The stranded GPU-hours KPI recounted from a simulation's runs (``burster simulate``'s
``stranded_gpu_hours``): reserved GPUs left idle beside cloud runs that reserved nodes could have
run."""

from __future__ import annotations

from datetime import datetime

from tests.sim.oracle_observe import Observed


def check_stranded(seen: Observed) -> list[str]:
    """Stranded GPU-hours: at each instant, min(idle reserved GPUs, GPUs of jobs running on the cloud
    that some reserved nodes could run), over the whole run."""
    reserved = seen.sim.reconciler.pool.nodes()
    if not reserved:
        return []
    model, size, count = reserved[0].gpu_model, max(n.gpus for n in reserved), len(reserved)
    fits = {j.job_id for j in seen.jobs if j.gpu_model in ("", model) and -(-j.gpus // j.nodes) <= size
            and j.nodes <= count}
    steps: list[tuple[datetime, int, int]] = []  # (instant, change of busy reserved GPUs, of such cloud GPUs)
    for g in seen.segments:
        if g.on_cloud and g.job_id not in fits:
            continue
        end = g.end or seen.stop
        steps += [(g.start, 0 if g.on_cloud else g.gpus, g.gpus if g.on_cloud else 0),
                  (end, 0 if g.on_cloud else -g.gpus, -g.gpus if g.on_cloud else 0)]
    steps.sort(key=lambda e: e[0])
    busy = cloud = 0
    stranded_s = 0.0
    nexts = [*(s[0] for s in steps[1:]), seen.stop] if steps else []  # a window no job ran in has none
    for (at, dbusy, dcloud), nxt in zip(steps, nexts, strict=True):
        busy, cloud = busy + dbusy, cloud + dcloud
        stranded_s += min(seen.sim.pool_gpus - busy, cloud) * (nxt - at).total_seconds()
    got = seen.summary["stranded_gpu_hours"]
    return [] if abs(got - stranded_s / 3600) <= 0.0051 else [f"stranded_gpu_hours {got} != recomputed "
                                                              f"{stranded_s / 3600:.4f}"]
