"""The ``sacct --json`` loader.

The samples follow the job object Slurm's data_parser prints for ``sacct --json`` (a top-level
``jobs`` array; per job ``job_id``, ``account``, ``partition``, ``wckey``, ``allocation_nodes``,
``nodes``, ``state.current``, ``time.{submission,start,end,elapsed,limit}``, and
``tres.{allocated,requested}`` lists of ``{type, name, id, count}``), as documented in
https://slurm.schedmd.com/rest_api.html (the slurmdb job schema; numbers as ``{set, infinite,
number}`` objects in newer data_parser versions) and https://slurm.schedmd.com/sacct.html (--json),
with field paths checked against SchedMD/slurm src/plugins/data_parser/v0.0.39/parsers.c (JOB parser).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from burster.errors import InputError
from burster.model import JobClass
from burster.traces import load_trace
from burster.traces.registry import detect_format
from burster.traces.sacct import load_sacct

T0 = 1767600000  # 2026-01-05 08:00:00 UTC


def no_val(n: int) -> dict[str, Any]:
    return {"set": True, "infinite": False, "number": n}


NEW_STYLE = {  # newer data_parser: numbers as {set, infinite, number}, state.current a list, wckey an object
    "account": "vision", "allocation_nodes": 2, "job_id": 101, "name": "train", "partition": "gpu",
    "user": "ana", "nodes": "gpu[01-02]", "wckey": {"wckey": "detector", "flags": []},
    "state": {"current": ["COMPLETED"], "reason": "None"},
    "time": {"elapsed": 7200, "eligible": T0 + 60, "submission": no_val(T0 + 60), "start": no_val(T0 + 600),
             "end": no_val(T0 + 7800), "suspended": 0, "limit": {"set": True, "infinite": False, "number": 240}},
    "tres": {"allocated": [{"type": "cpu", "name": "", "id": 1, "count": 128},
                           {"type": "node", "name": "", "id": 4, "count": 2},
                           {"type": "gres", "name": "gpu", "id": 1001, "count": 16},
                           {"type": "gres", "name": "gpu:a100", "id": 1002, "count": 16}],
             "requested": [{"type": "gres", "name": "gpu", "id": 1001, "count": 16}]},
}
OLD_STYLE = {  # older data_parser: plain integers, state.current a string, wckey a string
    "account": "nlp", "allocation_nodes": 1, "job_id": 102, "partition": "gpu-small", "wckey": "",
    "state": {"current": "TIMEOUT", "reason": "None"},
    "time": {"elapsed": 3600, "submission": T0, "start": T0 + 30, "end": T0 + 3630, "limit": 60},
    "tres": {"allocated": [{"type": "gres/gpu", "name": "", "count": 2},
                           {"type": "gres/gpu:h100", "name": "", "count": 2}], "requested": []},
}


def job(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        node = out
        for p in parents:
            node = node[p]
        if value is ...:
            del node[key]
        else:
            node[key] = value
    return out


def write(tmp_path: Path, jobs: Any, name: str = "history.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"meta": {"plugin": {"type": "data_parser"}}, "jobs": jobs, "errors": []}))
    return path


def test_both_number_shapes_become_demands(tmp_path: Path) -> None:
    path = write(tmp_path, [NEW_STYLE, OLD_STYLE])
    assert detect_format(path) == "sacct"
    old, new = load_trace(path).jobs
    assert new.job_id == "slurm-101" and new.gpus == 16 and new.nodes == 2 and new.gpu_model == "A100"
    assert new.submitted_at == datetime(2026, 1, 5, 8, 1, tzinfo=UTC) and new.est_runtime_s == 7200
    assert (new.team, new.project, new.deadline, new.job_class) == ("vision", "detector", None, JobClass.BEST_EFFORT)
    assert old.job_id == "slurm-102" and old.gpus == 2 and old.nodes == 1 and old.gpu_model == "H100"
    assert old.submitted_at == datetime(2026, 1, 5, 8, tzinfo=UTC) and old.est_runtime_s == 3600
    assert (old.team, old.project) == ("nlp", "gpu-small")  # no wckey: the partition


def test_runtime_nodes_and_adjustments(tmp_path: Path) -> None:
    jobs = [
        job(OLD_STYLE, time__elapsed=..., time__end=T0 + 630),             # no elapsed: end - start
        job(OLD_STYLE, job_id=103, time__elapsed=500),                     # elapsed wins (suspend, eligible-as-start)
        job(OLD_STYLE, job_id=104, allocation_nodes=..., nodes="g[1-3]"),  # host list when no allocation_nodes
        job(OLD_STYLE, job_id=105, allocation_nodes=4),                    # at most one node per GPU
        job(NEW_STYLE, allocation_nodes=1),                                # 16 GPUs: at least 2 nodes
        job(OLD_STYLE, job_id=106, time__submission=T0 + 100),             # started before submission
        job(OLD_STYLE, job_id=102),                                        # a requeued run of 102
    ]
    counts: Counter[str] = Counter()
    trace = load_sacct(write(tmp_path, jobs), counts=counts)
    by_id = {j.job_id: j for j in trace.jobs}
    assert by_id["slurm-102"].est_runtime_s == 600 and by_id["slurm-103"].est_runtime_s == 500
    assert by_id["slurm-104"].nodes == 2 and by_id["slurm-105"].nodes == 2 and by_id["slurm-101"].nodes == 2
    assert by_id["slurm-106"].submitted_at == datetime.fromtimestamp(T0 + 30, UTC)
    assert by_id["slurm-102.2"].est_runtime_s == 3600
    assert counts == Counter({"submitted_at moved to a start before submission": 1, "requeued runs kept as .N": 1})


def test_skip_rules_are_counted(tmp_path: Path) -> None:
    pending = job(NEW_STYLE, job_id=201, state__current=["PENDING"], time__start=no_val(0), time__end=no_val(0),
                  time__elapsed=0, tres__allocated=[])
    cancelled = job(OLD_STYLE, job_id=202, state__current="CANCELLED", time__start=0, time__elapsed=0)
    running = job(NEW_STYLE, job_id=203, state__current=["RUNNING"], time__end={"set": False, "infinite": False,
                                                                                  "number": 0})
    cpu_only = job(OLD_STYLE, job_id=204, tres__allocated=[{"type": "cpu", "name": "", "count": 8}])
    zero = job(OLD_STYLE, job_id=205, time__elapsed=0)
    counts: Counter[str] = Counter()
    trace = load_sacct(write(tmp_path, [pending, cancelled, running, cpu_only, zero, OLD_STYLE]), counts=counts)
    assert [j.job_id for j in trace.jobs] == ["slurm-102"]
    assert counts == Counter({"skipped: jobs that never started": 2, "skipped: jobs still running": 1,
                              "skipped: CPU-only jobs": 1, "skipped: jobs that ran 0 s": 1})


def test_time_limits_are_the_estimates_a_backtest_sees(tmp_path: Path) -> None:
    """A limit other than the runtime becomes the job's estimate (by its final id); no limit (unset,
    infinite, 0 or absent) leaves the runtime and is counted."""
    unlimited = {"set": True, "infinite": True, "number": 0}
    jobs = [NEW_STYLE, OLD_STYLE,                                   # 240 min limit; a limit equal to the runtime
            job(NEW_STYLE, job_id=103, time__limit=unlimited),
            job(NEW_STYLE, job_id=104, time__limit={"set": False, "infinite": False, "number": 0}),
            job(OLD_STYLE, job_id=105, time__limit=0),
            job(OLD_STYLE, job_id=106, time__limit=...),
            job(OLD_STYLE, time__limit=90)]                         # a requeued run of 102 with a longer limit
    counts: Counter[str] = Counter()
    trace = load_sacct(write(tmp_path, jobs), counts=counts)
    assert trace.estimates == {"slurm-101": 240 * 60.0, "slurm-102.2": 90 * 60.0}
    assert {j.job_id: j.est_runtime_s for j in trace.jobs}["slurm-101"] == 7200  # the runtime stays true
    assert counts["jobs without a time limit: estimate = runtime"] == 4


def test_requested_gpus_when_nothing_allocated(tmp_path: Path) -> None:
    only_requested = job(NEW_STYLE, tres__allocated=[])
    assert load_sacct(write(tmp_path, [only_requested])).jobs[0].gpus == 16


@pytest.mark.parametrize(("changes", "field", "problem"), [
    ({"time__submission": ...}, "time.submission", "missing"),
    ({"time__start": ...}, "time.start", "missing"),
    ({"time": ...}, "time.submission", "missing"),
    ({"time__submission": {"set": False, "infinite": False, "number": 0}}, "time.submission", "not set"),
    ({"time__end": T0 - 5}, "time.end", f"{T0 - 5} is before time.start {T0 + 30}"),
    ({"time__start": "soon"}, "time.start", "'soon' is not a whole number"),
    ({"time__elapsed": -1}, "time.elapsed", "-1 is not a whole number"),
    ({"job_id": ...}, "job_id", "missing"),
    ({"allocation_nodes": 1.5}, "allocation_nodes", "1.5 is not a whole number"),
    ({"tres__allocated": "gres/gpu=2"}, "tres.allocated", "is not a list"),
    ({"tres__allocated": [7]}, "tres.allocated[0]", "is not a {type, name, count} object"),
    ({"tres__allocated": [{"type": "gres", "name": "gpu", "count": "two"}]}, "tres.allocated[0].count",
     "'two' is not a whole number"),
    ({"time__limit": -30}, "time.limit", "-30 is not a whole number"),
    ({"time__limit": 6_000_000}, "time.limit", "6000000 minutes is out of range"),
])
def test_bad_jobs_name_file_index_and_field(tmp_path: Path, changes: dict[str, Any], field: str,
                                            problem: str) -> None:
    path = write(tmp_path, [NEW_STYLE, job(OLD_STYLE, **changes)])
    with pytest.raises(InputError) as info:
        load_trace(path)
    msg = str(info.value)
    assert f"{path}: jobs[1] (job_id " in msg and f"field '{field}': {problem}" in msg


def test_malformed_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"jobs": [')
    with pytest.raises(InputError, match=r"broken.json: not JSON \(Expecting value at line 1, column 11\)"):
        load_trace(broken)
    squeue = tmp_path / "squeue.json"
    squeue.write_text('{"nodes": []}')
    with pytest.raises(InputError, match=r'squeue\.json: no "jobs" array at the top level'):
        load_trace(squeue)
    with pytest.raises(InputError, match=r"jobs\[0\]: a job is a JSON object, not list"):
        load_trace(write(tmp_path, [[1, 2]]))
    with pytest.raises(InputError, match="holds no jobs"):
        load_trace(write(tmp_path, []))
    huge = tmp_path / "huge.json"
    huge.write_text('{"jobs": [{"job_id": ' + "9" * 5000 + "}]}")  # past Python's 4,300-digit limit
    with pytest.raises(InputError, match=r"huge\.json: not `sacct --json` output \(Exceeds the limit"):
        load_trace(huge)
    deep = tmp_path / "deep.json"
    deep.write_text('{"jobs": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InputError, match=r"deep\.json: JSON nested too deeply"):
        load_trace(deep)
