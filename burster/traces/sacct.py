"""Your own Slurm history: ``sacct --json`` output (a JSON object with a ``jobs`` array).

Numbers may be plain integers (older data_parser releases) or ``{"set": true, "infinite": false,
"number": N}`` objects (newer ones); ``set: false`` or ``infinite: true`` means no value.

Rules (docs/traces.md has the full list):
- submitted_at = time.submission (epoch seconds, UTC); runtime = time.elapsed (what Slurm measured:
  end - start less suspended time; some data_parser releases print the eligible time as
  time.start), or time.end - time.start where there is no elapsed;
- GPUs: the ``gres``/``gpu`` entry of tres.allocated (tres.requested if nothing was allocated);
  ``gres/gpu`` types and typed names (``gpu:a100``) count too, the untyped total winning over a
  sum of typed ones; a single typed model maps through ``GPU_MODELS`` to a catalog name, else "";
- nodes = allocation_nodes (or the count of the ``nodes`` host list), at least ceil(gpus / 8) and at
  most gpus; team = account; project = wckey when set, else partition;
- skipped and counted: jobs that never started, jobs still running (no end), CPU-only jobs, jobs
  that ran 0 s; a start before submission moves submitted_at to the start (counted);
- runtime estimate = time.limit (minutes): what Slurm, and so a controller, knew before the job ran;
  the simulator shows it to the policies and the pool's backfill and runs the job for its runtime
  (``Trace.estimates``); no limit (unset, infinite or 0): the runtime (counted);
- no deadline: a time limit is a kill switch, not a due date. Jobs are best-effort, priority 0.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from burster.errors import InputError
from burster.model import Demand
from burster.traces.base import Trace, finish_trace, gang_nodes, out_of_range, text_lines

GPU_MODELS = {"v100": "V100", "a100": "A100", "h100": "H100", "h200": "H200", "t4": "T4", "a10": "A10",
              "a10g": "A10G", "l4": "L4", "l40s": "L40S"}


def _count(value: Any, *, required: bool = True) -> int | None:
    """A JSON integer, numeric string, or {set, infinite, number} object; None when unset."""
    if isinstance(value, dict):
        if value.get("set") is False or value.get("infinite") is True:
            return None
        value = value.get("number")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if value is None and not required:
        return None
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0
            or value != int(value)):
        raise ValueError(f"{value!r} is not a whole number >= 0 or a {{set, number}} object")
    return int(value)


@dataclass(frozen=True)
class _Job:
    """One entry of the ``jobs`` array that knows its file and index, for error messages."""

    path: Path
    index: int
    data: dict[str, Any]

    def fail(self, field: str, problem: str) -> InputError:
        return InputError(f"{self.path}: jobs[{self.index}] (job_id {self.data.get('job_id', '?')}), "
                          f"field {field!r}: {problem}")

    def get(self, field: str, *, required: bool = True) -> Any:
        value: Any = self.data
        for key in field.split("."):
            if not isinstance(value, dict) or key not in value:
                if required:
                    raise self.fail(field, "missing")
                return None
            value = value[key]
        return value

    def number(self, field: str, *, required: bool = True) -> int | None:
        """A count or epoch time: an integer, or a {set, infinite, number} object (None when unset)."""
        value = self.get(field, required=required)
        try:
            return _count(value, required=required)
        except ValueError as exc:
            raise self.fail(field, str(exc)) from None

    def time(self, field: str) -> int | None:
        """An epoch time in seconds (0 or None: not yet), before the year 9000."""
        value = self.number(field)
        if value and (problem := out_of_range(value, epoch=True)):
            raise self.fail(field, f"{value} {problem}")
        return value

    def text(self, field: str) -> str:
        """A string field; a {"wckey": ..., "flags": [...]} object (v0.0.39+) gives its inner name."""
        value = self.get(field, required=False)
        if isinstance(value, dict):
            value = value.get(field)
        return str(value or "").strip()


def load_sacct(path: Path, *, checkpoint_interval_s: float = 1800.0, counts: Counter[str] | None = None) -> Trace:
    """Load ``sacct --json`` output; ``counts`` (if given) receives the jobs skipped or adjusted, by reason."""
    try:
        doc = json.loads("".join(text_lines(path)))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                         "export it with `sacct --json ... > history.json`") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply to be `sacct --json` output") from None
    except ValueError as exc:  # a number of over 4,300 digits
        raise InputError(f"{path}: not `sacct --json` output ({str(exc)[:120]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise InputError(f"{path}: no \"jobs\" array at the top level; is this `sacct --json` output?")
    tally: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    jobs: list[Demand] = []
    estimates: dict[str, float] = {}
    for i, data in enumerate(doc["jobs"]):
        if not isinstance(data, dict):
            raise InputError(f"{path}: jobs[{i}]: a job is a JSON object, not {type(data).__name__}")
        entry = _Job(path, i, data)
        job = _job(entry, checkpoint_interval_s, tally)
        if job is not None:
            seen[job.job_id] += 1
            if seen[job.job_id] > 1:  # sacct --duplicates lists each run of a requeued job
                tally["requeued runs kept as .N"] += 1
                job = replace(job, job_id=f"{job.job_id}.{seen[job.job_id]}")
            jobs.append(job)
            told = _time_limit_s(entry, tally)
            if told is not None and told != job.est_runtime_s:
                estimates[job.job_id] = told
    return finish_trace(path, jobs, tally, counts, estimates)


def _time_limit_s(job: _Job, tally: Counter[str]) -> float | None:
    """``time.limit`` (minutes) in seconds: the runtime estimate Slurm had; None (counted) when unset."""
    minutes = job.number("time.limit", required=False)
    if not minutes:
        tally["jobs without a time limit: estimate = runtime"] += 1
        return None
    if problem := out_of_range(minutes * 60):
        raise job.fail("time.limit", f"{minutes} minutes {problem}")
    return float(minutes * 60)


def _job(job: _Job, checkpoint_interval_s: float, tally: Counter[str]) -> Demand | None:
    """Validate one job fully, then decide whether it becomes a Demand (None: skipped, counted)."""
    job_id = job.number("job_id")
    submitted = job.time("time.submission")
    start, end = job.time("time.start"), job.time("time.end")
    elapsed = job.number("time.elapsed", required=False)
    if submitted is None:
        raise job.fail("time.submission", "not set; every job has a submission time")
    if start and end and end < start:
        raise job.fail("time.end", f"{end} is before time.start {start}")
    if elapsed is not None and (problem := out_of_range(elapsed)):
        raise job.fail("time.elapsed", f"{elapsed} {problem}")
    if elapsed is None and start and end and (problem := out_of_range(end - start)):
        raise job.fail("time.end", f"{end} is {end - start} s after time.start: the runtime {problem}")
    allocated, requested = _gpus(job, "tres.allocated"), _gpus(job, "tres.requested")
    gpus, model = allocated if allocated[0] else requested
    state = job.get("state.current", required=False) or job.get("state", required=False)
    states = {str(s) for s in state} if isinstance(state, list) else {str(state)}
    runtime = elapsed if elapsed is not None else (end or 0) - (start or 0)
    reason = ("jobs that never started" if not start
              else "jobs still running" if not end or states & {"RUNNING", "PENDING", "SUSPENDED"}
              else "CPU-only jobs" if gpus == 0
              else "jobs that ran 0 s" if runtime <= 0
              else "")
    if reason:
        tally[f"skipped: {reason}"] += 1
        return None
    assert start is not None
    if start < submitted:
        tally["submitted_at moved to a start before submission"] += 1
        submitted = start
    nodes = job.number("allocation_nodes", required=False) or _host_count(job)
    return Demand(
        job_id=f"slurm-{job_id}",
        gpus=gpus,
        nodes=min(max(nodes, gang_nodes(gpus)), gpus),
        submitted_at=datetime.fromtimestamp(submitted, UTC),
        est_runtime_s=float(runtime),
        gpu_model=model,
        checkpoint_interval_s=checkpoint_interval_s,
        team=job.text("account"),
        project=job.text("wckey") or job.text("partition"),
    )


def _gpus(job: _Job, field: str) -> tuple[int, str]:
    """(GPU count, catalog model or "") from a TRES list."""
    entries = job.get(field, required=False) or []
    if not isinstance(entries, list):
        raise job.fail(field, "is not a list of {type, name, count} entries")
    untyped, typed = 0, Counter[str]()
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise job.fail(f"{field}[{k}]", "is not a {type, name, count} object")
        model = _gpu_entry(str(entry.get("type") or "").lower(), str(entry.get("name") or "").lower())
        if model is None:
            continue
        try:
            count = _count(entry.get("count"))
        except ValueError as exc:
            raise job.fail(f"{field}[{k}].count", str(exc)) from None
        assert count is not None
        if model:
            typed[model] += count
        else:
            untyped += count
    models = {GPU_MODELS.get(name, "") for name in typed}
    return (untyped or sum(typed.values())), (models.pop() if len(models) == 1 else "")


def _gpu_entry(kind: str, name: str) -> str | None:
    """None: not a GPU entry; "": untyped GPUs; else the GPU type ("gres"+"gpu:a100", "gres/gpu:a100")."""
    if kind == "gres" and (name == "gpu" or name.startswith("gpu:")):
        return name[4:]
    if kind == "gres/gpu":
        return name
    if kind.startswith("gres/gpu:"):
        return kind[9:]
    return None


def _host_count(job: _Job) -> int:
    """How many hosts a Slurm host list names: "gpu[01-03,07],login1" -> 5; 1 when there is none."""
    spec = job.get("nodes", required=False)
    if isinstance(spec, int | dict):
        return job.number("nodes") or 1
    total = 0
    for host in re.findall(r"[^,\[]*(?:\[[^\]]*\][^,\[]*)*", str(spec or "")):
        size = 1 if host and host != "None assigned" else 0
        for group in re.findall(r"\[([^\]]*)\]", host):
            size *= sum(int(hi) - int(lo) + 1 if lo.isdigit() and hi.isdigit() else 1
                        for lo, _, hi in (part.partition("-") for part in group.split(",")))
        total += size
    return max(total, 1)
