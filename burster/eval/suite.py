"""Which settings ``burster bench`` runs: the default traces and windows, and the pool-size sweep.

Pool sizing rule: the offered load L of a window is sum(gpus x runtime clipped to the window) /
window length (mean GPUs busy if every job started at submission); each target utilization u in
{0.9, 0.75} (quick: 0.9 only) gives ceil(L / u / 8) whole 8-GPU nodes. Reserved-only's measured
utilization is reported per setting and flagged outside 70-95 %.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path

from burster.config import PoolConfig
from burster.errors import InputError
from burster.eval.compare import (
    UTILIZATIONS,
    Setting,
    Window,
    cached_trace,
    offered_load_gpus,
    pool_sizes,
    window_jobs,
)

SIZING_RULE = ("Pool sizes: offered load L = sum(gpus x runtime clipped to the window) / window length; "
               "nodes = ceil(L / u / 8) for u in {0.9, 0.75} (quick: 0.9), so reserved-only should run at "
               "about 70-95 % utilization; its measured utilization is shown per setting and flagged outside.")
POOL_MODEL = PoolConfig().gpu_model  # jobs without a model run on the pool's (config default)


@dataclass(frozen=True)
class Plan:
    settings: list[Setting] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (trace, why)


def default_windows(quick: bool) -> list[Window]:
    """The fixed default suite; traces under ../shared/data are used when that folder is there."""
    from burster.app import DEMO_TRACE
    from burster.shared_data import shared_data_dir

    data = shared_data_dir()
    philly = data / "chronus_philly_deadline"
    mix1 = str(philly / "trace_job_Philly_MIX1.csv.gz")
    if quick:
        out = [Window(str(DEMO_TRACE), "philly", 1.0, 3.0)]
        if Path(mix1).exists():
            out.append(Window(mix1, "philly", 1.0, 1.0))
        return out
    if not data.is_dir():
        return [Window(str(DEMO_TRACE), "philly", 1.0, 3.0), Window(str(DEMO_TRACE), "philly", 4.0, 3.0)]
    out = []
    for name in ("MIX1", "MIX2", "SLO"):
        path = str(philly / f"trace_job_Philly_{name}.csv.gz")
        out += [Window(path, "philly", 1.0, 3.0), Window(path, "philly", 7.0, 3.0)]
    alibaba = str(data / "alibaba_gpu_v2023" / "openb_pod_list_default.csv")
    out += [Window(alibaba, "alibaba", 116.0, 3.0), Window(alibaba, "alibaba", 124.0, 3.0)]
    helios = str(data / "helios_earth_vc_timeseries" / "vcpDC_cluster_sequence_vc.csv.gz")
    out += [Window(helios, "helios", 1.0, 3.0), Window(helios, "helios", 15.0, 3.0)]
    return out


def trace_labels(paths: Sequence[str]) -> dict[str, str]:
    """How each trace is named in tables and records: its file name, or as much of its path as tells
    it apart from another trace of the same file name (two settings must never share a name)."""
    parts = {p: Path(p).parts for p in dict.fromkeys(paths)}
    out: dict[str, str] = {}
    for p, mine in parts.items():
        k = 1
        while k < len(mine) and any(q != p and other[-k:] == mine[-k:] for q, other in parts.items()):
            k += 1
        out[p] = "/".join(mine[-k:])
    return out


def plan_settings(windows: Sequence[Window], *, seeds: Sequence[int], nodes: Sequence[int] | None,
                  utilizations: Sequence[float] = UTILIZATIONS, strict: bool = True) -> Plan:
    """Load each window's trace, size its pools and cross with seeds.

    ``strict``: a trace that fails to load is an error (the user named it); otherwise (the default
    suite) it is skipped with the reason, e.g. a format whose loader is not installed.
    """
    from burster.traces import TRACE_FORMATS

    settings: list[Setting] = []
    skipped: list[tuple[str, str]] = []
    unloadable: set[str] = set()
    labels = trace_labels([w.path for w in windows])
    for w in dict.fromkeys(windows):  # (a window given twice is one setting)
        name = Path(w.path).name
        if w.path in unloadable:
            continue  # one reason per trace file is enough
        if not strict and w.fmt is not None and w.fmt not in TRACE_FORMATS:
            skipped.append((name, f"no loader for trace format {w.fmt!r} (have {', '.join(TRACE_FORMATS)})"))
            unloadable.add(w.path)
            continue
        try:
            trace = cached_trace(w.path, w.fmt)
        except InputError as err:
            if strict:
                raise
            skipped.append((name, str(err)))
            unloadable.add(w.path)
            continue
        start, end, jobs = window_jobs(trace, w, POOL_MODEL)
        if jobs and (cut := (end - start) / timedelta(days=1)) < w.days:  # as a simulation cuts it: Trace.window
            w = replace(w, days=cut)  # (so the label says what runs)
        if not jobs:
            why = f"no jobs submitted in day {w.start_day:g} + {w.days:g} d of {w.path}"
            if strict:
                raise InputError(f"{why}; pick another --start-day / --days")
            skipped.append((name, why))
            continue
        load = offered_load_gpus(jobs, start, end)
        for n in dict.fromkeys(nodes or pool_sizes(load, utilizations)):  # (--pool-nodes 4 twice: one setting)
            settings += [Setting(labels[w.path], w, n, seed, len(jobs), round(load, 1)) for seed in seeds]
    return Plan(settings, skipped)
