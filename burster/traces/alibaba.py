"""Alibaba's production GPU pod trace, cluster-trace-gpu-v2023 (``openb_pod_list_*.csv``).

Rules (docs/traces.md has the full list):
- times are seconds from the trace start: submitted_at = TRACE_EPOCH + creation_time, and the
  runtime is deletion_time - scheduled_time (the wait before scheduling was the Alibaba queue's,
  which the simulator models itself);
- skipped and counted: CPU-only pods (num_gpu 0), pods never scheduled (empty scheduled_time),
  pods without a deletion_time and pods that ran 0 s;
- a shared pod (num_gpu 1, gpu_milli < 1000) takes one whole GPU (``shared="whole"``), or is
  skipped (``shared="skip"``); burster models whole GPUs only;
- gpu_spec (one or more "|"-separated Alibaba names) maps through ``GPU_MODELS`` to a catalog
  name when every alternative maps to the same one, else "" (any model);
- qos LS and Guaranteed get priority 1, BE and Burstable 0;
- a pod above 8 GPUs (none in v2023) would be a gang of ceil(num_gpu / 8) nodes, as in every loader.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

from burster.model import Demand
from burster.traces.base import TRACE_EPOCH, Row, Trace, csv_rows, finish_trace, gang_nodes

COLUMNS = ("name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time")
# Alibaba GPU names (v2023 node list, v2026 spot trace) -> names in the price catalog; "" = any.
GPU_MODELS = {
    "V100M16": "V100", "V100M32": "V100-32GB", "V100": "V100", "T4": "T4", "A10": "A10",
    "A100": "A100", "A100-SXM4-80GB": "A100-80GB", "A800-SXM4-80GB": "A100-80GB", "H800": "H100",
    "P100": "", "G2": "", "G3": "", "GPU-series-1": "", "GPU-series-2": "",
}
PRIORITIES = {"LS": 1, "Guaranteed": 1, "BE": 0, "Burstable": 0, "": 0}
SHARED_RULES = ("whole", "skip")


def gpu_model_of(spec: str) -> str:
    """The catalog GPU name for an Alibaba gpu_spec ("V100M16|V100M32" -> "" as they differ)."""
    names = {GPU_MODELS.get(part.strip(), "") for part in spec.split("|") if part.strip()}
    return names.pop() if len(names) == 1 else ""


def _whole(row: Row, column: str) -> int:
    value = row.number(column)
    if value != int(value):
        raise row.fail(column, f"{value:g} is not a whole number")
    return int(value)


def load_alibaba(path: Path, *, shared: str = "whole", checkpoint_interval_s: float = 1800.0,
                 counts: Counter[str] | None = None) -> Trace:
    """Load an openb pod list; ``counts`` (if given) receives the rows skipped or adjusted, by reason."""
    if shared not in SHARED_RULES:
        raise ValueError(f"shared must be one of {', '.join(SHARED_RULES)}, not {shared!r}")
    tally: Counter[str] = Counter()
    jobs: list[Demand] = []
    seen: dict[str, int] = {}
    for row in csv_rows(path, COLUMNS):
        name = row.text("name")
        if not name or name in seen:
            raise row.fail("name", f"duplicate of row {seen[name]}" if name else "empty pod name")
        seen[name] = row.line
        job = _pod(row, name, shared, checkpoint_interval_s, tally)
        if job is not None:
            jobs.append(job)
    return finish_trace(path, jobs, tally, counts)


def _pod(row: Row, name: str, shared: str, checkpoint_interval_s: float,
         counts: Counter[str]) -> Demand | None:
    """Validate one row fully, then decide whether it becomes a job (None: skipped, counted)."""
    gpus = _whole(row, "num_gpu")
    milli = row.number("gpu_milli")
    if milli > 1000:
        raise row.fail("gpu_milli", f"{milli:g} is above 1000 (one whole GPU)")
    created = row.seconds("creation_time")
    deleted = row.seconds("deletion_time") if row.text("deletion_time") else None
    scheduled = row.seconds("scheduled_time") if row.text("scheduled_time") else None
    if deleted is not None and deleted < created:
        raise row.fail("deletion_time", f"{deleted:g} is before creation_time {created:g}")
    if scheduled is not None and scheduled < created:
        raise row.fail("scheduled_time", f"{scheduled:g} is before creation_time {created:g}")
    if scheduled is not None and deleted is not None and scheduled > deleted:
        raise row.fail("scheduled_time", f"{scheduled:g} is after deletion_time {deleted:g}")
    qos = row.cells.get("qos") or ""
    if qos.strip() not in PRIORITIES:
        raise row.fail("qos", f"{qos!r} is not one of {', '.join(q for q in PRIORITIES if q)}")
    spec = row.cells.get("gpu_spec") or ""

    runtime_s = deleted - scheduled if deleted is not None and scheduled is not None else 0.0
    reason = ("CPU-only pods" if gpus == 0
              else "never-scheduled pods" if scheduled is None
              else "pods without deletion_time" if deleted is None
              else "pods that ran 0 s" if runtime_s <= 0
              else "shared-GPU pods" if shared == "skip" and gpus == 1 and 0 < milli < 1000
              else "")
    if reason:
        counts[f"skipped: {reason}"] += 1
        return None
    if gpus == 1 and 0 < milli < 1000:
        counts["shared-GPU pods rounded up to 1 GPU"] += 1
    return Demand(
        job_id=f"alibaba-{name}",
        gpus=gpus,
        nodes=gang_nodes(gpus),
        submitted_at=TRACE_EPOCH + timedelta(seconds=created),
        est_runtime_s=runtime_s,
        gpu_model=gpu_model_of(spec),
        priority=PRIORITIES[qos.strip()],
        checkpoint_interval_s=checkpoint_interval_s,
    )
