"""Edges of the trace loaders that a mutation audit found unpinned: bounds met exactly, documented
aliases and tie rules, and the Slurm and Helios rules for values the main tests do not use."""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from burster.errors import InputError
from burster.model import JobClass
from burster.traces import load_trace
from burster.traces.alibaba import load_alibaba
from burster.traces.base import gang_nodes
from burster.traces.helios import COLUMNS, job_sizes, load_helios
from burster.traces.sacct import load_sacct
from tests.traces.test_sacct import job as sacct_job

GENERIC = "job_id,submit_time,gpus,runtime_s,nodes,priority,deadline,job_class\n"
PHILLY = "job_id,user,num_gpu,submit_time,duration,expect_time_list,job_type\n"


def write(tmp_path: Path, text: str, name: str = "jobs.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load_trace(path)
    return str(info.value)


# --- the shared row readers --------------------------------------------------------------------

def test_the_last_instant_before_the_year_9000_loads_and_the_year_9000_does_not(tmp_path: Path) -> None:
    ok = write(tmp_path, GENERIC + "a,8999-12-31T23:59:59Z,1,10,,,,\n")
    assert load_trace(ok).jobs[0].submitted_at == datetime(8999, 12, 31, 23, 59, 59, tzinfo=UTC)
    msg = error_of(write(tmp_path, GENERIC + "a,9000-01-01T00:00:00Z,1,10,,,,\n", "late.csv"))
    assert "row 2, column 'submit_time'" in msg and "times must be from 1970 to before 9000" in msg


def test_a_gang_spans_ceil_of_gpus_over_eight_nodes(tmp_path: Path) -> None:
    assert [gang_nodes(g) for g in (0, 1, 8, 9, 12, 16, 17)] == [1, 1, 1, 2, 2, 2, 3]
    (job,) = load_trace(write(tmp_path, GENERIC + "a,0,12,10,,,,\n")).jobs
    assert (job.nodes, job.gpus_per_node) == (2, 6)


def test_jobs_submitted_at_the_same_instant_are_ordered_by_id(tmp_path: Path) -> None:
    trace = load_trace(write(tmp_path, GENERIC + "b,100,1,10,,,,\nc,50,1,10,,,,\na,100,1,10,,,,\n"))
    assert [j.job_id for j in trace.jobs] == ["c", "a", "b"]


def test_a_row_with_too_many_cells_says_how_many(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, "job_id,submit_time,gpus,runtime_s\na,0,1,10,extra\n"))
    assert "row 2: 5 cells for 4 header columns" in msg


# --- the generic format --------------------------------------------------------------------------

@pytest.mark.parametrize(("row", "column", "problem"), [
    ("x,0,1,10,2,,,", "nodes", "2 nodes for 1 GPU;"),
    ("x,100,1,10,,,100,soft", "deadline", "is not after submit_time"),
])
def test_generic_bounds_met_exactly_are_errors(tmp_path: Path, row: str, column: str, problem: str) -> None:
    path = write(tmp_path, GENERIC + row + "\n")
    msg = error_of(path)
    assert f"{path}: row 2, column '{column}'" in msg and problem in msg


def test_generic_job_class_is_any_case_best_effort_is_an_alias_and_priority_may_be_negative(
        tmp_path: Path) -> None:
    trace = load_trace(write(tmp_path, GENERIC + "a,0,1,10,,-3,,best_effort\nb,1,1,10,,,100,STRICT\n"))
    a, b = trace.jobs
    assert (a.job_class, a.priority) == (JobClass.BEST_EFFORT, -3)
    assert b.job_class is JobClass.STRICT


# --- Philly ---------------------------------------------------------------------------------------

def test_philly_strict_jobs_get_priority_one(tmp_path: Path) -> None:
    path = write(tmp_path, PHILLY + "1,u,1,0,10,50,strict\n2,u,1,1,10,50,soft\n3,u,1,2,10,0,best\n",
                 "trace_job_Philly_edges.csv")
    assert [(j.job_class, j.priority) for j in load_trace(path).jobs] == \
        [(JobClass.STRICT, 1), (JobClass.SOFT, 0), (JobClass.BEST_EFFORT, 0)]


# --- Alibaba ------------------------------------------------------------------------------------

def test_alibaba_guaranteed_qos_is_priority_one_and_a_zero_milli_pod_is_not_shared(tmp_path: Path) -> None:
    path = write(tmp_path, "name,num_gpu,gpu_milli,gpu_spec,qos,creation_time,deletion_time,scheduled_time\n"
                           "g,1,0,,Guaranteed,0,100,0\nb,1,1000,,Burstable,1,100,1\n", "openb_pod_list_edges.csv")
    counts: Counter[str] = Counter()
    trace = load_alibaba(path, shared="skip", counts=counts)
    assert [(j.job_id, j.gpus, j.priority) for j in trace.jobs] == [("alibaba-g", 1, 1), ("alibaba-b", 1, 0)]
    assert counts == Counter()


# --- sacct --------------------------------------------------------------------------------------

T0 = 1767600000
SACCT_JOB: dict[str, Any] = {
    "account": "nlp", "allocation_nodes": 1, "job_id": 7, "partition": "gpu", "state": {"current": "COMPLETED"},
    "time": {"elapsed": 3600, "submission": T0, "start": T0 + 30, "end": T0 + 3630, "limit": 60},
    "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 2}]},
}


def sacct(tmp_path: Path, *jobs: dict[str, Any]) -> Path:
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"jobs": list(jobs)}))
    return path


def variant(job_id: int, **changes: Any) -> dict[str, Any]:
    return sacct_job(SACCT_JOB | {"job_id": job_id}, **changes)


def test_sacct_edges_of_the_skip_and_adjust_rules(tmp_path: Path) -> None:
    """Start = end (no elapsed) ran 0 s, not an error; SUSPENDED is still running; a start at the
    submission instant moves nothing; an infinite limit is no limit whatever number it carries."""
    jobs = [
        variant(1, time__elapsed=..., time__end=T0 + 30),
        variant(2, state__current=["SUSPENDED"]),
        variant(3, time__start=T0),
        variant(4, time__limit={"set": True, "infinite": True, "number": 90}),
    ]
    counts: Counter[str] = Counter()
    trace = load_sacct(sacct(tmp_path, *jobs), counts=counts)
    assert [j.job_id for j in trace.jobs] == ["slurm-3", "slurm-4"]
    assert trace.estimates == {}
    assert counts == Counter({"skipped: jobs that ran 0 s": 1, "skipped: jobs still running": 1,
                              "jobs without a time limit: estimate = runtime": 1})


def test_sacct_two_typed_models_give_any_model_and_host_ranges_count_both_ends(tmp_path: Path) -> None:
    mixed = variant(1, tres__allocated=[{"type": "gres", "name": "gpu:a100", "count": 4},
                                        {"type": "gres", "name": "gpu:v100", "count": 4}])
    hosts = variant(2, allocation_nodes=..., nodes="gpu[01-03,07],login1",
                    tres__allocated=[{"type": "gres", "name": "gpu:a100", "count": 8}])
    by_id = {j.job_id: j for j in load_sacct(sacct(tmp_path, mixed, hosts)).jobs}
    assert (by_id["slurm-1"].gpus, by_id["slurm-1"].gpu_model) == (8, "")
    assert (by_id["slurm-2"].nodes, by_id["slurm-2"].gpu_model) == (5, "A100")


# --- Helios -------------------------------------------------------------------------------------

def helios(tmp_path: Path, rows: list[tuple[str, int, tuple[int, int, int, int], tuple[int, int, int, int]]],
           name: str = "vcEdge_cluster_sequence_vc.csv") -> Path:
    """Rows of (time, running_gpu_num, >=8 class, <8 class); each class (running GPUs, running jobs,
    pending GPUs, pending jobs); a 16-GPU VC."""
    path = tmp_path / name
    with path.open("w", newline="") as fh:
        out = csv.DictWriter(fh, COLUMNS)
        out.writeheader()
        for when, running, big, small in rows:
            row: dict[str, object] = {"time": when, "total_gpu_num": 16, "running_gpu_num": running,
                                      "pending_gpu_num": big[2] + small[2]}
            for cls, (rg, rj, pg, pj) in (("noless_8", big), ("less_8", small)):
                row |= {f"running_gpu_num_{cls}": rg, f"running_job_num_{cls}": rj,
                        f"pending_gpu_num_{cls}": pg, f"pending_job_num_{cls}": pj}
            out.writerow(row)
    return path


IDLE = (0, 0, 0, 0)


def test_helios_rows_at_the_same_minute_are_an_error(tmp_path: Path) -> None:
    path = helios(tmp_path, [("2020-05-01 00:00:00", 1, IDLE, (1, 1, 0, 0)),
                             ("2020-05-01 00:00:00", 1, IDLE, (1, 1, 0, 0))])
    msg = error_of(path)
    assert f"{path}: row 3, column 'time'" in msg and "is not after the previous row" in msg


def test_helios_a_day_without_arrivals_funds_the_nearest_earlier_day(tmp_path: Path) -> None:
    path = helios(tmp_path, [("2020-05-01 12:00:00", 1, IDLE, (1, 1, 0, 0)),   # day 0: a 1-GPU job arrives
                             ("2020-05-02 12:00:00", 1, IDLE, (1, 1, 0, 0)),   # day 1: no arrival
                             ("2020-05-03 12:00:00", 2, IDLE, (2, 2, 0, 0))])  # day 2: another arrives
    first, second = load_helios(path).jobs
    assert (first.est_runtime_s, second.est_runtime_s) == pytest.approx((120.0, 120.0))  # day 1's minute: day 0


def test_helios_a_minute_with_no_per_class_running_gpus_funds_the_small_class(tmp_path: Path) -> None:
    path = helios(tmp_path, [("2020-05-01 00:00:00", 6, (0, 0, 8, 1), (0, 0, 1, 1))])
    (job,) = load_helios(path).jobs  # the 8-GPU job has no budget: skipped
    assert job.gpus == 1 and job.est_runtime_s == pytest.approx(360.0)


def test_helios_runtimes_follow_the_seeded_weights(tmp_path: Path) -> None:
    """Two <8 jobs arriving together share the day's budget in proportion to 0.25 + Exp(1) draws."""
    path = helios(tmp_path, [("2020-05-01 00:00:00", 2, IDLE, (2, 2, 0, 0))])
    rng = random.Random(5)
    w = [0.25 + rng.expovariate(1.0) for _ in range(2)]
    jobs = sorted(load_helios(path, seed=5).jobs, key=lambda j: j.job_id)
    assert [j.est_runtime_s for j in jobs] == pytest.approx([120.0 * x / sum(w) for x in w])


def test_helios_a_remainder_that_brings_the_last_job_to_the_vc_size_joins_it() -> None:
    assert job_sizes("noless_8", 20, 1, limit=20) == [20]
    assert job_sizes("noless_8", 20, 1, limit=19) == [16, 4]
